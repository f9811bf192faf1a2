// The read side: resolving offset specs (the rules are offset_resolution.h),
// where readers start and move to, raw reads for upload, read handles.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

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

// -------------------------------------------------------------- raw access

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

Result<Bytes> StreamLog::Impl::read_raw_chunk(uint64_t segment_first_offset, uint64_t position,
                                              bool verify_crc) {
  STRATA_ASSIGN_OR_RETURN(auto found, committed_segment(segment_first_offset));
  const auto& [seg, end] = found;
  std::string where = fmt::format("{} position {}", seg->path, position);
  if (position < kFileHeaderSize || position + kChunkHeaderSize > end) {
    return Error(Errc::out_of_range,
                 fmt::format("{}: no committed chunk there (committed end {})", where, end));
  }
  STRATA_ASSIGN_OR_RETURN(auto f, segment_file(seg));
  char hb[kChunkHeaderSize];
  STRATA_TRY(read_exact(*f, position, hb, sizeof hb));
  STRATA_ASSIGN_OR_RETURN(ChunkHeader h, decode_chunk_header(BytesView(hb, sizeof hb), where));
  if (h.total_size() > kMaxChunkSize || position + h.total_size() > end) {
    return Error(Errc::corrupt, fmt::format("{}: chunk of {} bytes runs past the committed end {}",
                                            where, h.total_size(), end));
  }
  Bytes out(h.total_size(), '\0');
  std::memcpy(out.data(), hb, sizeof hb);
  STRATA_TRY(read_exact(*f, position + kChunkHeaderSize, out.data() + kChunkHeaderSize,
                        out.size() - kChunkHeaderSize));
  if (verify_crc) STRATA_TRY(verify_chunk_body(h, BytesView(out).substr(kChunkHeaderSize), where));
  return out;
}

namespace {

// Checks that `range`, read from `path` at `position`, holds whole chunks,
// each with a valid header and body CRC.
Status verify_chunk_range(BytesView range, const std::string& path, uint64_t position) {
  auto not_whole = [&] {
    return Error(Errc::invalid_argument,
                 fmt::format("{}: range {}+{} does not end on a chunk boundary", path, position,
                             range.size()));
  };
  uint64_t at = 0;
  while (at < range.size()) {
    std::string where = fmt::format("{} position {}", path, position + at);
    if (range.size() - at < kChunkHeaderSize) return not_whole();
    STRATA_ASSIGN_OR_RETURN(ChunkHeader h, decode_chunk_header(range.substr(at), where));
    if (h.total_size() > range.size() - at) return not_whole();
    STRATA_TRY(verify_chunk_body(
        h, range.substr(at + kChunkHeaderSize, h.total_size() - kChunkHeaderSize), where));
    at += h.total_size();
  }
  return Status::OK();
}

}  // namespace

Result<Bytes> StreamLog::Impl::read_segment_range(uint64_t segment_first_offset, uint64_t position,
                                                  uint64_t length, bool verify_crc) {
  STRATA_ASSIGN_OR_RETURN(auto found, committed_segment(segment_first_offset));
  const auto& [seg, end] = found;
  if (position > end || length > end - position) {
    return Error(Errc::out_of_range, fmt::format("{}: range {}+{} is beyond the committed end {}",
                                                 seg->path, position, length, end));
  }
  STRATA_ASSIGN_OR_RETURN(auto f, segment_file(seg));
  Bytes out(length, '\0');
  STRATA_TRY(read_exact(*f, position, out.data(), out.size()));
  if (verify_crc) STRATA_TRY(verify_chunk_range(out, seg->path, position));
  return out;
}

}  // namespace strata::log
