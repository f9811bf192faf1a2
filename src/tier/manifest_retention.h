// Remote retention: which leading fragments of a manifest to drop, and
// which objects to delete once the manifest without them is persisted.
//
// A fragment is dropped while either limit asks for it:
//   max_bytes  the remote range holds more than max_bytes chunk bytes;
//   max_age    the fragment's newest chunk is older than now - max_age.
// The walk starts at first_offset and stops at the first fragment neither
// limit drops (so the result is the longer of the two prefixes), at the
// last fragment of the stream, or after `max_objects_per_plan` objects (the
// plan then says `more`, and the caller evaluates again after persisting).
//
// The last fragment is never dropped, so the last root entry is never
// removed: a stream whose data has been uploaded must not look empty. An
// empty manifest (first == next) reads as "nothing was ever uploaded here",
// which would let a restarting uploader or a reader with a stale local view
// misjudge where the remote data ends; keeping one fragment keeps
// next_offset and the newest timestamp anchored in real data.
//
// Groups are read through the fetch callback as the walk enters them. A
// group all of whose remaining entries are dropped is deleted too; a group
// only partly consumed stays (the root's first_offset moves inside it and
// readers skip what lies below). Entries below first_offset were handled by
// an earlier pass and are neither counted nor deleted again, so planning is
// idempotent.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/result.h"
#include "tier/manifest.h"

namespace strata::tier {

struct RetentionSpec {
  std::optional<uint64_t> max_bytes;
  std::optional<int64_t> max_age_ms;
  uint32_t max_objects_per_plan = 10'000;
  bool any() const { return max_bytes.has_value() || max_age_ms.has_value(); }
  bool operator==(const RetentionSpec&) const = default;
};

struct RetentionPlan {
  // Nothing to drop when fragments_removed == 0 (edit and deleted are then
  // empty and must not be applied).
  uint64_t fragments_removed = 0;
  TruncateEdit edit;                   // apply to the manifest, then persist
  std::vector<ManifestEntry> deleted;  // objects to delete after that persist
  bool more = false;                   // stopped at max_objects_per_plan; evaluate again
  // When max_age could next drop the fragment the walk stopped at (its
  // newest chunk turns old); nullopt when only new data can change the
  // answer (the walk stopped at the last fragment, or on max_bytes alone).
  std::optional<int64_t> recheck_at_ms;
  bool removes_anything() const { return fragments_removed > 0; }
  bool operator==(const RetentionPlan&) const = default;
};

// Cheap test on the root header alone: false means planning would surely
// find nothing to drop (so no group needs to be read).
bool retention_may_apply(const Manifest& m, const RetentionSpec& spec, int64_t now_ms);

// The plan for `root` at `now_ms`.
Result<RetentionPlan> plan_retention(const Manifest& root, const RetentionSpec& spec,
                                     int64_t now_ms, const GroupFetch& fetch);

}  // namespace strata::tier
