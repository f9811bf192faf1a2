#include "server/serve_config.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace strata::server {
namespace {

using json = nlohmann::json;

Error bad(const std::string& path, const std::string& why) {
  return Error(Errc::invalid_argument, fmt::format("serve config: {}: {}", path, why));
}

Status get_uint(const json& section, const std::string& key, const std::string& path, uint64_t lo,
                uint64_t hi, uint64_t* out) {
  if (!section.contains(key)) return Status::OK();
  const json& v = section[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<uint64_t>() < lo ||
      v.get<uint64_t>() > hi) {
    return bad(path, fmt::format("{} is not an integer in {}..{}", v.dump(), lo, hi));
  }
  *out = v.get<uint64_t>();
  return Status::OK();
}

Status get_string(const json& section, const std::string& key, const std::string& path,
                  std::string* out) {
  if (!section.contains(key)) return Status::OK();
  if (!section[key].is_string())
    return bad(path, fmt::format("{} is not a string", section[key].dump()));
  *out = section[key].get<std::string>();
  return Status::OK();
}

// The keys each section accepts: the check for unknown settings runs from
// these, and serve_config_settings() lists them.
constexpr const char* kServerKeys[] = {
    "listen",         "advertised_host", "advertised_port", "frame_max",
    "heartbeat_s",    "threads",         "max_connections", "consumer_update_timeout_ms",
    "coalesce_bytes", "close_linger_ms"};
constexpr const char* kClusterKeys[] = {"enabled",          "node_id",   "lease_ttl_ms",
                                        "acquire_grace_ms", "rebalance", "rebalance_after_ms"};

Status load_server_section(const json& s, ServerSettings* out) {
  if (!s.is_object()) return bad("server", "not an object");
  for (auto it = s.begin(); it != s.end(); ++it) {
    bool known = false;
    for (const char* k : kServerKeys) known = known || it.key() == k;
    if (!known) return bad("server." + it.key(), "unknown setting");
  }
  uint64_t v = 0;
  if (auto st = get_string(s, "listen", "server.listen", &out->listen); !st.ok()) return st;
  if (auto st = get_string(s, "advertised_host", "server.advertised_host", &out->advertised_host);
      !st.ok()) {
    return st;
  }
  v = out->advertised_port;
  if (auto st = get_uint(s, "advertised_port", "server.advertised_port", 0, 65535, &v); !st.ok()) {
    return st;
  }
  out->advertised_port = uint32_t(v);
  // Below 8 KiB a Tune could not carry a useful Publish; above 64 MiB one
  // connection's buffers would dwarf the rest of the server.
  v = out->frame_max;
  if (auto st = get_uint(s, "frame_max", "server.frame_max", 8192, 64u << 20, &v); !st.ok()) {
    return st;
  }
  out->frame_max = uint32_t(v);
  v = out->heartbeat_s;
  if (auto st = get_uint(s, "heartbeat_s", "server.heartbeat_s", 0, 3600, &v); !st.ok()) return st;
  out->heartbeat_s = uint32_t(v);
  v = out->threads;
  if (auto st = get_uint(s, "threads", "server.threads", 1, 64, &v); !st.ok()) return st;
  out->threads = uint32_t(v);
  v = out->max_connections;
  if (auto st = get_uint(s, "max_connections", "server.max_connections", 1, 1u << 20, &v);
      !st.ok()) {
    return st;
  }
  out->max_connections = uint32_t(v);
  // Up to a day: a larger value would be no deadline at all.
  v = out->consumer_update_timeout_ms;
  if (auto st = get_uint(s, "consumer_update_timeout_ms", "server.consumer_update_timeout_ms", 1,
                         86'400'000, &v);
      !st.ok()) {
    return st;
  }
  out->consumer_update_timeout_ms = uint32_t(v);
  // Past 64 MiB one joined chunk would be a frame no client accepts.
  v = out->coalesce_bytes;
  if (auto st = get_uint(s, "coalesce_bytes", "server.coalesce_bytes", 0, 64u << 20, &v);
      !st.ok()) {
    return st;
  }
  out->coalesce_bytes = uint32_t(v);
  // A minute at most: a closing connection holds its socket and buffers.
  v = out->close_linger_ms;
  if (auto st = get_uint(s, "close_linger_ms", "server.close_linger_ms", 0, 60'000, &v); !st.ok()) {
    return st;
  }
  out->close_linger_ms = uint32_t(v);
  return Status::OK();
}

Status load_users(const json& u, std::vector<User>* out) {
  if (!u.is_array() || u.empty()) return bad("users", "not a non-empty array");
  out->clear();
  for (size_t i = 0; i < u.size(); ++i) {
    std::string path = fmt::format("users[{}]", i);
    const json& e = u[i];
    if (!e.is_object() || !e.contains("name") || !e.contains("password") || e.size() != 2 ||
        !e["name"].is_string() || !e["password"].is_string() ||
        e["name"].get<std::string>().empty()) {
      return bad(path, "not {\"name\": non-empty string, \"password\": string}");
    }
    out->push_back({e["name"].get<std::string>(), e["password"].get<std::string>()});
  }
  return Status::OK();
}

Status load_cluster_section(const json& s, ClusterSettings* out) {
  if (!s.is_object()) return bad("cluster", "not an object");
  for (auto it = s.begin(); it != s.end(); ++it) {
    bool known = false;
    for (const char* k : kClusterKeys) known = known || it.key() == k;
    if (!known) return bad("cluster." + it.key(), "unknown setting");
  }
  if (s.contains("enabled")) {
    if (!s["enabled"].is_boolean()) {
      return bad("cluster.enabled", fmt::format("{} is not true or false", s["enabled"].dump()));
    }
    out->enabled = s["enabled"].get<bool>();
  }
  if (auto st = get_string(s, "node_id", "cluster.node_id", &out->node_id); !st.ok()) return st;
  // An hour at most: a longer lease would leave a dead owner's streams
  // unserved for that long.
  uint64_t v = uint64_t(out->lease_ttl_ms);
  if (auto st = get_uint(s, "lease_ttl_ms", "cluster.lease_ttl_ms", 1000, 3'600'000, &v);
      !st.ok()) {
    return st;
  }
  out->lease_ttl_ms = int64_t(v);
  v = uint64_t(out->acquire_grace_ms);
  if (auto st = get_uint(s, "acquire_grace_ms", "cluster.acquire_grace_ms", 0, 3'600'000, &v);
      !st.ok()) {
    return st;
  }
  out->acquire_grace_ms = int64_t(v);
  if (s.contains("rebalance")) {
    if (!s["rebalance"].is_boolean()) {
      return bad("cluster.rebalance",
                 fmt::format("{} is not true or false", s["rebalance"].dump()));
    }
    out->rebalance = s["rebalance"].get<bool>();
  }
  v = uint64_t(out->rebalance_after_ms);
  if (auto st = get_uint(s, "rebalance_after_ms", "cluster.rebalance_after_ms", 0, 86'400'000, &v);
      !st.ok()) {
    return st;
  }
  out->rebalance_after_ms = int64_t(v);
  return Status::OK();
}

}  // namespace

cluster::OwnershipConfig ownership_config(const ClusterSettings& c, const node::NodeConfig& n,
                                          const std::string& advertise) {
  cluster::OwnershipConfig o;
  o.node_id = c.node_id;
  o.advertise = advertise;
  o.ns = n.catalog_etcd.ns;
  o.timing.lease_ttl_ms = c.lease_ttl_ms;
  o.timing.acquire_grace_ms = c.acquire_grace_ms;
  o.timing.rebalance_after_ms = c.rebalance ? c.rebalance_after_ms : -1;
  return o;
}

Result<std::pair<std::string, uint16_t>> parse_host_port(const std::string& what,
                                                         const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return bad(what, fmt::format("'{}' is not host:port", text));
  }
  std::string host = text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  uint32_t p = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || p > 65535) return bad(what, fmt::format("'{}': bad port", text));
    p = p * 10 + uint32_t(c - '0');
  }
  if (p > 65535) return bad(what, fmt::format("'{}': bad port", text));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return std::pair<std::string, uint16_t>(host, uint16_t(p));
}

