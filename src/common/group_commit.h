// Group commit by leader and followers. Callers that want their work
// committed queue up; the caller at the front of the queue is the leader: it
// takes a group (a prefix of the queue, itself first), commits it — one
// write, at most one fsync — without the lock, then releases the group and
// wakes the next caller in line to lead. Idle, a caller leads at once; under
// load one fsync serves a whole group, and groups commit in queue order.
//
// The log (StreamLog::append) and slotstore (SlotStore::write_batch) both
// commit this way; each brings its own commit step and its own bound on a
// group. raftmeta's writer (raft_meta_writer.cpp) is a different rule and
// does not use this queue: callers never lead and nothing queues requests.
// A single long-lived thread merges what changed (the latest value of each
// server, however many updates preceded it) into one slotstore batch, and
// decides when to fsync by an adaptive hold on the sync waiters
// (raftmeta::GroupCommit in meta_change.h); that batch then goes through
// slotstore's queue here.
//
// The queue has no lock of its own: the owner's mutex guards it (the owner
// usually guards more state with the same mutex) and every method requires
// that mutex held. A waiter lives on its caller's stack until it is done.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "common/assert.h"

namespace strata {

// Base of a queued caller's state.
struct GroupCommitWaiter {
  bool done = false;  // its group was committed (or failed) by a leader
  std::condition_variable cv;
};

template <typename Waiter>  // derived from GroupCommitWaiter
class GroupCommitQueue {
 public:
  // Queues `w` and waits, releasing `l` meanwhile, until a leader finished
  // w's group (returns false: w->done) or w reached the front of the queue
  // (returns true: the caller leads, and must end with release() or
  // release_all()).
  bool join(std::unique_lock<std::mutex>& l, Waiter* w) {
    push(w);
    return wait(l, w);
  }

  // join() in two steps, for a caller that queues several waiters at once
  // (one after the other, so that one leader may take them all into one
  // group) and then waits for each in queue order.
  void push(Waiter* w) { q_.push_back(w); }
  bool wait(std::unique_lock<std::mutex>& l, Waiter* w) {
    w->cv.wait(l, [&] { return w->done || q_.front() == w; });
    return !w->done;
  }

  // The leader's group: the longest prefix of the queue with at most
  // `max_items` waiters whose cost(waiter) adds up to at most `max_cost`;
  // the leader itself always, whatever its cost.
  template <typename Cost>
  std::vector<Waiter*> take(size_t max_items, uint64_t max_cost, Cost cost) const {
    std::vector<Waiter*> group;
    uint64_t total = 0;
    for (Waiter* w : q_) {
      const uint64_t c = cost(*w);
      if (!group.empty() && (group.size() >= max_items || total + c > max_cost)) break;
      group.push_back(w);
      total += c;
    }
    return group;
  }

  // Ends a leader's turn: `group` (which must be the queue's prefix) leaves
  // the queue, each of its waiters is marked done and woken, and the next
  // caller in line is woken to lead. Returns whether the queue is now empty.
  bool release(const std::vector<Waiter*>& group) {
    for (Waiter* w : group) {
      STRATA_ASSERT(!q_.empty() && q_.front() == w, "group commit queue out of order");
      q_.pop_front();
      w->done = true;
      w->cv.notify_one();
    }
    if (q_.empty()) return true;
    q_.front()->cv.notify_one();
    return false;
  }

  // Fail-stop: every queued waiter, the leader first, gets `fail(waiter,
  // is_leader)` and is marked done and woken; the queue is left empty.
  template <typename Fail>
  void release_all(Fail fail) {
    bool first = true;
    for (Waiter* w : q_) {
      fail(*w, first);
      first = false;
      w->done = true;
      w->cv.notify_one();
    }
    q_.clear();
  }

  bool empty() const { return q_.empty(); }

 private:
  std::deque<Waiter*> q_;
};

}  // namespace strata
