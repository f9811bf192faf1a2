#include "tier/fragment_ref.h"

#include <fmt/format.h>

#include <algorithm>

namespace strata::tier {

Result<std::shared_ptr<const ManifestGroup>> fetch_group(const GroupFetch& fetch,
                                                         const ManifestEntry& e, uint64_t end) {
  auto what = [&] {
    return fmt::format("{}: kind-{} group at offset {} uid {:08x}", kGroupFetchFailed, e.kind,
                       e.offset, e.uid);
  };
  if (!fetch) return Error(Errc::invalid_argument, what() + ": no group fetch function");
  auto g = fetch(e);
  if (!g.ok()) return Error(g.error().code, what() + ": " + g.error().message);
  const std::shared_ptr<const ManifestGroup>& p = *g;
  if (!p) return Error(Errc::internal, what() + ": fetch returned no group");
  if (p->level != e.kind || p->first_offset != e.offset || p->next_offset != end) {
    return Error(Errc::corrupt,
                 fmt::format("{}: fetched a level-{} group covering [{}, {}), the entry names "
                             "[{}, {})",
                             what(), p->level, p->first_offset, p->next_offset, e.offset, end));
  }
  return *g;
}

size_t entry_holding(const std::vector<ManifestEntry>& entries, uint64_t cursor) {
  auto it = std::upper_bound(entries.begin(), entries.end(), cursor,
                             [](uint64_t c, const ManifestEntry& e) { return c < e.offset; });
  return it == entries.begin() ? 0 : size_t(it - entries.begin()) - 1;
}

}  // namespace strata::tier
