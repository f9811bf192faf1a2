// Users and permissions on a live `strata serve`: every command checked as
// RabbitMQ's stream reader checks it (server/access_policy.h), vhost access
// at Open, passwords given as RabbitMQ's hashes.
#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include "auth/password_hash.h"
#include "server/admin_http.h"
#include "server/serve_fixture.h"
#include "support/cli.h"

namespace strata::test {
namespace {

class PermissionsTest : public ServeTest {
 protected:
  void SetUp() override {
    ServeTest::SetUp();
    const std::string reader_hash =
        auth::hash_password("r", auth::HashAlgorithm::sha256, {7, 7, 7, 7});
    restart_with_config("users.json",
                        R"({
      "users": [ {"name": "guest", "password": "guest", "tags": ["administrator"]},
                 {"name": "reader", "password_hash": ")" +
                            reader_hash + R"("},
                 {"name": "app", "password": "a"},
                 {"name": "stranger", "password": "s"} ],
      "permissions": [
        {"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"},
        {"user": "reader", "vhost": "/", "configure": "", "write": "", "read": ".*"},
        {"user": "app", "vhost": "/", "configure": "^app-", "write": "^app-", "read": "^app-"} ]
    })",
                        {"--http", "127.0.0.1:0"});
    StreamClient admin = open_client();
    create(admin, "shared");
    declare(admin, 1, "shared");
    publish_confirmed(admin, 1, 0, {"m0", "m1"});
  }
  StreamClient login(const std::string& user, const std::string& pw) {
    auto c = StreamClient::connect(server_.port());
    EXPECT_TRUE(c.ok()) << c.error().message;
    auto st = c->handshake(user, pw);
    EXPECT_TRUE(st.ok()) << user << ": " << st.error().message;
    return std::move(c).value();
  }
  ResponseCode create_code(StreamClient& c, const std::string& name) {
    EXPECT_TRUE(c.send(CreateStreamRequest{c.corr(), name, {}}).ok());
    auto r = c.expect<CreateStreamResponse>();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->code : ResponseCode::internal_error;
  }
  ResponseCode subscribe_code(StreamClient& c, uint8_t id, const std::string& stream) {
    EXPECT_TRUE(
        c.send(SubscribeRequest{c.corr(), id, stream, {OffsetType::first, 0}, 10, {}}).ok());
    auto r = c.expect<SubscribeResponse>();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->code : ResponseCode::internal_error;
  }
};

TEST_F(PermissionsTest, AReaderReadsAndNothingElse) {
  StreamClient c = login("reader", "r");
  EXPECT_EQ(create_code(c, "mine"), ResponseCode::access_refused);
  declare(c, 1, "shared", "", ResponseCode::access_refused);
  ASSERT_TRUE(c.send(DeleteStreamRequest{c.corr(), "shared"}).ok());
  EXPECT_EQ(c.expect<DeleteStreamResponse>()->code, ResponseCode::access_refused);
  ASSERT_EQ(subscribe_code(c, 0, "shared"), ResponseCode::ok);
  EXPECT_EQ(consume(c, 0, 2), (std::vector<std::string>{"m0", "m1"}));
  ASSERT_TRUE(c.send(QueryOffsetRequest{c.corr(), "ref", "shared"}).ok());
  EXPECT_NE(c.expect<QueryOffsetResponse>()->code, ResponseCode::access_refused);
  // The stream is still there: the refused Delete did nothing.
  StreamClient admin = open_client();
  ASSERT_TRUE(admin.send(MetadataRequest{admin.corr(), {"shared"}}).ok());
  EXPECT_EQ(admin.expect<MetadataResponse>()->streams.at(0).code, ResponseCode::ok);
}

