// The files of one stream directory: segment files `<first_offset:020>.segment`
// (a file header, then chunks back to back) and index files
// `<first_offset:020>.index` (a file header, then one fixed-size record per
// chunk of the segment). Byte layouts in docs/formats/log-files.md.
//
// The index is a cache: everything in it can be rebuilt from the segment,
// and recovery trusts the segment, never the index.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/bytes.h"
#include "common/file_lock.h"
#include "common/result.h"
#include "log/chunk.h"
#include "log/log_limits.h"

namespace strata::log {

constexpr uint32_t kSegmentMagic = 0x53534547;  // "SSEG"
constexpr uint32_t kIndexMagic = 0x53494458;    // "SIDX"
constexpr uint32_t kLogFileVersion = 1;
// Both file headers: magic u32, version u32, first_offset u64, reserved u32,
// header_crc u32 (CRC32C of bytes 0..19).
constexpr size_t kFileHeaderSize = 24;
constexpr size_t kIndexRecordSize = 48;

enum class LogFileKind { segment, index };

// "00000000000000000042.segment"
std::string segment_file_name(uint64_t first_offset);
std::string index_file_name(uint64_t first_offset);

// Takes the stream's `<dir>/LOCK`: one writer (or deleter) per stream,
// across processes; Errc::conflict names the stream if another holds it.
Result<FileLock> lock_stream(const std::string& dir);

// Parses a directory entry name. Returns nullopt for names that are not log
// files at all; an error for names that claim to be (".segment"/".index"
// suffix) but are malformed, so a stray file never silently hides data.
struct LogFileName {
  LogFileKind kind;
  uint64_t first_offset;
};
Result<std::optional<LogFileName>> parse_log_file_name(const std::string& name);

// The 24-byte header of a segment or index file.
Bytes encode_file_header(LogFileKind kind, uint64_t first_offset);

// Validates magic (for `kind`), version, reserved bytes and header CRC.
// Returns the first offset the header records. `path` names the file in
// errors. `in` must hold at least kFileHeaderSize bytes.
Result<uint64_t> decode_file_header(LogFileKind kind, BytesView in, const std::string& path);

// One index record per chunk: where the chunk is and what it holds, enough
// to seek by offset or timestamp and to check the segment without reading
// chunk bodies.
struct IndexRecord {
  uint64_t first_offset = 0;  // chunk's first offset
  int64_t timestamp_ms = 0;   // chunk timestamp
  uint64_t epoch = 0;         // writer epoch of the chunk
  uint64_t position = 0;      // file position of the chunk header in the segment
  uint32_t num_records = 0;   // offsets the chunk occupies
  uint32_t chunk_size = 0;    // header + data + trailer bytes
  ChunkType type = ChunkType::user;

  uint64_t next_offset() const { return first_offset + num_records; }
  uint64_t end_position() const { return position + chunk_size; }
  bool operator==(const IndexRecord&) const = default;
};

// Builds the index record of a chunk whose header sits at `position`.
// Requires h.total_size() <= kMaxChunkSize (the writer never builds larger
// chunks; the scanner rejects them).
IndexRecord index_record_for(const ChunkHeader& h, uint64_t position);

void encode_index_record(const IndexRecord& r, uint8_t* out);  // kIndexRecordSize bytes
// Validates the record CRC and reserved bytes. `where` names the place.
Result<IndexRecord> decode_index_record(BytesView in, const std::string& where);

}  // namespace strata::log
