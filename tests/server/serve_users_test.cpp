// The users, vhosts and permissions sections of `strata serve`'s
// configuration (server/serve_users.h).
#include "server/serve_users.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "auth/definitions.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

using json = nlohmann::json;

Result<UserSettings> load(json doc) {
  return load_user_settings(&doc);
}

TEST(ServeUsers, PermissionsAsGivenAndHashesAsRabbitMqWritesThem) {
  // bob's hash as RabbitMQ writes it: base64(salt ++ sha256(salt ++ "pw")).
  const std::string bob = auth::hash_password("pw", auth::HashAlgorithm::sha256, {9, 9, 9, 9});
  auto s = load(json::parse(R"({
    "users": [ {"name": "admin", "password": "secret", "tags": ["administrator"]},
               {"name": "bob", "password_hash": ")" +
                            bob + R"(",
                "hashing_algorithm": "rabbit_password_hashing_sha256"} ],
    "vhosts": [ {"name": "/"}, {"name": "other"} ],
    "permissions": [ {"user": "bob", "vhost": "/", "configure": "^bob-", "write": "^bob-",
                      "read": ".*"} ]
  })"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  const auth::AccessControl& a = *s->access;
  EXPECT_EQ(a.authenticate_plain("bob", "pw", false), auth::AuthOutcome::ok);
  EXPECT_EQ(a.authenticate_plain("bob", "pw2", false), auth::AuthOutcome::refused);
  EXPECT_EQ(a.authenticate_plain("admin", "secret", false), auth::AuthOutcome::ok);
  EXPECT_TRUE(a.check("bob", "/", auth::Op::configure, "bob-orders"));
  EXPECT_FALSE(a.check("bob", "/", auth::Op::configure, "orders"));
  EXPECT_TRUE(a.check("bob", "/", auth::Op::read, "orders"));
  EXPECT_FALSE(a.check("bob", "other", auth::Op::read, "orders"));
  // Permissions given: exactly those; admin has none.
  EXPECT_FALSE(a.vhost_access("admin", "/"));
  EXPECT_TRUE(a.has_tag("admin", "administrator"));
  // The cleartext is kept only for the node's own login, and the hash
  // stored is not it.
  EXPECT_EQ(s->peer.user, "admin");
  EXPECT_EQ(s->peer.password, "secret");
  EXPECT_EQ(a.find_user("admin")->password_hash.find("secret"), std::string::npos);
}

TEST(ServeUsers, PasswordFileMustBeTheOwnersAlone) {
  test::TempDir dir;
  const std::string f = dir.sub("pw");
  std::ofstream(f) << "from-file\n";
  ::chmod(f.c_str(), 0644);
  auto s = load(json{{"users", {{{"name", "app"}, {"password_file", f}}}}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("users[0].password_file"), std::string::npos);
  EXPECT_NE(s.error().message.find("0644"), std::string::npos) << s.error().message;
  ::chmod(f.c_str(), 0600);
  s = load(json{{"users", {{{"name", "app"}, {"password_file", f}}}}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  // The trailing newline is not part of the password.
  EXPECT_EQ(s->access->authenticate_plain("app", "from-file", false), auth::AuthOutcome::ok);
  EXPECT_EQ(s->peer.password, "from-file");
}

TEST(ServeUsers, DefinitionsFileAsRabbitMqExportsIt) {
  test::TempDir dir;
  auth::Definitions d;
  d.users.push_back({"ops",
                     auth::hash_password("pw", auth::HashAlgorithm::sha512, {1, 2, 3, 4}),
                     auth::HashAlgorithm::sha512,
                     {"monitoring"}});
  d.vhosts.push_back({"/", ""});
  d.permissions.push_back({"ops", "/", "", "", ".*"});
  const std::string f = dir.sub("defs.json");
  std::ofstream(f) << auth::export_definitions(d);
  auto s = load(json{{"definitions_file", f}, {"loopback_users", json::array()}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->access->authenticate_plain("ops", "pw", false), auth::AuthOutcome::ok);
  EXPECT_TRUE(s->access->check("ops", "/", auth::Op::read, "x"));
  EXPECT_FALSE(s->access->check("ops", "/", auth::Op::write, "x"));
  // Hashes only: no login for the node to use.
  EXPECT_TRUE(s->peer.user.empty());

  // A bad entry in it is named with the file.
  std::ofstream(f) << R"({"users": [{"name": "x", "password_hash": "abc", "tags": []}]})";
  s = load(json{{"definitions_file", f}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(f), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("users[0]"), std::string::npos) << s.error().message;
}

TEST(ServeUsers, LoopbackUsers) {
  auto s = load(json{{"users", {{{"name", "guest"}, {"password", "guest"}}}}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->access->authenticate_plain("guest", "guest", false),
            auth::AuthOutcome::loopback_only);
  s = load(json{{"users", {{{"name", "guest"}, {"password", "guest"}}}},
                {"loopback_users", json::array()}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->access->authenticate_plain("guest", "guest", false), auth::AuthOutcome::ok);
  EXPECT_FALSE(load(json{{"loopback_users", "guest"}}).ok());
}

}  // namespace
}  // namespace strata::server
