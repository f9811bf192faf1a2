// A manifest of n fragments built with the uploader's own edits and
// rebalances, with its group objects held in memory (by kind and offset).
#pragma once

#include <memory>
#include <stdexcept>
#include <unordered_map>

#include "tier/manifest.h"

namespace strata::tier::bench {

struct Tree {
  Manifest root = Manifest::empty_at(0);
  std::unordered_map<uint64_t, std::shared_ptr<const ManifestGroup>> groups;  // key: offset*64+kind
  uint64_t fragments = 0;

  static uint64_t key(uint64_t offset, uint8_t kind) { return offset * 64 + kind; }

  // Appends n fragments of `records` offsets and `size` bytes, one ms apart,
  // rebalancing as the uploader does.
  void grow(uint64_t n, const RebalancePolicy& p, uint64_t records = 10,
            uint64_t size = 64ull << 20) {
    for (uint64_t i = 0; i < n; ++i) {
      ManifestEntry e{root.next_offset,    int64_t(fragments), int64_t(fragments), size, 1,
                      uint32_t(fragments), kKindFragment};
      if (!apply_edit(root, AppendEdit{e, root.next_offset + records}).ok()) {
        throw std::runtime_error("append");
      }
      fragments += 1;
      while (auto run = detect_rebalance(root, p)) {
        auto g = make_group(root, *run, 1, uint32_t(groups.size()));
        if (!g.ok()) throw std::runtime_error(g.error().to_string());
        groups[key(g->entry.offset, g->entry.kind)] =
            std::make_shared<const ManifestGroup>(std::move(g->object));
        if (!apply_edit(root, g->edit()).ok()) throw std::runtime_error("replace");
      }
    }
  }

  GroupFetch fetch() const {
    return [this](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
      auto it = groups.find(key(e.offset, e.kind));
      if (it == groups.end()) return Error(Errc::not_found, "group");
      return it->second;
    };
  }
};

}  // namespace strata::tier::bench
