// The pure rules of raftmeta's writes (no I/O, no clock, no locks):
//  - what a store does to a server's metadata, including Ra's #111 rule: a
//    term change clears the vote in the same change;
//  - which slotstore fields differ between two states (only those are
//    written);
//  - when high-frequency writes (last_applied) are due for an fsync;
//  - how long a synced batch may wait for more sync callers (group commit).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "raftmeta/meta_schema.h"
#include "raftmeta/server_meta.h"

namespace strata::raftmeta {

// The slotstore fields in which `a` and `b` differ.
FieldMask diff(const ServerMeta& a, const ServerMeta& b);

// The state after storing `v` into field `f` of `cur` (`v` has the type of
// `f`; check_value validates that). Storing a current_term different from
// the current one also clears voted_for: a vote belongs to one term, and a
// crash must never leave a newer term paired with an older term's vote.
// Storing an equal value changes nothing.
ServerMeta apply_store(const ServerMeta& cur, Field f, const FieldValue& v);

// When written-but-unsynced high-frequency fields must be fsynced: at most
// `interval_ns` after the first such write (so a crash loses at most that
// much last_applied progress). Any fsync resets it.
class PeriodicSync {
 public:
  explicit PeriodicSync(int64_t interval_ns) : interval_ns_(interval_ns) {}

  // A batch was written to the WAL at `now` without an fsync.
  void on_unsynced_write(int64_t now_ns) {
    if (!first_unsynced_ns_) first_unsynced_ns_ = now_ns;
  }
  // Everything written so far was fsynced.
  void on_sync() { first_unsynced_ns_.reset(); }
  // The time an fsync is due, if anything is unsynced.
  std::optional<int64_t> deadline_ns() const {
    if (!first_unsynced_ns_) return std::nullopt;
    return *first_unsynced_ns_ + interval_ns_;
  }
  bool due(int64_t now_ns) const {
    auto d = deadline_ns();
    return d && now_ns >= *d;
  }

 private:
  int64_t interval_ns_;
  std::optional<int64_t> first_unsynced_ns_;
};

// Group commit across cohorts. Each sync caller has one request in flight:
// when a synced batch completes, the callers it releases come back with
// their next request a moment later, while those that arrived during its
// fsync are already waiting. Starting the next fsync at once splits the
// callers into two cohorts that alternate, each fsync carrying half of
// them. So the writer holds a synced batch until as many callers wait as
// the last batch released plus those that arrived during its fsync, but at
// most `window`: the last fsync's duration (capped). Holding that long
// never lowers throughput much — without the hold the two cohorts share
// the same fsync time — and a load that drops costs one such wait. (PostgreSQL's commit_delay and
// MySQL's binlog_group_commit_sync_delay are fixed versions of this.)
class GroupCommit {
 public:
  // `max_window_ns`: the longest hold, whatever the fsync takes.
  explicit GroupCommit(int64_t max_window_ns) : max_window_ns_(max_window_ns) {}

  // A synced batch that took `taken` waiting callers completed at `now`
  // after `duration_ns`; `arrived` more callers arrived while it ran.
  void on_synced(int64_t now_ns, uint64_t taken, uint64_t arrived, int64_t duration_ns) {
    expected_ = taken + arrived;
    released_at_ns_ = now_ns;
    window_ns_ = std::min(max_window_ns_, duration_ns);
  }
  // With `waiting` callers waiting for an fsync: nullopt to start the
  // batch now, else the time until which to hold it (unless more arrive).
  std::optional<int64_t> hold_until(int64_t now_ns, uint64_t waiting) const {
    const int64_t until = released_at_ns_ + window_ns_;
    if (waiting == 0 || waiting >= expected_ || now_ns >= until) return std::nullopt;
    return until;
  }
  // The number of waiting callers that ends a hold early.
  uint64_t expected() const { return expected_; }

 private:
  int64_t max_window_ns_;
  uint64_t expected_ = 0;
  int64_t released_at_ns_ = 0;
  int64_t window_ns_ = 0;
};

}  // namespace strata::raftmeta
