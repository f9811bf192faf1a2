// Read-only examination of a stream directory for `strata inspect`: every
// segment's header and chunks (with CRC verification), every index compared
// with its segment, contiguity, and what recovery would do on open (both
// judge by audit.h). Never
// modifies anything, so it is safe next to a live writer (whose in-flight
// tail then shows as an incomplete tail).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "log/log_files.h"

namespace strata::log {

struct InspectOptions {
  bool verify_crc = true;       // read every chunk body and check its CRC
  bool include_chunks = false;  // fill SegmentReport::chunk_list
  // Called with (bytes examined, total bytes) as segments are scanned.
  std::function<void(uint64_t, uint64_t)> progress;
};

struct SegmentReport {
  std::string file;
  uint64_t first_offset = 0;  // from the file name
  uint64_t next_offset = 0;   // after the last valid chunk
  uint64_t size = 0;          // file size
  uint64_t valid_end = 0;     // position after the last valid chunk
  uint64_t chunks = 0;
  uint64_t records = 0;
  int64_t first_timestamp_ms = -1;
  int64_t last_timestamp_ms = -1;
  uint64_t min_epoch = 0, max_epoch = 0;
  bool newest = false;
  // At or above the sync mark (sync_mark.h): sealed under fsync=never and
  // maybe not synced, so open recovers it like the newest segment.
  bool maybe_unsynced = false;
  // Open truncates a torn tail of this segment (newest or maybe-unsynced).
  bool cut_by_open = false;
  // Open drops this segment: an earlier maybe-unsynced one ends early.
  bool dropped_by_open = false;
  std::optional<std::string> header_error;
  // Why the chunk walk stopped before the end of the file (file, position, reason).
  std::optional<std::string> damage;
  bool intact_chunk_after_damage = false;
  // Index.
  std::string index_file;
  bool index_present = false;
  uint64_t index_records = 0;
  std::optional<std::string> index_problem;  // disagreement with the segment
  std::vector<IndexRecord> chunk_list;       // with include_chunks
};

struct StreamReport {
  std::string dir;
  std::optional<uint64_t> synced_below;  // the sync mark, if any
  std::vector<SegmentReport> segments;
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  uint64_t records = 0;
  std::vector<std::string> orphan_indexes;
  // Each problem, phrased as what it is and what open would do about it.
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};

// Errors only when the directory cannot be listed or a chunk walk fails to
// read; everything wrong inside it is reported in StreamReport::problems,
// each with what open would do about it (the rules of audit.h, which
// recovery acts on).
Result<StreamReport> inspect_stream(FileSystem& fs, const std::string& dir,
                                    const InspectOptions& o);

// True if `dir` looks like a stream directory (holds a .segment file).
bool is_stream_dir(FileSystem& fs, const std::string& dir);

}  // namespace strata::log
