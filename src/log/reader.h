// Reader: a cursor over one stream's committed chunks (osiris offset reader).
// Opened by StreamLog::open_reader at an offset spec; reads forward, whole
// chunks or records, and follows the committed offset.
//
// Memory: an idle reader holds no buffer. A reading reader holds one buffer
// of at most max(read_ahead_bytes, one chunk), released when it reaches the
// committed end. Files are shared with the log (no descriptor per reader
// while it stays in the active segment).
//
// A Reader is used by one thread at a time; many readers may run at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "common/file_window.h"
#include "common/fs.h"
#include "log/chunk.h"
#include "log/stream_log.h"

namespace strata::log {

struct LogSegment;  // stream_log_impl.h

struct ReaderOptions {
  bool verify_crc = true;  // verify each chunk's body CRC before returning it
};

// A chunk as read: its bytes are valid until the next call on the reader.
struct ChunkView {
  ChunkHeader header;
  uint64_t segment_first_offset = 0;
  uint64_t position = 0;  // file position of the chunk header in its segment
  BytesView bytes;        // the whole chunk: header + data + trailer, verbatim

  BytesView data() const { return bytes.substr(kChunkHeaderSize, header.data_len); }
  BytesView trailer() const {
    return bytes.substr(kChunkHeaderSize + header.data_len, header.trailer_len);
  }
};

// A committed chunk located in its segment file, its body not read: what a
// server needs to send the body with sendfile(2) without copying it through
// user space. The header (and its own CRC) is checked; the body CRC is not —
// the receiver checks the data against the wire CRC instead.
struct ChunkLocation {
  ChunkHeader header;
  std::shared_ptr<File> file;  // the segment file, open while this is held
  uint64_t segment_first_offset = 0;
  uint64_t position = 0;  // file position of the chunk header in its segment
};

struct Record {
  uint64_t offset = 0;
  int64_t timestamp_ms = 0;  // the chunk's timestamp
  BytesView value;           // valid until the next call on the reader
};

class Reader {
 public:
  ~Reader();

  // The next committed chunk, or nullopt at the committed end. Errors:
  // corrupt (naming segment file, position, reason), closed, out_of_range
  // (the next chunk was removed by retention), I/O errors.
  Result<std::optional<ChunkView>> next_chunk();

  // Like next_chunk, but reads only the chunk's header (one small pread, no
  // read-ahead) and returns where the chunk lies; the reader moves past it.
  Result<std::optional<ChunkLocation>> next_chunk_location();

  // Appends to *out the records of the next chunk whose offsets are at or
  // after the reader's start offset (records of the first chunk before the
  // requested offset are skipped): simple entries and the inner records of
  // sub-batches (log/entries.h), compressed ones decompressed into a buffer
  // the reader keeps. Returns how many were appended; 0 at the committed
  // end. Views are valid until the next call. A sub-batch its codec cannot
  // decompress: Errc::unsupported naming the codec, why and the offset, and
  // the reader has moved past that chunk (read such chunks whole with
  // next_chunk and parse_entries).
  Result<size_t> next_records(std::vector<Record>* out);

  // Waits until a chunk is available to read, the timeout passes, or the log
  // closes or fails. True if data is available. No CPU is used while
  // waiting (condition variable). Read-only logs refresh from disk every
  // 50 ms while waiting, since their writer is another process.
  bool wait(std::chrono::milliseconds timeout);

  // Offset of the next record this reader delivers.
  uint64_t next_offset() const;
  // Offset of the next chunk this reader reads.
  uint64_t next_chunk_offset() const { return chunk_offset_; }
  bool at_end() const;

 private:
  friend class StreamLog;
  Reader(std::shared_ptr<StreamLog> log, std::shared_ptr<LogSegment> seg,
         std::shared_ptr<File> file, const Resolution& r, const ReaderOptions& o);

  // Moves to the segment holding chunk_offset_ when the current one is done,
  // and refreshes the committed bounds of the current one.
  Status locate();
  // Reads and checks the header of the next chunk (through the read-ahead
  // window, or with one pread when `direct`); nullopt at the committed end.
  Result<std::optional<ChunkHeader>> next_header(bool direct);

  std::shared_ptr<StreamLog> log_;
  StreamLog::Impl& impl_;  // log_'s, alive as long as log_
  std::shared_ptr<LogSegment> seg_;
  std::shared_ptr<File> file_;
  ReaderOptions opts_;
  uint64_t pos_ = 0;           // file position of the next chunk in seg_
  uint64_t chunk_offset_ = 0;  // first offset of the next chunk
  uint64_t start_offset_ = 0;  // records below this are skipped
  // Decompressed sub-batches of the last next_records call: its views point
  // here.
  std::deque<std::string> decoded_;
  // Committed bounds of seg_ as last seen (refreshed under the log's lock).
  uint64_t seg_end_ = 0;
  uint64_t seg_next_ = 0;
  // Read-ahead over file_, limited to seg_end_ (never past committed bytes).
  FileWindow window_;
};

}  // namespace strata::log
