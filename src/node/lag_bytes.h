// How many bytes of a stream lie past a consumer: what the management API
// shows beside a consumer's offset lag. Exact when the consumer's last
// chunk came from the local log (its end is a place in a segment file);
// otherwise estimated from the local log's bytes per message.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "log/hooks.h"

namespace strata::node {

// The end of a chunk in the local log: its segment (by first offset) and
// the file position after it.
struct LogMark {
  uint64_t segment_first_offset = 0;
  uint64_t position = 0;
  bool operator==(const LogMark&) const = default;
};

struct LagBytes {
  uint64_t bytes = 0;
  bool exact = true;
};

// The committed bytes after `mark` (chunks, without segment file headers)
// when its segment is still there; else the bytes of offsets
// [from_offset, committed_next): the segments wholly in it exactly, the
// rest (a part of a segment, or offsets the local log no longer holds) at
// the average bytes per message of the segments holding them (or of the
// whole local log).
LagBytes bytes_after(const std::vector<log::SegmentInfo>& segments,
                     const std::optional<LogMark>& mark, uint64_t from_offset,
                     uint64_t committed_next);

}  // namespace strata::node
