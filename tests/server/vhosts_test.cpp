// Virtual hosts holding streams (common/stream_name.h, server/vhost_names.h)
// on a live `strata serve`: each vhost has its own streams, super streams and
// offsets under the same names, a client reaches only its own vhost's, and
// every command is checked against the user's permissions in the vhost it
// opened — the permission matrix, command by command, in two vhosts.
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "server/serve_fixture.h"
#include "support/cli.h"
#include "support/eventually.h"

namespace strata::test {
namespace {

using namespace std::chrono_literals;

class VhostsTest : public ServeTest {
 protected:
  void SetUp() override {
    ServeTest::SetUp();
    restart_with_config("vhosts.json", R"({
      "users": [ {"name": "guest", "password": "guest", "tags": ["administrator"]},
                 {"name": "alice", "password": "a"},
                 {"name": "bob", "password": "b"} ],
      "vhosts": [ {"name": "/"}, {"name": "prod"}, {"name": "dev/eu"} ],
      "permissions": [
        {"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"},
        {"user": "guest", "vhost": "prod", "configure": ".*", "write": ".*", "read": ".*"},
        {"user": "guest", "vhost": "dev/eu", "configure": ".*", "write": ".*", "read": ".*"},
        {"user": "alice", "vhost": "prod", "configure": ".*", "write": ".*", "read": ".*"},
        {"user": "alice", "vhost": "dev/eu", "configure": "", "write": "", "read": ".*"},
        {"user": "bob", "vhost": "dev/eu", "configure": ".*", "write": ".*", "read": ".*"} ]
    })",
                        {"--http", "127.0.0.1:0"});
  }
  StreamClient login(const std::string& user, const std::string& pw, const std::string& vhost) {
    auto c = StreamClient::connect(server_.port());
    EXPECT_TRUE(c.ok()) << c.error().message;
    auto st = c->handshake(user, pw, true, vhost);
    EXPECT_TRUE(st.ok()) << user << " in " << vhost << ": " << st.error().message;
    return std::move(c).value();
  }
  ResponseCode metadata_code(StreamClient& c, const std::string& name) {
    EXPECT_TRUE(c.send(MetadataRequest{c.corr(), {name}}).ok());
    auto r = c.expect<MetadataResponse>();
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (!r.ok() || r->streams.size() != 1) return ResponseCode::internal_error;
    // The name comes back as the client gave it, never as stored.
    EXPECT_EQ(r->streams[0].stream, name);
    return r->streams[0].code;
  }
  template <class Response, class Request>
  ResponseCode code_of(StreamClient& c, Request req) {
    EXPECT_TRUE(c.send(req).ok());
    auto r = c.expect<Response>();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->code : ResponseCode::internal_error;
  }
  // Every command on `stream` (and a super stream "ss" over "p0", "p1")
  // as `c` is answered, by command name.
  std::map<std::string, ResponseCode> matrix(StreamClient& c, const std::string& stream) {
    std::map<std::string, ResponseCode> m;
    m["create"] = code_of<CreateStreamResponse>(c, CreateStreamRequest{c.corr(), "fresh", {}});
    m["declare publisher"] =
        code_of<DeclarePublisherResponse>(c, DeclarePublisherRequest{c.corr(), 7, "ref", stream});
    m["query publisher sequence"] = code_of<QueryPublisherSequenceResponse>(
        c, QueryPublisherSequenceRequest{c.corr(), "ref", stream});
    m["subscribe"] = code_of<SubscribeResponse>(
        c, SubscribeRequest{c.corr(), 9, stream, {OffsetType::first, 0}, 0, {}});
    m["query offset"] =
        code_of<QueryOffsetResponse>(c, QueryOffsetRequest{c.corr(), "nobody", stream});
    m["stream stats"] = code_of<StreamStatsResponse>(c, StreamStatsRequest{c.corr(), stream});
    m["metadata"] = metadata_code(c, stream);
    m["resolve offset spec"] = code_of<ResolveOffsetSpecResponse>(
        c, ResolveOffsetSpecRequest{c.corr(), stream, {OffsetType::last, 0}, {}});
    m["create super stream"] = code_of<CreateSuperStreamResponse>(
        c, CreateSuperStreamRequest{c.corr(), "fresh-ss", {"fresh-p0"}, {"k"}, {}});
    m["partitions"] = code_of<PartitionsResponse>(c, PartitionsRequest{c.corr(), "ss"});
    m["route"] = code_of<RouteResponse>(c, RouteRequest{c.corr(), "k0", "ss"});
    m["delete super stream"] =
        code_of<DeleteSuperStreamResponse>(c, DeleteSuperStreamRequest{c.corr(), "ss"});
    m["delete"] = code_of<DeleteStreamResponse>(c, DeleteStreamRequest{c.corr(), stream});
    return m;
  }
  // "orders" holding `bodies`, and super stream "ss" over "p0" and "p1",
  // in `vhost`, made by guest.
  void fill(const std::string& vhost, const std::vector<std::string>& msgs) {
    StreamClient g = login("guest", "guest", vhost);
    create(g, "orders");
    declare(g, 1, "orders");
    publish_confirmed(g, 1, 0, msgs);
    ASSERT_EQ(code_of<CreateSuperStreamResponse>(
                  g, CreateSuperStreamRequest{g.corr(), "ss", {"p0", "p1"}, {"k0", "k1"}, {}}),
              ResponseCode::ok);
  }
};

