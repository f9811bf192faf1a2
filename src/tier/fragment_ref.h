// FragmentRef: one fragment as found in a manifest tree, with the end of its
// range (which the entry alone does not carry: it is the next entry's offset
// at the same level, or the enclosing bound).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tier/manifest.h"

namespace strata::tier {

struct FragmentRef {
  uint64_t offset = 0;
  uint64_t next_offset = 0;
  int64_t first_ts = -1;
  int64_t last_ts = -1;
  uint64_t size = 0;  // chunk bytes (the fragment object's data size)
  uint64_t epoch = 0;
  uint32_t uid = 0;

  static FragmentRef of(const ManifestEntry& e, uint64_t next_offset) {
    return FragmentRef{e.offset, next_offset, e.first_ts, e.last_ts, e.size, e.epoch, e.uid};
  }
  ManifestEntry entry() const {
    return ManifestEntry{offset, first_ts, last_ts, size, epoch, uid, kKindFragment};
  }
  bool operator==(const FragmentRef&) const = default;
};

// Errors from walking a manifest tree because a group object could not be
// read (or was not the group its entry names) start with this tag; the
// error code is the fetch's own (so a caller can tell not_found from
// transient).
inline constexpr std::string_view kGroupFetchFailed = "group_fetch_failed";
inline bool is_group_fetch_failure(const Error& e) {
  return std::string_view(e.message).substr(0, kGroupFetchFailed.size()) == kGroupFetchFailed;
}

// Fetches the group of `e` (kind > 0) whose range must end at `end`, and
// checks it is that group. Shared by the iterator, lookups and retention.
Result<std::shared_ptr<const ManifestGroup>> fetch_group(const GroupFetch& fetch,
                                                         const ManifestEntry& e, uint64_t end);

// The index of the entry whose range holds `cursor` in a level's entries
// (sorted by offset): the last entry starting at or below it, or 0 when
// `cursor` is below them all.
size_t entry_holding(const std::vector<ManifestEntry>& entries, uint64_t cursor);

}  // namespace strata::tier
