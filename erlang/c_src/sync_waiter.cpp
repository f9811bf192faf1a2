#include "sync_waiter.h"

#include <algorithm>

#include "nif_atoms.h"

namespace strata::erl {

SyncWaiter::SyncWaiter(AwaitFn await, EncodeFn encode)
    : await_(std::move(await)), encode_(std::move(encode)), queue_{enif_alloc_env(), {}} {
  thread_ = std::thread([this] { run(); });
}

SyncWaiter::~SyncWaiter() {
  stop();
  enif_free_env(queue_.env);
  for (ErlNifEnv* env : spare_) enif_free_env(env);
}

bool SyncWaiter::enqueue(const ErlNifPid& to, ERL_NIF_TERM ref, uint64_t seq) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) return false;
  // A ref is a few words: copied under the lock, into the batch's env.
  queue_.replies.push_back(Reply{to, enif_make_copy(queue_.env, ref), seq});
  // A thread busy answering takes the queue when it is done: no wake-up
  // (and no futex call) for it.
  if (waiting_) cv_.notify_one();
  return true;
}

ErlNifEnv* SyncWaiter::spare_env() {
  if (spare_.empty()) return enif_alloc_env();
  ErlNifEnv* env = spare_.back();
  spare_.pop_back();
  return env;
}

void SyncWaiter::run() {
  std::deque<Batch> held;  // queued replies taken, oldest first
  raftmeta::DurableProgress progress;
  ErlNifEnv* next_env = spare_env();
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (held.empty()) {
      waiting_ = true;
      cv_.wait(l, [&] { return !queue_.replies.empty() || stopping_; });
      waiting_ = false;
    }
    if (!queue_.replies.empty()) {
      held.push_back(Batch{next_env, {}});
      std::swap(held.back(), queue_);
      next_env = nullptr;
    }
    if (held.empty()) break;  // stopping, nothing left to answer
    l.unlock();
    if (next_env == nullptr) next_env = spare_env();
    uint64_t want = 0;
    for (const Batch& b : held) {
      for (const Reply& r : b.replies) want = std::max(want, r.seq);
    }
    // Returns when durability moved (or failed): some replies are decided.
    const uint64_t failures_before = progress.failures;
    const Status st = await_(want, &progress);
    const uint64_t sent = answer(held, progress, progress.failures != failures_before, st);
    l.lock();
    if (sent > 0) ++rounds_;
    replies_ += sent;
  }
  l.unlock();
  if (next_env) enif_free_env(next_env);
}

uint64_t SyncWaiter::answer(std::deque<Batch>& held, const raftmeta::DurableProgress& p,
                            bool new_failure, const Status& final) {
  const Status failed = new_failure ? Status(p.failure) : Status::OK();
  uint64_t sent = 0;
  for (Batch& b : held) {
    auto keep = b.replies.begin();
    for (const Reply& r : b.replies) {
      if (r.seq <= p.durable_seq) {
        send(b.env, r, Status::OK());
      } else if (new_failure && r.seq <= p.failed_seq) {
        // Its change was in the batch that just failed (it is retried, as
        // for a blocked store_sync, but this caller is told so). A reply
        // queued after that is answered by the retry.
        send(b.env, r, failed);
      } else if (!final.ok()) {
        send(b.env, r, final);
      } else {
        *keep++ = r;
        continue;
      }
      ++sent;
    }
    b.replies.erase(keep, b.replies.end());
  }
  while (!held.empty() && held.front().replies.empty()) {
    enif_clear_env(held.front().env);
    spare_.push_back(held.front().env);
    held.pop_front();
  }
  return sent;
}

void SyncWaiter::send(ErlNifEnv* env, const Reply& r, const Status& s) {
  const ERL_NIF_TERM result =
      s.ok() ? atoms.ok : enif_make_tuple2(env, atoms.error, encode_(env, s.error()));
  // Copied into a message of its own size (env stays valid for the next
  // reply). A caller that died or gave up meanwhile just gets nothing.
  (void)enif_send(nullptr, &r.to, nullptr, enif_make_tuple2(env, r.ref, result));
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

}  // namespace strata::erl
