#include "sync_waiter.h"

#include <time.h>

#include <algorithm>

#include "nif_atoms.h"

namespace strata::erl {

namespace {

// steady_clock's clock (CLOCK_MONOTONIC) at the resolution of the kernel's
// tick (1-4 ms), read without the TSC: every store_sync stamps its
// deadline, and a deadline of 30 s needs no better.
SyncWaiter::Clock::time_point coarse_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return SyncWaiter::Clock::time_point(std::chrono::seconds(ts.tv_sec) +
                                       std::chrono::nanoseconds(ts.tv_nsec));
}

}  // namespace

SyncWaiter::SyncWaiter(AwaitFn await, EncodeFn encode, std::chrono::milliseconds timeout)
    : await_(std::move(await)), encode_(std::move(encode)), timeout_(timeout) {
  {
    std::lock_guard<std::mutex> l(mu_);
    current_ = new_batch_locked();
  }
  thread_ = std::thread([this] { run(); });
}

SyncWaiter::~SyncWaiter() {
  stop();
  for (const auto& b : batches_) enif_free_env(b->env);
}

SyncWaiter::Batch* SyncWaiter::new_batch_locked() {
  if (!spare_.empty()) {
    Batch* b = spare_.back();
    spare_.pop_back();
    return b;
  }
  batches_.push_back(std::make_unique<Batch>());
  batches_.back()->env = enif_alloc_env();
  return batches_.back().get();
}

void SyncWaiter::set_sender(const ErlNifPid& pid) {
  std::lock_guard<std::mutex> l(mu_);
  sender_ = pid;
  has_sender_ = true;
}

bool SyncWaiter::enqueue(const ErlNifPid& to, ERL_NIF_TERM ref, uint64_t seq) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) return false;
  // A ref is a few words: copied under the lock, into the batch's env.
  queue_.push_back(Reply{to, enif_make_copy(current_->env, ref), seq, current_,
                         coarse_now() + timeout_, nullptr, false});
  ++current_->unsent;
  // A thread busy deciding takes the queue when it is done: no wake-up (and
  // no futex call) for it.
  if (waiting_) cv_.notify_one();
  return true;
}

void SyncWaiter::run() {
  std::vector<Reply> held;  // queued replies taken, not decided yet, oldest first
  raftmeta::DurableProgress progress;
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (!ready_.empty() &&
        (stopping_ || !has_sender_ || Clock::now() - sender_seen_ >= kFallback)) {
      send_all_here(l);
    }
    if (!queue_.empty()) {
      held.insert(held.end(), queue_.begin(), queue_.end());
      queue_.clear();
      current_ = new_batch_locked();
    }
    if (!held.empty() && held.front().deadline <= Clock::now() && expire(held, Clock::now()) > 0) {
      tell_sender(l);
      continue;  // the fallback may be due meanwhile
    }
    if (held.empty()) {
      if (stopping_) {
        if (ready_.empty()) break;
        continue;  // sent at the top
      }
      waiting_ = true;
      if (ready_.empty()) {
        cv_.wait(l, [&] { return !queue_.empty() || stopping_; });
      } else {
        cv_.wait_until(l, sender_seen_ + kFallback,
                       [&] { return !queue_.empty() || stopping_ || ready_.empty(); });
      }
      waiting_ = false;
      continue;
    }
    // Wait for durability until the oldest reply's deadline, or until the
    // owner's time to send the ready replies is up.
    Clock::time_point until = held.front().deadline;
    if (!ready_.empty()) until = std::min(until, sender_seen_ + kFallback);
    l.unlock();
    uint64_t want = 0;
    for (const Reply& r : held) want = std::max(want, r.seq);
    // Returns when durability moved (or failed), or at `until`.
    const uint64_t failures_before = progress.failures;
    const Status st = await_(want, &progress, until);
    l.lock();
    const uint64_t decided = decide(held, progress, progress.failures != failures_before, st);
    if (decided > 0) {
      ++rounds_;
      replies_ += decided;
    }
    tell_sender(l);
  }
}

uint64_t SyncWaiter::expire(std::vector<Reply>& held, Clock::time_point now) {
  // Oldest first: the expired ones are a prefix.
  size_t n = 0;
  while (n < held.size() && held[n].deadline <= now) ++n;
  for (size_t i = 0; i < n; ++i) {
    held[i].timed_out = true;
    ready_.push_back(std::move(held[i]));
  }
  held.erase(held.begin(), held.begin() + ptrdiff_t(n));
  timeouts_ += n;
  return n;
}

