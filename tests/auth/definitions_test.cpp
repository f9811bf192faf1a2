#include "auth/definitions.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace strata::auth {
namespace {

using json = nlohmann::json;

// Written by RabbitMQ 3.10.8 (`rabbitmqctl export_definitions`) after:
// add_vhost prod --description "production streams"; add_vhost dev/x;
// add_user alice alice-pw, tags administrator monitoring; add_user bob
// "bob pw"; add_user carol x then clear_password carol; permissions
// alice@prod .* .* .*, bob@prod "" ^orders\. orders|audit, bob@dev/x ^$ .*
// ^bob-; an import of two streams (orders, audit), a quorum queue (jobs)
// and a classic queue (legacy). guest/guest is RabbitMQ's default user.
std::string real_export() {
  std::ifstream in(STRATA_AUTH_TESTDATA "/rabbitmq-3.10.8-definitions.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const User* find(const Definitions& d, std::string_view name) {
  for (const User& u : d.users) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

TEST(Definitions, ReadsRabbitMQ310Export) {
  std::string text = real_export();
  ASSERT_FALSE(text.empty());
  auto d = parse_definitions(text, "rabbitmq-3.10.8-definitions.json");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->rabbit_version, "3.10.8");
  ASSERT_EQ(d->users.size(), 4u);
  const User* alice = find(*d, "alice");
  ASSERT_NE(alice, nullptr);
  EXPECT_EQ(alice->algorithm, HashAlgorithm::sha256);
  EXPECT_EQ(alice->tags, (std::vector<std::string>{"administrator", "monitoring"}));
  ASSERT_NE(find(*d, "carol"), nullptr);
  EXPECT_EQ(find(*d, "carol")->password_hash, "");

  ASSERT_EQ(d->vhosts.size(), 3u);
  bool saw_prod = false;
  for (const VHost& v : d->vhosts) {
    if (v.name == "prod") {
      saw_prod = true;
      EXPECT_EQ(v.description, "production streams");
    }
  }
  EXPECT_TRUE(saw_prod);
  EXPECT_EQ(d->permissions.size(), 4u);

  ASSERT_EQ(d->streams.size(), 2u);
  EXPECT_EQ(d->streams[0].name, "audit");
  EXPECT_EQ(d->streams[0].vhost, "prod");
  EXPECT_EQ(d->streams[0].arguments["x-max-age"], "7D");
  EXPECT_EQ(d->streams[1].name, "orders");
  EXPECT_EQ(d->streams[1].arguments["x-max-length-bytes"], 20000000000LL);
  ASSERT_EQ(d->skipped_queues.size(), 2u);
  EXPECT_EQ(d->skipped_queues[0].name, "legacy");
  EXPECT_EQ(d->skipped_queues[0].type, "classic");
  EXPECT_EQ(d->skipped_queues[1].name, "jobs");
  EXPECT_EQ(d->skipped_queues[1].type, "quorum");

  // The passwords RabbitMQ hashed log in here.
  auto ac = build_access_control(*d);
  ASSERT_TRUE(ac.ok()) << ac.error().to_string();
  EXPECT_EQ((*ac)->authenticate_plain("alice", "alice-pw", false), AuthOutcome::ok);
  EXPECT_EQ((*ac)->authenticate_plain("bob", "bob pw", false), AuthOutcome::ok);
  EXPECT_EQ((*ac)->authenticate_plain("bob", "bob-pw", false), AuthOutcome::refused);
  EXPECT_EQ((*ac)->authenticate_plain("guest", "guest", true), AuthOutcome::ok);
  EXPECT_EQ((*ac)->authenticate_plain("guest", "guest", false), AuthOutcome::loopback_only);
  EXPECT_EQ((*ac)->authenticate_plain("carol", "x", true), AuthOutcome::refused);
  EXPECT_TRUE((*ac)->check("bob", "prod", Op::write, "orders.eu"));
  EXPECT_FALSE((*ac)->check("bob", "prod", Op::write, "orders"));
  EXPECT_TRUE((*ac)->check("bob", "prod", Op::read, "audit"));
  EXPECT_FALSE((*ac)->check("bob", "prod", Op::configure, "orders"));
  EXPECT_TRUE((*ac)->check("bob", "dev/x", Op::read, "bob-1"));
  EXPECT_FALSE((*ac)->vhost_access("alice", "/"));
  EXPECT_TRUE((*ac)->has_tag("guest", "administrator"));
}

TEST(Definitions, RoundTrip) {
  auto d = parse_definitions(real_export(), "real");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  std::string out = export_definitions(*d);
  auto back = parse_definitions(out, "exported");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->rabbit_version, d->rabbit_version);
  ASSERT_EQ(back->users.size(), d->users.size());
  for (size_t i = 0; i < d->users.size(); ++i) {
    EXPECT_EQ(back->users[i].name, d->users[i].name);
    EXPECT_EQ(back->users[i].password_hash, d->users[i].password_hash);
    EXPECT_EQ(back->users[i].algorithm, d->users[i].algorithm);
    EXPECT_EQ(back->users[i].tags, d->users[i].tags);
  }
  ASSERT_EQ(back->vhosts.size(), d->vhosts.size());
  for (size_t i = 0; i < d->vhosts.size(); ++i) {
    EXPECT_EQ(back->vhosts[i].name, d->vhosts[i].name);
    EXPECT_EQ(back->vhosts[i].description, d->vhosts[i].description);
  }
  ASSERT_EQ(back->permissions.size(), d->permissions.size());
  for (size_t i = 0; i < d->permissions.size(); ++i) {
    const auto &a = d->permissions[i], &b = back->permissions[i];
    EXPECT_EQ(std::tie(a.user, a.vhost, a.configure, a.write, a.read),
              std::tie(b.user, b.vhost, b.configure, b.write, b.read));
  }
  ASSERT_EQ(back->streams.size(), d->streams.size());
  for (size_t i = 0; i < d->streams.size(); ++i) {
    EXPECT_EQ(back->streams[i].name, d->streams[i].name);
    EXPECT_EQ(back->streams[i].vhost, d->streams[i].vhost);
    EXPECT_EQ(back->streams[i].arguments, d->streams[i].arguments);
  }
  EXPECT_TRUE(back->skipped_queues.empty());
  // A second export is the same text: the export is a fixed point.
  EXPECT_EQ(export_definitions(*back), out);

  // The shape RabbitMQ 3.10 writes: tags an array, description in metadata.
  json doc = json::parse(out);
  EXPECT_TRUE(doc["users"][0]["tags"].is_array());
  EXPECT_TRUE(doc["users"][0]["hashing_algorithm"].is_string());
  EXPECT_TRUE(doc["vhosts"][0]["metadata"]["description"].is_string());
  EXPECT_EQ(doc["queues"][0]["type"], "stream");
  EXPECT_TRUE(doc["exchanges"].is_array());
}

// RabbitMQ's user limits (users[].limits) and vhost limits (the
// vhost-limits runtime parameters; strata's configuration may give them on
// the vhost entry): read, written back as RabbitMQ writes them.
TEST(Definitions, UserAndVhostLimits) {
  const std::string text = R"({
    "users": [ {"name": "a", "password_hash": "", "tags": [], "limits": {"max-connections": 2,
                                                                     "max-channels": 9}},
               {"name": "b", "password_hash": "", "tags": [], "limits": {"max-connections": -1}},
               {"name": "c", "password_hash": "", "tags": []} ],
    "vhosts": [ {"name": "prod", "limits": []}, {"name": "dev", "limits": {"max-queues": 0}},
                {"name": "/"} ],
    "parameters": [ {"component": "vhost-limits", "vhost": "prod", "name": "limits",
                     "value": {"max-connections": 10, "max-queues": 3}},
                    {"component": "federation-upstream", "vhost": "/", "name": "x",
                     "value": {}} ] })";
  auto d = parse_definitions(text, "t");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->users[0].max_connections, 2u);
  EXPECT_EQ(d->users[1].max_connections, std::nullopt);  // negative: no limit
  EXPECT_EQ(d->users[2].max_connections, std::nullopt);
  EXPECT_EQ(d->vhosts[0].max_connections, 10u);
  EXPECT_EQ(d->vhosts[0].max_queues, 3u);
  EXPECT_EQ(d->vhosts[1].max_queues, 0u);
  EXPECT_EQ(d->vhosts[1].max_connections, std::nullopt);
  EXPECT_EQ(d->vhosts[2].max_queues, std::nullopt);
  const std::string out = export_definitions(*d);
  auto back = parse_definitions(out, "export");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->users, d->users);
  EXPECT_EQ(back->vhosts, d->vhosts);
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["users"][0]["limits"]["max-connections"], 2);
  ASSERT_EQ(j["parameters"].size(), 2u) << out;
  EXPECT_EQ(j["parameters"][0]["component"], "vhost-limits");
  EXPECT_EQ(j["parameters"][0]["value"]["max-queues"], 3);

  for (
      const auto& [bad, want] : std::vector<std::pair<std::string, std::string>>{
          {R"({"users": [{"name": "a", "password_hash": "", "tags": [], "limits": {"max-connections": "2"}}]})",
           "users[0] ('a'): limits.max-connections is string, not an integer"},
          {R"({"users": [{"name": "a", "password_hash": "", "tags": [], "limits": 3}]})",
           "limits is number, not an object"},
          {R"({"parameters": [{"component": "vhost-limits", "vhost": "nope", "value": {}}]})",
           "parameters[0] ('nope'): vhost-limits of a vhost the file does not define"}}) {
    auto e = parse_definitions(bad, "t");
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.error().message.find(want), std::string::npos) << e.error().message;
  }
}