Result<ServeConfig> load_serve_config(json document, const ServeFlags& flags,
                                      const objstore::EnvLookup& env) {
  if (document.is_null()) document = json::object();
  if (!document.is_object()) return bad("(document)", "not a JSON object");
  ServeConfig cfg;
  if (document.contains("server")) {
    if (auto st = load_server_section(document["server"], &cfg.server); !st.ok()) return st.error();
    document.erase("server");
  }
  if (document.contains("users")) {
    if (auto st = load_users(document["users"], &cfg.server.users); !st.ok()) return st.error();
    document.erase("users");
  }
  if (document.contains("cluster")) {
    if (auto st = load_cluster_section(document["cluster"], &cfg.cluster); !st.ok()) {
      return st.error();
    }
    document.erase("cluster");
  }
  if (!flags.listen.empty()) cfg.server.listen = flags.listen;
  if (!flags.advertised_host.empty()) cfg.server.advertised_host = flags.advertised_host;
  if (flags.advertised_port != 0) {
    if (flags.advertised_port > 65535) return bad("--advertised-port", "above 65535");
    cfg.server.advertised_port = flags.advertised_port;
  }
  if (auto hp =
          parse_host_port(flags.listen.empty() ? "server.listen" : "--listen", cfg.server.listen);
      !hp.ok()) {
    return std::move(hp).error();
  }
  if (!flags.http.empty()) document["http"] = {{"listen", flags.http}};
  std::vector<objstore::ConfigOverride> overrides;
  if (!flags.s3_endpoint.empty()) {
    overrides.push_back({"backend", "s3", "--s3-endpoint"});
    overrides.push_back({"s3.endpoint", flags.s3_endpoint, "--s3-endpoint"});
  }
  if (!flags.bucket.empty()) overrides.push_back({"s3.bucket", flags.bucket, "--bucket"});
  auto node = node::load_node_config(document, flags.data_dir, env, overrides);
  if (!node.ok()) return std::move(node).error();
  cfg.node = std::move(node).value();
  if (cfg.node.data_dir.empty()) return bad("data_dir", "not set (use --data-dir or \"data_dir\")");
  if (cfg.cluster.enabled) {
    if (cfg.node.catalog_backend != "etcd") {
      return bad("cluster.enabled",
                 fmt::format("a cluster needs the etcd catalog (catalog.backend \"etcd\"), not "
                             "\"{}\"",
                             cfg.node.catalog_backend));
    }
    // Another node recovers a stream from the bucket alone (a takeover, a
    // hand-over): without tiering there would be nothing to recover.
    if (!cfg.node.tiering.enabled) {
      return bad("cluster.enabled",
                 "a cluster needs tiering (tiering.enabled true): streams "
                 "move between nodes through the object store");
    }
    if (auto st = cluster::validate(ownership_config(cfg.cluster, cfg.node, "")); !st.ok()) {
      return Error(Errc::invalid_argument, "serve config: " + st.error().message);
    }
    // Streams are opened as this node comes to own them.
    cfg.node.open_streams_at_start = false;
  }
  return cfg;
}

SettingsRead serve_config_settings() {
  SettingsRead out = node::node_config_settings();
  out.insert("server");
  for (const char* k : kServerKeys) out.insert(std::string("server.") + k);
  out.insert("users");
  out.insert("cluster");
  for (const char* k : kClusterKeys) out.insert(std::string("cluster.") + k);
  return out;
}

Result<ServeConfig> load_serve_config_file(const std::string& path, const ServeFlags& flags,
                                           const objstore::EnvLookup& env) {
  json doc;
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in) return Error(Errc::not_found, fmt::format("serve config: cannot read {}", path));
    std::stringstream ss;
    ss << in.rdbuf();
    doc = json::parse(ss.str(), nullptr, false);
    if (doc.is_discarded()) {
      return Error(Errc::invalid_argument, fmt::format("serve config: {} is not valid JSON", path));
    }
  }
  return load_serve_config(std::move(doc), flags, env);
}

}  // namespace strata::server
