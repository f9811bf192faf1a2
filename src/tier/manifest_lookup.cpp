#include "tier/manifest_lookup.h"

#include <algorithm>
#include <memory>

namespace strata::tier {

Result<std::optional<FragmentRef>> find_fragment(const Manifest& root, uint64_t offset,
                                                 const GroupFetch& fetch, LookupStats* stats) {
  if (offset < root.first_offset || offset >= root.next_offset || root.entries.empty()) {
    return std::optional<FragmentRef>();
  }
  const std::vector<ManifestEntry>* entries = &root.entries;
  uint64_t bound = root.next_offset;
  std::shared_ptr<const ManifestGroup> held;
  while (true) {
    auto it = std::upper_bound(entries->begin(), entries->end(), offset,
                               [](uint64_t o, const ManifestEntry& e) { return o < e.offset; });
    // entries[0].offset <= offset holds at every level: the root's first
    // entry covers first_offset, and a group is entered only for an offset
    // inside its range, which starts at its first entry.
    size_t i = size_t(it - entries->begin()) - 1;
    const ManifestEntry& e = (*entries)[i];
    uint64_t end = i + 1 < entries->size() ? (*entries)[i + 1].offset : bound;
    if (e.kind == kKindFragment) return std::optional<FragmentRef>(FragmentRef::of(e, end));
    STRATA_ASSIGN_OR_RETURN(auto g, fetch_group(fetch, e, end));
    if (stats) stats->group_reads += 1;
    if (g->entries.empty() || g->entries.front().offset > offset) {
      return Error(Errc::corrupt, std::string(kGroupFetchFailed) + ": group at offset " +
                                      std::to_string(e.offset) + " does not cover offset " +
                                      std::to_string(offset));
    }
    held = std::move(g);
    entries = &held->entries;
    bound = end;
  }
}

Result<std::optional<FragmentRef>> find_fragment_by_timestamp(const Manifest& root, int64_t ts,
                                                              const GroupFetch& fetch,
                                                              LookupStats* stats) {
  if (root.entries.empty()) return std::optional<FragmentRef>();
  if (ts <= root.first_ts) return find_fragment(root, root.first_offset, fetch, stats);
  const std::vector<ManifestEntry>* entries = &root.entries;
  uint64_t bound = root.next_offset;
  std::shared_ptr<const ManifestGroup> held;
  while (true) {
    // Entries wholly below first_offset (inside a partly consumed group) are
    // not part of the stream any more.
    auto live = std::upper_bound(entries->begin(), entries->end(), root.first_offset,
                                 [](uint64_t o, const ManifestEntry& e) { return o < e.offset; });
    if (live != entries->begin()) --live;
    auto it = std::partition_point(live, entries->end(),
                                   [ts](const ManifestEntry& e) { return e.last_ts < ts; });
    if (it == entries->end()) {
      // Only reachable inside a group whose newest chunk sits in a consumed
      // part (timestamps that went backwards): continue after the group.
      if (bound >= root.next_offset) return std::optional<FragmentRef>();
      return find_fragment(root, bound, fetch, stats);
    }
    size_t i = size_t(it - entries->begin());
    const ManifestEntry& e = *it;
    uint64_t end = i + 1 < entries->size() ? (*entries)[i + 1].offset : bound;
    if (e.kind == kKindFragment) return std::optional<FragmentRef>(FragmentRef::of(e, end));
    STRATA_ASSIGN_OR_RETURN(auto g, fetch_group(fetch, e, end));
    if (stats) stats->group_reads += 1;
    held = std::move(g);
    entries = &held->entries;
    bound = end;
  }
}

}  // namespace strata::tier
