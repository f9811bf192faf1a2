// Reading an index file: loading and validating all its records, and
// binary search over a prefix of its records with pread (the log keeps no
// per-chunk state in memory for segments whose index file is trusted).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/fs.h"
#include "log/log_files.h"

namespace strata::log {

struct IndexLoad {
  bool header_valid = false;         // the file header is intact and names the segment
  std::vector<IndexRecord> records;  // valid records, in file order
  // Why loading stopped early: bad header, torn or corrupt record, or
  // records that do not follow each other (offsets or positions).
  std::optional<Error> damage;
};

// Loads the index of the segment starting at `first_offset`. Records are
// checked one by one (CRC) and against each other (contiguous offsets and
// positions starting at the segment's first chunk); loading stops at the
// first record that fails. Returns an error only for I/O failures.
Result<IndexLoad> load_index(File& f, const std::string& path, uint64_t first_offset);

// Reads record i (0-based) of an index file.
Result<IndexRecord> read_index_record(File& f, const std::string& path, uint64_t i);

// Over the first `count` records of an index, sorted by offset and timestamp:
// the last record whose first_offset <= offset (count > 0, and record 0
// must start at or before offset).
Result<IndexRecord> find_chunk_by_offset(File& f, const std::string& path, uint64_t count,
                                         uint64_t offset);
// The first record whose timestamp >= ts, or nullopt if none.
Result<std::optional<IndexRecord>> find_chunk_by_timestamp(File& f, const std::string& path,
                                                           uint64_t count, int64_t ts);

// The same searches over records held in memory.
const IndexRecord& find_chunk_by_offset(std::span<const IndexRecord> v, uint64_t offset);
std::optional<IndexRecord> find_chunk_by_timestamp(std::span<const IndexRecord> v, int64_t ts);

}  // namespace strata::log
