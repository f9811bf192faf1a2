#include "log/chunk_walk.h"

#include <fmt/format.h>

#include "common/mapped_range.h"
#include "log/log_files.h"
#include "log/log_limits.h"
#include "log/stream_log_impl.h"

namespace strata::log {

namespace {

std::string place(const ChunkPlace& at) {
  return fmt::format("{} position {}", at.path, at.position);
}

}  // namespace

Status expect_header_room(const ChunkPlace& at) {
  if (at.position + kChunkHeaderSize <= at.committed_end) return Status::OK();
  return Error(Errc::corrupt, fmt::format("{}: committed offset {} expected a chunk here but the "
                                          "segment's committed end is {}",
                                          place(at), at.expected_offset, at.committed_end));
}

Result<ChunkHeader> check_chunk_header(BytesView header, const ChunkPlace& at) {
  // Decoded without a place first: a place costs a format on every chunk.
  static const std::string kNowhere;
  auto h = decode_chunk_header(header, kNowhere);
  if (!h.ok()) return decode_chunk_header(header, place(at)).error();
  if (h->first_offset != at.expected_offset) {
    return Error(Errc::corrupt, fmt::format("{}: chunk has first offset {}, expected {}", place(at),
                                            h->first_offset, at.expected_offset));
  }
  if (h->total_size() > kMaxChunkSize || at.position + h->total_size() > at.committed_end) {
    return Error(Errc::corrupt, fmt::format("{}: chunk of {} bytes runs past the committed end {}",
                                            place(at), h->total_size(), at.committed_end));
  }
  return h;
}

ChunkWalk::ChunkWalk(std::shared_ptr<StreamLog> log, std::shared_ptr<LogSegment> seg,
                     uint64_t position, uint64_t offset)
    : log_(std::move(log)),
      impl_(*log_->impl_),
      seg_(std::move(seg)),
      pos_(position),
      next_(offset) {}

ChunkWalk::~ChunkWalk() = default;

Result<ChunkRun> ChunkWalk::next(uint64_t max_bytes) {
  ChunkRun run;
  uint64_t bytes = 0;
  while (bytes < max_bytes) {
    if (impl_.closed_fast()) {
      return Error(Errc::closed, fmt::format("stream {} is closed", impl_.dir()));
    }
    if (next_ >= impl_.committed_next()) {
      run.at_end = true;
      break;
    }
    // The segment's committed view now, or the next segment once this one
    // is done (as a Reader moves).
    STRATA_ASSIGN_OR_RETURN(auto view, impl_.segment_view(seg_, next_));
    if (view.moved) {
      seg_ = std::move(view.segment);
      pos_ = kFileHeaderSize;
    }
    ChunkPlace at{seg_->path, pos_, view.end, next_};
    STRATA_TRY(expect_header_room(at));
    // Only the pages the headers lie on are touched (the map is lazy).
    auto map = MappedRange::map(seg_->path, pos_, view.end - pos_);
    if (!map.ok()) {
      return std::move(map).error().with_context(
          fmt::format("stream {}: walking the chunks of segment {}", impl_.dir(), seg_->path));
    }
    const BytesView v = map->view();
    const uint64_t base = pos_;
    while (bytes < max_bytes && next_ < view.next) {
      at.position = pos_;
      at.expected_offset = next_;
      STRATA_TRY(expect_header_room(at));
      STRATA_ASSIGN_OR_RETURN(ChunkHeader h,
                              check_chunk_header(v.substr(pos_ - base, kChunkHeaderSize), at));
      run.chunks.push_back(CommittedChunk{h, seg_->info.first_offset, pos_, h.total_size()});
      pos_ += h.total_size();
      next_ = h.next_offset();
      bytes += h.total_size();
    }
  }
  return run;
}

}  // namespace strata::log
