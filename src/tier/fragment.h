// Fragment: a run of consecutive committed chunks uploaded as one immutable
// object. These are the plain descriptions shared by assembly (which builds
// them), the object format (which writes them) and the uploader core (which
// only needs the summary).
#pragma once

#include <cstdint>
#include <vector>

namespace strata::tier {

// One chunk inside a fragment object. `position` is relative to the start of
// the fragment's chunk data (the first chunk is at 0), not to the object.
struct ChunkIndexRecord {
  uint64_t first_offset = 0;
  int64_t timestamp_ms = 0;
  uint64_t position = 0;
  bool operator==(const ChunkIndexRecord&) const = default;
};

// A byte range [start, end) of one segment file, named by the segment's
// first offset. Consecutive chunks of one segment merge into one span; a
// fragment crossing a segment boundary has one span per segment.
struct SegmentSpan {
  uint64_t segment = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - start; }
  bool operator==(const SegmentSpan&) const = default;
};

// What the uploader core and the manifest need to know about a fragment.
struct FragmentMeta {
  uint64_t first_offset = 0;  // offset of the first record
  uint64_t next_offset = 0;   // one past the last record
  int64_t first_ts = -1;      // timestamp of the first chunk (ms)
  int64_t last_ts = -1;       // largest chunk timestamp in the fragment (ms)
  uint64_t size = 0;          // bytes of chunk data (headers, data, trailers)
  uint32_t chunk_count = 0;
  bool operator==(const FragmentMeta&) const = default;
};

// Everything needed to build the object from the segment files.
struct FragmentPlan {
  FragmentMeta meta;
  std::vector<SegmentSpan> spans;       // in order; sizes add up to meta.size
  std::vector<ChunkIndexRecord> index;  // one per chunk, in order
};

}  // namespace strata::tier
