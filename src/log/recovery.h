// Opening a stream directory: find its segments, check them, and (unless
// read-only) repair what a crash can leave behind. The rules, in short
// (full text in docs/formats/log-files.md, "Recovery (on open)"):
//
//  - Sealed segments (all but the newest) below the sync mark (sync_mark.h;
//    all of them when there is no mark) were fsynced, with their index,
//    before the next segment got data, so any damage in them is
//    corruption: an error naming file, position and reason. Their index is
//    trusted only if it agrees with the segment (contiguous records ending
//    exactly at the segment's end, last chunk header matching); otherwise it
//    is rebuilt from a full scan of the segment.
//  - The newest segment is scanned chunk by chunk with full CRC checks. Its
//    tail is everything after the last valid chunk. A tail is cut off
//    (truncate + fsync, logged with file and position) unless an intact
//    chunk follows the damage — then the damage is in the middle and open
//    fails. A newest segment whose header was never completely written (short
//    or all zero) and that holds no intact chunk is re-initialised.
//  - The newest segment's index is made to match the scan (cut back where it
//    points past the valid end or disagrees, missing records appended).
//  - Sealed segments at or above the sync mark (fsync=never seals in the
//    background) are recovered like the newest; if one is cut short (or
//    stops short of its successor), the log ends there and every later
//    segment is dropped (logged).
//  - Segments must be contiguous (each starts where the previous ends).
//  - Index files without a segment, and leftover `*.tmp` files, are removed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "log/hooks.h"
#include "log/log_files.h"

namespace strata::log {

struct RecoveryOptions {
  bool read_only = false;          // report, never modify
  bool verify_sealed = false;      // full CRC scan of sealed segments too
  bool create_if_missing = false;  // create the directory and an empty first segment
  uint64_t first_offset = 0;       // ... starting at this offset
};

struct RecoveredSegment {
  SegmentInfo info;  // info.size_bytes = valid bytes (after any repair)
  std::string index_file;
  uint64_t last_epoch = 0;  // epoch of its last chunk (0 if empty)
  // Read-only mode: every chunk's record (the index file may lag or be
  // damaged and cannot be repaired). Writer mode: empty; the index file
  // matches the segment after recovery.
  std::vector<IndexRecord> records;
  // Read-only mode: bytes after the valid chunks of the newest segment.
  uint64_t ignored_tail_bytes = 0;
};

struct RecoveryResult {
  std::vector<RecoveredSegment> segments;  // oldest first; never empty
  std::vector<std::string> repairs;        // what recovery changed (each also logged)
  // The directory's sync mark (sync_mark.h), as found.
  std::optional<uint64_t> synced_below;
};

Result<RecoveryResult> recover_stream(FileSystem& fs, const std::string& dir,
                                      const RecoveryOptions& opts);

// Creates an empty segment and index for `first_offset` in `dir` (files
// fsynced unless `sync` is false; the caller syncs the directory).
Status create_segment_files(FileSystem& fs, const std::string& dir, uint64_t first_offset,
                            bool sync = true);

}  // namespace strata::log
