// RemoteConfirms: which appended batches may be confirmed when a stream's
// confirm mode is `remote` (node/node_config.h, ConfirmMode). Pure: no I/O,
// no clock (time comes with every call), no threads.
//
// The appender hands over each drain — the batches it appended together,
// in order — as a group with the offset its appends end below (`through`).
// A group is released
//   - ok, once a persisted manifest covers `through` (the uploader's wait
//     for it, or for a later offset, succeeded);
//   - with the wait's error, when the uploader fails it (stopped, fenced);
//   - with Errc::timeout, when its deadline (`timeout_ms` after it was
//     added) passes first: every wait has a deadline, none hangs.
// Groups are released strictly in the order they were added, so a
// publisher's confirms and errors stay in order. Waits are coalesced: at
// most `max_waits` are outstanding, a new one is for the highest `through`
// not yet covered, and one persisted offset releases every group below it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "common/result.h"

namespace strata::server {

class RemoteConfirms {
 public:
  struct Release {
    uint64_t group = 0;
    Status status;
  };

  explicit RemoteConfirms(int64_t timeout_ms, size_t max_waits = 8);

  // Adds a group. `needs_wait` false (nothing in it was appended: every
  // batch failed or was empty): released in its turn without waiting.
  // Returns the offset to wait for when a new wait must start.
  std::optional<uint64_t> add(uint64_t group, uint64_t through, bool needs_wait, int64_t now_ms);
  // The wait for `through` ended with `s`; `persisted_next` (ok only) is
  // where the persisted manifest ends now, which is often past `through`:
  // every group below it is released too, not one cut later when its own
  // wait would end. Returns the offset of a new wait to start, if needed.
  std::optional<uint64_t> on_wait(uint64_t through, const Status& s, int64_t now_ms,
                                  uint64_t persisted_next = 0);
  // Groups that can be released now, in order: resolved, or past their
  // deadline at `now_ms`.
  std::vector<Release> take_ready(int64_t now_ms);
  // Fails every group not released yet with `error` (the appender stopped);
  // they are released by the next take_ready. Later adds are still accepted.
  void fail_all(const Error& error);

  // When take_ready must next be called for a deadline; none if nothing waits.
  std::optional<int64_t> next_deadline() const;
  size_t pending() const { return groups_.size(); }
  size_t outstanding_waits() const;
  // The highest offset known to be below a persisted manifest's end.
  uint64_t persisted_through() const { return persisted_; }

 private:
  struct Group {
    uint64_t id = 0;
    uint64_t through = 0;
    int64_t deadline = 0;
    std::optional<Status> result;
  };
  std::optional<uint64_t> maybe_wait();

  const int64_t timeout_ms_;
  const size_t max_waits_;
  std::deque<Group> groups_;
  std::map<uint64_t, size_t> waits_;  // outstanding waits: offset -> count
  uint64_t persisted_ = 0;
};

}  // namespace strata::server
