// OwnerGuardedCatalog: a catalog whose every bump_epoch carries one owner
// condition (catalog.h, OwnerCondition), for everything a cluster owner runs
// on a stream it acquired — its own takeover and its uploader's. So no
// takeover by a node that has lost the stream (a task in flight across a
// freeze past the lease) can raise the epoch over the new owner's.
// Every other call goes to the inner catalog unchanged.
#pragma once

#include <memory>

#include "catalog/catalog.h"

namespace strata::catalog {

class OwnerGuardedCatalog final : public Catalog {
 public:
  OwnerGuardedCatalog(std::shared_ptr<Catalog> inner, OwnerCondition owner)
      : inner_(std::move(inner)), owner_(std::move(owner)) {}

  Result<StreamEntry> create(std::string_view stream, uint64_t epoch) override {
    return inner_->create(stream, epoch);
  }
  Result<StreamEntry> create_with_settings(std::string_view stream, uint64_t epoch,
                                           std::string_view settings) override {
    return inner_->create_with_settings(stream, epoch, settings);
  }
  Result<std::optional<std::string>> settings(std::string_view stream) override {
    return inner_->settings(stream);
  }
  Status update_settings(std::string_view stream, std::string_view settings) override {
    return inner_->update_settings(stream, settings);
  }
  Result<StreamEntry> get(std::string_view stream) override { return inner_->get(stream); }
  Result<std::vector<StreamEntry>> list() override { return inner_->list(); }
  Result<PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                        uint64_t expected_revision) override {
    return inner_->put(stream, root_key, epoch, expected_revision);
  }
  Result<PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                               uint64_t min_epoch) override {
    return inner_->bump_epoch_if_owner(stream, expected_revision, min_epoch, owner_);
  }
  Result<PutResult> bump_epoch_if_owner(std::string_view stream, uint64_t expected_revision,
                                        uint64_t min_epoch, const OwnerCondition& owner) override {
    return inner_->bump_epoch_if_owner(stream, expected_revision, min_epoch, owner);
  }
  Result<PutResult> remove(std::string_view stream, uint64_t expected_revision) override {
    return inner_->remove(stream, expected_revision);
  }
  std::string describe() const override { return inner_->describe(); }

 private:
  std::shared_ptr<Catalog> inner_;
  const OwnerCondition owner_;
};

}  // namespace strata::catalog
