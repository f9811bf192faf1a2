#include "tier/range_prefetch.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "tier/backoff.h"
#include "tier/tier_limits.h"

namespace strata::tier {

struct RangePrefetch::Shared {
  std::mutex mu;
  std::condition_variable cv;
};

struct RangePrefetch::Slot {
  enum class State { queued, running, ready, failed };
  ObjectRange range;
  State state = State::queued;
  // Bumped whenever a fetch is given up (deadline, clear): the result of
  // that fetch, arriving later, no longer matches and is dropped.
  uint64_t generation = 0;
  std::chrono::steady_clock::time_point started;
  BlockingPool::Ticket ticket;
  Bytes bytes;
  std::optional<objstore::ObjectError> error;
  uint32_t transient_failures = 0;
};

namespace {

using Clock = std::chrono::steady_clock;
using Slot = RangePrefetch::Slot;

// Owned by a posted job. Reports the fetch's end exactly once: with the
// job's result, or — when the job is destroyed without having reported
// (the pool dropped it unrun at stop) — as cancelled.
struct Reporter {
  std::shared_ptr<RangePrefetch::Shared> shared;
  std::shared_ptr<Slot> slot;
  uint64_t generation = 0;
  bool reported = false;

  void report(objstore::ObjectResult<Bytes> r) {
    reported = true;
    std::lock_guard lk(shared->mu);
    if (slot->generation != generation || slot->state != Slot::State::running) return;
    if (r.ok()) {
      slot->bytes = std::move(r).value();
      slot->state = Slot::State::ready;
    } else {
      slot->error = r.error();
      slot->state = Slot::State::failed;
    }
    shared->cv.notify_all();
  }
  ~Reporter() {
    if (reported) return;
    objstore::ObjectError e;
    e.op = objstore::Op::get_range;
    e.key = slot->range.key;
    e.message = "range fetch dropped unrun (the pool is stopping)";
    e.retry = objstore::RetryClass::transient;
    report(e);
  }
};

objstore::ObjectError failure(const ObjectRange& r, std::string message) {
  objstore::ObjectError e;
  e.op = objstore::Op::get_range;
  e.key = r.key;
  e.message = std::move(message);
  e.retry = objstore::RetryClass::transient;
  return e;
}

}  // namespace

RangePrefetch::RangePrefetch(std::shared_ptr<objstore::ObjectStore> store,
                             std::shared_ptr<BlockingPool> pool, RangePrefetchOptions opts)
    : store_(std::move(store)),
      pool_(std::move(pool)),
      opts_(opts),
      shared_(std::make_shared<Shared>()),
      rng_(uint64_t(Clock::now().time_since_epoch().count())) {}

RangePrefetch::~RangePrefetch() {
  clear();
}

bool RangePrefetch::has_room(uint64_t length) const {
  return queue_.empty() || held_ + length <= opts_.budget_bytes;
}

void RangePrefetch::push(ObjectRange r) {
  auto s = std::make_shared<Slot>();
  held_ += r.length;
  st_.peak_bytes = std::max(st_.peak_bytes, held_);
  s->range = std::move(r);
  queue_.push_back(std::move(s));
  start_fetches();
}

void RangePrefetch::start_fetches() {
  if (pool_ == nullptr) return;
  std::vector<std::shared_ptr<Slot>> go;
  {
    std::lock_guard lk(shared_->mu);
    uint32_t busy = 0;
    for (auto& s : queue_) {
      if (busy >= opts_.max_in_flight) break;
      if (s->state == Slot::State::running) {
        busy += 1;
      } else if (s->state == Slot::State::queued) {
        mark_running(*s);
        go.push_back(s);
        busy += 1;
      }
    }
  }
  for (auto& s : go) post(s);
}

// Called with shared_->mu held.
void RangePrefetch::mark_running(Slot& s) {
  s.state = Slot::State::running;
  s.started = Clock::now();
  s.error.reset();
}

// Called without shared_->mu: a job the pool refuses reports at once.
void RangePrefetch::post(const std::shared_ptr<Slot>& s) {
  st_.gets += 1;
  auto rep = std::make_shared<Reporter>();
  rep->shared = shared_;
  rep->slot = s;
  {
    std::lock_guard lk(shared_->mu);
    rep->generation = s->generation;
  }
  BlockingPool::Ticket t = pool_->post([rep, store = store_, range = s->range]() {
    try {
      rep->report(store->get_range(range.key, range.offset, range.length));
    } catch (const std::exception& e) {
      rep->report(failure(range, std::string("range fetch threw: ") + e.what()));
    }
  });
  std::lock_guard lk(shared_->mu);
  if (rep->generation == s->generation) s->ticket = t;
}

Result<const Bytes*> RangePrefetch::at(size_t i) {
  while (true) {
    Slot& s = *queue_[i];
    if (pool_ == nullptr && s.state == Slot::State::queued) {
      st_.gets += 1;
      auto r = store_->get_range(s.range.key, s.range.offset, s.range.length);
      if (r.ok()) {
        s.bytes = std::move(r).value();
        s.state = Slot::State::ready;
      } else {
        s.error = r.error();
        s.state = Slot::State::failed;
      }
    }
    start_fetches();
    if (pool_ != nullptr) {
      // Asked for beyond the ranges in flight: fetch it now (the limit
      // bounds read-ahead, not what the consumer needs this moment).
      bool go = false;
      {
        std::lock_guard lk(shared_->mu);
        if (s.state == Slot::State::queued) {
          mark_running(s);
          go = true;
        }
      }
      if (go) post(queue_[i]);
    }
    {
      std::unique_lock lk(shared_->mu);
      auto done = [&] { return s.state == Slot::State::ready || s.state == Slot::State::failed; };
      // This caller may be a pool thread itself (a consumer's remote read):
      // while it waits, the pool may run one more, so that the fetch it
      // waits for is not queued behind it and every other such reader. A
      // range already here costs no visit to the pool.
      std::optional<BlockingPool::Waiting> waiting;
      if (pool_ != nullptr && !done()) waiting.emplace(pool_->waiting());
      if (!shared_->cv.wait_until(lk, s.started + opts_.deadline, done)) {
        // Given up: the job may still finish, but its result is dropped.
        s.generation += 1;
        s.ticket.abandon();
        s.state = Slot::State::failed;
        s.error = failure(s.range, "range fetch passed its deadline of " +
                                       std::to_string(opts_.deadline.count()) + " ms");
        st_.deadlines += 1;
      }
      if (s.state == Slot::State::ready) return &s.bytes;
    }
    objstore::ObjectError err = *s.error;
    s.state = Slot::State::queued;
    if (err.retry == objstore::RetryClass::transient &&
        s.transient_failures < opts_.transient_retries) {
      s.transient_failures += 1;
      st_.retries += 1;
      int64_t ms = backoff_ms(kRangeRetryBackoff, s.transient_failures, rng_);
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      continue;
    }
    s.transient_failures = 0;
    return err.to_error();
  }
}

const ObjectRange& RangePrefetch::range(size_t i) const {
  return queue_[i]->range;
}

void RangePrefetch::pop_front() {
  held_ -= queue_.front()->range.length;
  queue_.pop_front();
  start_fetches();
}

void RangePrefetch::clear() {
  {
    std::lock_guard lk(shared_->mu);
    for (auto& s : queue_) {
      s->generation += 1;
      if (s->state == Slot::State::running) s->state = Slot::State::failed;
    }
  }
  queue_.clear();
  held_ = 0;
}

}  // namespace strata::tier
