// Live changes over the configuration's users (auth/access_overlay.h):
// what each edit leaves in force, and the stored form.
#include "auth/access_overlay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace strata::auth {
namespace {

User ov_user(std::string name, std::vector<std::string> tags = {}) {
  return User{name, hash_password(name + "-pw", HashAlgorithm::sha256, Salt{1, 2, 3, 4}),
              HashAlgorithm::sha256, std::move(tags)};
}
UserPermission ov_all(std::string u, std::string vhost = "/") {
  return UserPermission{std::move(u), std::move(vhost), ".*", ".*", ".*"};
}

std::shared_ptr<const AccessControl> ov_base() {
  auto b = AccessControl::build({ov_user("guest", {"administrator"}), ov_user("app")},
                                {VHost{"/", ""}, VHost{"prod", ""}},
                                {ov_all("guest"), ov_all("app"), ov_all("app", "prod")});
  EXPECT_TRUE(b.ok()) << b.error().to_string();
  return *b;
}

std::shared_ptr<const AccessControl> ov_applied(const AccessOverlay& o,
                                                std::vector<std::string>* ignored = nullptr) {
  auto a = apply_overlay(*ov_base(), o, ignored);
  EXPECT_TRUE(a.ok()) << a.error().to_string();
  return a.ok() ? *a : ov_base();
}

TEST(AccessOverlay, AnEmptyOverlayLeavesTheBase) {
  auto a = ov_applied({});
  EXPECT_EQ(a->users(), ov_base()->users());
  EXPECT_EQ(a->permissions(), ov_base()->permissions());
}

TEST(AccessOverlay, AddedUsersLogInAndHaveNoPermissionsUntilSet) {
  AccessOverlay o;
  overlay_put_user(&o, ov_user("bob", {"monitoring"}));
  auto a = ov_applied(o);
  EXPECT_EQ(a->authenticate_plain("bob", "bob-pw", false), AuthOutcome::ok);
  EXPECT_TRUE(a->has_tag("bob", "monitoring"));
  EXPECT_FALSE(a->vhost_access("bob", "/"));
  overlay_set_permission(&o, UserPermission{"bob", "/", "^bob-", "^bob-", ".*"});
  a = ov_applied(o);
  EXPECT_TRUE(a->check("bob", "/", Op::configure, "bob-1"));
  EXPECT_FALSE(a->check("bob", "/", Op::configure, "other"));
  // The base's users are all still there.
  EXPECT_TRUE(a->check("app", "prod", Op::write, "x"));
}

TEST(AccessOverlay, RedefiningABaseUserReplacesItsPasswordAndTags) {
  AccessOverlay o;
  User g = ov_user("guest", {});
  g.password_hash = hash_password("new", HashAlgorithm::sha256, Salt{5, 5, 5, 5});
  overlay_put_user(&o, g);
  auto a = ov_applied(o);
  EXPECT_EQ(a->authenticate_plain("guest", "guest-pw", true), AuthOutcome::refused);
  EXPECT_EQ(a->authenticate_plain("guest", "new", true), AuthOutcome::ok);
  EXPECT_FALSE(a->has_tag("guest", "administrator"));
  // Its base permissions stay: only the user record changed.
  EXPECT_TRUE(a->vhost_access("guest", "/"));
  EXPECT_EQ(a->users().size(), 2u);
}

TEST(AccessOverlay, DeletingAUserTakesItsPermissionsAndReAddingGivesNoneBack) {
  AccessOverlay o;
  overlay_set_permission(&o, UserPermission{"app", "/", "", "", "^x"});
  overlay_delete_user(&o, "app");
  EXPECT_TRUE(o.permissions.empty());
  auto a = ov_applied(o);
  EXPECT_EQ(a->find_user("app"), nullptr);
  EXPECT_EQ(a->permissions().size(), 1u);  // guest's
  overlay_put_user(&o, ov_user("app"));
  a = ov_applied(o);
  ASSERT_NE(a->find_user("app"), nullptr);
  EXPECT_FALSE(a->vhost_access("app", "/"));
  EXPECT_FALSE(a->vhost_access("app", "prod"));
}

TEST(AccessOverlay, ClearingABasePermissionAndSettingItAgain) {
  AccessOverlay o;
  overlay_clear_permission(&o, "app", "prod");
  auto a = ov_applied(o);
  EXPECT_FALSE(a->vhost_access("app", "prod"));
  EXPECT_TRUE(a->vhost_access("app", "/"));
  overlay_set_permission(&o, UserPermission{"app", "prod", "", "", ".*"});
  a = ov_applied(o);
  EXPECT_TRUE(a->check("app", "prod", Op::read, "s"));
  EXPECT_FALSE(a->check("app", "prod", Op::write, "s"));
  // Set replaces, it does not add a second entry.
  overlay_set_permission(&o, UserPermission{"app", "prod", "", ".*", ""});
  a = ov_applied(o);
  EXPECT_TRUE(a->check("app", "prod", Op::write, "s"));
  EXPECT_EQ(o.permissions.size(), 1u);
}

TEST(AccessOverlay, PermissionsOfAUserTheBaseNoLongerHasAreIgnoredAndNamed) {
  AccessOverlay o;
  overlay_set_permission(&o, UserPermission{"app", "prod", "", "", ".*"});
  overlay_set_permission(&o, UserPermission{"guest", "gone", "", "", ".*"});
  auto smaller = AccessControl::build({ov_user("guest")}, {VHost{"/", ""}}, {ov_all("guest")});
  ASSERT_TRUE(smaller.ok());
  std::vector<std::string> ignored;
  auto a = apply_overlay(**smaller, o, &ignored);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_EQ(ignored.size(), 2u);
  EXPECT_NE(ignored[0].find("no such user"), std::string::npos) << ignored[0];
  EXPECT_NE(ignored[1].find("no such vhost"), std::string::npos) << ignored[1];
}

TEST(AccessOverlay, AddedVhostsTakePermissionsAndDeletedOnesTakeTheirsAway) {
  AccessOverlay o;
  overlay_put_vhost(&o, VHost{"dev", "the developers'"});
  overlay_set_permission(&o, UserPermission{"app", "dev", "", "", ".*"});
  auto a = ov_applied(o);
  EXPECT_TRUE(a->has_vhost("dev"));
  EXPECT_TRUE(a->check("app", "dev", Op::read, "s"));
  // Deleting a base vhost takes every permission in it, base and overlay.
  overlay_set_permission(&o, UserPermission{"guest", "prod", "", "", ".*"});
  overlay_delete_vhost(&o, "prod");
  a = ov_applied(o);
  EXPECT_FALSE(a->has_vhost("prod"));
  EXPECT_FALSE(a->vhost_access("app", "prod"));
  EXPECT_TRUE(std::none_of(o.permissions.begin(), o.permissions.end(),
                           [](const UserPermission& p) { return p.vhost == "prod"; }));
  // Re-added, it has none of the base's back.
  overlay_put_vhost(&o, VHost{"prod", ""});
  a = ov_applied(o);
  EXPECT_TRUE(a->has_vhost("prod"));
  EXPECT_FALSE(a->vhost_access("app", "prod"));
  // An added vhost deleted again is gone, with its permissions.
  overlay_delete_vhost(&o, "dev");
  a = ov_applied(o);
  EXPECT_FALSE(a->has_vhost("dev"));
  EXPECT_FALSE(a->vhost_access("app", "dev"));
  // A vhost name that could not qualify a stream name is refused.
  overlay_put_vhost(&o, VHost{"a\nb", ""});
  auto bad = apply_overlay(*ov_base(), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("line feed"), std::string::npos) << bad.error().message;
}

TEST(AccessOverlay, ABadRegexIsRefusedWhenApplied) {
  AccessOverlay o;
  overlay_set_permission(&o, UserPermission{"app", "/", "(", "", ""});
  auto a = apply_overlay(*ov_base(), o);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("app"), std::string::npos) << a.error().message;
}

