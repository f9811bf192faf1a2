// Compaction: folds one sealed WAL half into the record copies.
//
// It starts from what is on disk, never from the writer's memory: for each
// slot the sealed half touches it reads the slot's current record copy,
// applies the half's entries with the same rule as recovery (slot_rules.h),
// writes the result into the slot's *other* copy stamped with the lsn of the
// last entry it has applied, and fsyncs. Only then does that copy become
// current. So a torn or unfinished compaction write only ever damages the
// non-current copy, and the sealed half stays until compaction completes:
// recovery replays it over whichever copies survived. Writes made while
// compaction runs go to the other WAL half and are untouched by it, which is
// why a compaction result for a deleted key cannot land on a new key that
// reused its slot: the deletion and the new key are later entries that
// recovery applies on top.
//
// Memory is bounded by `buffer_bytes`: when the buffered record images reach
// it, compaction writes and fsyncs them and carries on (a slot written twice
// in one compaction is thus flipped twice, each time after an fsync).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/fs.h"
#include "slotstore/format.h"
#include "slotstore/slotstore.h"

namespace strata::slotstore {

// A sealed WAL half: fully written and fsynced, waiting to be compacted.
struct CompactionJob {
  int half = 0;
  uint64_t seq = 0;        // its header's sequence number
  uint32_t seed = 0;       // its header's chain seed
  uint64_t end = 0;        // offset in the half just after its last entry
  uint32_t end_chain = 0;  // chain CRC of its last entry
  uint64_t end_lsn = 0;    // lsn of its last entry (0 if none)
};

class Compactor {
 public:
  using Hook = std::function<Status(CompactionPoint)>;
  // fsyncs the store file; an error has already made the store fail-stop.
  using SyncFn = std::function<Status()>;

  struct Stats {
    uint64_t entries = 0;
    uint64_t slots_written = 0;
    uint64_t strings_written = 0;
    uint64_t flushes = 0;
    uint64_t stale = 0;  // entries whose slot generation did not match
  };

  Compactor(File& file, const format::Layout& layout, size_t buffer_bytes, Hook hook, SyncFn sync);

  // Current record copy (0/1) of each slot; set by recovery, then owned by
  // compaction (one compaction at a time).
  std::vector<uint8_t>& current() { return current_; }
  // Which string ids hold a valid entry in the string table region.
  std::vector<uint8_t>& strings_on_disk() { return strings_on_disk_; }

  // Compacts `job`. Any error aborts: the half stays sealed and the next
  // attempt starts over (already-written copies are harmless, see above).
  Status run(const CompactionJob& job, Stats* stats);

 private:
  struct Image {
    format::RecordImage rec;
    bool dirty = false;
  };
  Result<Image*> load(uint32_t slot);
  Status flush(uint64_t lsn, Stats* stats);

  File& file_;
  const format::Layout& layout_;
  size_t buffer_bytes_;
  Hook hook_;
  SyncFn sync_;
  std::vector<uint8_t> current_;
  std::vector<uint8_t> strings_on_disk_;
  // Per-run state.
  std::vector<std::pair<uint32_t, Image>> images_;  // unsorted; slot -> index in image_at_
  std::vector<int32_t> image_at_;                   // slot -> index in images_, -1 if none
  std::vector<std::pair<uint32_t, Bytes>> strings_;
  size_t buffered_ = 0;
};

}  // namespace strata::slotstore
