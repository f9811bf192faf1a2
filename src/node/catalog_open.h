// Opening the etcd catalog a node configuration names ("catalog":
// {"backend": "etcd", ...}); shared by the node and its read view.
#pragma once

#include <memory>

#include "catalog/catalog.h"
#include "common/result.h"
#include "node/node_config.h"

namespace strata::node {

// The catalog, checked to answer (one read of the namespace) so that a node
// that cannot reach its cluster fails at open, naming the endpoints.
Result<std::shared_ptr<catalog::Catalog>> open_etcd_catalog(const EtcdCatalogSettings& s);

}  // namespace strata::node
