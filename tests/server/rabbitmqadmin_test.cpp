// RabbitMQ's own management client against strata: the rabbitmqadmin of
// Debian's rabbitmq-server package (the script RabbitMQ ships for its
// management API, run as it is) declares, lists, exports, imports and
// deletes vhosts, users, permissions and streams — queues of type stream —
// on a running `strata serve`, and what it makes is what stream clients
// then find.
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "server/serve_fixture.h"
#include "support/cli.h"
#include "support/eventually.h"

namespace strata::test {
namespace {

using json = nlohmann::json;

constexpr const char* kRabbitmqadmin = "/usr/bin/rabbitmqadmin";

class RabbitmqadminTest : public ServeTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kRabbitmqadmin))
        << kRabbitmqadmin << " is missing: scripts/setup.sh installs Debian's rabbitmq-server";
    ServeTest::SetUp();
    restart_with_config("users.json", R"({
      "users": [ {"name": "guest", "password": "guest", "tags": ["administrator"]} ],
      "permissions": [
        {"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"} ]
    })",
                        {"--http", "127.0.0.1:0"});
    const std::string url = serve_http_url(server_);
    ASSERT_FALSE(url.empty()) << server_.process().stdout_text();
    http_port_ = url.substr(url.rfind(':') + 1);
  }

  // rabbitmqadmin ARGS... as `user` against the node's HTTP port.
  CliOut admin(std::vector<std::string> args, const std::string& user = "guest",
               const std::string& password = "guest") {
    std::vector<std::string> argv = {kRabbitmqadmin, "-H", "127.0.0.1", "-P",    http_port_,
                                     "-u",           user, "-p",        password};
    argv.insert(argv.end(), args.begin(), args.end());
    TempDir logs;
    auto p = Process::spawn(argv, logs.path());
    auto st = p.wait(std::chrono::seconds(60));
    return CliOut{st.value_or(-1), p.stdout_text(), p.stderr_text()};
  }
  // `rabbitmqadmin -f raw_json list WHAT` (with `vhost`: -V vhost), by name.
  std::map<std::string, json> listed(const std::string& what, const std::string& vhost = "") {
    std::vector<std::string> args = {"-f", "raw_json"};
    if (!vhost.empty()) args.insert(args.end(), {"-V", vhost});
    args.insert(args.end(), {"list", what});
    auto out = admin(args);
    EXPECT_EQ(out.status, 0) << out.err;
    std::map<std::string, json> by_name;
    const json doc = json::parse(out.out, nullptr, false);
    EXPECT_TRUE(doc.is_array()) << out.out;
    if (!doc.is_array()) return by_name;
    for (const auto& e : doc) {
      const std::string name = e.value("name", e.value("user", std::string()));
      const std::string key = e.contains("vhost") && e["vhost"].is_string()
                                  ? e["vhost"].get<std::string>() + "|" + name
                                  : name;
      by_name[key] = e;
    }
    return by_name;
  }
  void ok(const CliOut& out) { EXPECT_EQ(out.status, 0) << out.out << out.err; }

  std::string http_port_;
};

