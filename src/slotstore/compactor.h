// Compaction: folds one sealed WAL half into the record copies.
//
// It starts from what is on disk, never from the writer's memory: for each
// slot the sealed half touches it reads the slot's current record copy,
// applies the half's entries with the same rule as recovery (slot_rules.h),
// writes the result into the slot's *other* copy stamped with the lsn of the
// half's last entry, and fsyncs. Only then do those copies become current.
// So a torn or unfinished compaction write only ever damages non-current
// copies, and the sealed half stays until compaction completes: recovery
// replays it over whichever copies survived. Writes made while compaction
// runs go to the other WAL half and are untouched by it, which is why a
// compaction result for a deleted key cannot land on a new key that reused
// its slot: the deletion and the new key are later entries that recovery
// applies on top.
//
// Memory is bounded by `buffer_bytes`. A first pass over the half checks its
// chain and marks the slots it touches; then the touched slots are taken in
// slot order, a window of as many as fit in the buffer at a time: their
// current copies are read (neighbours in one call), the half is scanned
// again applying only entries for the window, and the dirty records are
// written (neighbours in one call). Each slot is written once per
// compaction, so one fsync at the end makes the whole result durable.
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
    uint64_t windows = 0;
    uint64_t stale = 0;  // entries whose slot generation did not match
  };

  Compactor(File& file, const format::Layout& layout, size_t buffer_bytes, Hook hook, SyncFn sync);

  // Current record copy (0/1) of each slot; set by recovery, then owned by
  // compaction (one compaction at a time).
  std::vector<uint8_t>& current() { return current_; }
  // Which string ids hold a valid entry in the string table region.
  std::vector<uint8_t>& strings_on_disk() { return strings_on_disk_; }

  // Record images held per window (from the buffer bound).
  size_t window_slots() const;

  // Compacts `job`. Any error aborts: the half stays sealed and the next
  // attempt starts over (already-written copies are harmless, see above).
  Status run(const CompactionJob& job, Stats* stats);

 private:
  struct Image {
    uint32_t slot = 0;
    format::RecordImage rec;
    bool dirty = false;
  };
  // Pass 1: checks the chain, marks touched slots, collects new strings.
  Status scan(const CompactionJob& job, Stats* stats);
  // Reads the current copies of the window's slots (in runs of neighbours
  // on the same copy).
  Status load_window();
  // Applies the half's entries for slots in [first, last] to the window.
  Status apply_window(const CompactionJob& job, uint32_t first, uint32_t last, Stats* stats);
  // Writes the window's dirty records to their non-current copies.
  Status write_window(uint64_t lsn, Stats* stats);

  File& file_;
  const format::Layout& layout_;
  size_t buffer_bytes_;
  Hook hook_;
  SyncFn sync_;
  std::vector<uint8_t> current_;
  std::vector<uint8_t> strings_on_disk_;
  // Per-run state.
  std::vector<uint8_t> touched_;   // per slot: the sealed half has entries for it
  std::vector<uint8_t> written_;   // per slot: a new copy was written (flip after the fsync)
  std::vector<Image> window_;      // sorted by slot
  std::vector<int32_t> image_at_;  // slot -> index in window_, -1 if none
  std::vector<std::pair<uint32_t, Bytes>> strings_;
  Bytes io_;  // read/write buffer
};

}  // namespace strata::slotstore
