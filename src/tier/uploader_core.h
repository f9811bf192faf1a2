// UploaderCore: the per-stream upload state machine, pure.
//
//   Result<Effects> on(const Event&, int64_t now_ms)
//
// The shell feeds fragment cuts, task results, deadlines and ticks; the core
// answers with effects to run. No I/O, no clock, no threads; randomness
// (uids, retry jitter) comes from a generator seeded by the config.
//
// Rules it keeps (each has a named test in tests/tier/uploader_core_test.cpp):
// - Fragments are applied to the manifest strictly in cut order. A transfer
//   that completes out of order waits in its slot; when the front completes
//   the run of completed slots behind it is applied in one loop (no
//   recursion, any length).
// - A fragment is never dropped. Transient failures retry at once, then
//   after 10 ms doubling to 5 s; fatal ones after 1 s doubling to 30 s and
//   raise upload_stalled_offset; nothing behind an unfinished fragment is
//   applied. Both are jittered from the seeded generator.
// - Persist when persist_threshold fragments are applied, persist_interval
//   after the oldest unpersisted edit, or at once for a rebalance/retention
//   edit or when an urgent waiter's (a flush's) offset is applied. Edits
//   applied while a persist is in flight go into the next one; the
//   broadcast after a persist carries exactly the edits it persisted.
// - At most one of persist, rebalance, retention in flight. Whichever is
//   deferred is re-checked whenever the one in flight ends: success, failure
//   or deadline. Every in-flight operation is cleared by one of those three.
// - Persist conflict -> Reinitialize; not_found at expected revision 0 ->
//   Reinitialize; not_found at revision > 0 -> Stop (stream deleted).
// - Objects dropped by retention and the previous root are deleted only
//   after the manifest without them is persisted.
// - Waiters, the broadcast and the local-retention boundary only ever see
//   the persisted manifest.
// - Results with a token or reference the core never issued are rejected
//   with an error naming it; stale ones (superseded, duplicate, late) are
//   ignored and counted.
//
// After Reinitialize or Stop the core is finished: every further event is
// rejected with Errc::closed and the shell builds a new core.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/random.h"
#include "common/result.h"
#include "tier/backoff.h"
#include "tier/manifest.h"
#include "tier/manifest_retention.h"
#include "tier/object_keys.h"
#include "tier/uploader_events.h"

namespace strata::tier {

struct UploaderConfig {
  std::string stream;
  std::string key_prefix;  // object key prefix (may be empty)
  uint64_t epoch = 0;      // this writer's epoch (keys, roots, catalog fencing)
  uint32_t persist_threshold = 5;
  int64_t persist_interval_ms = 2000;
  BackoffPolicy transient_backoff = BackoffPolicy::transient();
  BackoffPolicy fatal_backoff = BackoffPolicy::fatal();
  int64_t transfer_deadline_ms = 180'000;
  int64_t group_upload_deadline_ms = 60'000;
  int64_t persist_deadline_ms = 30'000;
  int64_t retention_deadline_ms = 60'000;
  RebalancePolicy rebalance;
  RetentionSpec retention;  // no limits: remote retention never runs
  // Minimum time between retention evaluations that the core starts on its
  // own (an explicit RetentionRequested, or a plan that stopped at its
  // object limit, does not wait).
  int64_t retention_interval_ms = 1000;
  // Bound on fragments cut but not yet persisted (in flight + applied).
  // A cut beyond it is refused; the shell checks accepts_cuts() first.
  uint32_t max_unpersisted_fragments = 4096;
  uint32_t max_waiters = 1024;
  uint64_t random_seed = 0;
};

// Counters only grow; gauges describe the current state. Names follow the
// metrics the shell exports (docs/METRICS.md).
struct UploaderMetrics {
  // gauges
  uint64_t transfers_in_flight = 0;
  uint64_t bytes_in_transfer = 0;
  uint64_t fragments_unpersisted = 0;  // applied to the live manifest, not persisted
  uint64_t bytes_unpersisted = 0;
  uint64_t bytes_in_persist = 0;
  std::optional<uint64_t> upload_stalled_offset;  // first fragment stuck on a fatal error
  int64_t last_persist_ts_ms = -1;
  uint64_t manifest_first_offset = 0;  // persisted
  uint64_t manifest_next_offset = 0;   // persisted
  uint64_t remote_bytes = 0;           // persisted
  uint64_t root_entries = 0;           // live
  uint64_t waiters = 0;
  // counters
  uint64_t fragments_cut = 0;
  uint64_t transfers_completed = 0;
  uint64_t transfers_failed = 0;
  uint64_t transfer_retries = 0;               // transient (incl. deadlines)
  uint64_t nontransient_transfer_retries = 0;  // fatal
  uint64_t transfer_deadlines = 0;
  uint64_t bytes_transferred = 0;
  uint64_t stale_results_ignored = 0;
  uint64_t groups_created[4] = {0, 0, 0, 0};  // level 1, 2, 3, and 4+
  uint64_t group_upload_failures = 0;
  uint64_t persists_completed = 0;
  uint64_t persists_failed = 0;
  uint64_t persist_conflicts = 0;
  uint64_t bytes_persisted_total = 0;
  uint64_t retention_evaluations = 0;
  uint64_t retention_failures = 0;
  uint64_t fragments_removed_by_retention = 0;
  uint64_t objects_deleted = 0;  // delete requests issued
};

class UploaderCore {
 public:
  enum class Op : uint8_t { none, persist, rebalance, retention };

