// The etcd backend of the contract suite: one 3-member cluster per test
// binary (started at the first use, killed when the binary ends), a fresh
// namespace per catalog so tests do not see each other's entries.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "catalog/etcd_catalog.h"
#include "support/etcd_cluster.h"

namespace strata::test {

// The shared cluster; nullptr (and a failed test naming why) if it cannot start.
EtcdCluster* shared_etcd_cluster();
// A client of the shared cluster with the given timeouts.
std::shared_ptr<etcd::EtcdClient> shared_etcd_client(
    std::chrono::milliseconds request = std::chrono::milliseconds(5000),
    std::chrono::milliseconds attempt = std::chrono::milliseconds(1000));
// A catalog in a namespace no other catalog of this process uses.
std::unique_ptr<catalog::Catalog> open_etcd_contract_catalog();
std::string fresh_namespace();

}  // namespace strata::test
