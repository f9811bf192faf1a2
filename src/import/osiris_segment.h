// Reading RabbitMQ's stream files: osiris, the log under every RabbitMQ
// stream, keeps a stream as segment files of chunks and an index file per
// segment. Read by `strata import rabbitmq` (rabbit_import.h); the layout,
// and what is checked, is in docs/formats/osiris-import.md.
//
// Every error is Errc::corrupt naming the file and the byte position, so
// an operator can see which file of which stream is damaged and where.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/file_window.h"
#include "common/fs.h"
#include "common/result.h"
#include "proto/osiris_chunk.h"

namespace strata::import {

// Osiris's chunk types (the same numbers as log::ChunkType) and header
// size, as the stream protocol has them.
using OsirisChunkType = proto::OsirisChunkType;
using proto::kOsirisChunkHeaderSize;
// "OSIL" / "OSII" and a u32 version 1 open every segment / index file.
inline constexpr size_t kOsirisFileHeaderSize = 8;
inline constexpr size_t kOsirisIndexRecordSize = 29;
// A chunk header claiming more than this is damage (osiris chunks are
// bounded by the stream protocol's frames: megabytes, not gigabytes).
inline constexpr uint64_t kMaxOsirisChunkBytes = 256ull << 20;

struct OsirisChunk {
  OsirisChunkType type = OsirisChunkType::user;
  uint16_t num_entries = 0;
  uint32_t num_records = 0;
  int64_t timestamp_ms = 0;
  uint64_t epoch = 0;
  uint64_t chunk_id = 0;  // the chunk's first offset
  uint32_t crc = 0;       // CRC32 (zlib) of the data, checked
  uint64_t position = 0;  // of the header in the segment file
  uint64_t size = 0;      // header, filter, data and trailer
  // Views into the reader's buffer, valid until its next call.
  BytesView data;
  BytesView trailer;
  uint64_t next_offset() const { return chunk_id + num_records; }
};

// One segment file, read forward chunk by chunk through a window buffer.
class OsirisSegment {
 public:
  // Checks the file header. Errors: not found / I/O, corrupt (not an
  // osiris segment, or an unknown version).
  static Result<std::unique_ptr<OsirisSegment>> open(FileSystem& fs, const std::string& path);

  // The next chunk, nullopt at the end of the file. Checked: the magic and
  // version, the type, lengths within the file (a chunk cut short is a torn
  // write), the data's CRC, and that the entries fill the data and agree
  // with num_entries / num_records (user chunks), or are one simple entry
  // (tracking chunks).
  Result<std::optional<OsirisChunk>> next();

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Bytes consumed so far (the position of the next chunk).
  uint64_t position() const { return pos_; }

 private:
  OsirisSegment(std::unique_ptr<File> f, std::string path, uint64_t size);
  Error damage(uint64_t position, const std::string& what) const;

  std::unique_ptr<File> file_;
  std::string path_;
  uint64_t size_ = 0;
  uint64_t pos_ = kOsirisFileHeaderSize;
  // 1 MiB per read: chunks of a few hundred bytes cost no read each.
  FileWindow window_{1 << 20};
};

struct OsirisIndexRecord {
  uint64_t chunk_id = 0;
  int64_t timestamp_ms = 0;
  uint64_t epoch = 0;
  uint32_t position = 0;  // of the chunk in its segment
  uint8_t type = 0;
};

// The records of an index file, up to a trailing partial record (osiris
// writes the segment first, then the index) or the first record of zeros;
// a bad file header is corrupt.
Result<std::vector<OsirisIndexRecord>> read_osiris_index(FileSystem& fs, const std::string& path);

}  // namespace strata::import
