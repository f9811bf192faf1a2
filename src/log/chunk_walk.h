// The walk over committed chunk headers: one rule for "the next chunk of a
// segment", shared by the log's Reader (reader.h) and by ChunkWalk, the
// cursor an uploader tails the log with.
//
// A walk stands at a file position of a segment, expecting the chunk that
// starts at a known offset, and sees the segment's bytes only up to its
// committed end. The next chunk must have its header there, start at the
// expected offset, and end within the committed bytes; anything else is
// Errc::corrupt naming the segment file and position.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "log/chunk.h"
#include "log/hooks.h"
#include "log/stream_log.h"

namespace strata::log {

struct LogSegment;  // stream_log_impl.h

// Where a walk expects the next chunk.
struct ChunkPlace {
  const std::string& path;       // the segment file (named in errors)
  uint64_t position = 0;         // file position where the chunk header must be
  uint64_t committed_end = 0;    // the segment's committed end
  uint64_t expected_offset = 0;  // the first offset the chunk must have
};

// Before reading the header: the committed bytes hold one at the place.
Status expect_header_room(const ChunkPlace& at);
// The kChunkHeaderSize bytes read at the place: decoded (CRC checked), the
// expected chunk, and wholly within the committed bytes (and at most
// kMaxChunkSize). Errors name the place; it is formatted only on failure.
Result<ChunkHeader> check_chunk_header(BytesView header, const ChunkPlace& at);

// Chunks a walk read, in offset order, and whether it reached the committed
// end.
struct ChunkRun {
  std::vector<CommittedChunk> chunks;
  bool at_end = false;
};

// ChunkWalk: a cursor over a log's committed chunks that reads their
// headers only (opened by StreamLog::walk_chunks). It maps the committed
// rest of a segment and touches only the pages its headers lie on, so
// walking a backlog costs no read of the chunk bodies: an uploader reads
// (and verifies) those once, when it uploads them (StreamLog::map_committed).
// It moves across segments like a Reader and follows the committed offset.
// Used by one thread at a time.
class ChunkWalk {
 public:
  ~ChunkWalk();

  // The next committed chunks, up to max_bytes of them by their size on disk
  // (the one that crosses max_bytes included). Errors: corrupt (naming segment
  // file and position), out_of_range (retention removed the next chunk),
  // not_found (its segment file is gone), closed, I/O errors.
  Result<ChunkRun> next(uint64_t max_bytes);
  // Offset of the next chunk this walk reads.
  uint64_t next_offset() const { return next_; }

 private:
  friend class StreamLog;
  ChunkWalk(std::shared_ptr<StreamLog> log, std::shared_ptr<LogSegment> seg, uint64_t position,
            uint64_t offset);

  std::shared_ptr<StreamLog> log_;
  StreamLog::Impl& impl_;  // log_'s, alive as long as log_
  std::shared_ptr<LogSegment> seg_;
  uint64_t pos_ = 0;   // file position of the chunk starting at next_ in seg_
  uint64_t next_ = 0;  // first offset of the next chunk
};

}  // namespace strata::log