TEST(Definitions, TagsAsCommaSeparatedStringAndOtherOlderForms) {
  auto d = parse_definitions(R"({
    "rabbit_version": "3.5.7",
    "users": [
      {"name": "a", "password_hash": "AQIDBH/JkOf0oGZ5yhQgSBXkHS0=", "tags": "administrator, monitoring,,"},
      {"name": "b", "password_hash": "", "administrator": true},
      {"name": "c", "password": "cleartext", "hashing_algorithm": "rabbit_password_hashing_sha512", "tags": []}
    ],
    "vhosts": [{"name": "/", "description": "top-level form"}, {"name": "bare"}],
    "permissions": [],
    "exchanges": [{"name": "x", "vhost": "/", "type": "topic"}],
    "something_newer": {"whatever": 1}
  })",
                             "old.json");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->users[0].tags, (std::vector<std::string>{"administrator", "monitoring"}));
  // 3.5 files hashed with MD5 and did not say so.
  EXPECT_EQ(d->users[0].algorithm, HashAlgorithm::md5);
  EXPECT_TRUE(*verify_password("guest", d->users[0].password_hash, HashAlgorithm::md5));
  EXPECT_EQ(d->users[1].tags, std::vector<std::string>{"administrator"});
  EXPECT_EQ(d->users[2].algorithm, HashAlgorithm::sha512);
  EXPECT_TRUE(*verify_password("cleartext", d->users[2].password_hash, HashAlgorithm::sha512));
  EXPECT_EQ(d->vhosts[0].description, "top-level form");
  EXPECT_EQ(d->vhosts[1].description, "");

  auto newer = parse_definitions(R"({"users": [{"name": "n", "password_hash": "", "tags": []}]})",
                                 "newer.json");
  ASSERT_TRUE(newer.ok());
  EXPECT_EQ(newer->users[0].algorithm, HashAlgorithm::sha256);
}

