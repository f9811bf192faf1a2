#include "auth/access.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace strata::auth {
namespace {

User user(std::string name, std::string password, std::vector<std::string> tags = {},
          HashAlgorithm alg = HashAlgorithm::sha256) {
  return User{name, password.empty() ? "" : hash_password(password, alg, Salt{9, 8, 7, 6}), alg,
              std::move(tags)};
}

std::shared_ptr<const AccessControl> build_ok(std::vector<User> users, std::vector<VHost> vhosts,
                                              std::vector<UserPermission> perms,
                                              std::vector<std::string> loopback = {"guest"}) {
  auto ac = AccessControl::build(std::move(users), std::move(vhosts), std::move(perms),
                                 std::move(loopback));
  EXPECT_TRUE(ac.ok()) << ac.error().to_string();
  return ac.ok() ? *ac : nullptr;
}

std::string build_error(std::vector<User> users, std::vector<VHost> vhosts,
                        std::vector<UserPermission> perms) {
  auto ac = AccessControl::build(std::move(users), std::move(vhosts), std::move(perms));
  EXPECT_FALSE(ac.ok());
  if (ac.ok()) return "";
  EXPECT_EQ(ac.code(), Errc::invalid_argument);
  return ac.error().message;
}

TEST(AccessControl, RegexSemanticsAsRabbitMQ) {
  auto ac = build_ok({user("u", "pw")}, {{"/", ""}}, {{"u", "/", "", ".*", "^orders\\."}});
  ASSERT_TRUE(ac);
  // "" is "^$": only the empty name.
  EXPECT_FALSE(ac->check("u", "/", Op::configure, "orders"));
  EXPECT_FALSE(ac->check("u", "/", Op::configure, "x"));
  EXPECT_TRUE(ac->check("u", "/", Op::configure, ""));
  // ".*": everything.
  EXPECT_TRUE(ac->check("u", "/", Op::write, "anything at all"));
  EXPECT_TRUE(ac->check("u", "/", Op::write, ""));
  // Anchored at the start only.
  EXPECT_TRUE(ac->check("u", "/", Op::read, "orders.eu"));
  EXPECT_FALSE(ac->check("u", "/", Op::read, "old.orders.eu"));
  EXPECT_FALSE(ac->check("u", "/", Op::read, "ordersXeu"));
}

TEST(AccessControl, UnanchoredRegexMatchesAnywhere) {
  auto ac =
      build_ok({user("u", "pw")}, {{"v", ""}}, {{"u", "v", "^$", "orders|audit", "^bob-[0-9]+$"}});
  ASSERT_TRUE(ac);
  EXPECT_TRUE(ac->check("u", "v", Op::configure, ""));
  EXPECT_FALSE(ac->check("u", "v", Op::configure, "a"));
  EXPECT_TRUE(ac->check("u", "v", Op::write, "orders"));
  EXPECT_TRUE(ac->check("u", "v", Op::write, "eu.audit.log"));
  EXPECT_FALSE(ac->check("u", "v", Op::write, "order"));
  EXPECT_TRUE(ac->check("u", "v", Op::read, "bob-42"));
  EXPECT_FALSE(ac->check("u", "v", Op::read, "bob-42x"));
  // Bytes, as Erlang's re without `unicode`: "." is one byte, so a
  // two-byte UTF-8 character takes "..".
  auto ac2 = build_ok({user("u", "pw")}, {{"v", ""}}, {{"u", "v", "^.$", "^..$", ".*"}});
  ASSERT_TRUE(ac2);
  EXPECT_FALSE(ac2->check("u", "v", Op::configure, "\xc3\xa4"));
  EXPECT_TRUE(ac2->check("u", "v", Op::write, "\xc3\xa4"));
}

TEST(AccessControl, NoEntryMeansNoAccess) {
  auto ac = build_ok({user("u", "pw"), user("w", "pw")}, {{"a", ""}, {"b", ""}},
                     {{"u", "a", ".*", ".*", ".*"}, {"w", "b", "", "", ""}});
  ASSERT_TRUE(ac);
  EXPECT_TRUE(ac->vhost_access("u", "a"));
  EXPECT_FALSE(ac->vhost_access("u", "b"));
  EXPECT_FALSE(ac->check("u", "b", Op::read, "s"));
  // An entry of three empty regexes still opens the vhost.
  EXPECT_TRUE(ac->vhost_access("w", "b"));
  EXPECT_FALSE(ac->check("w", "b", Op::read, "s"));
  EXPECT_FALSE(ac->vhost_access("nobody", "a"));
  EXPECT_FALSE(ac->check("nobody", "a", Op::read, "s"));
  EXPECT_FALSE(ac->check("u", "nowhere", Op::read, "s"));
}

TEST(AccessControl, RefusalMessageNamesUserVhostOpAndResource) {
  EXPECT_EQ(access_refused_message("bob", "prod", Op::write, "orders"),
            "write access to 'orders' in vhost 'prod' refused for user 'bob'");
}

TEST(AccessControl, BadRegexNamesUserVhostPermissionAndOffset) {
  std::string m =
      build_error({user("bob", "pw")}, {{"prod", ""}}, {{"bob", "prod", ".*", "orders(", ".*"}});
  EXPECT_NE(m.find("user 'bob'"), std::string::npos) << m;
  EXPECT_NE(m.find("vhost 'prod'"), std::string::npos) << m;
  EXPECT_NE(m.find("write regex 'orders('"), std::string::npos) << m;
  EXPECT_NE(m.find("missing closing parenthesis"), std::string::npos) << m;
  EXPECT_NE(m.find("at offset 7"), std::string::npos) << m;
}

TEST(AccessControl, RejectsDuplicatesAndUnknownNames) {
  std::string m = build_error({user("a", "pw"), user("a", "pw2")}, {}, {});
  EXPECT_NE(m.find("duplicate user 'a'"), std::string::npos) << m;
  m = build_error({}, {{"v", ""}, {"v", "again"}}, {});
  EXPECT_NE(m.find("duplicate vhost 'v'"), std::string::npos) << m;
  m = build_error({user("a", "pw")}, {{"v", ""}}, {{"ghost", "v", ".*", ".*", ".*"}});
  EXPECT_NE(m.find("user 'ghost' in vhost 'v': no such user"), std::string::npos) << m;
  m = build_error({user("a", "pw")}, {{"v", ""}}, {{"a", "w", ".*", ".*", ".*"}});
  EXPECT_NE(m.find("user 'a' in vhost 'w': no such vhost"), std::string::npos) << m;
  m = build_error({user("a", "pw")}, {{"v", ""}},
                  {{"a", "v", ".*", ".*", ".*"}, {"a", "v", "", "", ""}});
  EXPECT_NE(m.find("duplicate permission of user 'a' in vhost 'v'"), std::string::npos) << m;
}

TEST(AccessControl, RejectsBadHashRecordAndAlgorithm) {
  User u = user("a", "pw");
  u.algorithm = HashAlgorithm::sha512;  // a SHA-256 record named SHA-512
  std::string m = build_error({u}, {}, {});
  EXPECT_NE(m.find("user 'a'"), std::string::npos) << m;
  EXPECT_NE(m.find("needs 68"), std::string::npos) << m;
  User v = user("b", "pw");
  v.algorithm = static_cast<HashAlgorithm>(7);
  m = build_error({v}, {}, {});
  EXPECT_NE(m.find("user 'b': unknown password hashing algorithm"), std::string::npos) << m;
}

TEST(AccessControl, AuthenticatePlain) {
  auto ac = build_ok({user("alice", "alice-pw", {"administrator", "monitoring"}),
                      user("md5", "old", {}, HashAlgorithm::md5), user("carol", "")},
                     {}, {});
  ASSERT_TRUE(ac);
  EXPECT_EQ(ac->authenticate_plain("alice", "alice-pw", false), AuthOutcome::ok);
  EXPECT_EQ(ac->authenticate_plain("alice", "alice-pw", true), AuthOutcome::ok);
  EXPECT_EQ(ac->authenticate_plain("alice", "alice-pW", true), AuthOutcome::refused);
  EXPECT_EQ(ac->authenticate_plain("md5", "old", false), AuthOutcome::ok);
  EXPECT_EQ(ac->authenticate_plain("nobody", "alice-pw", true), AuthOutcome::refused);
  // No stored password: PLAIN never succeeds, not even with "".
  EXPECT_EQ(ac->authenticate_plain("carol", "", true), AuthOutcome::refused);
  EXPECT_EQ(ac->authenticate_plain("carol", "x", true), AuthOutcome::refused);
  EXPECT_TRUE(ac->has_tag("alice", "monitoring"));
  EXPECT_FALSE(ac->has_tag("alice", "management"));
  EXPECT_FALSE(ac->has_tag("nobody", "monitoring"));
  ASSERT_NE(ac->find_user("alice"), nullptr);
  EXPECT_EQ(ac->find_user("alice")->tags.size(), 2u);
  EXPECT_EQ(ac->find_user("Alice"), nullptr);
}

TEST(AccessControl, BlankPasswordRefusedEvenIfItWasHashed) {
  // RabbitMQ's internal backend refuses a blank password before comparing.
  User u{
      "e", hash_password("", HashAlgorithm::sha256, Salt{1, 1, 1, 1}), HashAlgorithm::sha256, {}};
  auto ac = build_ok({u}, {}, {});
  ASSERT_TRUE(ac);
  EXPECT_EQ(ac->authenticate_plain("e", "", true), AuthOutcome::refused);
}

TEST(AccessControl, GuestIsLoopbackOnlyByDefault) {
  auto ac = build_ok({user("guest", "guest"), user("alice", "pw")}, {}, {});
  ASSERT_TRUE(ac);
  EXPECT_EQ(ac->authenticate_plain("guest", "guest", true), AuthOutcome::ok);
  EXPECT_EQ(ac->authenticate_plain("guest", "guest", false), AuthOutcome::loopback_only);
  // The credentials are checked first: a wrong password is refused, from
  // anywhere.
  EXPECT_EQ(ac->authenticate_plain("guest", "nope", false), AuthOutcome::refused);
  EXPECT_EQ(ac->authenticate_plain("alice", "pw", false), AuthOutcome::ok);
  EXPECT_EQ(ac->loopback_users(), std::vector<std::string>{"guest"});

  auto open = build_ok({user("guest", "guest")}, {}, {}, {});
  ASSERT_TRUE(open);
  EXPECT_EQ(open->authenticate_plain("guest", "guest", false), AuthOutcome::ok);

  auto other = build_ok({user("guest", "guest"), user("alice", "pw")}, {}, {}, {"alice"});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->authenticate_plain("guest", "guest", false), AuthOutcome::ok);
  EXPECT_EQ(other->authenticate_plain("alice", "pw", false), AuthOutcome::loopback_only);
}

TEST(AccessControl, ListsKeepTheirOrder) {
  auto ac = build_ok({user("b", "1"), user("a", "2")}, {{"y", "why"}, {"x", ""}},
                     {{"a", "x", "1", "2", "3"}});
  ASSERT_TRUE(ac);
  ASSERT_EQ(ac->users().size(), 2u);
  EXPECT_EQ(ac->users()[0].name, "b");
  ASSERT_EQ(ac->vhosts().size(), 2u);
  EXPECT_EQ(ac->vhosts()[0].description, "why");
  EXPECT_TRUE(ac->has_vhost("x"));
  ASSERT_EQ(ac->permissions().size(), 1u);
  EXPECT_EQ(ac->permissions()[0].read, "3");
}

TEST(AccessControl, ChecksFromManyThreads) {
  auto ac = build_ok({user("u", "pw")}, {{"v", ""}}, {{"u", "v", "^c", "^w-[0-9]+$", "r"}});
  ASSERT_TRUE(ac);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        std::string name = "w-" + std::to_string(i + t);
        if (!ac->check("u", "v", Op::write, name)) ++wrong;
        if (ac->check("u", "v", Op::write, name + "x")) ++wrong;
        if (ac->check("u", "v", Op::configure, "x" + name)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace strata::auth
