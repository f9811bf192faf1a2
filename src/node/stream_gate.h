// StreamGate: what lets a deletion know that a stream's uploader has really
// stopped writing. Closing an uploader stops its decisions at once, but a
// task already running on the pool (a fragment PUT, a persist's catalog
// compare-and-set, the start-up load that creates the catalog entry) runs to
// its end and only its outcome is dropped (tier/uploader.h). A PUT that lands
// after the deletion listed the prefix would be left behind for good, and a
// load that lands after the catalog entry was removed would create it again.
//
// So the node hands each uploader the shared object store and catalog
// through a gate of its own: every call counts itself in and out. Deleting
// the stream closes the gate (new calls fail at once with Errc::cancelled,
// "being deleted") and waits until no call is in flight; only then does it
// list what to remove. The per-call cost is one mutex round trip.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "catalog/catalog.h"
#include "objstore/object_store.h"

namespace strata::node {

class StreamGate {
 public:
  explicit StreamGate(std::string stream) : stream_(std::move(stream)) {}

  // A call in flight while it lives; `admitted()` is false once the gate is
  // closed (the call must not go through).
  class Pass {
   public:
    explicit Pass(StreamGate& g);
    ~Pass();
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    bool admitted() const { return admitted_; }

   private:
    StreamGate& g_;
    bool admitted_;
  };

  // Refuses every later call. Idempotent.
  void close();
  // Waits until no admitted call is in flight; false if `timeout` passed
  // first.
  bool wait_idle(std::chrono::milliseconds timeout);
  uint64_t in_flight() const;
  // "stream s1 is being deleted", the message of refused calls.
  std::string refusal() const;

 private:
  const std::string stream_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  uint64_t in_flight_ = 0;
  bool closed_ = false;
};

// The node's object store as one stream's uploader sees it.
class GatedStore final : public objstore::ObjectStore {
 public:
  GatedStore(std::shared_ptr<objstore::ObjectStore> inner, std::shared_ptr<StreamGate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {}

  using objstore::ObjectStore::put;
  objstore::ObjectResult<objstore::PutResult> put(std::string_view key, objstore::BodyParts body,
                                                  const objstore::PutOptions& opts) override;
  objstore::ObjectResult<uint64_t> read_range(std::string_view key, uint64_t offset,
                                              std::span<uint8_t> dst) override;
  objstore::ObjectResult<uint64_t> get_to(std::string_view key, const objstore::GetSink& sink,
                                          const objstore::GetLimits& limits) override;
  uint64_t max_get_bytes() const override { return inner_->max_get_bytes(); }
  objstore::ObjectResult<objstore::ObjectInfo> head(std::string_view key) override;
  objstore::ObjectStatus remove(std::string_view key) override;
  std::vector<objstore::RemoveOutcome> remove_many(std::span<const std::string> keys) override;
  objstore::ObjectResult<objstore::ListPage> list(const objstore::ListRequest& req) override;
  objstore::ObjectStatus check_access() override;
  std::string describe() const override { return inner_->describe(); }

 private:
  objstore::ObjectError refused(objstore::Op op, std::string_view key) const;

  std::shared_ptr<objstore::ObjectStore> inner_;
  std::shared_ptr<StreamGate> gate_;
};

// The node's catalog as one stream's uploader sees it.
class GatedCatalog final : public catalog::Catalog {
 public:
  GatedCatalog(std::shared_ptr<catalog::Catalog> inner, std::shared_ptr<StreamGate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {}

  Result<catalog::StreamEntry> create(std::string_view stream, uint64_t epoch) override;
  Result<catalog::StreamEntry> get(std::string_view stream) override;
  Result<std::vector<catalog::StreamEntry>> list() override;
  Result<catalog::PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                                 uint64_t expected_revision) override;
  Result<catalog::PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                                        uint64_t min_epoch) override;
  Result<catalog::PutResult> bump_epoch_if_owner(std::string_view stream,
                                                 uint64_t expected_revision, uint64_t min_epoch,
                                                 const catalog::OwnerCondition& owner) override;
  Result<catalog::PutResult> remove(std::string_view stream, uint64_t expected_revision) override;
  std::string describe() const override { return inner_->describe(); }

 private:
  Error refused() const { return Error(Errc::cancelled, gate_->refusal()); }

  std::shared_ptr<catalog::Catalog> inner_;
  std::shared_ptr<StreamGate> gate_;
};

}  // namespace strata::node