// The same names in three vhosts are three streams; each client reads its
// own vhost's, by the names it gave, and nothing of the others'.
TEST_F(VhostsTest, EachVhostHasItsOwnStreamsUnderTheSameNames) {
  fill("/", {"root-0", "root-1"});
  fill("prod", {"prod-0"});
  fill("dev/eu", {"dev-0", "dev-1", "dev-2"});
  const std::map<std::string, std::vector<std::string>> want = {
      {"/", {"root-0", "root-1"}}, {"prod", {"prod-0"}}, {"dev/eu", {"dev-0", "dev-1", "dev-2"}}};
  auto check = [&] {
    for (const auto& [vhost, msgs] : want) {
      StreamClient c = login("guest", "guest", vhost);
      ASSERT_TRUE(
          c.send(SubscribeRequest{c.corr(), 1, "orders", {OffsetType::first, 0}, 10, {}}).ok());
      ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok) << vhost;
      EXPECT_EQ(consume(c, 1, msgs.size()), msgs) << vhost;
      ASSERT_TRUE(c.send(PartitionsRequest{c.corr(), "ss"}).ok());
      auto parts = c.expect<PartitionsResponse>();
      ASSERT_TRUE(parts.ok());
      EXPECT_EQ(parts->streams, (std::vector<std::string>{"p0", "p1"})) << vhost;
      ASSERT_TRUE(c.send(RouteRequest{c.corr(), "k1", "ss"}).ok());
      EXPECT_EQ(c.expect<RouteResponse>()->streams, (std::vector<std::string>{"p1"})) << vhost;
    }
  };
  check();
  // The stored names of other vhosts are nothing to a client: not from
  // "/" (a name with a line feed is no stream there), not from another.
  StreamClient root = login("guest", "guest", "/");
  EXPECT_EQ(metadata_code(root, "prod\norders"), ResponseCode::stream_does_not_exist);
  EXPECT_EQ(code_of<CreateStreamResponse>(root, CreateStreamRequest{root.corr(), "prod\nx", {}}),
            ResponseCode::precondition_failed);
  StreamClient prod = login("guest", "guest", "prod");
  EXPECT_EQ(metadata_code(prod, "dev/eu\norders"), ResponseCode::stream_does_not_exist);
  // A stream deleted in one vhost is still there in the others.
  ASSERT_EQ(code_of<DeleteStreamResponse>(prod, DeleteStreamRequest{prod.corr(), "p0"}),
            ResponseCode::ok);
  EXPECT_EQ(metadata_code(prod, "p0"), ResponseCode::stream_does_not_exist);
  EXPECT_EQ(metadata_code(root, "p0"), ResponseCode::ok);
  // Every log event is one line, though the stored names hold a line feed:
  // a stream is named with its vhost (printable_stream), never raw.
  {
    std::istringstream log(server_.process().stdout_text());
    std::string line;
    bool named = false;
    while (std::getline(log, line)) {
      EXPECT_TRUE(line.starts_with("[") || line.starts_with("strata serve:")) << line;
      named = named || line.find("p0 in vhost \"prod\"") != std::string::npos;
      EXPECT_EQ(line.find("prod\\x0ap0"), std::string::npos) << line;
    }
    EXPECT_TRUE(named) << server_.process().stdout_text();
  }
  // And all of it outlives a restart.
  const std::string cfg = dir_.sub("vhosts.json");
  ASSERT_EQ(server_.stop(), 0);
  server_ = ServeProcess::start(dir_.sub("data"), {"--config", cfg}, dir_.path());
  ASSERT_GT(server_.port(), 0) << server_.process().stderr_text();
  StreamClient prod2 = login("guest", "guest", "prod");
  EXPECT_EQ(metadata_code(prod2, "p0"), ResponseCode::stream_does_not_exist);
  ASSERT_TRUE(
      prod2.send(SubscribeRequest{prod2.corr(), 1, "orders", {OffsetType::first, 0}, 10, {}}).ok());
  ASSERT_EQ(prod2.expect<SubscribeResponse>()->code, ResponseCode::ok);
  EXPECT_EQ(consume(prod2, 1, 1), (std::vector<std::string>{"prod-0"}));
}

