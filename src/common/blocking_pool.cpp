#include "common/blocking_pool.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

struct BlockingPool::Ticket::Entry {
  Job job;
  std::weak_ptr<BlockingPool::State> pool;
  bool running = false;
  bool finished = false;
  bool abandoned = false;
};

struct BlockingPool::State : std::enable_shared_from_this<State> {
  explicit State(BlockingPoolOptions o) : opts(o) {}

  // Threads the pool may have now: the base, plus one per abandoned job
  // still running and one per job waiting for others, never more than
  // max_threads.
  size_t allowed_locked() const {
    return std::min(opts.max_threads,
                    std::max<size_t>(1, opts.threads) + abandoned_running + waiting_running);
  }
  void maybe_spawn_locked() {
    size_t idle = threads - busy;
    if (queue.size() > idle && threads < allowed_locked()) {
      threads += 1;
      // Threads are detached: a hung job must not hang the pool's owner at
      // stop. Each holds the state alive until it exits.
      std::thread([self = shared_from_this()] { self->run(); }).detach();
    }
  }
  void run() {
    std::unique_lock l(mu);
    for (;;) {
      work_cv.wait(l, [&] { return stopped || !queue.empty() || threads > allowed_locked(); });
      if (stopped || (queue.empty() && threads > allowed_locked())) break;
      std::shared_ptr<Ticket::Entry> e = std::move(queue.front());
      queue.pop_front();
      e->running = true;
      busy += 1;
      Job job = std::move(e->job);
      l.unlock();
      job();
      // Destroy the job (and what it captured) before reporting idle.
      job = nullptr;
      l.lock();
      busy -= 1;
      e->finished = true;
      jobs_run += 1;
      if (e->abandoned) abandoned_running -= 1;
      idle_cv.notify_all();
    }
    threads -= 1;
    idle_cv.notify_all();
  }

  const BlockingPoolOptions opts;
  mutable std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable idle_cv;
  std::deque<std::shared_ptr<Ticket::Entry>> queue;
  size_t threads = 0;
  size_t busy = 0;
  size_t abandoned_running = 0;
  size_t waiting_running = 0;
  uint64_t jobs_run = 0;
  uint64_t jobs_dropped = 0;
  bool stopped = false;
};

void BlockingPool::Ticket::abandon() {
  if (!entry_) return;
  auto st = entry_->pool.lock();
  if (!st) return;
  std::lock_guard l(st->mu);
  if (entry_->abandoned || entry_->finished || !entry_->running) return;
  entry_->abandoned = true;
  st->abandoned_running += 1;
  st->maybe_spawn_locked();
}

BlockingPool::Waiting BlockingPool::waiting() {
  Waiting w;
  std::lock_guard l(state_->mu);
  state_->waiting_running += 1;
  state_->maybe_spawn_locked();
  w.state_ = state_;
  return w;
}

BlockingPool::Waiting::~Waiting() {
  if (!state_) return;
  std::lock_guard l(state_->mu);
  state_->waiting_running -= 1;
  // A thread above the allowance now leaves once idle.
  state_->work_cv.notify_all();
}

BlockingPool::BlockingPool(BlockingPoolOptions options)
    : state_(std::make_shared<State>(options)) {}

BlockingPool::~BlockingPool() {
  stop();
}

BlockingPool::Ticket BlockingPool::post(Job job) {
  Ticket t;
  auto e = std::make_shared<Ticket::Entry>();
  e->pool = state_;
  {
    std::lock_guard l(state_->mu);
    if (!state_->stopped) {
      e->job = std::move(job);
      state_->queue.push_back(e);
      state_->maybe_spawn_locked();
      state_->work_cv.notify_one();
      t.entry_ = std::move(e);
      return t;
    }
    state_->jobs_dropped += 1;
  }
  // Stopped: the job is destroyed here, unrun, outside the lock.
  job = nullptr;
  return t;
}

void BlockingPool::stop() {
  std::deque<std::shared_ptr<Ticket::Entry>> dropped;
  {
    std::lock_guard l(state_->mu);
    state_->stopped = true;
    state_->jobs_dropped += state_->queue.size();
    dropped.swap(state_->queue);
    state_->work_cv.notify_all();
  }
  // Destroying the jobs runs their destructors (tasks report cancelled).
  for (auto& e : dropped) e->job = nullptr;
  dropped.clear();
  std::unique_lock l(state_->mu);
  // Every thread gone, or only threads running abandoned (hung) jobs left:
  // those are detached and exit when their job returns.
  state_->idle_cv.wait_for(l, state_->opts.stop_grace, [&] {
    return state_->threads == 0 ||
           (state_->busy == state_->abandoned_running && state_->threads == state_->busy);
  });
}

BlockingPoolStats BlockingPool::stats() const {
  std::lock_guard l(state_->mu);
  BlockingPoolStats s;
  s.threads = state_->threads;
  s.busy = state_->busy;
  s.queued = state_->queue.size();
  s.abandoned = state_->abandoned_running;
  s.waiting = state_->waiting_running;
  s.jobs_run = state_->jobs_run;
  s.jobs_dropped = state_->jobs_dropped;
  return s;
}

}  // namespace strata