  // Starts from the persisted state read from the catalog: the manifest at
  // `revision` (0: the stream has no catalog entry yet; the first persist
  // creates it) whose root object is `root_key` ("" if none). Fragments must
  // then be cut from manifest.next_offset on. Produces no effects.
  static Result<UploaderCore> create(UploaderConfig cfg, Manifest persisted, uint64_t revision,
                                     std::string root_key);

  Result<upload::Effects> on(const upload::Event& e, int64_t now_ms);

  // ---- state, for the shell, metrics and tests ----
  bool running() const { return state_ == State::running; }
  bool accepts_cuts() const;
  uint64_t next_cut_offset() const { return next_cut_offset_; }
  const Manifest& live_manifest() const { return live_; }
  const std::shared_ptr<const Manifest>& persisted_manifest() const { return persisted_; }
  uint64_t revision() const { return revision_; }
  const std::string& root_key() const { return root_key_; }
  Op in_flight() const { return op_; }
  // Operations waiting for the one in flight (what blocks a prefix rewrite).
  bool rebalance_deferred() const;
  bool retention_deferred() const;
  bool persist_deferred(int64_t now_ms) const;
  size_t pending_edits() const { return pending_.size(); }
  size_t slots() const { return slots_.size(); }
  UploaderMetrics metrics() const;
  const ObjectKeys& keys() const { return keys_; }
  // Internal consistency (slots contiguous from the live manifest's end,
  // counters matching the queues, ...). For simulations and tests.
  Status check_invariants() const;

 private:
  enum class State : uint8_t { running, reinitializing, stopped };
  struct Slot {
    FragmentMeta meta;
    uint64_t token = 0;
    uint32_t uid = 0;
    uint32_t transient_failures = 0;
    uint32_t fatal_failures = 0;
    bool complete = false;
    bool stalled = false;
  };
  struct PendingEdit {
    ManifestEdit edit;
    int64_t applied_at_ms = 0;
    std::vector<ManifestEntry> release;  // objects to delete once persisted
  };

  UploaderCore(UploaderConfig cfg, ObjectKeys keys);

  Status handle(const upload::Event& e, int64_t now, upload::Effects& out);
  Status on_cut(const upload::FragmentCut& e, upload::Effects& out);
  Status on_transfer_result(uint64_t ref, uint64_t token, const TransferFailure* failure,
                            bool deadline, int64_t now, upload::Effects& out);
  Status on_group_result(uint64_t token, const TransferFailure* failure, int64_t now,
                         upload::Effects& out);
  Status on_persist_complete(const upload::PersistComplete& e, int64_t now, upload::Effects& out);
  Status on_persist_failed(uint64_t token, upload::PersistError error, const std::string& message,
                           int64_t now, upload::Effects& out);
  Status on_retention_result(uint64_t token, const RetentionPlan* plan, const std::string* failure,
                             int64_t now, upload::Effects& out);
  Status on_deadline(uint64_t token, int64_t now, upload::Effects& out);
  Status on_await(const upload::AwaitOffset& e, upload::Effects& out);

