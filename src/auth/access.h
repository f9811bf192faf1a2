// Users, virtual hosts and permissions as RabbitMQ's internal
// authentication and authorisation backend has them, as one immutable
// value: built (and checked) once from a definitions file or a list, then
// shared by every connection, which asks it without locks.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "auth/password_hash.h"
#include "auth/permission_regex.h"
#include "common/result.h"

namespace strata::auth {

struct User {
  std::string name;
  // base64(salt ++ digest) as in definitions; empty for a user without a
  // password (RabbitMQ's clear_password), who cannot log in with PLAIN.
  std::string password_hash;
  HashAlgorithm algorithm = HashAlgorithm::sha256;
  std::vector<std::string> tags;
  // RabbitMQ's user limit "max-connections" (nullopt: none; 0: no
  // connection at all), from the definitions' users[].limits.
  std::optional<uint32_t> max_connections = std::nullopt;

  bool operator==(const User&) const = default;
};

struct VHost {
  std::string name;
  std::string description;
  // RabbitMQ's vhost limits "max-connections" and "max-queues" (here:
  // streams, a super stream's partitions included); nullopt: none.
  std::optional<uint32_t> max_connections = std::nullopt;
  std::optional<uint32_t> max_queues = std::nullopt;

  bool operator==(const VHost&) const = default;
};

// A user's three regexes in one virtual host, as RabbitMQ stores them.
struct UserPermission {
  std::string user, vhost, configure, write, read;

  bool operator==(const UserPermission&) const = default;
};

enum class Op { configure, write, read };
std::string_view op_name(Op op);

// What to tell an operator (and log) when check() says no, in RabbitMQ's
// words: "write access to 'orders' in vhost 'prod' refused for user 'bob'".
std::string access_refused_message(std::string_view user, std::string_view vhost, Op op,
                                   std::string_view resource);

enum class AuthOutcome {
  ok,
  refused,        // unknown user, wrong or blank password, no password set
  loopback_only,  // right credentials, but the user may log in only from loopback
};

// RabbitMQ's default `loopback_users`.
inline const std::vector<std::string> kDefaultLoopbackUsers = {"guest"};

class AccessControl {
 public:
  // Checks everything and compiles every regex. invalid_argument for: a
  // duplicate user, vhost, or (user, vhost) permission; a permission naming
  // an unknown user or vhost; a regex PCRE2 refuses (naming user, vhost,
  // which of the three, PCRE2's message and offset); a hashing algorithm
  // outside the enum; a non-empty password hash of the wrong shape for its
  // algorithm. `loopback_users` is RabbitMQ's setting of that name: those
  // users authenticate only over a loopback connection; empty lifts it.
  static Result<std::shared_ptr<const AccessControl>> build(
      std::vector<User> users, std::vector<VHost> vhosts, std::vector<UserPermission> permissions,
      std::vector<std::string> loopback_users = kDefaultLoopbackUsers);

  // SASL PLAIN. An unknown user, one without a password and a blank
  // password each cost one hash computation as a known user's does, so the
  // time to answer does not tell which of name and password was wrong.
  // `loopback` is whether the peer's address is a loopback address; it is
  // consulted only after the credentials are right, as RabbitMQ does
  // (rabbit_access_control:check_user_loopback/2).
  AuthOutcome authenticate_plain(std::string_view user, std::string_view password,
                                 bool loopback) const;

  // A login whose identity was established without a password: SASL
  // EXTERNAL (the user a verified client certificate names) and ANONYMOUS.
  // As RabbitMQ's internal backend does for a login without a password:
  // the user must exist; the loopback rule applies as for PLAIN.
  AuthOutcome authenticate_trusted(std::string_view user, bool loopback) const;

  // Whether the user has a permission entry in the vhost (RabbitMQ's vhost
  // access check: any entry, even one of three empty regexes).
  bool vhost_access(std::string_view user, std::string_view vhost) const;

  // Whether `op` on the resource named `resource` in `vhost` is granted: the
  // entry's regex for `op` matches the name somewhere. False when the user
  // has no entry in the vhost.
  bool check(std::string_view user, std::string_view vhost, Op op, std::string_view resource) const;

  bool has_tag(std::string_view user, std::string_view tag) const;
  const User* find_user(std::string_view name) const;
  bool has_vhost(std::string_view name) const;
  // nullptr when there is no such vhost.
  const VHost* find_vhost(std::string_view name) const;

  const std::vector<User>& users() const { return users_; }
  const std::vector<VHost>& vhosts() const { return vhosts_; }
  const std::vector<UserPermission>& permissions() const { return permissions_; }
  const std::vector<std::string>& loopback_users() const { return loopback_users_; }

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  template <typename V>
  using NameMap = std::unordered_map<std::string, V, NameHash, std::equal_to<>>;

  struct Compiled {
    PermissionRegex configure, write, read;
  };
  struct UserEntry {
    size_t index;                // into users_
    NameMap<Compiled> by_vhost;  // the user's permissions
  };

  AccessControl() = default;
  const Compiled* find_permission(std::string_view user, std::string_view vhost) const;

  std::vector<User> users_;
  std::vector<VHost> vhosts_;
  std::vector<UserPermission> permissions_;
  std::vector<std::string> loopback_users_;
  NameMap<UserEntry> user_index_;
  NameMap<size_t> vhost_index_;
};

}  // namespace strata::auth
