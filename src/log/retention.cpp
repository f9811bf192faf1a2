#include "log/retention.h"

#include <algorithm>

namespace strata::log {

RetentionPlan plan_retention(const std::vector<SegmentInfo>& segs, const RetentionOptions& opts,
                             int64_t now_ms) {
  RetentionPlan plan;
  if (segs.size() < 2) return plan;
  // Never the active segment, nor, while the active segment holds no chunk
  // yet, the one before it: the newest segment holding a chunk carries the
  // writer sequences (log/writer_sequences.h).
  const size_t deletable = segs.size() - (segs.back().chunks == 0 ? 2 : 1);
  size_t by_bytes = 0, by_age = 0;
  if (opts.max_bytes) {
    uint64_t total = 0;
    for (const auto& s : segs) total += s.size_bytes;
    while (by_bytes < deletable && total > *opts.max_bytes) total -= segs[by_bytes++].size_bytes;
  }
  if (opts.max_age_ms) {
    int64_t cutoff = now_ms - *opts.max_age_ms;
    while (by_age < deletable && segs[by_age].chunks > 0 &&
           segs[by_age].last_timestamp_ms < cutoff) {
      ++by_age;
    }
  }
  plan.count = std::max(by_bytes, by_age);
  for (size_t i = 0; i < plan.count; ++i) {
    plan.reasons.push_back(i < by_bytes ? "max_bytes" : "max_age");
  }
  return plan;
}

}  // namespace strata::log
