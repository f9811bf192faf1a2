// Who may log in to `strata serve` and what each may do: the users, vhosts
// and permissions sections of its configuration, read into one immutable
// auth::AccessControl (auth/access.h). The sections follow RabbitMQ's
// definitions JSON, so a file exported from RabbitMQ can be named as is:
//
//   "users": [ { "name": "alice",
//                "password_hash": "<base64>",               RabbitMQ's format
//                "hashing_algorithm": "rabbit_password_hashing_sha256",
//                "tags": ["administrator"] },
//              { "name": "app", "password_file": "/etc/strata/app.pw" },
//              { "name": "guest", "password": "guest" } ],
//   "vhosts": [ { "name": "/" } ],                            default: "/"
//   "permissions": [ { "user": "app", "vhost": "/",
//                      "configure": "^app-", "write": "^app-", "read": ".*" } ],
//   "loopback_users": ["guest"],                              default
//   (a user or vhost may carry RabbitMQ's "limits": {"max-connections": N},
//   a vhost also "max-queues": N — streams, partitions included)
//   "definitions_file": "/etc/strata/definitions.json"       instead of the three
//
// Without "permissions" every user may configure, write and read every
// stream of "/" (as strata did before it had permissions); with it, exactly
// what it grants, as RabbitMQ: a user with no entry for a vhost cannot open
// a connection to it. A cleartext password ("password", or "password_file":
// a file readable by its owner only) is hashed when read; the first user
// given one is also what the nodes of a cluster log in to each other as,
// unless cluster.peer_user names another (server/serve_config.h).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "auth/access.h"
#include "common/json_config.h"
#include "common/result.h"

namespace strata::server {

// A node's own login to its peers (the first user with a cleartext
// password; empty name: none).
struct PeerLogin {
  std::string user;
  std::string password;
  // "PLAIN" with the password, or "EXTERNAL" (cluster.peer_auth
  // "certificate": the user is the one each node's certificate names).
  std::string mechanism = "PLAIN";
};

struct UserSettings {
  std::shared_ptr<const auth::AccessControl> access;
  PeerLogin peer;
};

// guest/guest, tagged administrator, everything in "/", loopback only.
const UserSettings& default_user_settings();

// Reads and removes the keys above from `document`; absent: the defaults.
// Errors name the setting by its path ("users[1].password_file: ...").
Result<UserSettings> load_user_settings(nlohmann::json* document);

// A secret kept in a file (trailing line end dropped): refused, naming
// `setting`, when the file is missing, unreadable, empty, or readable or
// writable by group or others.
Result<std::string> read_secret_file(const std::string& setting, const std::string& path);

// The keys load_user_settings reads (docs/CONFIGURATION.md documents them).
void user_settings_read(SettingsRead* out);

}  // namespace strata::server
