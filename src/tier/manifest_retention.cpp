#include "tier/manifest_retention.h"

#include <algorithm>
#include <memory>

#include "tier/fragment_ref.h"

namespace strata::tier {

namespace {

struct Frame {
  std::shared_ptr<const ManifestGroup> group;  // null for the root
  const std::vector<ManifestEntry>* entries;
  size_t index;
  uint64_t bound;
  ManifestEntry self;  // the entry pointing at this group
};

}  // namespace

bool retention_may_apply(const Manifest& m, const RetentionSpec& spec, int64_t now_ms) {
  if (m.entries.empty()) return false;
  if (m.entries.size() == 1 && m.entries[0].kind == kKindFragment) return false;
  if (spec.max_bytes && m.total_size > *spec.max_bytes) return true;
  if (spec.max_age_ms && m.first_ts < now_ms - *spec.max_age_ms) return true;
  return false;
}

Result<RetentionPlan> plan_retention(const Manifest& root, const RetentionSpec& spec,
                                     int64_t now_ms, const GroupFetch& fetch) {
  RetentionPlan plan;
  if (!retention_may_apply(root, spec, now_ms)) {
    // Only age can change the answer without new data: the first fragment
    // is at least as young as the root's first timestamp.
    if (spec.max_age_ms && !root.entries.empty() &&
        !(root.entries.size() == 1 && root.entries[0].kind == kKindFragment)) {
      plan.recheck_at_ms = root.first_ts + *spec.max_age_ms + 1;
    }
    return plan;
  }
  uint64_t remaining = root.total_size;
  uint64_t cursor = root.first_offset;
  std::vector<Frame> frames;
  frames.push_back(Frame{nullptr, &root.entries, entry_holding(root.entries, cursor),
                         root.next_offset, ManifestEntry{}});
  const ManifestEntry* stop = nullptr;
  while (!frames.empty()) {
    Frame& f = frames.back();
    if (f.index >= f.entries->size()) {
      // Every remaining entry of this group was dropped: the group goes too.
      // (The root frame is never exhausted: its last fragment is kept.)
      plan.deleted.push_back(f.self);
      frames.pop_back();
      continue;
    }
    const ManifestEntry& e = (*f.entries)[f.index];
    uint64_t end = f.index + 1 < f.entries->size() ? (*f.entries)[f.index + 1].offset : f.bound;
    if (end <= cursor) {
      f.index += 1;
      continue;
    }
    if (e.kind != kKindFragment) {
      STRATA_ASSIGN_OR_RETURN(auto g, fetch_group(fetch, e, end));
      f.index += 1;
      size_t start = entry_holding(g->entries, cursor);
      const std::vector<ManifestEntry>* entries = &g->entries;
      frames.push_back(Frame{std::move(g), entries, start, end, e});
      continue;
    }
    bool by_bytes = spec.max_bytes && remaining > *spec.max_bytes;
    bool by_age = spec.max_age_ms && e.last_ts < now_ms - *spec.max_age_ms;
    // Never the stream's last fragment (so never the last root entry): see
    // the header for why an emptied manifest would mislead.
    bool last = end >= root.next_offset;
    bool full = plan.deleted.size() >= spec.max_objects_per_plan;
    if (last || full || !(by_bytes || by_age)) {
      plan.more = full && !last && (by_bytes || by_age);
      if (!last && spec.max_age_ms) plan.recheck_at_ms = e.last_ts + *spec.max_age_ms + 1;
      stop = &e;
      break;
    }
    plan.deleted.push_back(e);
    plan.fragments_removed += 1;
    plan.edit.removed_bytes += e.size;
    remaining -= std::min(remaining, e.size);
    cursor = end;
    f.index += 1;
  }
  if (plan.fragments_removed == 0 || stop == nullptr) {
    plan.deleted.clear();
    return plan;
  }
  plan.edit.first_offset = stop->offset;
  plan.edit.first_ts = stop->first_ts;
  // Root entries wholly below the new first offset leave the root.
  uint32_t removed = 0;
  for (size_t i = 0; i < root.entries.size(); ++i) {
    uint64_t end = i + 1 < root.entries.size() ? root.entries[i + 1].offset : root.next_offset;
    if (end > stop->offset) break;
    removed += 1;
  }
  plan.edit.remove_entries = removed;
  return plan;
}

}  // namespace strata::tier
