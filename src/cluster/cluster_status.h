// What `strata cluster status` shows, read straight from etcd (no node
// needed): registered nodes with their address, lease and its remaining
// TTL; every catalog stream with its epoch, root and owner (or none).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "etcd/etcd_client.h"

namespace strata::cluster {

// {"namespace", "revision", "nodes": {id: {address, lease, ttl_s}},
//  "streams": {name: {epoch, root_key, owner, owner_lease}}} — owner "" and
// owner_lease null when ownerless. Errors: the etcd call that failed.
Result<nlohmann::json> read_cluster_status(etcd::EtcdClient& client, const std::string& ns);

// An etcd lease id in JSON: a decimal string, as etcd's own JSON gateway
// writes it — lease ids use all 63 bits and a JavaScript number keeps 53,
// so a console or script reading a number would act on another lease.
// Null for 0 (no lease).
nlohmann::json lease_json(int64_t lease);

}  // namespace strata::cluster
