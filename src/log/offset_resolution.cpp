#include "log/offset_resolution.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/assert.h"

namespace strata::log {

LocalRange local_range_of(std::span<const SegmentBounds> segments, uint64_t committed) {
  LocalRange r;
  r.first_offset = segments.front().first_offset;
  r.next_offset = committed;
  for (const auto& s : segments) {
    if (s.chunks > 0) {
      r.first_timestamp_ms = s.first_timestamp_ms;
      break;
    }
  }
  return r;
}

namespace {

using Plan = ResolutionPlan;

Plan done(const Resolution& r) {
  Plan p;
  p.kind = Plan::Kind::done;
  p.resolution = r;
  return p;
}

Plan lookup(std::span<const SegmentBounds> segments, size_t i, Plan::Lookup how) {
  Plan p;
  p.kind = Plan::Kind::lookup;
  p.lookup = how;
  p.segment = i;
  p.chunks = segments[i].chunks;
  return p;
}

// Below the local log (or `first`): the oldest chunk.
Plan oldest(std::span<const SegmentBounds> segments, const OffsetSpec& spec) {
  Resolution r;
  r.segment_first_offset = segments.front().first_offset;
  r.position = kFileHeaderSize;
  r.chunk_first_offset = r.start_offset = segments.front().first_offset;
  if (spec.kind == OffsetSpec::Kind::offset)
    r.start_offset = std::max(r.start_offset, spec.offset());
  return done(r);
}

}  // namespace

ResolutionPlan plan_resolution(std::span<const SegmentBounds> segments, uint64_t committed,
                               const OffsetSpec& spec) {
  using K = OffsetSpec::Kind;
  Resolution at_end;
  at_end.segment_first_offset = segments.back().first_offset;
  at_end.position = segments.back().size_bytes;
  at_end.chunk_first_offset = at_end.start_offset = committed;
  const LocalRange range = local_range_of(segments, committed);
  switch (spec.kind) {
    case K::next:
      return done(at_end);
    case K::first:
      return oldest(segments, spec);
    case K::last:
      for (size_t i = segments.size(); i-- > 0;) {
        if (segments[i].chunks > 0) return lookup(segments, i, Plan::Lookup::last);
      }
      return done(at_end);
    case K::offset: {
      if (spec.offset() >= committed) return done(at_end);
      if (spec.offset() < range.first_offset) return oldest(segments, spec);
      // The last segment starting at or before the offset (segments are contiguous).
      auto it =
          std::upper_bound(segments.begin(), segments.end(), spec.offset(),
                           [](uint64_t o, const SegmentBounds& s) { return o < s.first_offset; });
      STRATA_ASSERT(it != segments.begin() && (it - 1)->next_offset > spec.offset(),
                    "committed offset not in any segment");
      return lookup(segments, size_t(it - segments.begin()) - 1, Plan::Lookup::offset);
    }
    case K::timestamp:
      if (committed == range.first_offset) return done(at_end);
      if (spec.value < range.first_timestamp_ms) return oldest(segments, spec);
      for (size_t i = 0; i < segments.size(); ++i) {
        if (segments[i].chunks > 0 && segments[i].last_timestamp_ms >= spec.value) {
          return lookup(segments, i, Plan::Lookup::timestamp);
        }
      }
      return done(at_end);
  }
  return done(at_end);
}

Result<Resolution> resolve_at_record(const ResolutionPlan& plan, const SegmentBounds& segment,
                                     const OffsetSpec& spec,
                                     const std::optional<IndexRecord>& found,
                                     const std::string& index_path) {
  using L = ResolutionPlan::Lookup;
  if (!found) {
    return Error(Errc::corrupt, plan.lookup == L::timestamp
                                    ? fmt::format("{}: no index record with timestamp >= {} "
                                                  "although the segment's last chunk has {}",
                                                  index_path, spec.value, segment.last_timestamp_ms)
                                    : fmt::format("{}: no index record among the first {}",
                                                  index_path, plan.chunks));
  }
  const IndexRecord& rec = *found;
  Resolution r;
  r.segment_first_offset = segment.first_offset;
  r.position = rec.position;
  r.chunk_first_offset = r.start_offset = rec.first_offset;
  if (plan.lookup == L::offset) {
    if (spec.offset() < rec.first_offset || spec.offset() >= rec.next_offset()) {
      return Error(Errc::corrupt,
                   fmt::format("{}: index lookup for offset {} found chunk {}..{}", index_path,
                               spec.offset(), rec.first_offset, rec.next_offset()));
    }
    r.start_offset = spec.offset();
  }
  return r;
}

}  // namespace strata::log
