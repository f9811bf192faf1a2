// The read side: resolving offset specs (the rules are offset_resolution.h),
// where readers and chunk walks start and move to, read handles, and the
// committed bytes an uploader maps.
#include <fmt/format.h>

#include <algorithm>

#include "log/index_file.h"
#include "log/stream_log_impl.h"

namespace strata::log {

// ------------------------------------------------------------ read handles

std::shared_ptr<LogSegment> StreamLog::Impl::find_segment_locked(uint64_t first_offset) const {
  auto it = std::lower_bound(
      segments_.begin(), segments_.end(), first_offset,
      [](const std::shared_ptr<LogSegment>& s, uint64_t o) { return s->info.first_offset < o; });
  if (it == segments_.end() || (*it)->info.first_offset != first_offset) return nullptr;
  return *it;
}

Result<std::shared_ptr<File>> StreamLog::Impl::segment_file(
    const std::shared_ptr<LogSegment>& seg) {
  std::lock_guard<std::mutex> g(files_mu_);
  if (seg->pinned_file) return seg->pinned_file;
  if (auto f = seg->file_cache.lock()) return f;
  auto r = fs_.open(seg->path, OpenOptions::read_only());
  if (!r.ok()) {
    if (r.code() == Errc::not_found) {
      return Error(Errc::not_found,
                   fmt::format("segment {} no longer exists (removed by retention)", seg->path));
    }
    return std::move(r).error();
  }
  std::shared_ptr<File> f(std::move(*r));
  seg->file_cache = f;
  return f;
}

Result<std::shared_ptr<File>> StreamLog::Impl::index_file(const std::shared_ptr<LogSegment>& seg) {
  std::lock_guard<std::mutex> g(files_mu_);
  if (seg->pinned_index) return seg->pinned_index;
  if (auto f = seg->index_cache.lock()) return f;
  STRATA_ASSIGN_OR_RETURN(auto f, fs_.open(seg->index_path, OpenOptions::read_only()));
  std::shared_ptr<File> sf(std::move(f));
  seg->index_cache = sf;
  return sf;
}

// ------------------------------------------------------------- resolution

Result<Resolution> StreamLog::Impl::resolve(const OffsetSpec& spec) {
  std::unique_lock<std::mutex> l(mu_);
  if (closed_) return Error(Errc::closed, fmt::format("stream {} is closed", dir_));
  const std::vector<SegmentBounds> snapshot = snapshot_locked();
  const ResolutionPlan plan = plan_resolution(snapshot, committed_next(), spec);
  std::shared_ptr<LogSegment> seg;
  if (plan.kind == ResolutionPlan::Kind::lookup) seg = segments_[plan.segment];
  l.unlock();
  if (plan.kind == ResolutionPlan::Kind::done) return plan.resolution;
  STRATA_ASSIGN_OR_RETURN(std::optional<IndexRecord> found, lookup(plan, seg, spec));
  return resolve_at_record(plan, snapshot[plan.segment], spec, found, seg->index_path);
}

// The index lookup a plan asks for: in memory for read-only logs, else with
// binary searches over the index file.
Result<std::optional<IndexRecord>> StreamLog::Impl::lookup(const ResolutionPlan& plan,
                                                           const std::shared_ptr<LogSegment>& seg,
                                                           const OffsetSpec& spec) {
  using L = ResolutionPlan::Lookup;
  const uint64_t n = plan.chunks;
  if (seg->mem_indexed) {
    std::lock_guard<std::mutex> g(mu_);
    std::span<const IndexRecord> recs(seg->records.data(), n);
    switch (plan.lookup) {
      case L::last:
        return std::optional<IndexRecord>(recs[n - 1]);
      case L::offset:
        return std::optional<IndexRecord>(find_chunk_by_offset(recs, spec.offset()));
      case L::timestamp:
        return find_chunk_by_timestamp(recs, spec.value);
    }
  }
  STRATA_ASSIGN_OR_RETURN(auto f, index_file(seg));
  switch (plan.lookup) {
    case L::last: {
      STRATA_ASSIGN_OR_RETURN(IndexRecord rec, read_index_record(*f, seg->index_path, n - 1));
      return std::optional<IndexRecord>(rec);
    }
    case L::offset: {
      STRATA_ASSIGN_OR_RETURN(IndexRecord rec,
                              find_chunk_by_offset(*f, seg->index_path, n, spec.offset()));
      return std::optional<IndexRecord>(rec);
    }
    case L::timestamp:
      break;
  }
  return find_chunk_by_timestamp(*f, seg->index_path, n, spec.value);
}

// ----------------------------------------------------------------- readers

Result<StreamLog::Impl::ReadStart> StreamLog::Impl::read_start(const Resolution& r) {
  std::shared_ptr<LogSegment> seg;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (closed_) return Error(Errc::closed, fmt::format("stream {} is closed", dir_));
    seg = find_segment_locked(r.segment_first_offset);
  }
  if (!seg) {
    return Error(Errc::not_found, fmt::format("stream {}: no segment {} (removed by retention?)",
                                              dir_, segment_file_name(r.segment_first_offset)));
  }
  STRATA_ASSIGN_OR_RETURN(auto file, segment_file(seg));
  return ReadStart{std::move(seg), std::move(file)};
}

