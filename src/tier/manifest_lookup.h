// Finding the fragment for an offset or a timestamp in a manifest tree:
// binary search in the root, then one group read per level below it (at
// most three for streams of up to 33 M fragments with the default
// thresholds; see manifest.h).
#pragma once

#include <cstdint>
#include <optional>

#include "common/result.h"
#include "tier/fragment_ref.h"
#include "tier/manifest.h"

namespace strata::tier {

struct LookupStats {
  uint32_t group_reads = 0;
};

// The fragment holding `offset`; nullopt if offset is outside
// [first_offset, next_offset).
Result<std::optional<FragmentRef>> find_fragment(const Manifest& root, uint64_t offset,
                                                 const GroupFetch& fetch,
                                                 LookupStats* stats = nullptr);

// The first fragment (at or after first_offset) whose largest timestamp is
// >= ts, i.e. the fragment where a reader asking for "timestamp ts" starts;
// nullopt if every fragment is older. Exact when chunk timestamps are
// non-decreasing; otherwise it never returns a fragment before the first
// one holding a timestamp >= ts.
Result<std::optional<FragmentRef>> find_fragment_by_timestamp(const Manifest& root, int64_t ts,
                                                              const GroupFetch& fetch,
                                                              LookupStats* stats = nullptr);

}  // namespace strata::tier