TEST_F(PermissionsTest, RegexesScopeAUserToItsStreams) {
  StreamClient c = login("app", "a");
  EXPECT_EQ(create_code(c, "app-orders"), ResponseCode::ok);
  EXPECT_EQ(create_code(c, "orders"), ResponseCode::access_refused);
  declare(c, 1, "app-orders");
  publish_confirmed(c, 1, 0, {"x"});
  declare(c, 2, "shared", "", ResponseCode::access_refused);
  EXPECT_EQ(subscribe_code(c, 0, "shared"), ResponseCode::access_refused);
  // Metadata describes only what the user may read or write; the others
  // are 16, whether they exist or not.
  ASSERT_TRUE(c.send(MetadataRequest{c.corr(), {"app-orders", "shared", "nope"}}).ok());
  auto md = c.expect<MetadataResponse>();
  ASSERT_TRUE(md.ok()) << md.error().message;
  std::map<std::string, ResponseCode> codes;
  for (const auto& s : md->streams) codes[s.stream] = s.code;
  EXPECT_EQ(codes["app-orders"], ResponseCode::ok);
  EXPECT_EQ(codes["shared"], ResponseCode::access_refused);
  EXPECT_EQ(codes["nope"], ResponseCode::access_refused);
  ASSERT_TRUE(c.send(StreamStatsRequest{c.corr(), "shared"}).ok());
  EXPECT_EQ(c.expect<StreamStatsResponse>()->code, ResponseCode::access_refused);
  ASSERT_TRUE(c.send(QueryPublisherSequenceRequest{c.corr(), "ref", "shared"}).ok());
  EXPECT_EQ(c.expect<QueryPublisherSequenceResponse>()->code, ResponseCode::access_refused);
  ASSERT_TRUE(c.send(QueryOffsetRequest{c.corr(), "ref", "shared"}).ok());
  EXPECT_EQ(c.expect<QueryOffsetResponse>()->code, ResponseCode::access_refused);
  // Still connected and served.
  EXPECT_EQ(subscribe_code(c, 0, "app-orders"), ResponseCode::ok);
  // Refusals are counted (Metadata's hidden streams are not refusals).
  auto status = serve_status(server_);
  EXPECT_EQ(status["server"]["access_refused"].get<int>(), 6) << status.dump();
}

TEST_F(PermissionsTest, OpenNeedsPermissionsInTheVhost) {
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  auto st = c->handshake("stranger", "s");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("(code 12)"), std::string::npos) << st.error().message;
  auto d = StreamClient::connect(server_.port());
  ASSERT_TRUE(d.ok());
  st = d->handshake("guest", "guest", true, "other");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("(code 12)"), std::string::npos) << st.error().message;
}

// server.max_connections_per_user and _per_vhost: a connection over
// either is refused at Open with 12, counted, and a place comes back when a
// connection closes.
TEST_F(PermissionsTest, ConnectionLimitsPerUserAndVhost) {
  restart_with_config("limits.json", R"({
      "server": { "max_connections_per_user": 2, "max_connections_per_vhost": 3 },
      "users": [ {"name": "guest", "password": "guest", "tags": ["administrator"]},
                 {"name": "app", "password": "a"} ]
    })",
                      {"--http", "127.0.0.1:0"});
  auto refused_at_open = [&](const std::string& user, const std::string& pw) {
    auto c = StreamClient::connect(server_.port());
    EXPECT_TRUE(c.ok());
    auto st = c->handshake(user, pw);
    EXPECT_FALSE(st.ok()) << user << " was let in over a limit";
    if (!st.ok()) {
      EXPECT_NE(st.error().message.find("(code 12)"), std::string::npos) << st.error().message;
    }
  };
  auto g1 = std::make_unique<StreamClient>(login("guest", "guest"));
  StreamClient g2 = login("guest", "guest");
  refused_at_open("guest", "guest");  // the user's limit
  StreamClient a1 = login("app", "a");
  refused_at_open("app", "a");  // the vhost's limit, though app has one
  // A connection that goes gives its place back.
  g1.reset();
  bool in = false;
  for (int i = 0; i < 100 && !in; ++i) {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok());
    in = c->handshake("app", "a").ok();
    if (!in) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(in) << "a closed connection's place never came back";
  auto st = serve_status(server_);
  EXPECT_GE(st["server"]["connections_refused_limit"].get<uint64_t>(), 2u) << st.dump();
  // What is open still works.
  create(g2, "limits");
  EXPECT_TRUE(a1.send(MetadataRequest{a1.corr(), {"limits"}}).ok());
  EXPECT_EQ(a1.expect<MetadataResponse>()->streams.at(0).code, ResponseCode::ok);
}