  // Classifies a token for an operation: current (true), stale (false, to be
  // ignored), or never issued (error).
  Result<bool> check_token(uint64_t token, Op op, const char* what) const;
  void drain(int64_t now);
  // Applies an edit to the live manifest and queues it for the next persist.
  Status apply_local(ManifestEdit edit, int64_t now, std::vector<ManifestEntry> release);
  void schedule(int64_t now, upload::Effects& out);
  void start_persist(int64_t now, upload::Effects& out);
  void start_rebalance(const RebalanceRun& run, int64_t now, upload::Effects& out);
  void start_retention(int64_t now, upload::Effects& out);
  bool persist_due(int64_t now) const;
  bool retention_due(int64_t now) const;
  std::optional<RebalanceRun> rebalance_run();
  std::optional<int64_t> next_wakeup() const;
  void update_timer(upload::Effects& out);
  void finish(State s, upload::Effects& out, upload::Effect final_effect, Error waiter_error);
  uint32_t new_uid();
  uint64_t new_token() { return next_token_++; }

  UploaderConfig cfg_;
  ObjectKeys keys_;
  Random rng_;
  State state_ = State::running;

  // Fragments cut and not yet applied, in cut order; slots_[i] has ref
  // front_ref_ + i.
  std::deque<Slot> slots_;
  uint64_t front_ref_ = 1;
  uint64_t next_cut_offset_ = 0;
  uint64_t stalled_slots_ = 0;
  uint64_t bytes_in_transfer_ = 0;

  // The live manifest: persisted state + pending edits.
  Manifest live_;
  std::deque<PendingEdit> pending_;
  uint64_t appends_pending_ = 0;
  uint64_t bytes_pending_ = 0;
  uint64_t replaces_or_truncates_pending_ = 0;

  // Persisted state.
  std::shared_ptr<const Manifest> persisted_;
  uint64_t revision_ = 0;
  std::string root_key_;
  uint32_t root_uid_ = 0;

  // The one operation in flight.
  Op op_ = Op::none;
  uint64_t op_token_ = 0;
  size_t persist_edits_ = 0;  // prefix of pending_ in the persist in flight
  uint64_t persist_bytes_ = 0;
  uint64_t persist_appends_ = 0;
  std::shared_ptr<const Manifest> persist_snapshot_;
  std::string persist_key_;
  uint32_t persist_uid_ = 0;
  std::optional<NewGroup> group_;

  // Retry and schedule state.
  uint32_t persist_failures_ = 0;
  int64_t persist_not_before_ = 0;
  uint32_t group_transient_failures_ = 0;
  uint32_t group_fatal_failures_ = 0;
  int64_t rebalance_not_before_ = 0;
  // Rebalance detection is a scan of the root; it is redone only after an
  // edit that can create a qualifying run. Appends only lengthen the tail
  // run of fragments, tracked incrementally.
  bool rebalance_dirty_ = true;
  std::optional<RebalanceRun> rebalance_cached_;
  uint64_t tail_fragments_ = 0;
  bool retention_requested_ = false;
  // The last evaluation found nothing; only new data, an explicit request or
  // recheck time (age) can change that.
  bool retention_idle_ = false;
  std::optional<int64_t> retention_recheck_at_;
  int64_t last_retention_eval_ = INT64_MIN / 2;
  uint32_t retention_failures_ = 0;
  int64_t retention_not_before_ = 0;

  struct Waiter {
    uint64_t offset;
    uint64_t id;
    bool urgent;
  };
  // An urgent waiter's offset is applied (in the live manifest).
  bool urgent_waiter_applied() const;
  std::vector<Waiter> waiters_;

  std::optional<int64_t> timer_at_;
  uint64_t next_token_ = 1;
  UploaderMetrics m_;
};

}  // namespace strata::tier
