// EtcdCatalog: the catalog on etcd v3, for several nodes over one bucket.
// The mapping is the one catalog.h designs; per stream, in one namespace:
//   E = <ns>/streams/<stream>  {"epoch":"<n>","root_key":"...","op":"<nonce>"}
//   P = <ns>/epochs/<stream>   the epoch as 20 zero-padded decimal digits
//   S = <ns>/settings/<stream> the stream's settings, if created with any
// and removed with the entry: S and every <ns>/offsets/<stream>/<reference>
// (consumer offsets, server/cluster_offsets.h).
// (docs/formats/catalog.md, "etcd backend"). An entry's revision is E's
// mod_revision: global in etcd, so it strictly grows but is not consecutive
// when other keys change in between (the one difference from the embedded
// backend, which catalog.h allows). Every write changes E and P in one Txn;
// a failed Txn's else branch reads E, and the outcome comes from the shared
// rules (entry_rules.h) applied to what it read, so both backends decide
// alike.
//
// Ambiguous retries. A write whose first attempt timed out may have been
// applied before the client retried it on another member; the retry then
// fails its compare. Each write stores a fresh random nonce ("op") in E, so
// a write that finds its own nonce knows it won and returns ok. A remove
// cannot leave a nonce: its ambiguous retry that finds the entry absent
// returns not_found, which the one caller (stream deletion) treats as done.
//
// Durability: etcd commits a write on a majority of members (each fsyncs
// its WAL) before it answers, so "durable before ok" holds for the cluster.
// Reads are linearizable.
#pragma once

#include <memory>
#include <string>

#include "catalog/catalog.h"
#include "catalog/catalog_watch.h"
#include "etcd/etcd_client.h"

namespace strata::catalog {

struct EtcdCatalogOptions {
  // Key prefix of every key; several clusters of strata can share one etcd.
  std::string ns = "strata";
};

// The keys of a stream in namespace `ns` that layers above the catalog
// write too (docs/formats/catalog.md, "etcd backend"): its entry E (whose existence
// a consumer offset's write checks) and the prefix of its consumer offsets
// (<ns>/offsets/<component>/<reference>, the stream's name encoded as one
// key segment by common/name_component.h, which holds no '/': so the prefix
// of stream "a" never covers the offsets of stream "a/b"), which remove()
// deletes with it.
std::string etcd_entry_key(std::string_view ns, std::string_view stream);
std::string etcd_offsets_prefix(std::string_view ns, std::string_view stream);

// invalid_argument naming catalog.namespace unless 1..128 bytes of
// [A-Za-z0-9._~/-], neither starting nor ending with '/'.
Status validate_namespace(std::string_view ns);

class EtcdCatalog final : public Catalog, public CatalogWatch {
 public:
  static Result<std::unique_ptr<EtcdCatalog>> open(std::shared_ptr<etcd::EtcdClient> client,
                                                   EtcdCatalogOptions options);

  Result<StreamEntry> create(std::string_view stream, uint64_t epoch) override;
  // S = <ns>/settings/<stream> put in create's txn; remove deletes it.
  Result<StreamEntry> create_with_settings(std::string_view stream, uint64_t epoch,
                                           std::string_view settings) override;
  Result<std::optional<std::string>> settings(std::string_view stream) override;
  Status update_settings(std::string_view stream, std::string_view settings) override;
  Result<StreamEntry> get(std::string_view stream) override;
  Result<std::vector<StreamEntry>> list() override;
  Result<PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                        uint64_t expected_revision) override;
  Result<PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                               uint64_t min_epoch) override;
  // The txn also compares the owner key: value(K) == value, lease(K) == lease.
  Result<PutResult> bump_epoch_if_owner(std::string_view stream, uint64_t expected_revision,
                                        uint64_t min_epoch, const OwnerCondition& owner) override;
  Result<PutResult> remove(std::string_view stream, uint64_t expected_revision) override;
  std::string describe() const override;

  std::unique_ptr<CatalogWatchHandle> watch(uint64_t from_revision,
                                            std::function<void(const CatalogChange&)> on_change,
                                            std::function<void(const Error&)> on_error) override;

  etcd::EtcdClient& client() { return *client_; }

 private:
  EtcdCatalog(std::shared_ptr<etcd::EtcdClient> client, EtcdCatalogOptions options);

  Result<PutResult> bump(std::string_view stream, uint64_t expected_revision, uint64_t min_epoch,
                         const OwnerCondition* owner);
  std::string entry_key(std::string_view stream) const;
  std::string epoch_key(std::string_view stream) const;
  std::string settings_key(std::string_view stream) const;
  // Every consumer offset of the stream: [<ns>/offsets/<stream>/, its prefix end).
  std::string offsets_prefix(std::string_view stream) const;
  Result<StreamEntry> create_entry(std::string_view stream, uint64_t epoch,
                                   const std::string* settings);

  std::shared_ptr<etcd::EtcdClient> client_;
  const EtcdCatalogOptions options_;
};

}  // namespace strata::catalog
