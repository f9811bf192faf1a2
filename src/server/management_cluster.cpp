#include "server/management_cluster.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>

#include "common/stream_name.h"
#include "common/version.h"
#include "server/definitions_streams.h"
#include "server/management_streams.h"
#include "server/server_limits.h"

namespace strata::server {

using json = nlohmann::json;

namespace {

// `s` holds stored names: shown as its vhost's clients name them.
json super_stream_json(const SuperStream& s) {
  std::vector<std::string> partitions;
  for (const auto& p : s.partitions) partitions.emplace_back(split_stream_name(p).name);
  json j = stream_place_json(s.name);
  j["partitions"] = partitions;
  j["binding_keys"] = s.binding_keys;
  return j;
}

Result<std::vector<std::string>> string_list(const json& v, const char* field) {
  if (!v.is_array()) {
    return Error(Errc::invalid_argument, fmt::format("\"{}\" must be a list of strings", field));
  }
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string()) {
      return Error(Errc::invalid_argument, fmt::format("\"{}\" must be a list of strings", field));
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

}  // namespace

Result<SuperStream> super_stream_from_body(const std::string& name, const json& body) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() != "partitions" && it.key() != "binding_keys" && it.key() != "arguments") {
      return Error(
          Errc::invalid_argument,
          fmt::format("unknown field \"{}\" (partitions, binding_keys, arguments)", it.key()));
    }
  }
  SuperStream s;
  s.name = name;
  const json parts = body.value("partitions", json());
  const json keys = body.value("binding_keys", json());
  if (parts.is_number_unsigned() || parts.is_number_integer()) {
    if (!keys.is_null()) {
      return Error(Errc::invalid_argument,
                   "give \"partitions\" as a count or \"binding_keys\", not both");
    }
    const int64_t n = parts.get<int64_t>();
    // The super stream's own bound, checked before the names are made.
    if (n < 1 || n > int64_t(kMaxPartitions)) {
      return Error(Errc::invalid_argument,
                   fmt::format("\"partitions\": {} (1..{} allowed)", n, kMaxPartitions));
    }
    for (int64_t i = 0; i < n; ++i) {
      s.partitions.push_back(fmt::format("{}-{}", name, i));
      s.binding_keys.push_back(std::to_string(i));
    }
  } else if (parts.is_array()) {
    STRATA_ASSIGN_OR_RETURN(s.partitions, string_list(parts, "partitions"));
    if (keys.is_null()) {
      return Error(Errc::invalid_argument,
                   "\"partitions\" as names needs \"binding_keys\", one per partition");
    }
    STRATA_ASSIGN_OR_RETURN(s.binding_keys, string_list(keys, "binding_keys"));
  } else if (parts.is_null() && !keys.is_null()) {
    STRATA_ASSIGN_OR_RETURN(s.binding_keys, string_list(keys, "binding_keys"));
    for (const auto& k : s.binding_keys) s.partitions.push_back(fmt::format("{}-{}", name, k));
  } else {
    return Error(Errc::invalid_argument,
                 "give \"partitions\" (a count, or names with \"binding_keys\") or "
                 "\"binding_keys\"");
  }
  STRATA_TRY(validate_super_stream(s));
  return s;
}

ApiReply super_streams_api(const ApiNode& node, const ApiRequest& r, const std::string& client_name,
                           const std::string& caller) {
  if (!node.super_streams) return error_reply(503, "unavailable", "no super streams here");
  const std::string vhost = r.vhost_or_default();
  const std::string name = client_name.empty() ? "" : qualified_stream_name(vhost, client_name);
  if (r.method == "GET") {
    json items = json::array();
    for (const auto& s : node.super_streams()) {
      const bool listed = name.empty() ? r.vhost.empty() || split_stream_name(s.name).vhost == vhost
                                       : s.name == name;
      if (listed) items.push_back(super_stream_json(s));
    }
    if (name.empty()) return reply(200, items);
    if (items.empty()) {
      return error_reply(404, "not_found", fmt::format("no super stream '{}'", name));
    }
    return reply(200, items[0]);
  }
  if (name.empty()) return error_reply(405, "method_not_allowed", r.method + " " + r.path);
  if (r.method == "PUT") {
    auto b = body_object(r.body);
    if (!b.ok()) return refused(b.error());
    auto s = super_stream_from_body(client_name, *b);
    if (!s.ok()) return refused(s.error());
    // Stored names: the super stream's and its partitions' in the vhost.
    s->name = name;
    for (auto& p : s->partitions) p = qualified_stream_name(vhost, p);
    if (Status v = validate_super_stream(*s); !v.ok()) return refused(v.error());
    std::vector<std::string> ignored;
    auto settings = settings_from_queue_arguments(b->value("arguments", json::object()), &ignored);
    if (!settings.ok()) return refused(settings.error());
    // The same definition again: there already (a PUT is idempotent).
    for (const auto& have : node.super_streams()) {
      if (have.name != name) continue;
      if (have == *s) return no_content();
      return error_reply(409, "conflict",
                         fmt::format("super stream '{}' exists with other partitions", name));
    }
    Status st = node.create_super_stream(*s, *settings);
    if (!st.ok()) return refused(st.error());
    spdlog::info("http: user '{}' created super stream '{}' ({} partitions)", caller, name,
                 s->partitions.size());
    json out = super_stream_json(*s);
    out["ignored_arguments"] = ignored;
    return reply(201, out);
  }
  if (r.method == "DELETE") {
    Status st = node.delete_super_stream(name);
    if (!st.ok()) return refused(st.error());
    spdlog::info("http: user '{}' deleted super stream '{}'", caller, name);
    return no_content();
  }
  return error_reply(405, "method_not_allowed", r.method + " " + r.path);
}

