// RangePrefetch: the reader's read-ahead of remote bytes. The caller queues
// byte ranges of objects in the order it will consume them; up to
// `max_in_flight` of them are fetched at once on the node's blocking pool,
// and the bytes queued, in flight and ready together never exceed
// `budget_bytes` (one range is always allowed, so a range bigger than the
// budget still makes progress). The caller takes the ranges back in order.
//
// Every fetch ends in exactly one outcome: its bytes, its error, its
// deadline, or cancelled (the pool dropped it unrun). A result arriving
// after its deadline is ignored (a generation token), and the range is
// fetched again on the next call.
//
// Transient failures (objstore RetryClass::transient, deadlines) are retried
// up to `transient_retries` times with jittered backoff before the error is
// returned; the front range then stays queued, so calling again retries.
// not_found and fatal errors are returned at once.
//
// Without a pool (tests, tools) fetches run on the caller's thread, one at
// a time, when the caller asks for the front range. With one, the caller
// waits under BlockingPool::Waiting: it may be a pool thread itself.
//
// Used by one thread at a time; the jobs share only an internal state.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "common/blocking_pool.h"
#include "common/random.h"
#include "common/result.h"
#include "objstore/object_store.h"

namespace strata::tier {

struct RangePrefetchOptions {
  uint64_t budget_bytes = 16ull << 20;
  uint32_t max_in_flight = 4;
  std::chrono::milliseconds deadline{180'000};
  uint32_t transient_retries = 4;
};

struct ObjectRange {
  std::string key;
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct RangePrefetchStats {
  uint64_t gets = 0;        // fetches started, retries included
  uint64_t retries = 0;     // transient failures retried
  uint64_t deadlines = 0;   // fetches abandoned at their deadline
  uint64_t peak_bytes = 0;  // most bytes queued + in flight + ready at once
};

class RangePrefetch {
 public:
  RangePrefetch(std::shared_ptr<objstore::ObjectStore> store, std::shared_ptr<BlockingPool> pool,
                RangePrefetchOptions opts);
  ~RangePrefetch();
  RangePrefetch(const RangePrefetch&) = delete;
  RangePrefetch& operator=(const RangePrefetch&) = delete;

  // Whether a range of `length` bytes fits the budget now.
  bool has_room(uint64_t length) const;
  // Queues a range behind the others and starts fetches that fit.
  void push(ObjectRange r);
  bool empty() const { return queue_.empty(); }
  size_t size() const { return queue_.size(); }
  // Bytes queued, in flight and ready (what the budget bounds).
  uint64_t held_bytes() const { return held_; }

  // The bytes of the i-th queued range (i < size()), waiting for them if
  // needed. On error the range stays queued (calling again refetches it).
  // The pointer is valid until that range is popped.
  Result<const Bytes*> at(size_t i);
  const ObjectRange& range(size_t i) const;
  void pop_front();
  // Drops every range (in-flight results are discarded when they arrive).
  void clear();

  RangePrefetchStats stats() const { return st_; }

  struct Shared;
  struct Slot;

 private:
  void start_fetches();
  void mark_running(Slot& s);
  void post(const std::shared_ptr<Slot>& s);

  std::shared_ptr<objstore::ObjectStore> store_;
  std::shared_ptr<BlockingPool> pool_;
  RangePrefetchOptions opts_;
  std::shared_ptr<Shared> shared_;
  std::deque<std::shared_ptr<Slot>> queue_;
  uint64_t held_ = 0;
  RangePrefetchStats st_;
  Random rng_;
};

}  // namespace strata::tier
