#include "node/lag_bytes.h"

#include "log/log_files.h"

namespace strata::node {

namespace {

uint64_t chunk_bytes(const log::SegmentInfo& s) {
  return s.size_bytes > log::kFileHeaderSize ? s.size_bytes - log::kFileHeaderSize : 0;
}

// `messages` of segment `s` at its bytes per message.
uint64_t at_average(const log::SegmentInfo& s, uint64_t messages) {
  const uint64_t n = s.next_offset - s.first_offset;
  if (n == 0) return 0;
  return uint64_t(double(chunk_bytes(s)) * double(messages) / double(n));
}

}  // namespace

LagBytes bytes_after(const std::vector<log::SegmentInfo>& segments,
                     const std::optional<LogMark>& mark, uint64_t from_offset,
                     uint64_t committed_next) {
  if (from_offset >= committed_next) return {0, true};
  if (mark) {
    for (size_t i = 0; i < segments.size(); ++i) {
      const auto& s = segments[i];
      if (s.first_offset != mark->segment_first_offset) continue;
      if (mark->position > s.size_bytes) break;
      uint64_t bytes = s.size_bytes - mark->position;
      for (size_t j = i + 1; j < segments.size(); ++j) bytes += chunk_bytes(segments[j]);
      return {bytes, true};
    }
  }
  LagBytes out{0, false};
  if (segments.empty()) return out;
  uint64_t local_bytes = 0, local_messages = 0;
  for (const auto& s : segments) {
    local_bytes += chunk_bytes(s);
    local_messages += s.next_offset - s.first_offset;
    if (s.first_offset >= from_offset) {
      out.bytes += chunk_bytes(s);
    } else if (s.next_offset > from_offset) {
      out.bytes += at_average(s, s.next_offset - from_offset);
    }
  }
  // Offsets below the local log (read from the remote tier).
  const uint64_t local_first = segments.front().first_offset;
  if (from_offset < local_first && local_messages > 0) {
    out.bytes +=
        uint64_t(double(local_bytes) * double(local_first - from_offset) / double(local_messages));
  }
  return out;
}

}  // namespace strata::node
