// FragmentIterator: walks the fragments of a manifest tree in offset order,
// starting from any offset.
//
// - Snapshot: the iterator holds the root it was given (shared, immutable);
//   later edits to the caller's manifest do not affect it. refresh() moves
//   it to a newer root, continuing from where it stopped (e.g. after
//   reaching the end of the manifest while the stream kept growing).
// - Lazy: a group is fetched only when the walk enters it; at most one
//   group per level is held.
// - Skips everything below the root's first_offset (retention may have
//   deleted those objects while a partly consumed group still lists them).
// - A failed fetch is an error value tagged group_fetch_failed; the
//   iterator does not move, so calling next() again retries the fetch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/result.h"
#include "tier/fragment_ref.h"
#include "tier/manifest.h"

namespace strata::tier {

class FragmentIterator {
 public:
  // Starts at the fragment holding max(from_offset, root first_offset); at
  // the end at once if that is at or past the root's next_offset.
  FragmentIterator(std::shared_ptr<const Manifest> root, uint64_t from_offset, GroupFetch fetch);

  // The next fragment, nullopt at the end of the manifest, or an error.
  Result<std::optional<FragmentRef>> next();

  // The offset the walk has reached: the next returned fragment holds it.
  uint64_t position() const { return cursor_; }
  // Group objects fetched so far.
  uint64_t group_reads() const { return group_reads_; }

  // Continues from position() in `newer` (which must extend the old root).
  void refresh(std::shared_ptr<const Manifest> newer);

 private:
  struct Frame {
    std::shared_ptr<const ManifestGroup> group;  // null for the root
    const std::vector<ManifestEntry>* entries;
    size_t index;
    uint64_t bound;  // end offset of the last entry
  };
  void start(uint64_t from);

  std::shared_ptr<const Manifest> root_;
  GroupFetch fetch_;
  std::vector<Frame> frames_;
  uint64_t cursor_ = 0;
  uint64_t group_reads_ = 0;
};

// Every fragment of the manifest in order (reads every group once).
Result<std::vector<FragmentRef>> all_fragments(std::shared_ptr<const Manifest> root,
                                               const GroupFetch& fetch);

}  // namespace strata::tier