std::string parse_error(std::string_view text) {
  auto d = parse_definitions(text, "defs.json");
  EXPECT_FALSE(d.ok());
  if (d.ok()) return "";
  EXPECT_EQ(d.code(), Errc::invalid_argument);
  return d.error().message;
}

TEST(Definitions, ErrorsNameSourceSectionAndEntry) {
  std::string m = parse_error(R"({"users": [
      {"name": "ok", "password_hash": "", "tags": []},
      {"name": "bob", "password_hash": "", "hashing_algorithm": "rabbit_password_hashing_bcrypt", "tags": []}]})");
  EXPECT_NE(m.find("defs.json: users[1] ('bob'): hashing_algorithm"), std::string::npos) << m;
  EXPECT_NE(m.find("'rabbit_password_hashing_bcrypt'"), std::string::npos) << m;

  m = parse_error(R"({"users": [{"name": "bob", "password_hash": "AQID", "tags": []}]})");
  EXPECT_NE(m.find("users[0] ('bob'): password_hash"), std::string::npos) << m;
  EXPECT_NE(m.find("3 bytes"), std::string::npos) << m;

  m = parse_error(R"({"users": [{"name": "bob", "password_hash": "", "tags": 5}]})");
  EXPECT_NE(m.find("users[0] ('bob'): tags is number"), std::string::npos) << m;

  m = parse_error(R"({"users": [{"name": "bob", "password_hash": ""}]})");
  EXPECT_NE(m.find("users[0] ('bob'): tags is missing"), std::string::npos) << m;

  m = parse_error(R"({"users": [{"password_hash": "", "tags": []}]})");
  EXPECT_NE(m.find("defs.json: users[0]: name is missing"), std::string::npos) << m;

  m = parse_error(
      R"({"users": [{"name": "a", "password": "x", "password_hash": "", "tags": []}]})");
  EXPECT_NE(m.find("users[0] ('a'): both password and password_hash"), std::string::npos) << m;

  m = parse_error(R"({"vhosts": [{"name": "a"}, {"name": 7}]})");
  EXPECT_NE(m.find("defs.json: vhosts[1]: name is number, not a string"), std::string::npos) << m;

  m = parse_error(
      R"({"permissions": [{"user": "bob", "vhost": "prod", "configure": "", "write": ".*"}]})");
  EXPECT_NE(m.find("permissions[0] ('user bob, vhost prod'): read is missing"), std::string::npos)
      << m;

  m = parse_error(R"({"queues": [{"name": "q", "vhost": "/", "arguments": []}]})");
  EXPECT_NE(m.find("queues[0] ('q'): arguments is array"), std::string::npos) << m;

  m = parse_error(R"({"users": {}})");
  EXPECT_NE(m.find("defs.json: users is object, not an array"), std::string::npos) << m;

  m = parse_error(R"([1, 2])");
  EXPECT_NE(m.find("defs.json: the top level is array"), std::string::npos) << m;

  m = parse_error(R"({"users": [)");
  EXPECT_NE(m.find("defs.json: not valid JSON"), std::string::npos) << m;
}

TEST(Definitions, DuplicatesAndUnknownNamesFailTheBuild) {
  auto d = parse_definitions(R"({
    "users": [{"name": "a", "password_hash": "", "tags": []}],
    "vhosts": [{"name": "/"}],
    "permissions": [{"user": "a", "vhost": "prod", "configure": "", "write": "", "read": ""}]})",
                             "defs.json");
  ASSERT_TRUE(d.ok());
  auto ac = build_access_control(*d);
  ASSERT_FALSE(ac.ok());
  EXPECT_NE(ac.error().message.find("user 'a' in vhost 'prod': no such vhost"), std::string::npos)
      << ac.error().message;
}

TEST(Definitions, QueueTypeFromTypeFieldWhenArgumentAbsent) {
  auto d = parse_definitions(R"({"queues": [
      {"name": "s", "vhost": "/", "type": "stream", "arguments": {}},
      {"name": "c", "vhost": "/"}]})",
                             "defs.json");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  ASSERT_EQ(d->streams.size(), 1u);
  EXPECT_EQ(d->streams[0].name, "s");
  ASSERT_EQ(d->skipped_queues.size(), 1u);
  EXPECT_EQ(d->skipped_queues[0].type, "classic");
}

}  // namespace
}  // namespace strata::auth
