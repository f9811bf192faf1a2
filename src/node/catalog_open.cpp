#include "node/catalog_open.h"

#include "catalog/etcd_catalog.h"

namespace strata::node {

etcd::ClientOptions etcd_client_options(const EtcdCatalogSettings& s) {
  etcd::ClientOptions o;
  o.endpoints = s.endpoints;
  o.request_timeout = std::chrono::milliseconds(s.request_timeout_ms);
  o.attempt_timeout = std::chrono::milliseconds(s.attempt_timeout_ms);
  o.tls = {s.ca_file, s.cert_file, s.key_file};
  o.user = s.user;
  o.password = s.password;
  return o;
}

Result<std::shared_ptr<catalog::Catalog>> open_etcd_catalog(const EtcdCatalogSettings& s) {
  STRATA_ASSIGN_OR_RETURN(auto client, etcd::EtcdClient::open(etcd_client_options(s)));
  std::shared_ptr<etcd::EtcdClient> shared(std::move(client));
  const std::string prefix = s.ns + "/streams/";
  STRATA_TRY(shared->range(prefix, etcd::prefix_end(prefix), 1));
  STRATA_ASSIGN_OR_RETURN(auto cat, catalog::EtcdCatalog::open(shared, {s.ns}));
  return std::shared_ptr<catalog::Catalog>(std::move(cat));
}

}  // namespace strata::node
