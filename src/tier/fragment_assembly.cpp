#include "tier/fragment_assembly.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace strata::tier {

FragmentAssembly::FragmentAssembly(AssemblyConfig cfg, std::optional<uint64_t> expected_first)
    : cfg_(cfg), next_(expected_first) {}

Result<std::optional<FragmentPlan>> FragmentAssembly::add(const log::CommittedChunk& c,
                                                          int64_t now_ms) {
  const log::ChunkHeader& h = c.header;
  if (next_ && h.first_offset != *next_) {
    return Error(Errc::invalid_argument,
                 fmt::format("fragment assembly: chunk at offset {} (segment {} position {}) but "
                             "the next chunk must start at {}",
                             h.first_offset, c.segment_first_offset, c.position, *next_));
  }
  if (h.num_records == 0) {
    return Error(
        Errc::invalid_argument,
        fmt::format("fragment assembly: chunk at offset {} has no records", h.first_offset));
  }
  if (c.size != h.total_size()) {
    return Error(
        Errc::invalid_argument,
        fmt::format("fragment assembly: chunk at offset {} (segment {} position {}) is {} "
                    "bytes on disk but its header says {}",
                    h.first_offset, c.segment_first_offset, c.position, c.size, h.total_size()));
  }
  FragmentMeta& m = plan_.meta;
  if (m.chunk_count == 0) {
    m.first_offset = h.first_offset;
    m.first_ts = h.timestamp_ms;
    m.last_ts = h.timestamp_ms;
    opened_at_ms_ = now_ms;
  }
  plan_.index.push_back(ChunkIndexRecord{h.first_offset, h.timestamp_ms, m.size});
  m.next_offset = h.next_offset();
  m.last_ts = std::max(m.last_ts, h.timestamp_ms);
  m.size += c.size;
  m.chunk_count += 1;
  if (!plan_.spans.empty() && plan_.spans.back().segment == c.segment_first_offset &&
      plan_.spans.back().end == c.position) {
    plan_.spans.back().end += c.size;
  } else {
    plan_.spans.push_back(SegmentSpan{c.segment_first_offset, c.position, c.position + c.size});
  }
  next_ = h.next_offset();

  bool full = m.size >= cfg_.target_size;
  auto d = deadline();
  bool old = d && now_ms >= *d;
  if (full || old) return std::optional<FragmentPlan>(cut());
  return std::optional<FragmentPlan>();
}

std::optional<FragmentPlan> FragmentAssembly::tick(int64_t now_ms) {
  auto d = deadline();
  if (d && now_ms >= *d) return cut();
  return std::nullopt;
}

std::optional<FragmentPlan> FragmentAssembly::cut() {
  if (empty()) return std::nullopt;
  FragmentPlan out = std::move(plan_);
  plan_ = FragmentPlan();
  return out;
}

std::optional<int64_t> FragmentAssembly::deadline() const {
  if (empty()) return std::nullopt;
  std::optional<int64_t> at;
  if (cfg_.max_age_ms > 0) at = opened_at_ms_ + cfg_.max_age_ms;
  if (hurry_) {
    int64_t h = opened_at_ms_ + std::max<int64_t>(0, cfg_.hurry_max_age_ms);
    at = at ? std::min(*at, h) : h;
  }
  return at;
}

}  // namespace strata::tier
