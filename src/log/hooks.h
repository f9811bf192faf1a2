// The extension points of the local log (osiris_log_hooks in the original).
// The remote tier plugs in here; the log knows nothing of object storage.
//
// A hook is what must be in place from the moment the log opens: the
// retention veto (retention may run at the first segment roll, before
// anyone else could register). Commits are observed otherwise, one way for
// everyone: StreamLog::subscribe (the tier's uploader through TieringHooks,
// the server's deliveries), since observers come and go while the log is
// open.
//
// Data below the local log is not the log's business either: the reader
// across tiers (tier/stream_reader.h) decides what a spec below it reads
// before it opens a local reader, and the log answers such a spec with its
// oldest chunk.
//
// Contract for every callback: it runs on a log thread (the caller of
// apply_retention, or the writer's when retention runs on roll), must be
// quick, must not call back into the same StreamLog's append/close, and
// must not throw.
#pragma once

#include <cstdint>
#include <string>

#include "log/chunk.h"

namespace strata::log {

// What the log knows about one segment file.
struct SegmentInfo {
  uint64_t first_offset = 0;        // from the file name; the first chunk's offset
  uint64_t next_offset = 0;         // offset after its last committed chunk (== first when empty)
  int64_t first_timestamp_ms = -1;  // of its first chunk; -1 when empty
  int64_t last_timestamp_ms = -1;   // of its last committed chunk; -1 when empty
  uint64_t size_bytes = 0;          // committed bytes, file header included
  uint64_t chunks = 0;              // committed chunks
  std::string file;                 // path of the segment file
  bool active = false;              // the segment the writer appends to
};

// A committed chunk and where it lies: what commit listeners are told
// (StreamLog::subscribe) and what a chunk walk reads (chunk_walk.h). An uploader maps its bytes
// later with StreamLog::map_committed(segment_first_offset, position, size).
struct CommittedChunk {
  ChunkHeader header;
  uint64_t segment_first_offset = 0;  // names the segment (its file name)
  uint64_t position = 0;              // file position of the chunk header
  uint64_t size = 0;                  // header + data + trailer bytes
};

class LogHooks {
 public:
  virtual ~LogHooks() = default;

  // Consulted, oldest segment first, before retention deletes a segment.
  // Returning false keeps this segment and, so the log stays contiguous,
  // every newer one.
  virtual bool may_delete_segment(const SegmentInfo& segment) {
    (void)segment;
    return true;
  }
};

}  // namespace strata::log
