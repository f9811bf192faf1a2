// Offset resolution: where a reader opened at an offset spec starts. The
// rules (docs/formats/log-files.md, "Offset specs") as pure functions over a snapshot
// of the segment list; StreamLog::resolve takes the snapshot under its lock
// and performs the one index lookup a plan may call for.
//
//  first       the oldest local chunk;
//  last        the last committed chunk (the committed end if the log is empty);
//  next        the committed end;
//  offset N    N >= committed next: the committed end; N below the local
//              first offset: the oldest chunk; otherwise the chunk holding
//              N (records before N skipped);
//  timestamp T the first chunk with timestamp >= T; the committed end if
//              none; T older than the first local chunk: the oldest chunk.
//
// The local log knows nothing older than its oldest chunk: whether a spec
// reaches the remote tier below it is decided once, by the reader across
// tiers (tier/stream_reader.h), before it opens a local reader.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/result.h"
#include "log/log_files.h"
#include "log/offset_spec.h"

namespace strata::log {

// The local log's extent.
struct LocalRange {
  uint64_t first_offset = 0;        // oldest offset on local disk
  int64_t first_timestamp_ms = -1;  // timestamp of the oldest local chunk (-1 if empty)
  uint64_t next_offset = 0;         // committed next offset
};

// Where a spec resolves to.
struct Resolution {
  uint64_t segment_first_offset = 0;  // segment of the first chunk to read
  uint64_t position = 0;              // its file position (the committed end for `next`)
  uint64_t chunk_first_offset = 0;    // first offset of that chunk (== committed next at the end)
  uint64_t start_offset = 0;          // first record to deliver (records before it are skipped)
};

// A segment as resolution sees it (its committed part).
struct SegmentBounds {
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  uint64_t chunks = 0;
  uint64_t size_bytes = 0;          // committed end, file header included
  int64_t first_timestamp_ms = -1;  // -1 when empty
  int64_t last_timestamp_ms = -1;
};

// The local log's extent: first offset of the oldest segment, timestamp of
// the oldest chunk, `committed` next offset. `segments`: oldest first, never
// empty.
LocalRange local_range_of(std::span<const SegmentBounds> segments, uint64_t committed);

struct ResolutionPlan {
  enum class Kind {
    done,    // `resolution` is the answer
    lookup,  // look up a chunk in segments[segment]'s first `chunks` index records
  };
  enum class Lookup {
    last,       // the last of them
    offset,     // the one holding spec.offset()
    timestamp,  // the first with timestamp >= spec.value
  };
  Kind kind = Kind::done;
  Resolution resolution;  // done
  Lookup lookup = Lookup::last;
  size_t segment = 0;
  uint64_t chunks = 0;
};

// Step 1: what a spec needs, from the snapshot alone. `segments`: oldest
// first, never empty, contiguous; `committed`: the committed next offset.
ResolutionPlan plan_resolution(std::span<const SegmentBounds> segments, uint64_t committed,
                               const OffsetSpec& spec);

// Step 2 of a lookup plan: the resolution at the index record the lookup
// found in `segment` (nullopt: none matched). A record that does not answer
// the lookup means the index disagrees with the segment: corrupt, naming
// `index_path`.
Result<Resolution> resolve_at_record(const ResolutionPlan& plan, const SegmentBounds& segment,
                                     const OffsetSpec& spec,
                                     const std::optional<IndexRecord>& found,
                                     const std::string& index_path);

}  // namespace strata::log