TEST_F(PermissionsTest, HashedPasswordsAreCheckedAndWrongOnesRefused) {
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  auto st = c->handshake("reader", "wrong");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("authentication"), std::string::npos) << st.error().message;
}

// SIGHUP re-reads the users: the next command of an open connection is
// checked against the new rules, a deleted user's connection is closed, a
// file that does not load changes nothing.
TEST_F(PermissionsTest, SighupReloadsUsersLive) {
  StreamClient app = login("app", "a");
  EXPECT_EQ(create_code(app, "app-1"), ResponseCode::ok);
  StreamClient reader = login("reader", "r");
  auto reload = [&](const std::string& config, const std::string& expect) {
    std::ofstream(dir_.sub("users.json")) << config;
    // The outcome is logged (spdlog: stdout).
    const size_t before = server_.process().stdout_text().size();
    server_.process().kill(SIGHUP);
    for (int i = 0; i < 1000; ++i) {
      if (server_.process().stdout_text().find(expect, before) != std::string::npos) return true;
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "no '" << expect << "' in: " << server_.process().stdout_text();
    return false;
  };
  ASSERT_TRUE(reload(R"({"users": [ {"name": "guest", "password": "guest"},
                                     {"name": "app", "password": "a"} ],
      "permissions": [
        {"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"},
        {"user": "app", "vhost": "/", "configure": "", "write": "", "read": "^app-"} ]})",
                     "users, vhosts and permissions reloaded"));
  // The deleted user's connection is closed with 8.
  auto close = reader.expect<CloseRequest>();
  ASSERT_TRUE(close.ok()) << close.error().message;
  EXPECT_EQ(close->code, ResponseCode::authentication_failure);
  // The open connection goes on under the new rules.
  EXPECT_EQ(create_code(app, "app-2"), ResponseCode::access_refused);
  EXPECT_EQ(subscribe_code(app, 0, "app-1"), ResponseCode::ok);
  // The deleted user cannot log in again.
  auto again = StreamClient::connect(server_.port());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->handshake("reader", "r").ok());

  // A file that does not load: refused, the rules stay.
  ASSERT_TRUE(reload("{ not json", "users not reloaded"));
  EXPECT_EQ(subscribe_code(app, 1, "app-1"), ResponseCode::ok);
  StreamClient app2 = login("app", "a");
  EXPECT_EQ(create_code(app2, "app-3"), ResponseCode::access_refused);
}

