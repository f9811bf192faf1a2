// Which segments retention removes: a pure function of the segments, the
// limits and the current time (the shell consults the veto hook and deletes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "log/hooks.h"
#include "log/log_options.h"

namespace strata::log {

struct RetentionPlan {
  // Delete segments[0 .. count): always a prefix (oldest first), never the
  // newest segment, so the log stays contiguous and keeps its active segment.
  size_t count = 0;
  // Per planned segment, why ("max_bytes" or "max_age").
  std::vector<std::string> reasons;
};

// `segments` oldest first; the last one is the active segment. Rules:
//  - max_bytes: delete the oldest segments while the total size of all
//    segments exceeds max_bytes;
//  - max_age: delete the oldest segments whose newest chunk is older than
//    now_ms - max_age_ms (empty segments have no age and stop the walk);
//  - the plan is the longer of the two prefixes;
//  - while the active segment is empty, the segment before it is kept too
//    (it holds the writer sequences, log/writer_sequences.h).
RetentionPlan plan_retention(const std::vector<SegmentInfo>& segments, const RetentionOptions& opts,
                             int64_t now_ms);

}  // namespace strata::log
