#include "cluster/cluster_status.h"

#include <charconv>

#include "cluster/node_registration.h"

namespace strata::cluster {

using json = nlohmann::json;

namespace {

// An entry's epoch as stored ("<n>" in decimal); null when it is not one —
// whatever etcd holds, the status shows it rather than failing.
json epoch_of(const json& entry) {
  if (!entry.is_object() || !entry.contains("epoch") || !entry["epoch"].is_string()) return nullptr;
  const auto& s = entry["epoch"].get_ref<const std::string&>();
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return nullptr;
  return v;
}

}  // namespace

json lease_json(int64_t lease) {
  return lease == 0 ? json(nullptr) : json(std::to_string(lease));
}

Result<json> read_cluster_status(etcd::EtcdClient& client, const std::string& ns) {
  const std::string prefix = ns + "/";
  STRATA_ASSIGN_OR_RETURN(auto r, client.range(prefix, etcd::prefix_end(prefix)));
  json nodes = json::object(), streams = json::object();
  std::map<std::string, std::pair<std::string, int64_t>> owners;
  for (const auto& kv : r.kvs) {
    const std::string rest = kv.key.substr(prefix.size());
    // The name under directory `d`, if the key is there.
    auto under = [&](std::string_view d, std::string* name) {
      if (rest.compare(0, d.size(), d) != 0) return false;
      *name = rest.substr(d.size());
      return true;
    };
    std::string name;
    if (under("nodes/", &name)) {
      const NodeRegistration r = parse_registration(kv.value);
      json n = {{"address", r.address},
                {"tls_address", r.tls_address},
                {"lease", lease_json(kv.lease)},
                {"ttl_s", nullptr}};
      if (auto t = client.lease_time_to_live(kv.lease); t.ok()) n["ttl_s"] = t->ttl_seconds;
      nodes[name] = n;
    } else if (under("owners/", &name)) {
      owners[name] = {kv.value, kv.lease};
    } else if (under("streams/", &name)) {
      auto j = json::parse(kv.value, nullptr, false);
      json st = {{"epoch", epoch_of(j)}, {"root_key", ""}, {"owner", ""}, {"owner_lease", nullptr}};
      if (j.is_object() && j.contains("root_key")) st["root_key"] = j["root_key"];
      streams[name] = st;
    }
  }
  for (const auto& [name, o] : owners) {
    if (!streams.contains(name)) continue;
    streams[name]["owner"] = o.first;
    streams[name]["owner_lease"] = lease_json(o.second);
  }
  return json{{"namespace", ns}, {"revision", r.revision}, {"nodes", nodes}, {"streams", streams}};
}

}  // namespace strata::cluster
