// The extension points of the local log (osiris_log_hooks in the original).
// The remote tier plugs in here; the log knows nothing of object storage.
//
// Contract for every callback: it runs on a log thread (the writer's, or the
// caller of apply_retention/resolve), must be quick (queue work, don't do
// it), must not call back into the same StreamLog's append/close, and must
// not throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "log/chunk.h"
#include "log/offset_spec.h"

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

// A chunk that just became committed, located precisely enough for an
// uploader to pread its raw bytes later (StreamLog::read_raw_chunk or
// read_segment_range with the same segment and position).
struct CommittedChunk {
  ChunkHeader header;
  uint64_t segment_first_offset = 0;  // identifies the segment (its file name)
  std::string segment_file;           // path of the segment file
  uint64_t position = 0;              // file position of the chunk header
  uint64_t size = 0;                  // header + data + trailer bytes
};

// The local log's extent, given to the offset-resolution hook.
struct LocalRange {
  uint64_t first_offset = 0;        // oldest offset on local disk
  int64_t first_timestamp_ms = -1;  // timestamp of the oldest local chunk (-1 if empty)
  uint64_t next_offset = 0;         // committed next offset
};

// A hook's answer to "this spec asks for data older than the local log":
// the hook's owner serves reads starting at `offset` (for example from
// object storage); the caller reads there and comes back to the local log
// at LocalRange::first_offset or later.
struct BelowLocalClaim {
  uint64_t offset = 0;
};

class LogHooks {
 public:
  virtual ~LogHooks() = default;

  // Called once per committed chunk, in offset order, after the committed
  // offset covers it and before the appenders of that chunk are told.
  virtual void on_commit(const CommittedChunk& chunk) { (void)chunk; }

  // Consulted, oldest segment first, before retention deletes a segment.
  // Returning false keeps this segment and, so the log stays contiguous,
  // every newer one.
  virtual bool may_delete_segment(const SegmentInfo& segment) {
    (void)segment;
    return true;
  }

  // Consulted when a spec asks for data below the local log: `first`
  // always, `offset:N` with N < local.first_offset, `timestamp:T` with T
  // older than the first local chunk. Returning a claim routes the reader
  // to the hook's owner; nullopt lets the log answer with its oldest chunk.
  virtual std::optional<BelowLocalClaim> resolve_below_local(const OffsetSpec& spec,
                                                             const LocalRange& local) {
    (void)spec;
    (void)local;
    return std::nullopt;
  }
};

}  // namespace strata::log
