// Walks the chunks of a segment file, validating each (header CRC, offset
// continuity, bounds, and optionally the body CRC). Recovery, index rebuild,
// read-only refresh and `strata inspect` all use it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "log/log_files.h"

namespace strata::log {

struct ScanOptions {
  // Position of the first chunk to examine (just after the file header by default).
  uint64_t start_position = kFileHeaderSize;
  // The first offset the chunk at start_position must carry.
  uint64_t expected_first_offset = 0;
  // Verify each chunk's body CRC (reads every byte), not only its header.
  bool verify_crc = true;
  // After a chunk that fails validation, search the rest of the file for an
  // intact chunk (valid header and body CRC, offset >= the expected one). Its
  // presence tells corruption in the middle apart from a torn tail.
  bool look_past_damage = false;
  // Stop at this file size instead of the real one (read-only views).
  std::optional<uint64_t> limit;
  // Called after each valid chunk with (bytes scanned, bytes to scan); for progress.
  std::function<void(uint64_t, uint64_t)> progress;
};

struct ScanResult {
  std::vector<IndexRecord> chunks;  // valid chunks in file order
  uint64_t valid_end = 0;           // position just after the last valid chunk
  uint64_t file_size = 0;           // bytes examined (the file size, or the limit)
  // Why the scan stopped before file_size (nullopt: it consumed the file exactly).
  std::optional<Error> damage;
  // With look_past_damage: an intact chunk found after the damage.
  std::optional<IndexRecord> intact_after;

  uint64_t next_offset(uint64_t expected_first) const {
    return chunks.empty() ? expected_first : chunks.back().next_offset();
  }
};

// Returns an error only if reading the file fails; validation problems are
// reported in ScanResult::damage, naming `path`, the position and the reason.
Result<ScanResult> scan_segment(File& f, const std::string& path, const ScanOptions& opts);

}  // namespace strata::log