// Offsets stored under one reference are kept per vhost.
TEST_F(VhostsTest, OffsetsAreKeptPerVhost) {
  fill("/", {"a", "b", "c"});
  fill("prod", {"x", "y", "z"});
  StreamClient root = login("guest", "guest", "/");
  StreamClient prod = login("guest", "guest", "prod");
  ASSERT_TRUE(root.send(StoreOffsetRequest{"app", "orders", 2}).ok());
  ASSERT_TRUE(prod.send(StoreOffsetRequest{"app", "orders", 1}).ok());
  auto offset_of = [&](StreamClient& c) {
    for (int i = 0; i < 100; ++i) {
      EXPECT_TRUE(c.send(QueryOffsetRequest{c.corr(), "app", "orders"}).ok());
      auto r = c.expect<QueryOffsetResponse>();
      if (r.ok() && r->code == ResponseCode::ok) return int64_t(r->offset);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return int64_t(-1);
  };
  EXPECT_EQ(offset_of(root), 2);
  EXPECT_EQ(offset_of(prod), 1);
}

// The matrix: alice may do everything in "prod"; in "dev/eu" she may read
// only, so every configure or write command is refused with 16 (as
// RabbitMQ answers) and every read is served; bob, with nothing in "prod",
// cannot open it (12) and may do everything in "dev/eu".
TEST_F(VhostsTest, EveryCommandIsCheckedAgainstTheOpenedVhostsPermissions) {
  fill("prod", {"m"});
  fill("dev/eu", {"m"});
  const auto ok = ResponseCode::ok;
  const auto refused = ResponseCode::access_refused;
  {
    StreamClient c = login("alice", "a", "prod");
    for (const auto& [command, code] : matrix(c, "orders")) {
      // No offset was stored under that reference: 19, not a refusal.
      EXPECT_EQ(code, command == "query offset" ? ResponseCode::no_offset : ok) << command;
    }
  }
  {
    StreamClient c = login("alice", "a", "dev/eu");
    const std::map<std::string, ResponseCode> want = {
        {"create", refused},
        {"declare publisher", refused},
        {"query publisher sequence", ok},
        {"subscribe", ok},
        {"query offset", ResponseCode::no_offset},
        {"stream stats", ok},
        {"metadata", ok},
        {"resolve offset spec", ok},
        {"create super stream", refused},
        {"partitions", ok},
        {"route", refused},
        {"delete super stream", refused},
        {"delete", refused},
    };
    EXPECT_EQ(matrix(c, "orders"), want);
    // Nothing she was refused happened.
    StreamClient g = login("guest", "guest", "dev/eu");
    EXPECT_EQ(metadata_code(g, "orders"), ok);
    EXPECT_EQ(metadata_code(g, "fresh"), ResponseCode::stream_does_not_exist);
    EXPECT_EQ(code_of<PartitionsResponse>(g, PartitionsRequest{g.corr(), "ss"}), ok);
  }
  {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok());
    auto st = c->handshake("bob", "b", true, "prod");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("(code 12)"), std::string::npos) << st.error().message;
    StreamClient d = login("bob", "b", "dev/eu");
    // What alice left in dev/eu: bob may do all of it (the stream and the
    // super stream go at the end).
    for (const auto& [command, code] : matrix(d, "orders")) {
      EXPECT_EQ(code, command == "query offset" ? ResponseCode::no_offset : ok) << command;
    }
  }
  // A vhost nobody defined is refused to everyone, the administrator too.
  auto e = StreamClient::connect(server_.port());
  ASSERT_TRUE(e.ok());
  auto st = e->handshake("guest", "guest", true, "nowhere");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("(code 12)"), std::string::npos) << st.error().message;
  EXPECT_NE(server_.process().stdout_text().find("open of vhost 'nowhere' refused for user "
                                                 "'guest': no such vhost"),
            std::string::npos);
}

