// The management API's user administration, in the shapes of RabbitMQ's
// management plugin (so rabbitmqadmin-style scripts and `strata user`
// speak one dialect), served under /api on the node's HTTP endpoint:
//   GET    /api/whoami                       the caller: name, tags
//   GET    /api/users                        [{name, password_hash, hashing_algorithm, tags}]
//   GET    /api/users/NAME
//   PUT    /api/users/NAME                   {"password": "..."} or {"password_hash": "...",
//                                            "hashing_algorithm": "..."}, "tags": "a,b" or
//                                            ["a","b"]: 201 created, 204 replaced
//   DELETE /api/users/NAME                   204; the user's permissions go with it
//   GET    /api/users/NAME/permissions
//   GET    /api/user-limits[/USER]           [{user, value: {max-connections}}]
//   PUT    /api/user-limits/USER/max-connections  {"value": N} (negative: none); DELETE removes
//   GET    /api/vhost-limits[/VHOST]         [{vhost, value: {max-connections, max-queues}}]
//   PUT    /api/vhost-limits/VHOST/LIMIT     {"value": N}, LIMIT max-connections or max-queues;
//                                            DELETE removes (RabbitMQ's paths)
//   GET    /api/vhosts                       [{name, description}]
//   GET    /api/vhosts/NAME
//   PUT    /api/vhosts/NAME                  {"description": "..."} (optional): 201 created,
//                                            204 changed; no permissions in it until set
//   DELETE /api/vhosts/NAME                  204; its permissions, connections (closed),
//                                            streams and super streams go with it; "/" stays
//   GET    /api/permissions                  [{user, vhost, configure, write, read}]
//   GET    /api/permissions/VHOST/USER
//   PUT    /api/permissions/VHOST/USER       {"configure": RE, "write": RE, "read": RE}
//   DELETE /api/permissions/VHOST/USER
//   GET    /api/definitions                  users, vhosts, permissions and streams (queues of
//                                            type stream) as RabbitMQ exports them
//   GET    /api/definitions/VHOST            one vhost's streams, without users, vhosts,
//                                            permissions or the queues' vhost
//   POST   /api/definitions/VHOST            a file's streams, created in VHOST
//   GET    /api/queues[/VHOST[/NAME]]        streams as RabbitMQ's queues of type stream;
//   PUT    /api/queues/VHOST/NAME            creates one (x-queue-type stream only);
//   DELETE /api/queues/VHOST/NAME            deletes it (management_queues.h)
//   GET    /api/connections                  /api/stream/connections, each named by its id
//   GET    /api/nodes                        the cluster's nodes as RabbitMQ lists them
//   POST   /api/definitions                  imports a RabbitMQ definitions file: its users
//                                            and permissions become live changes, its streams
//                                            are created (server/definitions_streams.h);
//                                            ?from_vhost=V takes vhost V's permissions and
//                                            streams as those of "/" (and skips the others)
//   GET    /api/stream/connections           the stream protocol's connections: id, peer,
//                                            user, vhost, state, client properties, TLS,
//                                            publisher and consumer counts
//   GET    /api/stream/publishers            [{connection, publisher_id, reference, stream,
//                                            published, confirmed, errored}]
//   GET    /api/stream/consumers             [{connection, subscription_id, stream,
//                                            offset_spec, credit, messages_delivered, ...}]
//   DELETE /api/connections/ID               closes a connection (also under /api/stream/)
//   GET    /api/streams[/NAME]               streams: arguments, tiers, upload lag, clients
//   PUT    /api/streams/NAME                 {"arguments": {...}}: creates
//   DELETE /api/streams/NAME                 deletes (management_streams.h)
//   GET    /api/super-streams[/NAME]         [{name, vhost, partitions, binding_keys}]
//   PUT    /api/super-streams/NAME           {"partitions": N | [names], "binding_keys": [...],
//                                            "arguments": {...}}: creates it and its
//                                            partitions (management_cluster.h)
//   DELETE /api/super-streams/NAME           deletes it and its partitions
//   GET    /api/cluster                      nodes, leases, stream owners (one node alone:
//                                            itself, owning every stream)
//   GET    /api/overview                     the node: name, version, listeners, totals,
//                                            message stats, object store requests, disk
//   GET    /api/history[?stream=S]           the last hour of a stream's (or all streams')
//                                            messages, upload lag and consumer lag,
//                                            sampled every server.history_interval_ms
//   GET    /api/offsets?stream=S&reference=R a consumer's tracked offset
//   PUT    /api/offsets?stream=S&reference=R {"offset": N | "first" | "next"}: sets it
//   The lists take RabbitMQ's ?page=N&page_size=M (then {"items": [...], "page",
//   "page_size", "page_count", "item_count", "total_count", "filtered_count"}).
// Every call authenticates with HTTP Basic as a strata user (the stream
// protocol's rules: loopback-only users only from loopback) and needs the
// `administrator` tag, except whoami, and the GETs under /api/stream,
// /api/streams, /api/queues, /api/connections, /api/nodes,
// /api/super-streams, /api/cluster, /api/history and /api/offsets, which a
// `monitoring` user may make too: 401 without valid credentials, 403
// without the tag. Errors are {"error": ..., "reason": ...} as RabbitMQ's.
// VHOST in a path is URL-encoded ("/" is %2F). A stream, super stream or
// offset of a vhost other than "/" is named with ?vhost=V beside its name;
// the entries listed carry their "vhost" (common/stream_name.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/stream_name.h"
#include "node/node.h"
#include "node/stream_settings.h"
#include "server/access_admin.h"
#include "server/api_reply.h"
#include "server/client_tally.h"
#include "server/stream_history.h"
#include "server/super_streams.h"

