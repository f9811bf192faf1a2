#include "sync_waiter.h"

#include "nif_atoms.h"

namespace strata::erl {

SyncWaiter::SyncWaiter(SyncFn sync, EncodeFn encode)
    : sync_(std::move(sync)), encode_(std::move(encode)) {
  thread_ = std::thread([this] { run(); });
}

SyncWaiter::~SyncWaiter() {
  stop();
}

bool SyncWaiter::enqueue(const ErlNifPid& to, ERL_NIF_TERM ref) {
  ErlNifEnv* env = enif_alloc_env();
  Reply r{to, env, enif_make_copy(env, ref)};
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!stopping_) {
      queue_.push_back(r);
      cv_.notify_one();
      return true;
    }
  }
  enif_free_env(env);
  return false;
}

void SyncWaiter::run() {
  std::vector<Reply> round;
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) break;  // stopping, nothing left to answer
    round.swap(queue_);
    l.unlock();
    // Every reply in `round` was queued after its change was applied, and
    // before this call: sync covers them all.
    const Status s = sync_();
    for (Reply& r : round) send(r, s);
    l.lock();
    ++rounds_;
    replies_ += round.size();
    round.clear();
  }
}

void SyncWaiter::send(Reply& r, const Status& s) {
  const ERL_NIF_TERM result =
      s.ok() ? atoms.ok : enif_make_tuple2(r.env, atoms.error, encode_(r.env, s.error()));
  // A caller that died or gave up meanwhile just gets nothing.
  (void)enif_send(nullptr, &r.to, r.env, enif_make_tuple2(r.env, r.ref, result));
  enif_free_env(r.env);
  r.env = nullptr;
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
