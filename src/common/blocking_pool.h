// BlockingPool: a small pool of threads for work that blocks (object-store
// requests, catalog writes, segment reads), shared by every stream of a node.
// The event loop never blocks; it hands such work here and gets the outcome
// back as an event (common/task.h).
//
// A job that hangs must not shrink the pool for good: when a job's deadline
// passes while it still runs, the caller marks it abandoned (Ticket::abandon)
// and the pool may start one more thread, up to max_threads, for as long as
// the abandoned job runs. A pool whose threads are all hung therefore still
// runs new work, and the count of threads stays bounded.
//
// Stopping (stop() or the destructor) drops the queued jobs without running
// them — each job's destructor runs, which is how a task learns it was
// cancelled — and waits up to `stop_grace` for running jobs; threads still
// running after that (hung jobs) are detached and exit when their job
// returns. Jobs must therefore own (shared_ptr) what they touch.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace strata {

struct BlockingPoolOptions {
  size_t threads = 8;       // threads kept while there is work (started lazily)
  size_t max_threads = 64;  // hard bound, abandoned jobs included
  std::chrono::milliseconds stop_grace{5000};
};

struct BlockingPoolStats {
  size_t threads = 0;    // threads alive now
  size_t busy = 0;       // threads running a job
  size_t queued = 0;     // jobs waiting for a thread
  size_t abandoned = 0;  // running jobs marked abandoned
  size_t waiting = 0;    // jobs waiting for others (Waiting)
  uint64_t jobs_run = 0;
  uint64_t jobs_dropped = 0;  // queued jobs dropped by stop()
};

class BlockingPool {
 public:
  using Job = std::function<void()>;
  struct State;

  explicit BlockingPool(BlockingPoolOptions options = {});
  ~BlockingPool();
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  // Handle of one posted job, to mark it abandoned once its deadline passed.
  class Ticket {
   public:
    Ticket() = default;
    // Idempotent. Lets the pool run one more thread while this job runs.
    void abandon();

   private:
    friend class BlockingPool;
    struct Entry;
    std::shared_ptr<Entry> entry_;
  };

  // While it lives, the pool may run one more thread (up to max_threads):
  // taken by a job about to wait for other jobs of this pool (a consumer's
  // remote read waiting for its read-ahead), so that with every thread such
  // a waiter, the jobs they wait for still get a thread instead of queueing
  // behind them until their deadlines.
  class Waiting {
   public:
    Waiting() = default;
    Waiting(Waiting&& o) noexcept : state_(std::move(o.state_)) {}
    Waiting& operator=(Waiting&&) = delete;
    Waiting(const Waiting&) = delete;
    ~Waiting();

   private:
    friend class BlockingPool;
    std::shared_ptr<State> state_;
  };
  Waiting waiting();

  // Queues `job`. After stop() the job is destroyed at once, unrun.
  Ticket post(Job job);
  // Drops queued jobs, waits up to stop_grace for running ones. Idempotent.
  void stop();
  BlockingPoolStats stats() const;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace strata
