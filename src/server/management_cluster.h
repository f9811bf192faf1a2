// The management API's super streams and cluster view (management_api.h
// lists every route):
//   /api/super-streams[/NAME]  GET: [{name, vhost, partitions, binding_keys}];
//                              PUT: creates one as `rabbitmq-streams
//                              add_super_stream` does; DELETE: removes it
//   /api/cluster               GET: the nodes, this node's lease, stream owners
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/management_api.h"

namespace strata::server {

// The super stream a PUT body describes (RabbitMQ's naming):
// {"partitions": N} makes partitions NAME-0 .. NAME-(N-1) with binding
// keys "0" .. "N-1"; {"binding_keys": [k...]} makes NAME-k for each key;
// {"partitions": [names], "binding_keys": [keys]} names both. Errors:
// invalid_argument naming the field.
Result<SuperStream> super_stream_from_body(const std::string& name, const nlohmann::json& body);

// /api/super-streams[/NAME]: `name` empty for the list. The caller checks
// the tags (monitoring reads, administrators change); `caller` is logged.
ApiReply super_streams_api(const ApiNode& node, const ApiRequest& r, const std::string& name,
                           const std::string& caller);

// GET /api/cluster: the node's document with lease ids as strings.
ApiReply cluster_api(const ApiNode& node);
// GET /api/overview.
ApiReply overview_api(const ApiNode& node);

// What this node sees, as much in RabbitMQ's /api/overview shape as fits:
// {"node", "strata_version", "product_name", "product_version",
//  "cluster_name" (the node's name), "listeners": [{protocol, address}],
//  "queue_totals": {messages, messages_ready, messages_unacknowledged} of
//  the streams served here, "object_totals": {streams, queues (the same),
//  connections, publishers, consumers},
//  "message_stats": {publish, confirm, deliver_get}, "object_store":
//  {"location", "requests": {op: {requests, transient_errors, fatal_errors,
//  not_found, bytes}}}, "catalog", "disk", "uptime_s"}; built from the
// node's /status document (`status`: its "node" and "server" sections).
nlohmann::json overview_document(const std::string& node_name,
                                 const std::vector<std::pair<std::string, std::string>>& listeners,
                                 const nlohmann::json& status);

// The document of a node without a cluster: itself, serving every stream.
nlohmann::json single_node_cluster(const std::string& address,
                                   const std::vector<std::string>& streams);

// The document of a cluster node from its ownership status
// (cluster/ownership.h status_json): nodes with the streams each owns,
// owners per stream, this node's lease and fences.
nlohmann::json cluster_document(const nlohmann::json& ownership_status);

}  // namespace strata::server
