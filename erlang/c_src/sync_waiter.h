// SyncWaiter: answers store_sync / delete_sync callers without parking a
// scheduler.
//
// A caller's NIF applies its change in memory (RaftMeta::store, which never
// waits for the disk) and queues a reply here; the NIF returns at once and
// the Erlang side waits in `receive`. This thread takes every reply queued
// so far, waits once until the store has fsynced everything stored before
// that moment (RaftMeta::sync: one fsync for the whole round, the group
// commit), and sends each caller {Ref, ok} or {Ref, {error, Reason}} with
// enif_send. Replies queued during a round go in the next one.
//
// Every queued reply is sent exactly once: by a round, or by stop(), which
// runs a last round. After stop() nothing is queued (enqueue returns false
// and the NIF answers {error, closed} itself).
#pragma once

#include <erl_nif.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/result.h"

namespace strata::erl {

class SyncWaiter {
 public:
  // `sync` waits until everything stored so far is durable. `encode` turns
  // its error into the Reason of {error, Reason} (in the given env).
  using SyncFn = std::function<Status()>;
  using EncodeFn = std::function<ERL_NIF_TERM(ErlNifEnv*, const Error&)>;
  SyncWaiter(SyncFn sync, EncodeFn encode);
  ~SyncWaiter();
  SyncWaiter(const SyncWaiter&) = delete;
  SyncWaiter& operator=(const SyncWaiter&) = delete;

  // Queues {Ref, Result} for `to`, sent once everything stored before this
  // call is durable (or could not be made so). Never waits for I/O. false
  // once stop() began.
  bool enqueue(const ErlNifPid& to, ERL_NIF_TERM ref);
  // Runs a last round for everything queued, then ends the thread.
  // Idempotent. Blocks on the store's fsync: not on a normal scheduler.
  void stop();
  // Rounds run (each one RaftMeta::sync) and replies sent so far.
  uint64_t rounds() const;
  uint64_t replies() const;

 private:
  struct Reply {
    ErlNifPid to;
    ErlNifEnv* env;  // owns the copy of Ref
    ERL_NIF_TERM ref;
  };
  void run();
  void send(Reply& r, const Status& s);

  const SyncFn sync_;
  const EncodeFn encode_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Reply> queue_;
  bool stopping_ = false;
  uint64_t rounds_ = 0;
  uint64_t replies_ = 0;
  std::mutex stop_mu_;  // serializes stop() (join once)
  std::thread thread_;
};

}  // namespace strata::erl
