// SyncWaiter: answers store_sync / delete_sync callers without parking a
// scheduler.
//
// A caller's NIF applies its change in memory (RaftMeta::store, which never
// waits for the disk and gives the change's sequence number) and queues a
// reply here; the NIF returns at once and the Erlang side waits in
// `receive`. This thread waits for raftmeta's durability to progress
// (RaftMeta::await_progress, asking for every queued change to be fsynced)
// and, each time it does, sends every caller whose change is now durable
// {Ref, ok}, and every caller whose change a failed batch held
// {Ref, {error, Reason}}, with enif_send.
//
// Replies are answered by the sequence number of their change, not in
// rounds of one RaftMeta::sync each: the writer fsyncs term and vote
// changes as soon as it writes them, so a round that waited for "everything
// stored so far" left the callers of the batch in flight waiting for a
// second fsync (the profile showed two fsyncs per round at 1 000 callers).
//
// The callers' refs are copied into one environment per batch of queued
// replies, not one per reply: an environment's first term allocates a
// 200-word heap fragment, which the profile showed as a tenth of the CPU
// (allocated on a scheduler, freed here, handed back through the BEAM's
// delayed deallocation). enif_send then copies each {Ref, Result} into a
// message of its own size.
//
// Every queued reply is sent exactly once: when its change is durable, when
// a batch holding it failed, or when the store stopped (its error). stop()
// answers everything queued before the thread ends. After stop() nothing
// is queued (enqueue returns false and the NIF answers {error, closed}
// itself).
#pragma once

#include <erl_nif.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/result.h"
#include "raftmeta/raft_meta.h"

namespace strata::erl {

class SyncWaiter {
 public:
  // `await` is RaftMeta::await_progress. `encode` turns an error into the
  // Reason of {error, Reason} (in the given env).
  using AwaitFn = std::function<Status(uint64_t want, raftmeta::DurableProgress*)>;
  using EncodeFn = std::function<ERL_NIF_TERM(ErlNifEnv*, const Error&)>;
  SyncWaiter(AwaitFn await, EncodeFn encode);
  ~SyncWaiter();
  SyncWaiter(const SyncWaiter&) = delete;
  SyncWaiter& operator=(const SyncWaiter&) = delete;

  // Queues {Ref, Result} for `to`, sent once the change numbered `seq` is
  // durable (or could not be made so). Never waits for I/O. false once
  // stop() began.
  bool enqueue(const ErlNifPid& to, ERL_NIF_TERM ref, uint64_t seq);
  // Answers everything queued, then ends the thread. Idempotent. Blocks on
  // the store's fsync: not on a normal scheduler.
  void stop();
  // Progress steps that answered callers, and replies sent, so far.
  uint64_t rounds() const;
  uint64_t replies() const;

 private:
  struct Reply {
    ErlNifPid to;
    ERL_NIF_TERM ref;  // in the env of its batch
    uint64_t seq;
  };
  // Replies queued together, their refs in one env.
  struct Batch {
    ErlNifEnv* env;
    std::vector<Reply> replies;
  };
  void run();
  // Sends the replies of `held` that `p` decides (durable; failed, if
  // `new_failure`) and, if `final` is an error, all the others with it;
  // returns how many. Clears emptied batches' envs into spare_.
  uint64_t answer(std::deque<Batch>& held, const raftmeta::DurableProgress& p, bool new_failure,
                  const Status& final);
  void send(ErlNifEnv* env, const Reply& r, const Status& s);
  ErlNifEnv* spare_env();

  const AwaitFn await_;
  const EncodeFn encode_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Batch queue_;  // its env holds the refs of its replies
  // Only enqueue's notify wakes the thread, and only while it waits.
  bool waiting_ = false;
  bool stopping_ = false;
  uint64_t rounds_ = 0;
  uint64_t replies_ = 0;
  std::vector<ErlNifEnv*> spare_;  // cleared envs for the next batches (the thread's)
  std::mutex stop_mu_;             // serializes stop() (join once)
  std::thread thread_;
};

}  // namespace strata::erl
