#include "log/reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/assert.h"
#include "common/endian.h"
#include "log/chunk_walk.h"
#include "log/entries.h"
#include "log/log_limits.h"
#include "log/stream_log_impl.h"

namespace strata::log {

Reader::Reader(std::shared_ptr<StreamLog> log, std::shared_ptr<LogSegment> seg,
               std::shared_ptr<File> file, const Resolution& r, const ReaderOptions& o)
    : log_(std::move(log)),
      impl_(*log_->impl_),
      seg_(std::move(seg)),
      file_(std::move(file)),
      opts_(o),
      pos_(r.position),
      chunk_offset_(r.chunk_first_offset),
      start_offset_(r.start_offset),
      window_(*file_, 0, impl_.options().read_ahead_bytes) {}

Reader::~Reader() = default;

uint64_t Reader::next_offset() const {
  return std::max(chunk_offset_, start_offset_);
}

bool Reader::at_end() const {
  return chunk_offset_ >= impl_.committed_next();
}

Status Reader::locate() {
  STRATA_ASSIGN_OR_RETURN(auto view, impl_.segment_view(seg_, chunk_offset_));
  if (view.moved) {
    // Moves only once the next segment's file is open, so a failure leaves
    // the reader where it was.
    STRATA_ASSIGN_OR_RETURN(auto file, impl_.segment_file(view.segment));
    seg_ = std::move(view.segment);
    file_ = std::move(file);
    pos_ = kFileHeaderSize;
    window_.reset(*file_, view.end);
  }
  seg_end_ = view.end;
  seg_next_ = view.next;
  window_.set_limit(seg_end_);
  return Status::OK();
}

Result<std::optional<ChunkHeader>> Reader::next_header(bool direct) {
  if (impl_.closed_fast()) {
    return Error(Errc::closed, fmt::format("stream {} is closed", impl_.dir()));
  }
  const uint64_t committed = impl_.committed_next();
  if (chunk_offset_ >= committed) {
    // Caught up: an idle reader keeps no buffer.
    window_.release();
    return std::optional<ChunkHeader>();
  }
  if (chunk_offset_ >= seg_next_) STRATA_TRY(locate());
  const ChunkPlace at{seg_->path, pos_, seg_end_, chunk_offset_};
  STRATA_TRY(expect_header_room(at));
  char direct_buf[kChunkHeaderSize];
  BytesView hv;
  if (direct) {
    STRATA_TRY(read_exact(*file_, pos_, direct_buf, kChunkHeaderSize));
    hv = BytesView(direct_buf, kChunkHeaderSize);
  } else {
    STRATA_ASSIGN_OR_RETURN(hv, window_.read(pos_, kChunkHeaderSize));
  }
  STRATA_ASSIGN_OR_RETURN(ChunkHeader h, check_chunk_header(hv, at));
  return std::optional<ChunkHeader>(h);
}

Result<std::optional<ChunkView>> Reader::next_chunk() {
  STRATA_ASSIGN_OR_RETURN(auto h, next_header(false));
  if (!h) return std::optional<ChunkView>();
  STRATA_ASSIGN_OR_RETURN(BytesView bytes, window_.read(pos_, size_t(h->total_size())));
  static const std::string kNowhere;
  if (opts_.verify_crc && !verify_chunk_body(*h, bytes.substr(kChunkHeaderSize), kNowhere).ok()) {
    return verify_chunk_body(*h, bytes.substr(kChunkHeaderSize),
                             fmt::format("{} position {}", seg_->path, pos_))
        .error();
  }
  ChunkView v;
  v.header = *h;
  v.segment_first_offset = seg_->info.first_offset;
  v.position = pos_;
  v.bytes = bytes;
  pos_ += h->total_size();
  chunk_offset_ = h->next_offset();
  return std::optional<ChunkView>(v);
}

Result<std::optional<ChunkLocation>> Reader::next_chunk_location() {
  STRATA_ASSIGN_OR_RETURN(auto h, next_header(true));
  if (!h) return std::optional<ChunkLocation>();
  ChunkLocation loc;
  loc.header = *h;
  loc.file = file_;
  loc.segment_first_offset = seg_->info.first_offset;
  loc.position = pos_;
  pos_ += h->total_size();
  chunk_offset_ = h->next_offset();
  return std::optional<ChunkLocation>(std::move(loc));
}

Result<size_t> Reader::next_records(std::vector<Record>* out) {
  decoded_.clear();
  while (true) {
    STRATA_ASSIGN_OR_RETURN(auto c, next_chunk());
    if (!c) return size_t(0);
    // A tracking chunk (imported from RabbitMQ) holds offsets, not records.
    if (c->header.type != ChunkType::user) continue;
    // Walk the records in place (no intermediate vector).
    const size_t before = out->size();
    const int64_t ts = c->header.timestamp_ms;
    uint64_t off = c->header.first_offset;
    EntryCounts n;
    auto problem = for_each_record(
        c->data(),
        [&](BytesView value) {
          if (off >= start_offset_) out->push_back(Record{off, ts, value});
          ++off;
        },
        &n, &decoded_);
    if (problem || n.entries != c->header.num_entries || n.records != c->header.num_records) {
      out->resize(before);
      STRATA_TRY(records_status(c->header, problem, n,
                                fmt::format("{} position {}", seg_->path, c->position)));
      return Error(Errc::internal, "record walk disagrees with records_status");
    }
    if (out->size() > before) return out->size() - before;
    // Every record of this chunk was before the requested offset: go on.
  }
}

bool Reader::wait(std::chrono::milliseconds timeout) {
  if (chunk_offset_ < impl_.committed_next()) return true;
  if (!log_->read_only()) return log_->wait_for_commit(chunk_offset_, timeout);
  // The writer is another process: look at the files now and then.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto r = log_->refresh();
    if (!r.ok() || *r > chunk_offset_) return r.ok();
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline || log_->closed()) return false;
    auto step =
        std::min<std::chrono::steady_clock::duration>(deadline - now, kReadOnlyRefreshInterval);
    log_->wait_for_commit(chunk_offset_,
                          std::chrono::duration_cast<std::chrono::milliseconds>(step));
  }
}

}  // namespace strata::log