json single_node_cluster(const std::string& address, const std::vector<std::string>& streams) {
  json owners = json::array();
  for (const auto& s : streams) {
    owners.push_back({{"stream", s}, {"node", address}, {"lease", nullptr}, {"state", "serving"}});
  }
  return {{"clustered", false},
          {"node", address},
          {"lease", nullptr},
          {"nodes", json::array({{{"name", address},
                                  {"address", address},
                                  {"this_node", true},
                                  {"streams_owned", streams.size()}}})},
          {"streams", owners}};
}

json cluster_document(const json& st) {
  const std::string self = st.value("node_id", "");
  std::map<std::string, uint64_t> owned_by;
  json streams = json::array();
  const json owners = st.value("owners", json::object());
  const json mine = st.value("owned", json::object());
  for (auto it = owners.begin(); it != owners.end(); ++it) {
    const std::string node = it.value().value("node", "");
    owned_by[node] += 1;
    json e = {{"stream", it.key()}, {"node", node}, {"lease", it.value().value("lease", json())}};
    // This node's own view of the streams it owns: acquiring, opening,
    // serving, handing_off.
    e["state"] = node == self && mine.contains(it.key()) ? mine[it.key()] : json();
    streams.push_back(std::move(e));
  }
  json nodes = json::array();
  const json known = st.value("nodes", json::object());
  const json tls = st.value("tls_nodes", json::object());
  for (auto it = known.begin(); it != known.end(); ++it) {
    nodes.push_back({{"name", it.key()},
                     {"address", it.value()},
                     {"tls_address", tls.value(it.key(), "")},
                     {"this_node", it.key() == self},
                     {"streams_owned", owned_by[it.key()]}});
  }
  return {{"clustered", true},
          {"node", self},
          {"lease", st.value("lease", json())},
          {"revision", st.value("revision", json())},
          {"fences", st.value("fences", json())},
          {"handoffs", st.value("handoffs", json())},
          {"last_fence", st.value("last_fence", json())},
          {"nodes", nodes},
          {"streams", streams}};
}

json overview_document(const std::string& node_name,
                       const std::vector<std::pair<std::string, std::string>>& listeners,
                       const json& status) {
  const json n = status.value("node", json::object());
  const json s = status.value("server", json::object());
  json ls = json::array();
  for (const auto& [protocol, address] : listeners) {
    ls.push_back({{"protocol", protocol}, {"address", address}});
  }
  const json streams = status.value("streams", json::object());
  uint64_t messages = 0;
  for (const auto& [name, st] : streams.items()) messages += stream_span(st).messages();
  return {{"node", node_name},
          {"strata_version", kStrataVersion},
          // RabbitMQ's names for what rabbitmqadmin's `show overview` prints.
          {"product_name", "strata"},
          {"product_version", kStrataVersion},
          {"cluster_name", node_name},
          {"listeners", ls},
          {"queue_totals",
           {{"messages", messages}, {"messages_ready", messages}, {"messages_unacknowledged", 0}}},
          {"object_totals",
           {{"streams", streams.size()},
            {"queues", streams.size()},
            {"connections", s.value("connections", uint64_t(0))},
            {"publishers", s.value("publishers", uint64_t(0))},
            {"consumers", s.value("consumers", uint64_t(0))}}},
          {"message_stats",
           {{"publish", s.value("messages_in", uint64_t(0))},
            {"confirm", s.value("messages_confirmed", uint64_t(0))},
            {"deliver_get", s.value("messages_out", uint64_t(0))}}},
          {"object_store",
           {{"location", n.value("object_store", "")},
            {"requests", n.value("object_store_requests", json::object())}}},
          {"catalog", n.value("catalog", "")},
          {"disk", n.value("disk", json())},
          {"uptime_s", n.value("uptime_s", 0.0)}};
}

ApiReply overview_api(const ApiNode& node) {
  if (!node.overview) return error_reply(503, "unavailable", "no overview here");
  return reply(200, node.overview());
}

ApiReply cluster_api(const ApiNode& node) {
  if (!node.cluster) return error_reply(503, "unavailable", "no cluster view here");
  return reply(200, node.cluster());
}

}  // namespace strata::server
