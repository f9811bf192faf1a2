// What `strata cluster status` shows, read straight from etcd (no node
// needed): registered nodes with their address, lease and its remaining
// TTL; every catalog stream with its epoch, root and owner (or none).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "etcd/etcd_client.h"

namespace strata::cluster {

// {"namespace", "revision", "nodes": {id: {address, lease, ttl_s}},
//  "streams": {name: {epoch, root_key, owner, owner_lease}}} — owner "" when
// ownerless. Errors: the etcd call that failed.
Result<nlohmann::json> read_cluster_status(etcd::EtcdClient& client, const std::string& ns);

}  // namespace strata::cluster
