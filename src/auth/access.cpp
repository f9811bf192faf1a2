#include "auth/access.h"

#include <algorithm>

#include "common/stream_name.h"

namespace strata::auth {

namespace {
// What an unknown user's password is checked against: a well-formed
// SHA-256 record (RabbitMQ's default algorithm), so a refusal for an
// unknown name costs what a wrong password does. No password hashes to it
// that anyone knows, and its answer is ignored anyway.
const std::string& dummy_hash() {
  static const std::string h =
      hash_password("strata: no such user", HashAlgorithm::sha256, Salt{0x5e, 0x1f, 0x00, 0x7a});
  return h;
}

bool known_algorithm(HashAlgorithm a) {
  return a == HashAlgorithm::sha256 || a == HashAlgorithm::sha512 || a == HashAlgorithm::md5;
}

Error bad(std::string msg) {
  return Error(Errc::invalid_argument, std::move(msg));
}
}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
    case Op::configure:
      return "configure";
    case Op::write:
      return "write";
    case Op::read:
      return "read";
  }
  return "?";
}

std::string access_refused_message(std::string_view user, std::string_view vhost, Op op,
                                   std::string_view resource) {
  return std::string(op_name(op)) + " access to '" + std::string(resource) + "' in vhost '" +
         std::string(vhost) + "' refused for user '" + std::string(user) + "'";
}

Result<std::shared_ptr<const AccessControl>> AccessControl::build(
    std::vector<User> users, std::vector<VHost> vhosts, std::vector<UserPermission> permissions,
    std::vector<std::string> loopback_users) {
  std::shared_ptr<AccessControl> ac(new AccessControl());
  for (size_t i = 0; i < users.size(); ++i) {
    const User& u = users[i];
    if (!known_algorithm(u.algorithm)) {
      return bad("user '" + u.name + "': unknown password hashing algorithm (enum value " +
                 std::to_string(static_cast<int>(u.algorithm)) + ")");
    }
    if (!u.password_hash.empty()) {
      auto st = check_stored_hash(u.password_hash, u.algorithm);
      if (!st.ok()) return bad("user '" + u.name + "': " + st.error().message);
    }
    if (!ac->user_index_.emplace(u.name, UserEntry{i, {}}).second) {
      return bad("duplicate user '" + u.name + "'");
    }
  }
  for (size_t i = 0; i < vhosts.size(); ++i) {
    // A vhost's name qualifies its streams' stored names
    // (common/stream_name.h): no line feed, NUL or CR.
    if (Status st = validate_vhost_name(vhosts[i].name); !st.ok()) return bad(st.error().message);
    if (!ac->vhost_index_.emplace(vhosts[i].name, i).second) {
      return bad("duplicate vhost '" + vhosts[i].name + "'");
    }
  }
  for (const UserPermission& p : permissions) {
    std::string who = "permission of user '" + p.user + "' in vhost '" + p.vhost + "'";
    auto user = ac->user_index_.find(p.user);
    if (user == ac->user_index_.end()) return bad(who + ": no such user");
    if (!ac->vhost_index_.contains(p.vhost)) return bad(who + ": no such vhost");
    if (user->second.by_vhost.contains(p.vhost)) return bad("duplicate " + who);
    auto compile = [&who](std::string_view which,
                          const std::string& re) -> Result<PermissionRegex> {
      auto c = PermissionRegex::compile(re);
      if (!c.ok()) return bad(who + ": " + std::string(which) + " " + c.error().message);
      return c;
    };
    STRATA_ASSIGN_OR_RETURN(auto configure, compile("configure", p.configure));
    STRATA_ASSIGN_OR_RETURN(auto write, compile("write", p.write));
    STRATA_ASSIGN_OR_RETURN(auto read, compile("read", p.read));
    user->second.by_vhost.emplace(
        p.vhost, Compiled{std::move(configure), std::move(write), std::move(read)});
  }
  ac->users_ = std::move(users);
  ac->vhosts_ = std::move(vhosts);
  ac->permissions_ = std::move(permissions);
  ac->loopback_users_ = std::move(loopback_users);
  // Built before the first login, so no answer pays for making it.
  (void)dummy_hash();
  return std::shared_ptr<const AccessControl>(std::move(ac));
}

AuthOutcome AccessControl::authenticate_plain(std::string_view user, std::string_view password,
                                              bool loopback) const {
  const User* u = find_user(user);
  // RabbitMQ refuses a blank password before comparing and a user without
  // a stored hash never matches; both still spend a hash here.
  bool usable = u != nullptr && !u->password_hash.empty() && !password.empty();
  if (!usable) {
    (void)verify_password(password, dummy_hash(), HashAlgorithm::sha256);
    return AuthOutcome::refused;
  }
  auto ok = verify_password(password, u->password_hash, u->algorithm);
  // build() checked the record's shape, so an error here is not expected;
  // it refuses like a wrong password would.
  if (!ok.ok() || !*ok) return AuthOutcome::refused;
  if (!loopback &&
      std::find(loopback_users_.begin(), loopback_users_.end(), user) != loopback_users_.end()) {
    return AuthOutcome::loopback_only;
  }
  return AuthOutcome::ok;
}

AuthOutcome AccessControl::authenticate_trusted(std::string_view user, bool loopback) const {
  if (find_user(user) == nullptr) return AuthOutcome::refused;
  if (!loopback &&
      std::find(loopback_users_.begin(), loopback_users_.end(), user) != loopback_users_.end()) {
    return AuthOutcome::loopback_only;
  }
  return AuthOutcome::ok;
}

const AccessControl::Compiled* AccessControl::find_permission(std::string_view user,
                                                              std::string_view vhost) const {
  auto u = user_index_.find(user);
  if (u == user_index_.end()) return nullptr;
  auto p = u->second.by_vhost.find(vhost);
  return p == u->second.by_vhost.end() ? nullptr : &p->second;
}

bool AccessControl::vhost_access(std::string_view user, std::string_view vhost) const {
  return find_permission(user, vhost) != nullptr;
}

bool AccessControl::check(std::string_view user, std::string_view vhost, Op op,
                          std::string_view resource) const {
  const Compiled* p = find_permission(user, vhost);
  if (p == nullptr) return false;
  switch (op) {
    case Op::configure:
      return p->configure.matches(resource);
    case Op::write:
      return p->write.matches(resource);
    case Op::read:
      return p->read.matches(resource);
  }
  return false;
}

bool AccessControl::has_tag(std::string_view user, std::string_view tag) const {
  const User* u = find_user(user);
  return u != nullptr && std::find(u->tags.begin(), u->tags.end(), tag) != u->tags.end();
}

const User* AccessControl::find_user(std::string_view name) const {
  auto u = user_index_.find(name);
  return u == user_index_.end() ? nullptr : &users_[u->second.index];
}

bool AccessControl::has_vhost(std::string_view name) const {
  return vhost_index_.find(name) != vhost_index_.end();
}

const VHost* AccessControl::find_vhost(std::string_view name) const {
  auto it = vhost_index_.find(name);
  return it == vhost_index_.end() ? nullptr : &vhosts_[it->second];
}

}  // namespace strata::auth