TEST_F(RabbitmqadminTest, StreamsAreDeclaredListedAndDeletedAsQueues) {
  ok(admin({"declare", "vhost", "name=prod"}));
  ok(admin({"declare", "permission", "vhost=prod", "user=guest", "configure=.*", "write=.*",
            "read=.*"}));
  ok(admin({"-V", "prod", "declare", "queue", "name=orders", "queue_type=stream",
            R"(arguments={"x-max-length-bytes": 20000000, "x-max-age": "7D"})"}));
  ok(admin({"declare", "queue", "name=audit", R"(arguments={"x-queue-type": "stream"})"}));

  auto queues = listed("queues");
  ASSERT_EQ(queues.size(), 2u);
  ASSERT_TRUE(queues.count("prod|orders"));
  const json& orders = queues["prod|orders"];
  EXPECT_EQ(orders["type"], "stream");
  EXPECT_EQ(orders["durable"], true);
  EXPECT_EQ(orders["arguments"]["x-queue-type"], "stream");
  EXPECT_EQ(orders["arguments"]["x-max-length-bytes"], 20000000);
  EXPECT_EQ(orders["messages"], 0);
  EXPECT_TRUE(queues.count("/|audit"));
  // -V lists one vhost.
  auto prod = listed("queues", "prod");
  ASSERT_EQ(prod.size(), 1u);
  EXPECT_TRUE(prod.count("prod|orders"));

  // A stream client finds it in its vhost, and the count follows.
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->handshake("guest", "guest", true, "prod").ok());
  declare(*c, 1, "orders");
  publish_confirmed(*c, 1, 1, bodies(25, "m"));
  EXPECT_TRUE(eventually(std::chrono::seconds(10), [&] {
    return listed("queues", "prod")["prod|orders"]["messages"] == 25;
  })) << listed("queues", "prod")["prod|orders"].dump();
  auto overview = admin({"-f", "raw_json", "show", "overview"});
  ok(overview);
  const json ov = json::parse(overview.out, nullptr, false);
  ASSERT_TRUE(ov.is_array() && ov.size() == 1) << overview.out;
  EXPECT_EQ(ov[0]["queue_totals"]["messages"], 25) << overview.out;
  EXPECT_EQ(ov[0]["object_totals"]["queues"], 2) << overview.out;

  // Declared again alike: nothing changes; with other arguments: refused
  // with RabbitMQ's reason shown by rabbitmqadmin.
  ok(admin({"-V", "prod", "declare", "queue", "name=orders", "queue_type=stream",
            R"(arguments={"x-max-length-bytes": 20000000, "x-max-age": "7D"})"}));
  auto other = admin({"-V", "prod", "declare", "queue", "name=orders", "queue_type=stream",
                      R"(arguments={"x-max-age": "1D"})"});
  EXPECT_NE(other.status, 0);
  EXPECT_TRUE(contains(other.out + other.err, "orders")) << other.out << other.err;

  // What strata does not hold is refused, naming why.
  auto classic = admin({"declare", "queue", "name=jobs"});
  EXPECT_NE(classic.status, 0);
  EXPECT_TRUE(contains(classic.out + classic.err, "streams only")) << classic.out << classic.err;
  auto quorum = admin({"declare", "queue", "name=jobs", "queue_type=quorum"});
  EXPECT_NE(quorum.status, 0);
  EXPECT_TRUE(contains(quorum.out + quorum.err, "quorum")) << quorum.out << quorum.err;
  auto transient = admin({"declare", "queue", "name=jobs", "queue_type=stream", "durable=false"});
  EXPECT_NE(transient.status, 0);
  EXPECT_TRUE(contains(transient.out + transient.err, "durable")) << transient.err;
  auto purge = admin({"-V", "prod", "purge", "queue", "name=orders"});
  EXPECT_NE(purge.status, 0);
  EXPECT_TRUE(contains(purge.out + purge.err, "cannot be purged")) << purge.out << purge.err;
  EXPECT_EQ(listed("queues").size(), 2u);
  auto in_nowhere = admin({"-V", "nowhere", "declare", "queue", "name=x", "queue_type=stream"});
  EXPECT_NE(in_nowhere.status, 0);

  ok(admin({"-V", "prod", "delete", "queue", "name=orders"}));
  EXPECT_EQ(listed("queues", "prod").size(), 0u);
  auto gone = admin({"-V", "prod", "delete", "queue", "name=orders"});
  EXPECT_NE(gone.status, 0);
  EXPECT_TRUE(contains(gone.out + gone.err, "Not found")) << gone.out << gone.err;
}

TEST_F(RabbitmqadminTest, UsersAndPermissionsItMakesLogInAndAreTakenAway) {
  ok(admin({"declare", "vhost", "name=dev"}));
  ok(admin({"declare", "user", "name=alice", "password=s3cret", "tags=monitoring"}));
  ok(admin({"declare", "permission", "vhost=dev", "user=alice", "configure=^a-.*", "write=^a-.*",
            "read=.*"}));
  auto users = listed("users");
  ASSERT_TRUE(users.count("alice"));
  EXPECT_EQ(users["alice"]["hashing_algorithm"], "rabbit_password_hashing_sha256");
  EXPECT_FALSE(users["alice"].contains("password"));
  EXPECT_TRUE(listed("vhosts").count("dev"));
  EXPECT_TRUE(listed("permissions").count("dev|alice"));

  {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c->handshake("alice", "s3cret", true, "dev").ok());
    create(*c, "a-1");
    // Outside her configure pattern: refused as RabbitMQ refuses it.
    ASSERT_TRUE(c->send(CreateStreamRequest{c->corr(), "b-1", {}}).ok());
    auto r = c->expect<CreateStreamResponse>();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->code, ResponseCode::access_refused);
  }
  // A monitoring user lists through rabbitmqadmin and changes nothing.
  auto seen = admin({"-f", "raw_json", "list", "queues"}, "alice", "s3cret");
  ok(seen);
  EXPECT_TRUE(contains(seen.out, "a-1")) << seen.out;
  EXPECT_NE(admin({"declare", "queue", "name=x", "queue_type=stream"}, "alice", "s3cret").status,
            0);

  // Her permissions taken away: her next login to dev is refused.
  ok(admin({"delete", "permission", "vhost=dev", "user=alice"}));
  {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->handshake("alice", "s3cret", true, "dev").ok());
  }
  ok(admin({"delete", "user", "name=alice"}));
  EXPECT_FALSE(listed("users").count("alice"));
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->handshake("alice", "s3cret", true, "/").ok());
}

