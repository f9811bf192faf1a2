#include "tier/scrub_tree.h"

#include <fmt/format.h>

#include <algorithm>

namespace strata::tier {

namespace {

struct Walker {
  const Manifest& root;
  const ObjectKeys& keys;
  const std::map<std::string, GroupRead>& reads;
  TreeWalk out;

  void unknown(const ManifestEntry& e, uint64_t end, const std::string& key, FindingKind kind,
               std::string detail) {
    out.leaves.push_back(TreeLeaf{FragmentRef::of(e, end), key, false});
    out.problems.push_back(
        ScrubFinding{kind, key, e.offset, end, std::nullopt, std::nullopt, std::move(detail)});
  }

  void group(const ManifestEntry& e, uint64_t end) {
    std::string key = keys.for_entry(e);
    out.groups.push_back(TreeGroup{key, e, end});
    auto it = reads.find(key);
    if (it == reads.end()) {
      out.unread.push_back(key);
      // A placeholder keeps the leaves in offset order until the next round.
      out.leaves.push_back(TreeLeaf{FragmentRef::of(e, end), key, false});
      return;
    }
    const GroupRead& r = it->second;
    switch (r.state) {
      case ReadState::missing:
        return unknown(e, end, key, FindingKind::missing_object,
                       fmt::format("level-{} group [{}, {}) is referenced but not in the bucket",
                                   e.kind, e.offset, end));
      case ReadState::corrupt:
        return unknown(e, end, key, FindingKind::corrupt_group, r.error);
      case ReadState::unreadable:
        return unknown(e, end, key, FindingKind::unreadable, r.error);
      case ReadState::ok:
        break;
    }
    const ManifestGroup& g = r.group;
    if (g.level != e.kind || g.first_offset != e.offset || g.next_offset != end) {
      return unknown(e, end, key, FindingKind::corrupt_group,
                     fmt::format("holds a level-{} group covering [{}, {}); its entry names a "
                                 "level-{} group covering [{}, {})",
                                 g.level, g.first_offset, g.next_offset, e.kind, e.offset, end));
    }
    level(g.entries, end);
  }

  void level(const std::vector<ManifestEntry>& entries, uint64_t bound) {
    for (size_t i = 0; i < entries.size(); ++i) {
      const ManifestEntry& e = entries[i];
      uint64_t end = i + 1 < entries.size() ? entries[i + 1].offset : bound;
      if (end <= root.first_offset) continue;
      if (e.kind == kKindFragment) {
        out.leaves.push_back(TreeLeaf{FragmentRef::of(e, end), keys.for_entry(e), true});
      } else {
        group(e, end);
      }
    }
  }
};

}  // namespace

bool TreeWalk::exact() const {
  return complete() && problems.empty() &&
         std::all_of(leaves.begin(), leaves.end(), [](const TreeLeaf& l) { return l.known; });
}

TreeWalk walk_tree(const Manifest& root, const ObjectKeys& keys,
                   const std::map<std::string, GroupRead>& reads) {
  Walker w{root, keys, reads, {}};
  w.level(root.entries, root.next_offset);
  return std::move(w.out);
}

}  // namespace strata::tier
