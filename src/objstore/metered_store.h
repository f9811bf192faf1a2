// MeteredStore: an ObjectStore that counts every request it forwards — per
// operation: requests, errors by retry class, bytes, and a latency
// histogram — for the node's /metrics. Adds two atomic increments and a
// clock read per request.
#pragma once

#include <array>
#include <atomic>
#include <memory>

#include "common/metrics.h"
#include "objstore/object_store.h"

namespace strata::objstore {

struct OpStats {
  uint64_t requests = 0;
  uint64_t transient_errors = 0;
  uint64_t fatal_errors = 0;
  uint64_t not_found = 0;
  uint64_t bytes = 0;  // body bytes sent (put) or received (get, get_range)
  LatencyHistogram::Snapshot latency;
};

class MeteredStore final : public ObjectStore {
 public:
  static constexpr size_t kOps = 8;  // objstore::Op values

  explicit MeteredStore(std::shared_ptr<ObjectStore> inner) : inner_(std::move(inner)) {}

  using ObjectStore::put;
  ObjectResult<PutResult> put(std::string_view key, BodyParts body,
                              const PutOptions& opts = {}) override;
  // Counted as get_range and get (get() and get_range() of the base come
  // through these, so each is counted once).
  ObjectResult<uint64_t> read_range(std::string_view key, uint64_t offset,
                                    std::span<uint8_t> dst) override;
  ObjectResult<uint64_t> get_to(std::string_view key, const GetSink& sink,
                                const GetLimits& limits) override;
  uint64_t max_get_bytes() const override { return inner_->max_get_bytes(); }
  ObjectResult<ObjectInfo> head(std::string_view key) override;
  ObjectStatus remove(std::string_view key) override;
  std::vector<RemoveOutcome> remove_many(std::span<const std::string> keys) override;
  ObjectResult<ListPage> list(const ListRequest& req) override;
  ObjectStatus check_access() override;
  std::string describe() const override { return inner_->describe(); }

  OpStats stats(Op op) const;
  ObjectStore& inner() { return *inner_; }

 private:
  struct Counters {
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> transient{0};
    std::atomic<uint64_t> fatal{0};
    std::atomic<uint64_t> not_found{0};
    std::atomic<uint64_t> bytes{0};
    LatencyHistogram latency;
  };
  void record(Op op, int64_t start_ns, const ObjectError* err, uint64_t bytes);

  std::shared_ptr<ObjectStore> inner_;
  std::array<Counters, kOps> c_;
};

}  // namespace strata::objstore