TEST_F(RabbitmqadminTest, DefinitionsMoveBetweenVhostsAndServers) {
  ok(admin({"declare", "vhost", "name=prod"}));
  ok(admin({"declare", "vhost", "name=staging"}));
  ok(admin({"declare", "user", "name=bob", "password=b0b-pw", "tags="}));
  ok(admin(
      {"declare", "permission", "vhost=prod", "user=bob", "configure=.*", "write=.*", "read=.*"}));
  ok(admin({"-V", "prod", "declare", "queue", "name=events", "queue_type=stream",
            R"(arguments={"x-max-length-bytes": 5000000})"}));

  ok(admin({"declare", "vhost_limit", "vhost=prod", "name=max-connections", "value=7"}));

  // One vhost's queues and limits, into another vhost.
  const std::string vhost_file = dir_.sub("prod.json");
  ok(admin({"-V", "prod", "export", vhost_file}));
  const json exported = json::parse(std::ifstream(vhost_file), nullptr, false);
  ASSERT_TRUE(exported.is_object());
  EXPECT_FALSE(exported.contains("users"));
  ASSERT_EQ(exported["queues"].size(), 1u) << exported.dump();
  EXPECT_FALSE(exported["queues"][0].contains("vhost"));
  ASSERT_EQ(exported["parameters"].size(), 1u) << exported.dump();
  EXPECT_EQ(exported["parameters"][0]["component"], "vhost-limits");
  EXPECT_FALSE(exported["parameters"][0].contains("vhost"));
  ok(admin({"-V", "staging", "import", vhost_file}));
  auto staged = listed("queues", "staging");
  ASSERT_TRUE(staged.count("staging|events"));
  EXPECT_EQ(staged["staging|events"]["arguments"]["x-max-length-bytes"], 5000000);
  // The limits came along, as RabbitMQ imports a file's parameters into
  // the vhost named.
  const auto listed_limits = admin({"-f", "raw_json", "list", "vhost_limits"});
  ok(listed_limits);
  const json limits = json::parse(listed_limits.out, nullptr, false);
  ASSERT_TRUE(limits.is_array()) << listed_limits.out;
  std::map<std::string, json> by_vhost;
  for (const auto& l : limits) by_vhost[l.value("vhost", "")] = l["value"];
  EXPECT_EQ(by_vhost["staging"], (json{{"max-connections", 7}})) << limits.dump();
  EXPECT_EQ(by_vhost["prod"], (json{{"max-connections", 7}})) << limits.dump();
  // A file with bad limits changes nothing.
  json bad = exported;
  bad["parameters"][0]["value"] = {{"max-connections", "many"}};
  bad["queues"][0]["name"] = "other";
  const std::string bad_file = dir_.sub("bad.json");
  std::ofstream(bad_file) << bad.dump();
  EXPECT_NE(admin({"-V", "staging", "import", bad_file}).status, 0);
  EXPECT_FALSE(listed("queues", "staging").count("staging|other"));

  // Everything, into a second server: bob logs in there with his password.
  const std::string all = dir_.sub("all.json");
  ok(admin({"export", all}));
  TempDir other_dir;
  std::ofstream(other_dir.sub("users.json")) << R"({
      "users": [ {"name": "guest", "password": "guest", "tags": ["administrator"]} ] })";
  auto other = ServeProcess::start(
      other_dir.sub("data"), {"--config", other_dir.sub("users.json"), "--http", "127.0.0.1:0"},
      other_dir.path());
  ASSERT_GT(other.port(), 0) << other.process().stderr_text();
  const std::string other_url = other.http_url();
  ASSERT_FALSE(other_url.empty());
  const std::string saved_port = http_port_;
  http_port_ = other_url.substr(other_url.rfind(':') + 1);
  ok(admin({"import", all}));
  auto there = listed("queues");
  EXPECT_TRUE(there.count("prod|events"));
  EXPECT_TRUE(there.count("staging|events"));
  http_port_ = saved_port;
  auto c = StreamClient::connect(other.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->handshake("bob", "b0b-pw", true, "prod").ok());
  declare(*c, 1, "events");
  publish_confirmed(*c, 1, 1, bodies(3, "e"));
}

TEST_F(RabbitmqadminTest, ConnectionsAndNodesAreListedAndAConnectionClosed) {
  auto c = open_client();
  auto conns = listed("connections");
  ASSERT_EQ(conns.size(), 1u);
  const json conn = conns.begin()->second;
  EXPECT_EQ(conn["user"], "guest");
  const std::string name = conn["name"];
  // RabbitMQ names a connection by its two ends.
  EXPECT_TRUE(std::regex_match(
      name, std::regex(fmt::format(R"(127\.0\.0\.1:[0-9]+ -> 127\.0\.0\.1:{})", server_.port()))))
      << conn.dump();
  auto nodes = listed("nodes");
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes.begin()->second["running"], true);
  // The process's resident memory, as RabbitMQ's mem_used.
  EXPECT_GT(nodes.begin()->second.value("mem_used", uint64_t(0)), uint64_t(1) << 20)
      << nodes.begin()->second.dump();

  ok(admin({"close", "connection", "name=" + name}));
  EXPECT_TRUE(c.closed_by_server());
  EXPECT_TRUE(eventually(std::chrono::seconds(10), [&] { return listed("connections").empty(); }));
}

}  // namespace
}  // namespace strata::test
