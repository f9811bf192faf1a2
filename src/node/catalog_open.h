// Opening the etcd catalog a node configuration names ("catalog":
// {"backend": "etcd", ...}); shared by the node and its read view.
#pragma once

#include <memory>

#include "catalog/catalog.h"
#include "common/result.h"
#include "etcd/etcd_client.h"
#include "node/node_config.h"

namespace strata::node {

// The catalog, checked to answer (one read of the namespace) so that a node
// that cannot reach its cluster fails at open, naming the endpoints.
Result<std::shared_ptr<catalog::Catalog>> open_etcd_catalog(const EtcdCatalogSettings& s);

// The etcd client's options for these settings (every etcd client of a
// node: its catalog, a cluster's ownership).
etcd::ClientOptions etcd_client_options(const EtcdCatalogSettings& s);

}  // namespace strata::node