namespace strata::server {

struct ApiRequest {
  std::string method;  // GET, PUT, DELETE, POST
  std::string path;    // decoded: "/api/permissions///guest" for vhost "/"
  std::string body;
  std::string from_vhost;         // the query parameter of that name ("" when absent)
  std::string page, page_size;    // the query parameters of those names ("" when absent)
  std::string stream, reference;  // the query parameters of those names ("" when absent)
  // The query parameter of that name: the vhost of the stream, super
  // stream or offset a call names (absent: "/"), and the one vhost a list
  // of streams or super streams shows (absent: all).
  std::string vhost;
  // `vhost`, or "/" when absent.
  std::string vhost_or_default() const {
    return vhost.empty() ? std::string(kDefaultVhost) : vhost;
  }
  std::string authorization;  // the Authorization header as sent ("" when absent)
  bool loopback = false;      // the peer's address is a loopback address
};

struct ApiCounters {
  std::atomic<uint64_t> auth_failures{0};  // 401 answers to credentials that were given
  std::atomic<uint64_t> changes{0};        // edits stored
};

// What the API needs of the node: its streams (the definitions' queues)
// and its connections.
struct ApiNode {
  // Every stream with the settings it was created with.
  std::function<Result<std::vector<std::pair<std::string, node::StreamSettings>>>()> list;
  // As a Create: already_exists when present with these settings,
  // invalid_argument with others.
  std::function<Status(const std::string&, const node::StreamSettings&)> create;
  // Connection::describe of every open connection, in id order.
  std::function<nlohmann::json()> connections;
  // Every open connection's tally (client_tally.h).
  std::function<std::vector<ClientTally>()> tallies;
  // The node's /status "streams": the streams it serves, by name.
  std::function<nlohmann::json()> stream_status;
  // A stream's retention changed while it runs (StreamOps::alter_stream),
  // and the settings it has now.
  std::function<Status(const std::string&, const node::StreamSettings&)> alter;
  std::function<Result<node::StreamSettings>(const std::string&)> settings;
  // As a Delete: not_found when there is no such stream.
  std::function<Status(const std::string&)> remove;
  // Closes connection `id` (false: no such connection), logging `why`.
  std::function<bool(uint64_t id, const std::string& why)> close_connection;
  // A consumer reference's tracked offset on a stream, as StoreOffset and
  // QueryOffset have it (not_found: a stream this node does not know).
  std::function<Status(const std::string& stream, const std::string& reference, uint64_t)>
      store_offset;
  std::function<Result<std::optional<uint64_t>>(const std::string& stream,
                                                const std::string& reference)>
      query_offset;
  // Super streams: every one, and creating and deleting one with its
  // partitions (StreamOps).
  std::function<std::vector<SuperStream>()> super_streams;
  std::function<Status(const SuperStream&, const node::StreamSettings&)> create_super_stream;
  std::function<Status(const std::string&)> delete_super_stream;
  // GET /api/cluster's document (management_cluster.h).
  std::function<nlohmann::json()> cluster;
  // GET /api/overview's document (management_cluster.h, overview_document).
  std::function<nlohmann::json()> overview;
  // This process's resident memory and uptime (GET /api/nodes).
  std::function<node::Node::ProcessFigures()> process;
  // The sampled last hour (stream_history.h) and how often it is sampled.
  const StreamHistory* history = nullptr;
  int64_t history_interval_ms = 0;
};

ApiReply handle_management_api(AccessAdmin& admin, ApiCounters& counters, const ApiNode& node,
                               const ApiRequest& r);

}  // namespace strata::server
