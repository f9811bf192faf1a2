// Live changes to who may log in: the users and permissions an operator
// added, changed, deleted or cleared on a running node (`strata user`,
// `strata permissions`), kept apart from what the configuration defines.
// The rules in force are the configuration's (the base) with the overlay
// applied; the overlay is stored beside the catalog (server/access_store.h)
// so every node of a cluster applies the same one, and it outlives
// restarts and configuration reloads:
//   - a user in `users` exists with that definition, whatever the base says;
//   - a user in `deleted_users` that `users` does not hold is gone, and
//     with it every permission the base gave it (re-adding the user gives
//     it none back: RabbitMQ deletes a user's permissions with the user);
//   - a (user, vhost) in `cleared_permissions` has no base permission there;
//   - `permissions` are set over the base's;
//   - a vhost in `vhosts` exists (with that description);
//   - a vhost in `deleted_vhosts` that `vhosts` does not hold is gone, and
//     with it every permission in it; as with users, re-adding it gives it
//     none of the base's back (RabbitMQ deletes a vhost's permissions with
//     the vhost).
// Pure: edits and the merge are functions of values.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/access.h"
#include "common/result.h"

namespace strata::auth {

struct AccessOverlay {
  std::vector<User> users;
  std::vector<UserPermission> permissions;
  std::vector<std::string> deleted_users;
  std::vector<std::pair<std::string, std::string>> cleared_permissions;  // (user, vhost)
  std::vector<VHost> vhosts;
  std::vector<std::string> deleted_vhosts;

  bool empty() const {
    return users.empty() && permissions.empty() && deleted_users.empty() &&
           cleared_permissions.empty() && vhosts.empty() && deleted_vhosts.empty();
  }
  bool operator==(const AccessOverlay&) const = default;
};

// Adds the user or replaces its definition (password hash, tags).
void overlay_put_user(AccessOverlay* o, User user);
// Deletes the user and every permission of it.
void overlay_delete_user(AccessOverlay* o, std::string_view name);
void overlay_set_permission(AccessOverlay* o, UserPermission p);
void overlay_clear_permission(AccessOverlay* o, std::string_view user, std::string_view vhost);
// Adds the vhost or replaces its description.
void overlay_put_vhost(AccessOverlay* o, VHost vhost);
// Deletes the vhost and every permission in it.
void overlay_delete_vhost(AccessOverlay* o, std::string_view name);

// The base with the overlay applied, checked as AccessControl::build
// checks. An overlay permission whose user or vhost the result does not
// have (the configuration dropped a user the overlay gave permissions to)
// is left out and described in `ignored`, rather than refusing every login.
Result<std::shared_ptr<const AccessControl>> apply_overlay(
    const AccessControl& base, const AccessOverlay& overlay,
    std::vector<std::string>* ignored = nullptr);

// JSON: RabbitMQ's definitions shape for "users", "vhosts" and
// "permissions" (so a stored overlay reads like an export) plus
// "deleted_users", "cleared_permissions" and "deleted_vhosts";
// docs/formats/access.md.
std::string encode_overlay(const AccessOverlay& o);
// invalid_argument naming `source` and the entry for anything malformed.
Result<AccessOverlay> decode_overlay(std::string_view text, std::string_view source);

}  // namespace strata::auth
