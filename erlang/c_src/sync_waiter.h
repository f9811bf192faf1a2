// SyncWaiter: answers store_sync / delete_sync callers without parking a
// scheduler.
//
// A caller's NIF applies its change in memory (RaftMeta::store, which never
// waits for the disk and gives the change's sequence number) and queues a
// reply here; the NIF returns at once and the Erlang side waits in
// `receive`. This thread waits for raftmeta's durability to progress
// (RaftMeta::await_progress, asking for every queued change to be fsynced)
// and, each time it does, decides every reply whose change is now durable
// ({Ref, ok}) or was in a batch that failed ({Ref, {error, Reason}}).
//
// Replies are decided by the sequence number of their change, not in
// rounds of one RaftMeta::sync each: the writer fsyncs term and vote
// changes as soon as it writes them, so a round that waited for "everything
// stored so far" left the callers of the batch in flight waiting for a
// second fsync (the profile showed two fsyncs per round at 1 000 callers).
//
// Decided replies are sent by the store's owner process, on a normal
// scheduler (send_ready, called when this thread tells the owner
// `strata_ra_replies`): a message sent from a process is built on the
// receiver's heap, while one sent from this thread takes two allocations
// under the allocator's lock, becomes a heap fragment the receiver must
// garbage-collect, and goes back through delayed deallocation (together a
// fifth of the CPU at 10 000 callers). This thread sends them itself when
// the owner has taken none for kFallback since it was told (it is
// suspended, busy or dead), and when it stops.
//
// The callers' refs are copied into one environment per batch of queued
// replies, not one per reply: an environment's first term allocates a
// 200-word heap fragment (a tenth of the CPU in the profile). A batch's
// environment is cleared and reused once all its replies are sent.
//
// Every queued reply is sent exactly once: taken from the ready list under
// the lock by one sender. stop() sends everything queued before the thread
// ends. After stop() nothing is queued (enqueue returns false and the NIF
// answers {error, closed} itself).
//
// This thread also owns the callers' timeout: a reply not decided within
// `timeout` of its enqueue is answered {Ref, {error, timeout}} (and never
// again), so the caller's `receive` needs no `after` (its timer, set and
// cancelled on every call, was 5-6 % of the CPU at 10 000 callers). The
// thread never waits for the disk itself: its wait for durability ends at
// the oldest reply's deadline (RaftMeta::await_progress with a deadline;
// the writer, which does the fsync, never holds the mutex that wait takes),
// so a hung fsync delays the callers' timeouts by no more than it did when
// their own timers fired. The same bound covers the owner's kFallback: the
// thread sends the ready replies itself while it waits for an fsync.
#pragma once

#include <erl_nif.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/result.h"
#include "raftmeta/raft_meta.h"

namespace strata::erl {

class SyncWaiter {
 public:
  using Clock = std::chrono::steady_clock;
  // `await` is RaftMeta::await_progress (returning at the deadline at the
  // latest). `encode` turns an error into the Reason of {error, Reason} (in
  // the given env).
  using AwaitFn =
      std::function<Status(uint64_t want, raftmeta::DurableProgress*, Clock::time_point deadline)>;
  using EncodeFn = std::function<ERL_NIF_TERM(ErlNifEnv*, const Error&)>;
  // How long decided replies wait for the owner before this thread sends them.
  static constexpr std::chrono::milliseconds kFallback{20};

  // `timeout`: how long after its enqueue a reply not yet decided is
  // answered {error, timeout}.
  SyncWaiter(AwaitFn await, EncodeFn encode, std::chrono::milliseconds timeout);
  ~SyncWaiter();
  SyncWaiter(const SyncWaiter&) = delete;
  SyncWaiter& operator=(const SyncWaiter&) = delete;

  // The process told `strata_ra_replies` when replies are ready for
  // send_ready (the store's owner). Set before the first enqueue.
  void set_sender(const ErlNifPid& pid);
  // Queues {Ref, Result} for `to`, sent once the change numbered `seq` is
  // durable (or could not be made so, or the timeout passed). Never waits
  // for I/O. false once stop() began.
  bool enqueue(const ErlNifPid& to, ERL_NIF_TERM ref, uint64_t seq);
  // Sends at most `max` decided replies from the calling process (`env`, on
  // a normal scheduler). true if more remain.
  bool send_ready(ErlNifEnv* env, size_t max);
  // Sends everything queued, then ends the thread. Idempotent. Blocks on
  // the store's fsync: not on a normal scheduler.
  void stop();
  // Progress steps that decided replies, and replies decided, so far (not
  // counting timeouts).
  uint64_t rounds() const;
  uint64_t replies() const;
  uint64_t timeouts() const;

 private:
  // Replies queued together: their refs are in `env`.
  struct Batch {
    ErlNifEnv* env = nullptr;
    size_t unsent = 0;
  };
  struct Reply {
    ErlNifPid to;
    ERL_NIF_TERM ref;  // in batch->env
    uint64_t seq;
    Batch* batch;
    Clock::time_point deadline;
    std::shared_ptr<const Error> error;  // decided: null for ok
    bool timed_out = false;              // decided: {error, timeout}
  };
  void run();
  // Moves the replies of `held` (oldest first) whose deadline passed to
  // ready_ as timeouts; returns how many.
  uint64_t expire(std::vector<Reply>& held, Clock::time_point now);
  // Tells the sender that replies are ready, unless told already (under
  // mu_, which it releases around the send).
  void tell_sender(std::unique_lock<std::mutex>& l);
  // Moves the replies of `held` that `p` decides (durable; failed, if
  // `new_failure`) and, if `final` is an error, all the others with it, to
  // ready_; returns how many.
  uint64_t decide(std::vector<Reply>& held, const raftmeta::DurableProgress& p, bool new_failure,
                  const Status& final);
  // Takes at most `max` ready replies (under mu_).
  void take_ready_locked(size_t max, std::vector<Reply>* out);
  // One sent reply: frees its batch's env once it has none left (under mu_).
  void sent_locked(const Reply& r);
  // {Ref, Result} for r, made in env.
  ERL_NIF_TERM message(ErlNifEnv* env, const Reply& r);
  // Sends every ready reply from this thread.
  void send_all_here(std::unique_lock<std::mutex>& l);
  Batch* new_batch_locked();

  const AwaitFn await_;
  const EncodeFn encode_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  ErlNifPid sender_{};
  bool has_sender_ = false;
  std::vector<Reply> queue_;
  Batch* current_ = nullptr;  // the batch queue_'s refs go to
  std::deque<Reply> ready_;
  bool notified_ = false;  // the sender was told and has not emptied ready_ since
  // When the sender was told, or last took replies: the fallback's clock.
  std::chrono::steady_clock::time_point sender_seen_;
  // Only enqueue's notify wakes the thread, and only while it waits.
  bool waiting_ = false;
  bool stopping_ = false;
  uint64_t rounds_ = 0;
  uint64_t replies_ = 0;
  uint64_t timeouts_ = 0;
  std::vector<std::unique_ptr<Batch>> batches_;  // all, for the destructor
  std::vector<Batch*> spare_;                    // cleared, for new_batch_locked
  std::mutex stop_mu_;                           // serializes stop() (join once)
  std::thread thread_;
};

}  // namespace strata::erl