// RabbitMQ's user and vhost limits from the users/vhosts sections (or a
// definitions file): a user's max-connections and a vhost's override the
// server's, a vhost's max-queues caps its streams — each refusal the
// protocol's answer, logged.
TEST_F(VhostsTest, UserAndVhostLimitsAreEnforced) {
  restart_with_config("limits.json", R"({
      "server": { "max_connections_per_user": 100 },
      "users": [ {"name": "guest", "password": "guest", "tags": ["administrator"]},
                 {"name": "alice", "password": "a", "limits": {"max-connections": 1}} ],
      "vhosts": [ {"name": "/"},
                  {"name": "small", "limits": {"max-connections": 2, "max-queues": 2}} ],
      "permissions": [
        {"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"},
        {"user": "guest", "vhost": "small", "configure": ".*", "write": ".*", "read": ".*"},
        {"user": "alice", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"} ]
    })",
                      {"--http", "127.0.0.1:0"});
  auto refused_open = [&](const std::string& user, const std::string& pw,
                          const std::string& vhost) {
    auto c = StreamClient::connect(server_.port());
    if (!c.ok()) return false;
    auto st = c->handshake(user, pw, true, vhost);
    return !st.ok() && st.error().message.find("(code 12)") != std::string::npos;
  };
  {
    StreamClient a = login("alice", "a", "/");
    EXPECT_TRUE(refused_open("alice", "a", "/"));
  }
  // Her place comes back when the connection closes.
  EXPECT_TRUE(eventually(5s, [&] { return !refused_open("alice", "a", "/"); }));
  // A new password keeps her limit.
  const std::string admin_pw = dir_.sub("guest.pw"), alice_pw = dir_.sub("alice.pw");
  std::ofstream(admin_pw) << "guest\n";
  std::ofstream(alice_pw) << "a2\n";
  auto r = strata_cli({"user", "passwd", "alice", "--password-file", alice_pw, "--node",
                       serve_http_url(server_), "--admin-password-file", admin_pw});
  ASSERT_EQ(r.status, 0) << r.err;
  {
    StreamClient a = login("alice", "a2", "/");
    EXPECT_TRUE(refused_open("alice", "a2", "/"));
  }

  StreamClient s1 = login("guest", "guest", "small");
  StreamClient s2 = login("guest", "guest", "small");
  EXPECT_TRUE(refused_open("guest", "guest", "small"));
  // Two streams fit; a third is refused (17), a repeated create is still
  // answered as one (5); a super stream that would overflow it is refused.
  EXPECT_EQ(code_of<CreateStreamResponse>(s1, CreateStreamRequest{s1.corr(), "one", {}}),
            ResponseCode::ok);
  EXPECT_EQ(code_of<CreateSuperStreamResponse>(
                s1, CreateSuperStreamRequest{s1.corr(), "ss", {"p0", "p1"}, {"k0", "k1"}, {}}),
            ResponseCode::precondition_failed);
  EXPECT_EQ(code_of<CreateStreamResponse>(s1, CreateStreamRequest{s1.corr(), "two", {}}),
            ResponseCode::ok);
  EXPECT_EQ(code_of<CreateStreamResponse>(s1, CreateStreamRequest{s1.corr(), "three", {}}),
            ResponseCode::precondition_failed);
  EXPECT_EQ(code_of<CreateStreamResponse>(s1, CreateStreamRequest{s1.corr(), "two", {}}),
            ResponseCode::stream_already_exists);
  EXPECT_EQ(metadata_code(s1, "p0"), ResponseCode::stream_does_not_exist);
  // "/" has no such limit.
  StreamClient root = login("guest", "guest", "/");
  for (const char* n : {"one", "two", "three"}) {
    EXPECT_EQ(code_of<CreateStreamResponse>(root, CreateStreamRequest{root.corr(), n, {}}),
              ResponseCode::ok)
        << n;
  }
  const std::string out = server_.process().stdout_text();
  // Changed live, as RabbitMQ's /api/vhost-limits and /api/user-limits.
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--node", serve_http_url(server_), "--admin-password-file", admin_pw});
    return strata_cli(args);
  };
  r = cli({"vhost", "limit", "small", "--max-queues", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(code_of<CreateStreamResponse>(s1, CreateStreamRequest{s1.corr(), "three", {}}),
            ResponseCode::ok);
  r = cli({"vhost", "limit", "small", "--max-queues", "3", "--max-connections", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(code_of<CreateStreamResponse>(s1, CreateStreamRequest{s1.corr(), "four", {}}),
            ResponseCode::precondition_failed);
  StreamClient s3 = login("guest", "guest", "small");  // no connection limit now
  r = cli({"user", "limit", "alice", "--max-connections", "none"});
  ASSERT_EQ(r.status, 0) << r.err;
  {
    StreamClient a1 = login("alice", "a2", "/");
    StreamClient a2 = login("alice", "a2", "/");
  }
  r = cli({"user", "limit", "nobody", "--max-connections", "1"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("HTTP 404"), std::string::npos) << r.err;
  r = cli({"vhost", "limit", "small", "--max-queues", "many"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("'many' is not a count or none"), std::string::npos) << r.err;
  EXPECT_NE(out.find("the user's connection limit (1) reached"), std::string::npos) << out;
  EXPECT_NE(out.find("the vhost's connection limit (2) reached"), std::string::npos) << out;
  EXPECT_NE(out.find("vhost 'small' has reached its max-queues limit (2 streams)"),
            std::string::npos)
      << out;
}

// Vhosts made and deleted on the running node (`strata vhost`, the
// management API), RabbitMQ's definitions imported with their vhosts, and a
// vhost's deletion taking its connections, streams and super streams.
TEST_F(VhostsTest, VhostsChangeLiveAndTakeTheirStreamsWithThem) {
  const std::string url = serve_http_url(server_);
  ASSERT_FALSE(url.empty()) << server_.process().stdout_text();
  const std::string admin_pw = dir_.sub("guest.pw");
  std::ofstream(admin_pw) << "guest\n";
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--node", url, "--admin-password-file", admin_pw});
    return strata_cli(args);
  };
  auto r = cli({"vhost", "add", "team a", "--description", "a team"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_EQ(r.out, "vhost 'team a' added\n");
  // Nobody has permissions in it yet, not even the administrator.
  {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->handshake("guest", "guest", true, "team a").ok());
  }
  ASSERT_EQ(cli({"permissions", "set", "alice", ".*", ".*", ".*", "--vhost", "team a"}).status, 0);
  StreamClient alice = login("alice", "a", "team a");
  create(alice, "orders");
  declare(alice, 1, "orders");
  publish_confirmed(alice, 1, 0, {"t0"});
  ASSERT_EQ(code_of<CreateSuperStreamResponse>(
                alice, CreateSuperStreamRequest{alice.corr(), "ss", {"p0"}, {"k0"}, {}}),
            ResponseCode::ok);
  fill("dev/eu", {"dev-0"});
  // The CLI names a stream, super stream or offset of a vhost with --vhost.
  r = cli({"stream", "create", "made", "--vhost", "team a", "--max-age", "7D"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(metadata_code(alice, "made"), ResponseCode::ok);
  r = cli({"super-stream", "create", "cli-ss", "--partitions", "2", "--vhost", "team a"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(R"(["cli-ss-0","cli-ss-1"])"), std::string::npos) << r.out;
  EXPECT_EQ(metadata_code(alice, "cli-ss-1"), ResponseCode::ok);
  r = cli({"offset", "set", "--stream", "orders", "--reference", "app", "--offset", "0", "--vhost",
           "team a"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(alice.send(QueryOffsetRequest{alice.corr(), "app", "orders"}).ok());
  auto q = alice.expect<QueryOffsetResponse>();
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->code, ResponseCode::ok);
  EXPECT_EQ(q->offset, 0u);
  // The same names in "/" are other streams: none there.
  StreamClient root = login("guest", "guest", "/");
  EXPECT_EQ(metadata_code(root, "made"), ResponseCode::stream_does_not_exist);

  // RabbitMQ 3.10.8's export, imported whole: its vhost "dev/x" is added,
  // its streams land in its "prod".
  const std::string rabbit = STRATA_AUTH_TESTDATA "/rabbitmq-3.10.8-definitions.json";
  r = cli({"--json", "definitions", "import", rabbit});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["vhosts"], 1) << r.out;  // dev/x; "/" and prod were there
  EXPECT_EQ(j["streams_created"],
            nlohmann::json::array({"audit in vhost \"prod\"", "orders in vhost \"prod\""}))
      << r.out;
  EXPECT_EQ(j["streams_existing"], nlohmann::json::array()) << r.out;
  r = cli({"vhost", "list"});
  EXPECT_EQ(r.out, "/\nprod\ndev/eu\nteam a\ndev/x\n") << r.err;

  // The export names every stream with its vhost.
  const std::string out = dir_.sub("export.json");
  ASSERT_EQ(cli({"definitions", "export", "--file", out}).status, 0);
  auto exported = nlohmann::json::parse(std::ifstream(out));
  std::set<std::pair<std::string, std::string>> queues;
  for (const auto& q : exported["queues"]) queues.emplace(q["vhost"], q["name"]);
  for (const auto& want : std::vector<std::pair<std::string, std::string>>{{"team a", "orders"},
                                                                           {"team a", "p0"},
                                                                           {"prod", "orders"},
                                                                           {"prod", "audit"},
                                                                           {"dev/eu", "orders"},
                                                                           {"dev/eu", "p0"},
                                                                           {"dev/eu", "p1"}}) {
    EXPECT_TRUE(queues.count(want))
        << want.first << "/" << want.second << " in " << exported["queues"].dump();
  }

  // Deleted: alice's connection is closed, the vhost's streams and super
  // streams are gone, and every other vhost keeps its own.
  r = cli({"vhost", "delete", "team a"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto close = alice.expect<CloseRequest>();
  ASSERT_TRUE(close.ok()) << close.error().message;
  EXPECT_EQ(close->code, ResponseCode::virtual_host_access_failure);
  ASSERT_EQ(cli({"definitions", "export", "--file", out}).status, 0);
  exported = nlohmann::json::parse(std::ifstream(out));
  queues.clear();
  for (const auto& q : exported["queues"]) queues.emplace(q["vhost"], q["name"]);
  EXPECT_FALSE(queues.count({"team a", "orders"})) << exported["queues"].dump();
  EXPECT_FALSE(queues.count({"team a", "p0"})) << exported["queues"].dump();
  EXPECT_TRUE(queues.count({"prod", "orders"})) << exported["queues"].dump();
  EXPECT_TRUE(queues.count({"dev/eu", "p0"})) << exported["queues"].dump();
  EXPECT_EQ(cli({"vhost", "delete", "team a"}).status, 1);  // 404 now
  r = cli({"vhost", "delete", "/"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot be deleted"), std::string::npos) << r.err;

  // Re-added, it is empty and nobody's permissions come back.
  ASSERT_EQ(cli({"vhost", "add", "team a"}).status, 0);
  {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->handshake("alice", "a", true, "team a").ok());
  }
  ASSERT_EQ(cli({"permissions", "set", "guest", ".*", ".*", ".*", "--vhost", "team a"}).status, 0);
  StreamClient g = login("guest", "guest", "team a");
  EXPECT_EQ(metadata_code(g, "orders"), ResponseCode::stream_does_not_exist);

  // The live vhosts outlive a restart with the same configuration.
  const std::string cfg = dir_.sub("vhosts.json");
  ASSERT_EQ(server_.stop(), 0);
  server_ = ServeProcess::start(dir_.sub("data"), {"--config", cfg}, dir_.path());
  ASSERT_GT(server_.port(), 0) << server_.process().stderr_text();
  StreamClient g2 = login("guest", "guest", "team a");
  StreamClient prod = login("guest", "guest", "prod");
  EXPECT_EQ(metadata_code(prod, "audit"), ResponseCode::ok);
}

// Streams being created in a vhost as it is deleted: the deletion takes
// the vhost out of the rules, closes its connections and deletes its
// streams, and a creation that began before and ended after the streams
// were listed deletes its stream again. Nothing of the vhost is left.
TEST_F(VhostsTest, CreatesRacingTheVhostsDeletionLeaveNoStreamBehind) {
  const std::string url = serve_http_url(server_);
  const std::string admin_pw = dir_.sub("guest.pw");
  std::ofstream(admin_pw) << "guest\n";
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--node", url, "--admin-password-file", admin_pw});
    return strata_cli(args);
  };
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(cli({"vhost", "add", "racy"}).status, 0);
    ASSERT_EQ(cli({"permissions", "set", "guest", ".*", ".*", ".*", "--vhost", "racy"}).status, 0);
    std::vector<StreamClient> clients;
    for (int i = 0; i < 2; ++i) clients.push_back(login("guest", "guest", "racy"));
    // Each client asks for 40 streams at once; the vhost is deleted as
    // they are made.
    for (int i = 0; i < 2; ++i) {
      Bytes all;
      for (int j = 0; j < 40; ++j) {
        encode(CreateStreamRequest{clients[i].corr(), fmt::format("r{}-c{}-{}", round, i, j), {}},
               &all);
      }
      ASSERT_TRUE(clients[i].send_raw(all).ok());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * round));
    auto r = cli({"vhost", "delete", "racy"});
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    for (auto& c : clients) EXPECT_TRUE(c.closed_by_server(10s));
    // Creations already handed to the pool end after the connections.
    std::this_thread::sleep_for(1s);
    const std::string out = dir_.sub("export.json");
    ASSERT_EQ(cli({"definitions", "export", "--file", out}).status, 0);
    auto exported = nlohmann::json::parse(std::ifstream(out));
    std::vector<std::string> left;
    for (const auto& q : exported["queues"]) {
      if (q["vhost"] == "racy") left.push_back(q["name"]);
    }
    EXPECT_TRUE(left.empty()) << "round " << round << ": " << left.size() << " streams left, "
                              << nlohmann::json(left).dump();
  }
}

}  // namespace
}  // namespace strata::test
