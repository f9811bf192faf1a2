// The management API's streams, and closing a connection (the paths are
// listed in management_api.h):
//   GET    /api/streams, /api/streams/NAME   every stream of the catalog with
//          its arguments and, where this node serves it, its tiers (first
//          and next offsets, bytes), its upload lag and its publishers and
//          consumers (the largest consumer lag among them)
//   PUT    /api/streams/NAME   {"arguments": {...}} as RabbitMQ's queue
//          arguments (definitions_streams.h): created 201, already there
//          with these arguments 204, with others 400
//   DELETE /api/streams/NAME   204, 404 when there is no such stream
//   DELETE /api/connections/ID (or /api/stream/connections/ID)
//   GET    /api/offsets?stream=S&reference=R   {"stream", "reference",
//          "offset": N or null when none is stored}
//   PUT    /api/offsets?stream=S&reference=R   {"offset": N, "first" or
//          "next"} — a consumer group's offset reset, as if it had stored
//          it (a running consumer reads it when it next queries its offset,
//          e.g. when it subscribes again); "first" and "next" only where the
//          stream is served
// NAME is the rest of the path, so a stream name may hold "/" (sent as %2F).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "node/stream_settings.h"
#include "server/client_tally.h"
#include "server/management_api.h"

namespace strata::server {

// A stream's clients on this node: its publishers, its consumers and the
// largest offset_lag among them.
struct StreamClients {
  uint64_t publishers = 0;
  uint64_t consumers = 0;
  uint64_t max_lag = 0;
  // By consumer group (named consumers): the largest offset_lag of its
  // consumers here.
  std::map<std::string, uint64_t> group_lag;
};
// By stream, from every connection's tally (streams without clients are
// absent).
std::map<std::string, StreamClients> stream_clients(const std::vector<ClientTally>& tallies);

// A stored stream name (common/stream_name.h) as the API shows it:
// {name_key: the name its vhost's clients give it, "vhost": that vhost}.
nlohmann::json stream_place_json(std::string_view stored, const char* name_key = "name");

// The offsets a stream this node serves holds across its tiers, from its
// entry in /status "streams".
struct StreamSpan {
  uint64_t first = 0;
  uint64_t next = 0;
  uint64_t messages() const { return next > first ? next - first : 0; }
};
StreamSpan stream_span(const nlohmann::json& status);

// One entry of GET /api/streams: `status` is the stream's entry in the
// node's /status "streams" (null when this node does not serve it),
// `clients` its clients here.
nlohmann::json stream_entry(const std::string& name, const node::StreamSettings& settings,
                            const nlohmann::json& status, const StreamClients& clients);

// The entries of GET /api/streams (every stream, or only `name`).
Result<nlohmann::json> stream_entries(const ApiNode& node, const std::string& name);

// A stream's history sample (stream_history.h) from its entry.
HistorySample sample_of_entry(int64_t t_ms, const nlohmann::json& entry);

// /api/streams[/NAME]: `name` empty for the list. GETs need the caller to
// be an administrator or a monitoring user, changes an administrator (the
// caller checks); `caller` names them in the log.
ApiReply streams_api(const ApiNode& node, const ApiRequest& r, const std::string& name,
                     const std::string& caller);

// /api/offsets (GET for monitoring users too, PUT for administrators).
ApiReply offsets_api(const ApiNode& node, const ApiRequest& r, const std::string& caller);

// DELETE /api/connections/ID (its id, or RabbitMQ's name for it, "PEER:PORT
// -> HOST:PORT", as /api/connections lists it): the connection is closed after what is
// queued for it goes out (as at shutdown: clients take it as a lost
// connection and reconnect).
ApiReply close_connection_api(const ApiNode& node, const std::string& id,
                              const std::string& caller);

}  // namespace strata::server
