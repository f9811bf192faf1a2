// Events into and effects out of the uploader core (uploader_core.h).
//
// Every task the shell starts for an effect (transfer, group upload,
// persist, retention) ends in exactly one event: its success, its failure,
// or its deadline (the shell arms a timer of `deadline_ms` per task). Each
// carries the token of the effect that started it; the core ignores a
// result whose token is no longer current (late, duplicate, superseded by
// a retry) and rejects one whose token or reference it never issued.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/result.h"
#include "tier/fragment.h"
#include "tier/manifest.h"
#include "tier/manifest_codec.h"
#include "tier/manifest_retention.h"
#include "tier/transfer_failure.h"

namespace strata::tier::upload {

// ---- events ----

// Fragment assembly cut a fragment (the shell keeps its FragmentPlan, keyed
// by meta.first_offset or by the ref of the SubmitTransfer that follows).
struct FragmentCut {
  FragmentMeta meta;
};
struct TransferComplete {
  uint64_t ref = 0;
  uint64_t token = 0;
};
struct TransferFailed {
  uint64_t ref = 0;
  uint64_t token = 0;
  TransferFailure failure;
};
struct TransferDeadline {
  uint64_t ref = 0;
  uint64_t token = 0;
};
struct GroupUploadComplete {
  uint64_t token = 0;
};
struct GroupUploadFailed {
  uint64_t token = 0;
  TransferFailure failure;
};
// The catalog compare-and-set committed; `revision` is the new revision.
struct PersistComplete {
  uint64_t token = 0;
  uint64_t revision = 0;
};
enum class PersistError : uint8_t {
  conflict,   // the catalog moved on (another writer, or our own earlier commit)
  not_found,  // the catalog has no entry for the stream
  transient,  // the root PUT or the catalog call failed and may succeed later
};
struct PersistFailed {
  uint64_t token = 0;
  PersistError error = PersistError::transient;
  std::string message;
};
// The shell ran plan_retention on the manifest of EvaluateRetention.
struct RetentionComplete {
  uint64_t token = 0;
  RetentionPlan plan;  // may drop nothing (plan.removes_anything() false)
};
struct RetentionFailed {
  uint64_t token = 0;
  std::string message;
};
// A persist, group upload or retention task outlived its deadline_ms.
struct OperationDeadline {
  uint64_t token = 0;
};
// Time passed (the core has no clock; `now` comes with every event).
struct Tick {};
// Reply to `waiter` once offset `offset` is in the persisted manifest.
// `urgent` (a flush): persist as soon as the offset is applied, without the
// persist_threshold / persist_interval debounce.
struct AwaitOffset {
  uint64_t offset = 0;
  uint64_t waiter = 0;
  bool urgent = false;
};
// Evaluate remote retention now (operator command, retention settings
// changed); with `spec`, under these limits from now on.
struct RetentionRequested {
  std::optional<RetentionSpec> spec;
};

using Event = std::variant<FragmentCut, TransferComplete, TransferFailed, TransferDeadline,
                           GroupUploadComplete, GroupUploadFailed, PersistComplete, PersistFailed,
                           RetentionComplete, RetentionFailed, OperationDeadline, Tick, AwaitOffset,
                           RetentionRequested>;

// ---- effects ----

// Upload the fragment [meta.first_offset, meta.next_offset) to `key`, after
// waiting `delay_ms` (0: now). A retry of the same ref gets a new token,
// uid and key: every write goes to a new key.
struct SubmitTransfer {
  uint64_t ref = 0;
  uint64_t token = 0;
  FragmentMeta meta;
  uint32_t uid = 0;
  std::string key;
  uint32_t attempt = 1;  // 1 for the first submission
  int64_t delay_ms = 0;
  int64_t deadline_ms = 0;
};
// Upload a group object (encode_group(*group)) to `key`.
struct UploadGroup {
  uint64_t token = 0;
  std::shared_ptr<const ManifestGroup> group;
  ManifestEntry entry;  // the entry that will replace the run once uploaded
  std::string key;
  int64_t deadline_ms = 0;
};
// PUT encode_root(*manifest, epoch) to root_key, then compare-and-set the
// catalog pointer (expected_revision, epoch) to it.
struct StartPersist {
  uint64_t token = 0;
  std::shared_ptr<const Manifest> manifest;
  uint64_t epoch = 0;
  uint64_t expected_revision = 0;
  std::vector<ManifestEdit> edits;  // the edits since the last persist, in order
  std::string root_key;
  int64_t deadline_ms = 0;
};
// Send the persisted edits to the manifest caches (sequence = revision).
struct Broadcast {
  EditBatch batch;
};
// Run plan_retention(*manifest, spec, now_ms, fetch) and report the result.
struct EvaluateRetention {
  uint64_t token = 0;
  std::shared_ptr<const Manifest> manifest;
  RetentionSpec spec;
  int64_t now_ms = 0;
  int64_t deadline_ms = 0;
};
// Delete these objects: no longer referenced by the manifest persisted at
// `revision` (an old root, fragments and groups dropped by retention).
struct DeleteObjects {
  std::vector<std::string> keys;
  uint64_t revision = 0;
};
// The persisted remote range changed: local segments wholly below
// next_offset may be deleted; readers may read [first_offset, next_offset).
struct UpdateLocalRetention {
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  uint64_t revision = 0;
};
struct ReplyWaiters {
  std::vector<uint64_t> waiters;
  Status status;
};
// Send a Tick at `at_ms` (replaces any earlier timer).
struct SetTimer {
  int64_t at_ms = 0;
};
struct CancelTimer {};
// Something the shell should log: the core handled it (e.g. an inapplicable
// retention plan was treated as a failed retention) but it is a bug or a
// misconfiguration that someone should see.
struct Report {
  Error error;
};
// Discard this core, re-read the catalog and start a new one.
struct Reinitialize {
  std::string reason;
};
// The stream is gone: stop uploading.
struct Stop {
  std::string reason;
};

using Effect = std::variant<SubmitTransfer, UploadGroup, StartPersist, Broadcast, EvaluateRetention,
                            DeleteObjects, UpdateLocalRetention, ReplyWaiters, SetTimer,
                            CancelTimer, Report, Reinitialize, Stop>;
using Effects = std::vector<Effect>;

std::string_view event_name(const Event& e);

}  // namespace strata::tier::upload