Result<StreamLog::Impl::SegmentView> StreamLog::Impl::segment_view(
    const std::shared_ptr<LogSegment>& seg, uint64_t chunk_offset) {
  std::lock_guard<std::mutex> g(mu_);
  SegmentView v{seg, seg->info.size_bytes, seg->info.next_offset, false};
  if (chunk_offset < v.next) return v;
  // This segment is done and a later chunk is committed: it lives in the
  // segment that starts exactly at chunk_offset (segments are contiguous).
  v.segment = find_segment_locked(chunk_offset);
  if (!v.segment) {
    return Error(Errc::out_of_range,
                 fmt::format("stream {}: offset {} is no longer in the log (removed by "
                             "retention); the first offset is now {}",
                             dir_, chunk_offset, segments_.front()->info.first_offset));
  }
  v.end = v.segment->info.size_bytes;
  v.next = v.segment->info.next_offset;
  v.moved = true;
  return v;
}

// ---------------------------------------------------- walks and mapped spans

Result<std::pair<std::shared_ptr<LogSegment>, uint64_t>> StreamLog::Impl::committed_segment(
    uint64_t segment_first_offset) {
  std::shared_ptr<LogSegment> seg;
  uint64_t end = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    seg = find_segment_locked(segment_first_offset);
    if (seg) end = seg->info.size_bytes;
  }
  if (!seg) {
    return Error(Errc::not_found, fmt::format("stream {}: no segment {} (removed by retention?)",
                                              dir_, segment_file_name(segment_first_offset)));
  }
  return std::make_pair(std::move(seg), end);
}

Status StreamLog::Impl::expect_mappable() const {
  if (&fs_ == &posix_fs()) return Status::OK();
  return Error(Errc::unsupported,
               fmt::format("stream {}: its segments are not on the POSIX file system and "
                           "cannot be mapped",
                           dir_));
}

Result<MappedRange> StreamLog::Impl::map_committed(uint64_t segment_first_offset, uint64_t position,
                                                   uint64_t length) {
  STRATA_TRY(expect_mappable());
  STRATA_ASSIGN_OR_RETURN(auto found, committed_segment(segment_first_offset));
  const auto& [seg, end] = found;
  if (position > end || length > end - position) {
    return Error(Errc::out_of_range, fmt::format("{}: range {}+{} is beyond the committed end {}",
                                                 seg->path, position, length, end));
  }
  auto m = MappedRange::map(seg->path, position, length);
  if (!m.ok() && m.code() == Errc::not_found) {
    return Error(Errc::not_found,
                 fmt::format("segment {} no longer exists (removed by retention)", seg->path));
  }
  return m;
}

Result<StreamLog::Impl::WalkStart> StreamLog::Impl::walk_start(uint64_t offset) {
  STRATA_TRY(expect_mappable());
  const LocalRange range = local_range();
  if (offset < range.first_offset || offset > range.next_offset) {
    return Error(Errc::out_of_range,
                 fmt::format("stream {}: offset {} is outside the local log [{}, {}]", dir_, offset,
                             range.first_offset, range.next_offset));
  }
  STRATA_ASSIGN_OR_RETURN(Resolution r, resolve(OffsetSpec::at_offset(offset)));
  if (r.chunk_first_offset > offset) {
    return Error(Errc::out_of_range,
                 fmt::format("stream {}: offset {} is no longer in the log (removed by "
                             "retention); the chunk after it starts at {}",
                             dir_, offset, r.chunk_first_offset));
  }
  if (r.chunk_first_offset < offset) {
    return Error(Errc::corrupt,
                 fmt::format("stream {}: offset {} is not the first offset of a chunk (the chunk "
                             "holding it starts at {})",
                             dir_, offset, r.chunk_first_offset));
  }
  STRATA_ASSIGN_OR_RETURN(auto found, committed_segment(r.segment_first_offset));
  return WalkStart{std::move(found.first), r.position};
}

}  // namespace strata::log
