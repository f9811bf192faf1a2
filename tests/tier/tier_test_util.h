// Helpers for the tier tests: real chunk bytes, in-memory group stores and
// manifest trees built through the same edits the uploader uses.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/random.h"
#include "log/chunk.h"
#include "tier/fragment_assembly.h"
#include "tier/manifest.h"

namespace strata::tier::test {

// A chunk of `records` records of `record_size` bytes each.
inline Bytes make_chunk(uint64_t first_offset, uint32_t records, size_t record_size, int64_t ts,
                        uint64_t epoch = 1) {
  std::vector<Bytes> owned;
  std::vector<BytesView> views;
  for (uint32_t i = 0; i < records; ++i) {
    owned.push_back(Bytes(record_size, char('a' + (first_offset + i) % 26)));
  }
  for (auto& o : owned) views.push_back(o);
  return log::build_chunk(views, first_offset, epoch, ts);
}

inline log::CommittedChunk committed(const Bytes& chunk, uint64_t segment, uint64_t position) {
  auto h = log::decode_chunk_header(chunk, "test chunk");
  return log::CommittedChunk{*h, segment, position, chunk.size()};
}

// Group objects by (kind, offset, uid), as an object store would hold them.
class GroupStore {
 public:
  void put(const ManifestGroup& g, uint32_t uid) {
    groups_[{g.level, g.first_offset, uid}] = std::make_shared<const ManifestGroup>(g);
  }
  GroupFetch fetch() const {
    return [this](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
      fetches += 1;
      auto it = groups_.find({e.kind, e.offset, e.uid});
      if (it == groups_.end()) {
        return Error(Errc::not_found, "no group object for offset " + std::to_string(e.offset));
      }
      return it->second;
    };
  }
  bool contains(const ManifestEntry& e) const {
    return groups_.count({e.kind, e.offset, e.uid}) > 0;
  }
  size_t size() const { return groups_.size(); }
  mutable uint64_t fetches = 0;

 private:
  std::map<std::tuple<uint8_t, uint64_t, uint32_t>, std::shared_ptr<const ManifestGroup>> groups_;
};

// Builds manifests the way the uploader does: appends, then rebalances
// until the root needs none.
struct TreeBuilder {
  explicit TreeBuilder(RebalancePolicy p, uint64_t first = 0) : policy(p) {
    root = Manifest::empty_at(first);
  }
  // Appends a fragment of `records` offsets and `size` bytes at timestamp ts.
  void append(uint64_t records, uint64_t size, int64_t ts) {
    ManifestEntry e{root.next_offset, ts, ts, size, 7, next_uid++, kKindFragment};
    Status s = apply_edit(root, AppendEdit{e, root.next_offset + records});
    if (!s.ok()) throw std::runtime_error(s.to_string());
    edits.push_back(AppendEdit{e, e.offset + records});
    fragments.push_back(e);
  }
  void rebalance() {
    while (auto run = detect_rebalance(root, policy)) {
      uint32_t uid = next_uid++;
      auto g = make_group(root, *run, 7, uid);
      if (!g.ok()) throw std::runtime_error(g.error().to_string());
      store.put(g->object, uid);
      Status s = apply_edit(root, g->edit());
      if (!s.ok()) throw std::runtime_error(s.to_string());
      edits.push_back(g->edit());
    }
  }
  // n fragments of 1..3 offsets, sizes 100.., one ms apart from ts0.
  void grow(uint64_t n, int64_t ts0 = 1000) {
    for (uint64_t i = 0; i < n; ++i) {
      append(1 + (root.next_offset % 3), 100 + (root.next_offset % 7),
             ts0 + int64_t(fragments.size()));
      rebalance();
    }
  }
  std::shared_ptr<const Manifest> shared() const { return std::make_shared<const Manifest>(root); }
  GroupFetch fetch() const { return store.fetch(); }

  RebalancePolicy policy;
  Manifest root;
  GroupStore store;
  std::vector<ManifestEdit> edits;
  std::vector<ManifestEntry> fragments;  // every fragment ever appended, in order
  uint32_t next_uid = 1;
};

}  // namespace strata::tier::test
