#include "cluster/cluster_status.h"

namespace strata::cluster {

using json = nlohmann::json;

Result<json> read_cluster_status(etcd::EtcdClient& client, const std::string& ns) {
  const std::string prefix = ns + "/";
  STRATA_ASSIGN_OR_RETURN(auto r, client.range(prefix, etcd::prefix_end(prefix)));
  json nodes = json::object(), streams = json::object();
  std::map<std::string, std::pair<std::string, int64_t>> owners;
  for (const auto& kv : r.kvs) {
    std::string rest = kv.key.substr(prefix.size());
    auto under = [&](std::string_view d) { return rest.compare(0, d.size(), d) == 0; };
    if (under("nodes/")) {
      auto j = json::parse(kv.value, nullptr, false);
      json n = {{"address", j.is_object() && j.contains("address") ? j["address"] : json("")},
                {"lease", kv.lease},
                {"ttl_s", nullptr}};
      if (auto t = client.lease_time_to_live(kv.lease); t.ok()) n["ttl_s"] = t->ttl_seconds;
      nodes[rest.substr(6)] = n;
    } else if (under("owners/")) {
      owners[rest.substr(7)] = {kv.value, kv.lease};
    } else if (under("streams/")) {
      auto j = json::parse(kv.value, nullptr, false);
      json s = {{"epoch", nullptr}, {"root_key", ""}, {"owner", ""}, {"owner_lease", 0}};
      if (j.is_object()) {
        if (j.contains("epoch") && j["epoch"].is_string()) {
          s["epoch"] = std::stoull(j["epoch"].get<std::string>());
        }
        if (j.contains("root_key")) s["root_key"] = j["root_key"];
      }
      streams[rest.substr(8)] = s;
    }
  }
  for (const auto& [name, o] : owners) {
    if (!streams.contains(name)) continue;
    streams[name]["owner"] = o.first;
    streams[name]["owner_lease"] = o.second;
  }
  return json{{"namespace", ns}, {"revision", r.revision}, {"nodes", nodes}, {"streams", streams}};
}

}  // namespace strata::cluster