// The node's HTTP endpoint, as `strata serve` printed it.
// Live administration through the management API (`strata user`,
// `strata permissions`): a user added on the running node logs in, gets
// exactly the permissions set, loses them live; only administrators may
// change users; the changes outlive a restart and a configuration reload.
TEST_F(PermissionsTest, UsersAndPermissionsChangeLiveThroughTheCli) {
  const std::string url = serve_http_url(server_);
  ASSERT_FALSE(url.empty()) << server_.process().stdout_text();
  const std::string admin_pw = dir_.sub("guest.pw");
  std::ofstream(admin_pw) << "guest\n";
  const std::string bob_pw = dir_.sub("bob.pw");
  std::ofstream(bob_pw) << "b0b\n";
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--node", url, "--admin-password-file", admin_pw});
    return strata_cli(args);
  };
  auto r = cli({"user", "add", "bob", "--password-file", bob_pw, "--tags", "monitoring"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("user 'bob' added"), std::string::npos) << r.out;
  // No permissions yet: bob cannot open "/".
  {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->handshake("bob", "b0b").ok());
  }
  r = cli({"permissions", "set", "bob", "^bob-", "^bob-", ".*"});
  ASSERT_EQ(r.status, 0) << r.err;
  StreamClient bob = login("bob", "b0b");
  EXPECT_EQ(create_code(bob, "bob-1"), ResponseCode::ok);
  EXPECT_EQ(create_code(bob, "shared-2"), ResponseCode::access_refused);
  EXPECT_EQ(subscribe_code(bob, 0, "shared"), ResponseCode::ok);

  r = cli({"--json", "user", "list"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto users = nlohmann::json::parse(r.out)["users"];
  auto it = std::find_if(users.begin(), users.end(), [](auto& u) { return u["name"] == "bob"; });
  ASSERT_NE(it, users.end()) << r.out;
  EXPECT_EQ((*it)["tags"], nlohmann::json::array({"monitoring"}));
  r = cli({"--json", "permissions", "list"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(R"("configure":"^bob-")"), std::string::npos) << r.out;
  r = cli({"vhost", "list"});
  EXPECT_EQ(r.out, "/\n") << r.err;

  // bob is no administrator: 403; a wrong password: 401, counted.
  auto as_bob = strata_cli(
      {"user", "list", "--node", url, "--admin-user", "bob", "--admin-password-file", bob_pw});
  EXPECT_EQ(as_bob.status, 1);
  EXPECT_NE(as_bob.err.find("HTTP 403"), std::string::npos) << as_bob.err;
  auto wrong = strata_cli({"user", "list", "--node", url, "--admin-password-file", bob_pw});
  EXPECT_EQ(wrong.status, 1);
  EXPECT_NE(wrong.err.find("HTTP 401"), std::string::npos) << wrong.err;
  EXPECT_NE(serve_http_get(server_, "/metrics").find("strata_http_api_auth_failures_total 1"),
            std::string::npos);
  // A permission for a vhost that does not exist, and a bad regex: refused.
  r = cli({"permissions", "set", "bob", ".*", ".*", ".*", "--vhost", "nope"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no vhost 'nope'"), std::string::npos) << r.err;
  r = cli({"permissions", "set", "bob", "(", ".*", ".*"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("HTTP 400"), std::string::npos) << r.err;

  // Cleared: bob's open connection loses "/" and is closed.
  r = cli({"permissions", "clear", "bob"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto close = bob.expect<CloseRequest>();
  ASSERT_TRUE(close.ok()) << close.error().message;

  // A new password; the configuration's user "app" deleted live.
  std::ofstream(bob_pw, std::ios::trunc) << "n3w\n";
  ASSERT_EQ(cli({"user", "passwd", "bob", "--password-file", bob_pw}).status, 0);
  ASSERT_EQ(cli({"permissions", "set", "bob", "", "", ".*"}).status, 0);
  r = cli({"user", "delete", "app"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = cli({"user", "delete", "nobody"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("HTTP 404"), std::string::npos) << r.err;

  // After a restart with the same configuration (which still has "app"),
  // and after a SIGHUP, the live changes stand.
  ASSERT_EQ(server_.stop(), 0);
  server_ = ServeProcess::start(
      dir_.sub("data"), {"--config", dir_.sub("users.json"), "--http", "127.0.0.1:0"}, dir_.path());
  ASSERT_GT(server_.port(), 0) << server_.process().stderr_text();
  server_.process().kill(SIGHUP);
  for (int i = 0; i < 500; ++i) {
    if (server_.process().stderr_text().find("reloaded") != std::string::npos) break;
    std::this_thread::sleep_for(10ms);
  }
  StreamClient bob2 = login("bob", "n3w");
  EXPECT_EQ(subscribe_code(bob2, 0, "shared"), ResponseCode::ok);
  EXPECT_EQ(create_code(bob2, "bob-2"), ResponseCode::access_refused);
  for (auto [who, pw] : {std::pair{"bob", "b0b"}, std::pair{"app", "a"}}) {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->handshake(who, pw).ok()) << who;
  }
  const std::string defs = strata_cli({"--json", "user", "list", "--node", serve_http_url(server_),
                                       "--admin-password-file", admin_pw})
                               .out;
  EXPECT_NE(defs.find("\"bob\""), std::string::npos) << defs;
  EXPECT_EQ(defs.find("\"app\""), std::string::npos) << defs;
}

// A definitions file as RabbitMQ 3.10.8 exported it (tests/auth/testdata):
// imported from its vhost "prod" into "/", its users log in with their
// RabbitMQ passwords, its streams exist with their arguments, what strata
// does not hold is listed as skipped; strata's export reads back; a file
// with an argument strata refuses changes nothing.
TEST_F(PermissionsTest, RabbitMqDefinitionsImportAndExport) {
  const std::string url = serve_http_url(server_);
  ASSERT_FALSE(url.empty());
  const std::string admin_pw = dir_.sub("guest.pw");
  std::ofstream(admin_pw) << "guest\n";
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--node", url, "--admin-password-file", admin_pw});
    return strata_cli(args);
  };
  const std::string rabbit = STRATA_AUTH_TESTDATA "/rabbitmq-3.10.8-definitions.json";
  auto r = cli({"--json", "definitions", "import", rabbit, "--from-vhost", "prod"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["users"], 4);
  EXPECT_EQ(j["permissions"], 2);  // alice's and bob's in prod
  EXPECT_EQ(j["streams_created"], nlohmann::json::array({"audit", "orders"})) << r.out;
  const std::string skipped = j["skipped"].dump();
  for (const char* want : {"queue 'jobs' in vhost 'prod': type quorum", "vhost 'dev/x'",
                           "permissions of 'guest' in vhost '/'"}) {
    EXPECT_NE(skipped.find(want), std::string::npos) << want << " in " << skipped;
  }
  // RabbitMQ's own hashes log in; the permissions are prod's.
  StreamClient bob = login("bob", "bob pw");
  EXPECT_EQ(subscribe_code(bob, 0, "orders"), ResponseCode::ok);
  EXPECT_EQ(create_code(bob, "orders.x"), ResponseCode::access_refused);
  StreamClient alice = login("alice", "alice-pw");
  EXPECT_EQ(create_code(alice, "alice-1"), ResponseCode::ok);

  // The export: the streams with their arguments, as RabbitMQ writes them.
  const std::string out = dir_.sub("export.json");
  r = cli({"definitions", "export", "--file", out});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(out);
  auto exported = nlohmann::json::parse(in);
  std::map<std::string, nlohmann::json> queues;
  for (const auto& q : exported["queues"]) queues[q["name"]] = q;
  ASSERT_TRUE(queues.count("orders")) << exported.dump();
  EXPECT_EQ(queues["orders"]["type"], "stream");
  EXPECT_EQ(queues["orders"]["arguments"]["x-max-length-bytes"], 20000000000ull);
  EXPECT_EQ(queues["orders"]["arguments"]["x-stream-max-segment-size-bytes"], 100000000);
  EXPECT_EQ(queues["audit"]["arguments"]["x-max-age"], "604800s");
  EXPECT_TRUE(queues.count("shared"));
  // Imported again: everything is there already.
  r = cli({"--json", "definitions", "import", out});
  ASSERT_EQ(r.status, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["streams_created"].empty()) << r.out;
  EXPECT_EQ(j["streams_existing"].size(), queues.size());

  // An argument strata refuses: 400 and nothing imported, not even the user.
  const std::string bad = dir_.sub("bad.json");
  std::ofstream(bad) << R"({"users": [{"name": "eve", "password": "e", "tags": []}],
    "queues": [{"name": "q", "vhost": "/", "arguments": {"x-queue-type": "stream",
                                                           "x-max-age": "forever"}}]})";
  r = cli({"definitions", "import", bad});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("stream 'q'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("max-age"), std::string::npos) << r.err;
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->handshake("eve", "e").ok());
}

// The stream protocol's clients through the management API and `strata
// list`: connections with their user and client properties, publishers
// with their counts, consumers with their credit; a monitoring user reads
// them and cannot change users; RabbitMQ's pagination.
TEST_F(PermissionsTest, ConnectionsPublishersAndConsumersAreListed) {
  const std::string url = serve_http_url(server_);
  ASSERT_FALSE(url.empty());
  const std::string admin_pw = dir_.sub("guest.pw");
  std::ofstream(admin_pw) << "guest\n";
  const std::string mon_pw = dir_.sub("mon.pw");
  std::ofstream(mon_pw) << "m0n\n";
  auto r = strata_cli({"user", "add", "mon", "--tags", "monitoring", "--password-file", mon_pw,
                       "--node", url, "--admin-password-file", admin_pw});
  ASSERT_EQ(r.status, 0) << r.err;

  StreamClient app = login("app", "a");
  create(app, "app-orders");
  declare(app, 3, "app-orders", "app-ref");
  publish_confirmed(app, 3, 0, {"a", "b", "c"});
  StreamClient reader = login("reader", "r");
  ASSERT_TRUE(
      reader.send(SubscribeRequest{reader.corr(), 5, "shared", {OffsetType::first, 0}, 7, {}})
          .ok());
  ASSERT_EQ(reader.expect<SubscribeResponse>()->code, ResponseCode::ok);

  auto list = [&](const std::string& what) {
    auto out = strata_cli({"--json", "list", what, "--node", url, "--admin-user", "mon",
                           "--admin-password-file", mon_pw});
    EXPECT_EQ(out.status, 0) << out.err;
    return nlohmann::json::parse(out.out, nullptr, false)[what];
  };
  auto conns = list("connections");
  ASSERT_TRUE(conns.is_array()) << conns.dump();
  std::map<std::string, nlohmann::json> by_user;
  for (const auto& c : conns) by_user[c["user"]] = c;
  ASSERT_TRUE(by_user.count("app") && by_user.count("reader")) << conns.dump();
  EXPECT_EQ(by_user["app"]["vhost"], "/");
  EXPECT_EQ(by_user["app"]["state"], "open");
  EXPECT_EQ(by_user["app"]["publishers"], 1);
  EXPECT_EQ(by_user["reader"]["consumers"], 1);
  EXPECT_EQ(by_user["app"]["tls"], false);
  EXPECT_TRUE(by_user["app"]["client_properties"].is_object());

  auto pubs = list("publishers");
  ASSERT_EQ(pubs.size(), 1u) << pubs.dump();
  EXPECT_EQ(pubs[0]["reference"], "app-ref");
  EXPECT_EQ(pubs[0]["stream"], "app-orders");
  EXPECT_EQ(pubs[0]["publisher_id"], 3);
  EXPECT_EQ(pubs[0]["published"], 3);
  EXPECT_EQ(pubs[0]["confirmed"], 3);
  EXPECT_EQ(pubs[0]["user"], "app");

  auto cons = list("consumers");
  ASSERT_EQ(cons.size(), 1u) << cons.dump();
  EXPECT_EQ(cons[0]["stream"], "shared");
  EXPECT_EQ(cons[0]["subscription_id"], 5);
  EXPECT_EQ(cons[0]["offset_spec"], "first");
  EXPECT_EQ(cons[0]["connection"], by_user["reader"]["id"]);

  // Consumer lag (RabbitMQ's offset_lag): a subscription without credit
  // lags by the stream's three messages; once a chunk is delivered, by none.
  ASSERT_TRUE(
      reader.send(SubscribeRequest{reader.corr(), 6, "app-orders", {OffsetType::first, 0}, 0, {}})
          .ok());
  ASSERT_EQ(reader.expect<SubscribeResponse>()->code, ResponseCode::ok);
  auto consumer = [&](int id) {
    for (const auto& c : list("consumers")) {
      if (c["subscription_id"] == id) return c;
    }
    return nlohmann::json();
  };
  auto lagging = consumer(6);
  EXPECT_EQ(lagging["offset"], 0) << lagging.dump();
  EXPECT_EQ(lagging["offset_lag"], 3) << lagging.dump();
  ASSERT_TRUE(reader.send(CreditRequest{6, 1}).ok());
  // Subscription 5's Delivers of "shared" may come first.
  for (int i = 0; i < 4; ++i) {
    auto d = reader.expect<DeliverFrame>();
    ASSERT_TRUE(d.ok()) << d.error().message;
    if (d->subscription_id == 6) break;
  }
  nlohmann::json caught_up;
  for (int i = 0; i < 100; ++i) {
    caught_up = consumer(6);
    if (caught_up["offset_lag"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(caught_up["offset_lag"], 0) << caught_up.dump();
  EXPECT_EQ(caught_up["offset"], 3) << caught_up.dump();
  EXPECT_EQ(caught_up["messages_delivered"], 3) << caught_up.dump();
  cons = list("consumers");

  // Pagination as RabbitMQ's: one connection per page.
  auto page = server::api_request(
      url, {"GET", "/api/stream/connections?page=2&page_size=1", "", "mon", "m0n"});
  ASSERT_TRUE(page.ok()) << page.error().message;
  ASSERT_EQ(page->status, 200) << page->body;
  auto p = nlohmann::json::parse(page->body);
  EXPECT_EQ(p["page"], 2);
  EXPECT_EQ(p["item_count"], 1);
  EXPECT_EQ(p["total_count"], conns.size());
  EXPECT_EQ(p["page_count"], conns.size());
  auto beyond = server::api_request(
      url, {"GET", "/api/stream/connections?page=99&page_size=1", "", "mon", "m0n"});
  ASSERT_TRUE(beyond.ok());
  EXPECT_EQ(beyond->status, 400);

  // A monitoring user reads, and changes nothing.
  auto change = strata_cli({"user", "delete", "app", "--node", url, "--admin-user", "mon",
                            "--admin-password-file", mon_pw});
  EXPECT_EQ(change.status, 1);
  EXPECT_NE(change.err.find("HTTP 403"), std::string::npos) << change.err;
  // A user with neither tag reads nothing.
  auto none = server::api_request(url, {"GET", "/api/stream/connections", "", "app", "a"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->status, 403);
}

// `strata users`: a hash made by hash-password is one RabbitMQ's format
// verifies, and list shows what a configuration gives each user.
TEST(UsersCli, HashPasswordAndList) {
  TempDir dir;
  const std::string pw = dir.sub("pw");
  std::ofstream(pw) << "s3cret\n";
  auto h = strata_cli(
      {"--json", "users", "hash-password", "--algorithm", "sha512", "--password-file", pw});
  ASSERT_EQ(h.status, 0) << h.err;
  auto j = nlohmann::json::parse(h.out);
  EXPECT_EQ(j["hashing_algorithm"], "rabbit_password_hashing_sha512");
  const std::string hash = j["password_hash"];
  auto ok = auth::verify_password("s3cret", hash, auth::HashAlgorithm::sha512);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_TRUE(*ok);

  const std::string cfg = dir.sub("serve.json");
  std::ofstream(cfg) << nlohmann::json{
      {"users",
       {{{"name", "h"}, {"password_hash", hash}, {"hashing_algorithm", j["hashing_algorithm"]}},
        {{"name", "guest"}, {"password", "guest"}, {"tags", {"administrator"}}}}},
      {"permissions",
       {{{"user", "guest"},
         {"vhost", "/"},
         {"configure", ".*"},
         {"write", ".*"},
         {"read", ".*"}}}}};
  auto l = strata_cli({"--json", "users", "list", "--config", cfg});
  ASSERT_EQ(l.status, 0) << l.err;
  auto users = nlohmann::json::parse(l.out)["users"];
  ASSERT_EQ(users.size(), 2u);
  EXPECT_EQ(users[0]["name"], "h");
  EXPECT_TRUE(users[0]["permissions"].empty());
  EXPECT_EQ(users[1]["loopback_only"], true);
  EXPECT_EQ(users[1]["node_login"], true);
  EXPECT_EQ(users[1]["permissions"][0]["write"], ".*");

  auto bad = strata_cli({"users", "hash-password", "--algorithm", "sha1", "--password-file", pw});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("--algorithm"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace strata::test