TEST(AccessOverlay, EncodedAndDecodedItIsTheSame) {
  AccessOverlay o;
  overlay_put_user(&o, ov_user("bob", {"administrator", "monitoring"}));
  overlay_set_permission(&o, UserPermission{"bob", "/", "^b", "", ".*"});
  overlay_delete_user(&o, "app");
  overlay_clear_permission(&o, "guest", "/");
  overlay_put_vhost(&o, VHost{"dev", "d"});
  overlay_delete_vhost(&o, "prod");
  const std::string text = encode_overlay(o);
  auto back = decode_overlay(text, "t");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, o);
  // It reads like RabbitMQ's definitions.
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["users"][0]["hashing_algorithm"], "rabbit_password_hashing_sha256");
  EXPECT_EQ(j["deleted_users"][0], "app");
  EXPECT_EQ(j["cleared_permissions"][0]["vhost"], "/");
  EXPECT_EQ(j["vhosts"][0]["name"], "dev");
  EXPECT_EQ(j["deleted_vhosts"][0], "prod");
}

TEST(AccessOverlay, MalformedStoredOverlaysSayWhatAndWhere) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{
           {"{", "f.json: not valid JSON"},
           {R"({"deleted_users": "bob"})", "deleted_users is not an array"},
           {R"({"deleted_users": [1]})", "deleted_users[0]"},
           {R"({"cleared_permissions": [{"user": "a"}]})", "cleared_permissions[0]"},
           {R"({"users": [{"name": "x", "tags": [], "password_hash": "!!"}]})", "users[0]"}}) {
    auto o = decode_overlay(text, "f.json");
    ASSERT_FALSE(o.ok()) << text;
    EXPECT_NE(o.error().message.find(want), std::string::npos) << o.error().message;
    EXPECT_NE(o.error().message.find("f.json"), std::string::npos) << o.error().message;
  }
}

}  // namespace
}  // namespace strata::auth
