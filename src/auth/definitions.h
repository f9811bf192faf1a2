// RabbitMQ's definitions JSON — what `rabbitmqctl export_definitions` and
// the management API's /api/definitions write — read for what strata
// models: users, vhosts, permissions, and the queues that are streams.
// Every other section (exchanges, bindings, policies, parameters, ...) is
// left alone; queues of other types are listed as skipped so an importer
// can say what it ignored. docs/formats/access.md lists the fields read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "auth/access.h"
#include "common/result.h"

namespace strata::auth {

struct StreamDefinition {
  std::string name, vhost;
  // The queue's "arguments" object as given (x-queue-type, x-max-age, ...).
  nlohmann::json arguments;
};

// A queue in the file that is not a stream: named so an import can report it.
struct SkippedQueue {
  std::string name, vhost;
  std::string type;  // "classic", "quorum", ... as the file says
};

struct Definitions {
  // The file's "rabbit_version" ("" when absent): it picks the hashing
  // algorithm of a user record that does not name one, as RabbitMQ does.
  std::string rabbit_version;
  std::vector<User> users;
  std::vector<VHost> vhosts;
  std::vector<UserPermission> permissions;
  std::vector<StreamDefinition> streams;
  std::vector<SkippedQueue> skipped_queues;
};

// invalid_argument for malformed JSON or a malformed entry; the message
// starts with `source_name` and names the section, the entry's index and,
// when it has one, its name: "defs.json: users[2] ('bob'): tags: ...".
// A user record may carry "password" (cleartext, hashed here with a random
// salt) instead of "password_hash", as RabbitMQ's import allows.
Result<Definitions> parse_definitions(std::string_view json, std::string_view source_name);

// The value of a vhost-limits parameter ({"max-connections": N,
// "max-queues": N}; a negative N is no limit) set as `vhost`'s limits, each
// absent one cleared; an error names `source_name`, parameters[`index`]
// and the vhost, as parse_definitions does.
Status apply_vhost_limits_value(const nlohmann::json& value, std::string_view source_name,
                                size_t index, VHost* vhost);

// The definitions as RabbitMQ 3.10 writes them (tags as an array, vhost
// description under "metadata", streams as durable queues of type
// "stream"); skipped queues are not written. parse_definitions of the
// result gives back the same definitions.
std::string export_definitions(const Definitions& defs);

// AccessControl::build over the definitions' users, vhosts and permissions.
Result<std::shared_ptr<const AccessControl>> build_access_control(
    const Definitions& defs, std::vector<std::string> loopback_users = kDefaultLoopbackUsers);

}  // namespace strata::auth