void SyncWaiter::tell_sender(std::unique_lock<std::mutex>& l) {
  if (ready_.empty() || notified_ || !has_sender_ || stopping_) return;
  notified_ = true;
  sender_seen_ = Clock::now();
  const ErlNifPid sender = sender_;
  l.unlock();
  // An atom: a message with no heap. A dead sender just gets nothing (the
  // fallback sends).
  (void)enif_send(nullptr, &sender, nullptr, atoms.strata_ra_replies);
  l.lock();
}

uint64_t SyncWaiter::decide(std::vector<Reply>& held, const raftmeta::DurableProgress& p,
                            bool new_failure, const Status& final) {
  std::shared_ptr<const Error> failed, final_error;
  if (new_failure) failed = std::make_shared<const Error>(p.failure);
  if (!final.ok()) final_error = std::make_shared<const Error>(final.error());
  uint64_t n = 0;
  auto keep = held.begin();
  for (Reply& r : held) {
    if (r.seq <= p.durable_seq) {
      r.error = nullptr;
    } else if (new_failure && r.seq <= p.failed_seq) {
      // Its change was in the batch that just failed (it is retried, as
      // for a blocked store_sync, but this caller is told so). A reply
      // queued after that is answered by the retry.
      r.error = failed;
    } else if (final_error) {
      r.error = final_error;
    } else {
      if (&*keep != &r) *keep = std::move(r);
      ++keep;
      continue;
    }
    ready_.push_back(std::move(r));
    ++n;
  }
  held.erase(keep, held.end());
  return n;
}

void SyncWaiter::take_ready_locked(size_t max, std::vector<Reply>* out) {
  const size_t n = std::min(max, ready_.size());
  out->assign(std::make_move_iterator(ready_.begin()), std::make_move_iterator(ready_.begin() + n));
  ready_.erase(ready_.begin(), ready_.begin() + n);
  if (ready_.empty()) notified_ = false;
}

void SyncWaiter::sent_locked(const Reply& r) {
  Batch* b = r.batch;
  if (--b->unsent == 0 && b != current_) {
    enif_clear_env(b->env);
    spare_.push_back(b);
  }
}

ERL_NIF_TERM SyncWaiter::message(ErlNifEnv* env, const Reply& r) {
  const ERL_NIF_TERM result = r.timed_out ? enif_make_tuple2(env, atoms.error, atoms.timeout)
                              : r.error ? enif_make_tuple2(env, atoms.error, encode_(env, *r.error))
                                        : atoms.ok;
  return enif_make_tuple2(env, enif_make_copy(env, r.ref), result);
}

bool SyncWaiter::send_ready(ErlNifEnv* env, size_t max) {
  std::vector<Reply> chunk;
  std::unique_lock<std::mutex> l(mu_);
  take_ready_locked(max, &chunk);
  sender_seen_ = Clock::now();
  l.unlock();
  // From a process: each message is built on its receiver's heap. A
  // caller that died or gave up meanwhile just gets nothing.
  for (const Reply& r : chunk) (void)enif_send(env, &r.to, nullptr, message(env, r));
  l.lock();
  for (const Reply& r : chunk) sent_locked(r);
  return !ready_.empty();
}

void SyncWaiter::send_all_here(std::unique_lock<std::mutex>& l) {
  std::vector<Reply> chunk;
  ErlNifEnv* env = enif_alloc_env();
  while (!ready_.empty()) {
    take_ready_locked(256, &chunk);
    l.unlock();
    for (const Reply& r : chunk) {
      (void)enif_send(nullptr, &r.to, nullptr, message(env, r));
      enif_clear_env(env);
    }
    l.lock();
    for (const Reply& r : chunk) sent_locked(r);
  }
  enif_free_env(env);
}

void SyncWaiter::stop() {
  std::lock_guard<std::mutex> sl(stop_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t SyncWaiter::rounds() const {
  std::lock_guard<std::mutex> l(mu_);
  return rounds_;
}

uint64_t SyncWaiter::replies() const {
  std::lock_guard<std::mutex> l(mu_);
  return replies_;
}

uint64_t SyncWaiter::timeouts() const {
  std::lock_guard<std::mutex> l(mu_);
  return timeouts_;
}

}  // namespace strata::erl
