// RabbitMQ's /api/queues for the queues strata holds — its streams — so
// rabbitmqadmin, RabbitMQ's management UI scripts and tools written for
// RabbitMQ's management API list, declare and delete streams in its
// dialect:
//   GET    /api/queues                  every stream as a queue of type "stream"
//   GET    /api/queues/VHOST            those of one vhost (404: no such vhost)
//   GET    /api/queues/VHOST/NAME       one (404: none)
//   PUT    /api/queues/VHOST/NAME       {"durable": true, "auto_delete": false,
//                                        "arguments": {"x-queue-type": "stream", ...}}:
//                                        201 created, 204 there with these arguments,
//                                        400 with others; a queue of another type, or
//                                        one not durable, auto-delete or exclusive, is
//                                        refused with 400 naming why (strata holds
//                                        streams only)
//   DELETE /api/queues/VHOST/NAME       204, 404 when there is no such stream
//   DELETE /api/queues/VHOST/NAME/contents   400: a stream is not purged (RabbitMQ
//                                        refuses it too); its retention trims it
// VHOST is URL-encoded ("/" is %2F); NAME is the rest of the path, so a
// stream name may hold "/" (sent as %2F). Booleans may come as strings
// ("true"), as rabbitmqadmin sends them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/api_reply.h"
#include "server/management_api.h"

namespace strata::server {

// What a path under /api/queues names: a vhost ("" for every vhost) and a
// queue in it ("" for the vhost's list).
struct QueuePath {
  std::string vhost;
  std::string name;
};
// `path` is decoded ("/api/queues///orders" for orders in vhost "/");
// nullopt when it is not under /api/queues.
std::optional<QueuePath> queue_path(std::string_view path);

// A GET /api/streams entry (management_streams.h) with the fields RabbitMQ
// gives a stream queue.
nlohmann::json queue_entry(nlohmann::json stream_entry);

// The settings of a PUT /api/queues body, or invalid_argument naming the
// field that makes it something other than a stream strata can create.
Result<node::StreamSettings> stream_settings_of_queue(const nlohmann::json& body,
                                                      std::string_view name);

// GETs need a monitoring user or an administrator, changes an
// administrator (the caller checks). `list` answers a list (the API's
// pagination); `has_vhost` tells whether a vhost exists.
ApiReply queues_api(const ApiNode& node, const ApiRequest& r, const QueuePath& p,
                    const std::string& caller,
                    const std::function<bool(const std::string&)>& has_vhost,
                    const std::function<ApiReply(nlohmann::json)>& list);

}  // namespace strata::server
