#include "log/stream_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "common/assert.h"
#include "log/index_file.h"
#include "log/reader.h"
#include "log/retention.h"
#include "log/segment_scan.h"

namespace strata::log {

namespace {

// One leader round takes at most this many bytes of queued batches, so a
// burst of appenders cannot make one round (and its buffer) unbounded.
constexpr uint64_t kMaxGroupBytes = 64ull << 20;
// Written chunks are handed to the file once this many bytes are buffered.
constexpr size_t kFlushBytes = 1 << 20;
// Buffers larger than this are released after a round.
constexpr size_t kKeepBufferBytes = 4 << 20;

using Clock_ = std::chrono::steady_clock;

void shrink(Bytes& b) {
  if (b.capacity() > kKeepBufferBytes) Bytes().swap(b);
}

}  // namespace

struct StreamLog::PendingAppend {
  std::span<const BytesView> records;
  uint64_t data_bytes = 0;
  bool done = false;  // guarded by mu_
  Result<AppendResult> result{Error(Errc::internal, "append not processed")};
  std::condition_variable cv;
};

struct StreamLog::WrittenChunk {
  std::shared_ptr<Segment> seg;
  IndexRecord rec;
  ChunkHeader header;
};

std::string_view fsync_policy_name(FsyncPolicy p) {
  switch (p) {
    case FsyncPolicy::always:
      return "always";
    case FsyncPolicy::interval:
      return "interval";
    case FsyncPolicy::never:
      return "never";
  }
  return "?";
}

Result<FsyncPolicy> parse_fsync_policy(std::string_view t) {
  if (t == "always") return FsyncPolicy::always;
  if (t == "interval") return FsyncPolicy::interval;
  if (t == "never") return FsyncPolicy::never;
  return Error(Errc::invalid_argument,
               fmt::format("bad fsync policy '{}' (want always|interval|never)", t));
}

StreamLog::StreamLog(std::string dir, LogOptions opts)
    : dir_(std::move(dir)),
      opts_(std::move(opts)),
      fs_(opts_.fs ? *opts_.fs : posix_fs()),
      clock_(opts_.clock ? *opts_.clock : system_clock()) {}

StreamLog::~StreamLog() {
  Status s = close();
  if (!s.ok()) spdlog::warn("closing stream log {}: {}", dir_, s.to_string());
}

Result<std::shared_ptr<StreamLog>> StreamLog::open(const std::string& dir, LogOptions opts) {
  if (opts.max_chunk_bytes == 0 || opts.max_chunk_bytes > kMaxChunkSize - kChunkHeaderSize) {
    return Error(Errc::invalid_argument, "max_chunk_bytes must be in 1 .. 1 GiB - 56");
  }
  if (opts.max_segment_bytes < kFileHeaderSize + kChunkHeaderSize || opts.max_segment_chunks == 0) {
    return Error(Errc::invalid_argument, "max_segment_bytes / max_segment_chunks too small");
  }
  if (opts.fsync_interval_ms < 0) {
    return Error(Errc::invalid_argument, "fsync_interval_ms must not be negative");
  }
  std::shared_ptr<StreamLog> log(new StreamLog(dir, std::move(opts)));
  const LogOptions& o = log->opts_;
  if (!o.read_only && &log->fs_ == &posix_fs()) {
    if (o.create_if_missing) STRATA_TRY(create_dirs(log->fs_, dir));
    auto st = log->fs_.stat(dir);
    if (!st.ok()) {
      return Error(st.code(), fmt::format("stream directory {} cannot be opened: {}", dir,
                                          st.error().message));
    }
    if (!st->is_dir)
      return Error(Errc::invalid_argument, fmt::format("{} is not a directory", dir));
    STRATA_ASSIGN_OR_RETURN(log->lock_, lock_stream(dir));
  }
  RecoveryOptions ro;
  ro.read_only = o.read_only;
  ro.verify_sealed = o.verify_sealed_on_open;
  ro.create_if_missing = o.create_if_missing;
  STRATA_ASSIGN_OR_RETURN(RecoveryResult rec, recover_stream(log->fs_, dir, ro));
  STRATA_TRY(log->init(std::move(rec)));
  return log;
}

Status StreamLog::init(RecoveryResult&& rec) {
  STRATA_ASSERT(!rec.segments.empty(), "recovery returned no segments");
  repairs_ = std::move(rec.repairs);
  uint64_t last_epoch = 0;
  for (auto& r : rec.segments) {
    auto seg = std::make_shared<Segment>(r.info.file, r.index_file);
    seg->info = r.info;
    seg->last_epoch = r.last_epoch;
    seg->mem_indexed = opts_.read_only;
    seg->records = std::move(r.records);
    if (seg->info.chunks > 0) {
      last_epoch = std::max(last_epoch, r.last_epoch);
      last_ts_ = seg->info.last_timestamp_ms;
    }
    segments_.push_back(std::move(seg));
  }
  if (opts_.epoch && *opts_.epoch < last_epoch) {
    return Error(Errc::conflict,
                 fmt::format("stream {}: writer epoch {} is older than the log's last "
                             "epoch {}",
                             dir_, *opts_.epoch, last_epoch));
  }
  epoch_ = opts_.epoch.value_or(std::max<uint64_t>(last_epoch, 1));
  const auto& active = segments_.back();
  committed_next_.store(active->info.next_offset);
  if (opts_.read_only) return Status::OK();

  STRATA_ASSIGN_OR_RETURN(auto f, fs_.open(active->path, OpenOptions::read_write()));
  STRATA_ASSIGN_OR_RETURN(auto idx, fs_.open(active->index_path, OpenOptions::read_write()));
  active_file_ = std::move(f);
  active_index_ = std::move(idx);
  {
    std::lock_guard<std::mutex> g(files_mu_);
    active->pinned_file = active_file_;
    active->pinned_index = active_index_;
  }
  active_seg_ = active;
  write_next_ = active->info.next_offset;
  write_pos_ = active->info.size_bytes;
  write_chunks_ = active->info.chunks;
  return Status::OK();
}

// ---------------------------------------------------------------- writing

Result<AppendResult> StreamLog::append(std::span<const BytesView> records) {
  if (opts_.read_only) {
    return Error(Errc::invalid_argument, fmt::format("stream {} is open read-only", dir_));
  }
  if (records.empty() || records.size() > 0xFFFF) {
    return Error(
        Errc::invalid_argument,
        fmt::format("stream {}: a batch holds 1..65535 records, got {}", dir_, records.size()));
  }
  PendingAppend w;
  w.records = records;
  for (const auto& r : records) {
    if (r.size() > kMaxRecordSize) {
      return Error(
          Errc::invalid_argument,
          fmt::format("stream {}: record of {} bytes exceeds the record limit", dir_, r.size()));
    }
    w.data_bytes += ChunkBuilder::entry_size(r);
  }
  if (w.data_bytes > opts_.max_chunk_bytes) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: batch of {} bytes exceeds max_chunk_bytes ({}); split it",
                             dir_, w.data_bytes, opts_.max_chunk_bytes));
  }
  std::unique_lock<std::mutex> l(mu_);
  if (closed_) return Error(Errc::closed, fmt::format("stream {} is closed", dir_));
  if (failed_) {
    return Error(Errc::fail_stopped, fmt::format("stream {} stopped after an earlier failure: {}",
                                                 dir_, failed_->to_string()));
  }
  queue_.push_back(&w);
  while (!w.done && queue_.front() != &w) w.cv.wait(l);
  if (!w.done) lead(l);
  STRATA_ASSERT(w.done, "append returned before it was processed");
  return std::move(w.result);
}

void StreamLog::lead(std::unique_lock<std::mutex>& l) {
  if (opts_.fsync == FsyncPolicy::interval) {
    // Sleep out the rest of the interval; appenders arriving meanwhile join
    // this group, so there is one fsync per interval at most.
    auto deadline = last_sync_ + std::chrono::milliseconds(opts_.fsync_interval_ms);
    leader_cv_.wait_until(l, deadline, [&] { return closed_ || Clock_::now() >= deadline; });
  }
  std::vector<PendingAppend*> group;
  uint64_t group_bytes = 0;
  for (PendingAppend* p : queue_) {
    if (!group.empty() && group_bytes + p->data_bytes > kMaxGroupBytes) break;
    group.push_back(p);
    group_bytes += p->data_bytes;
  }
  l.unlock();
  std::vector<WrittenChunk> written;
  Status s = write_group(group, &written);
  l.lock();
  if (!s.ok()) {
    fail_stop_locked(s.error());
    return;
  }
  for (const auto& c : written) {
    SegmentInfo& info = c.seg->info;
    if (info.chunks == 0) info.first_timestamp_ms = c.rec.timestamp_ms;
    info.chunks += 1;
    info.next_offset = c.rec.next_offset();
    info.size_bytes = c.rec.end_position();
    info.last_timestamp_ms = c.rec.timestamp_ms;
    c.seg->last_epoch = c.rec.epoch;
  }
  committed_next_.store(write_next_, std::memory_order_release);
  commit_cv_.notify_all();
  bool rolled = rolled_;
  l.unlock();
  // Still the leader (our batch is at the queue front), so notifications of
  // consecutive groups cannot overtake each other.
  notify_commit(written);
  if (rolled && opts_.retention_on_roll &&
      (opts_.retention.max_bytes || opts_.retention.max_age_ms)) {
    auto r = apply_retention();
    if (!r.ok())
      spdlog::error("stream {}: retention after segment roll failed: {}", dir_,
                    r.error().to_string());
  }
  l.lock();
  for (PendingAppend* p : group) {
    STRATA_ASSERT(queue_.front() == p, "group commit queue out of order");
    queue_.pop_front();
    p->done = true;
    p->cv.notify_one();
  }
  if (!queue_.empty()) {
    queue_.front()->cv.notify_one();
  } else {
    idle_cv_.notify_all();
  }
}

Status StreamLog::write_group(const std::vector<PendingAppend*>& group,
                              std::vector<WrittenChunk>* out) {
  rolled_ = false;
  ChunkBuilder b(&seg_buf_);
  size_t i = 0;
  while (i < group.size()) {
    // Pack whole batches [i, j) into one chunk.
    uint64_t bytes = group[i]->data_bytes;
    size_t recs = group[i]->records.size();
    size_t j = i + 1;
    while (j < group.size() && bytes + group[j]->data_bytes <= opts_.max_chunk_bytes &&
           recs + group[j]->records.size() <= 0xFFFF) {
      bytes += group[j]->data_bytes;
      recs += group[j]->records.size();
      ++j;
    }
    uint64_t chunk_size = kChunkHeaderSize + bytes;
    if (write_chunks_ > 0 && (write_pos_ + chunk_size > opts_.max_segment_bytes ||
                              write_chunks_ >= opts_.max_segment_chunks)) {
      STRATA_TRY(roll());
    }
    const uint64_t first = write_next_;
    b.begin();
    for (size_t k = i; k < j; ++k) {
      uint64_t batch_first = first + b.records();
      for (const auto& r : group[k]->records) b.add(r);
      group[k]->result = AppendResult{batch_first, batch_first + group[k]->records.size()};
    }
    last_ts_ = std::max(clock_.now_ms(), last_ts_);
    ChunkHeader h = b.finish(first, epoch_, last_ts_);
    IndexRecord rec = index_record_for(h, write_pos_);
    size_t at = idx_buf_.size();
    idx_buf_.resize(at + kIndexRecordSize);
    encode_index_record(rec, u8(idx_buf_.data() + at));
    out->push_back(WrittenChunk{active_seg_, rec, h});
    write_pos_ += chunk_size;
    write_chunks_ += 1;
    write_next_ += recs;
    if (seg_buf_.size() >= kFlushBytes) STRATA_TRY(flush_buffers());
    i = j;
  }
  STRATA_TRY(flush_buffers());
  if (opts_.fsync != FsyncPolicy::never) {
    STRATA_TRY(active_file_->sync());
    last_sync_ = Clock_::now();
  }
  shrink(seg_buf_);
  shrink(idx_buf_);
  return Status::OK();
}

Status StreamLog::flush_buffers() {
  // Segment bytes first: an index record never describes bytes that were
  // not handed to the file before it (recovery copes either way).
  if (!seg_buf_.empty()) {
    STRATA_TRY(active_file_->append(seg_buf_));
    seg_buf_.clear();
  }
  if (!idx_buf_.empty()) {
    STRATA_TRY(active_index_->append(idx_buf_));
    idx_buf_.clear();
  }
  return Status::OK();
}

Status StreamLog::roll() {
  STRATA_TRY(flush_buffers());
  // Seal: the old segment and its index become durable before the new
  // segment exists, whatever the fsync policy. Recovery relies on it.
  STRATA_TRY(active_file_->sync());
  STRATA_TRY(active_index_->sync());
  const uint64_t first = write_next_;
  STRATA_TRY(create_segment_files(fs_, dir_, first));
  STRATA_TRY(fs_.sync_dir(dir_));
  auto seg = std::make_shared<Segment>(path_join(dir_, segment_file_name(first)),
                                       path_join(dir_, index_file_name(first)));
  STRATA_ASSIGN_OR_RETURN(auto f, fs_.open(seg->path, OpenOptions::read_write()));
  STRATA_ASSIGN_OR_RETURN(auto idx, fs_.open(seg->index_path, OpenOptions::read_write()));
  seg->info.first_offset = first;
  seg->info.next_offset = first;
  seg->info.size_bytes = kFileHeaderSize;
  seg->info.file = seg->path;
  seg->info.active = true;
  std::shared_ptr<Segment> old;
  {
    std::lock_guard<std::mutex> g(mu_);
    old = segments_.back();
    old->info.active = false;
    segments_.push_back(seg);
  }
  {
    std::lock_guard<std::mutex> g(files_mu_);
    old->file_cache = old->pinned_file;
    old->index_cache = old->pinned_index;
    old->pinned_file.reset();
    old->pinned_index.reset();
    seg->pinned_file = std::shared_ptr<File>(std::move(f));
    seg->pinned_index = std::shared_ptr<File>(std::move(idx));
    active_file_ = seg->pinned_file;
    active_index_ = seg->pinned_index;
  }
  active_seg_ = seg;
  spdlog::debug("stream {}: rolled to segment {}", dir_, seg->path);
  write_pos_ = kFileHeaderSize;
  write_chunks_ = 0;
  last_sync_ = Clock_::now();
  rolled_ = true;
  return Status::OK();
}

void StreamLog::fail_stop_locked(const Error& e) {
  spdlog::error("stream {}: writer fail-stopped, committed offset stays at {}: {}", dir_,
                committed_next(), e.to_string());
  failed_ = e;
  bool first = true;
  for (PendingAppend* p : queue_) {
    // The batches of the failed group get the I/O error itself; batches
    // still queued behind them learn that the log stopped.
    if (first || p->result.ok()) {
      p->result = Error(e.code, e.message);
    } else {
      p->result =
          Error(Errc::fail_stopped, fmt::format("stream {} stopped: {}", dir_, e.to_string()));
    }
    first = false;
    p->done = true;
    p->cv.notify_one();
  }
  queue_.clear();
  commit_cv_.notify_all();
  idle_cv_.notify_all();
}

void StreamLog::notify_commit(const std::vector<WrittenChunk>& chunks) {
  std::vector<std::function<void(const CommittedChunk&)>> ls;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!listeners_.empty()) {
      for (const auto& [id, f] : listeners_) ls.push_back(f);
    }
  }
  if (!opts_.hooks && ls.empty()) return;
  for (const auto& c : chunks) {
    CommittedChunk cc;
    cc.header = c.header;
    cc.segment_first_offset = c.seg->info.first_offset;
    cc.segment_file = c.seg->path;
    cc.position = c.rec.position;
    cc.size = c.rec.chunk_size;
    if (opts_.hooks) opts_.hooks->on_commit(cc);
    for (const auto& f : ls) f(cc);
  }
}

uint64_t StreamLog::subscribe(std::function<void(const CommittedChunk&)> listener) {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t id = next_listener_id_++;
  listeners_[id] = std::move(listener);
  return id;
}

void StreamLog::unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> g(mu_);
  listeners_.erase(id);
}

Status StreamLog::close() {
  std::unique_lock<std::mutex> l(mu_);
  if (closed_) return Status::OK();
  closed_ = true;
  closed_flag_.store(true, std::memory_order_release);
  leader_cv_.notify_all();
  commit_cv_.notify_all();
  idle_cv_.wait(l, [&] { return queue_.empty(); });
  bool failed = failed_.has_value();
  l.unlock();
  Status s;
  if (!opts_.read_only && !failed && active_file_) {
    // A clean close leaves everything durable, whatever the policy.
    s = active_file_->sync();
    if (s.ok()) s = active_index_->sync();
  }
  {
    std::lock_guard<std::mutex> g(files_mu_);
    for (auto& seg : segments_) {
      seg->pinned_file.reset();
      seg->pinned_index.reset();
    }
  }
  active_file_.reset();
  active_index_.reset();
  lock_.release();
  return s;
}

bool StreamLog::closed() const {
  std::lock_guard<std::mutex> g(mu_);
  return closed_;
}

Status StreamLog::health() const {
  std::lock_guard<std::mutex> g(mu_);
  if (failed_) return *failed_;
  return Status::OK();
}

// ------------------------------------------------------------- state views

uint64_t StreamLog::first_offset() const {
  std::lock_guard<std::mutex> g(mu_);
  return segments_.front()->info.first_offset;
}

LocalRange StreamLog::local_range() const {
  std::lock_guard<std::mutex> g(mu_);
  LocalRange r;
  r.first_offset = segments_.front()->info.first_offset;
  for (const auto& s : segments_) {
    if (s->info.chunks > 0) {
      r.first_timestamp_ms = s->info.first_timestamp_ms;
      break;
    }
  }
  r.next_offset = committed_next();
  return r;
}

std::vector<SegmentInfo> StreamLog::segments() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<SegmentInfo> out;
  out.reserve(segments_.size());
  for (const auto& s : segments_) out.push_back(s->info);
  return out;
}

std::shared_ptr<StreamLog::Segment> StreamLog::find_segment_locked(uint64_t first_offset) const {
  auto it = std::lower_bound(
      segments_.begin(), segments_.end(), first_offset,
      [](const std::shared_ptr<Segment>& s, uint64_t o) { return s->info.first_offset < o; });
  if (it == segments_.end() || (*it)->info.first_offset != first_offset) return nullptr;
  return *it;
}

std::shared_ptr<StreamLog::Segment> StreamLog::segment_for_offset_locked(uint64_t offset) const {
  auto it = std::upper_bound(
      segments_.begin(), segments_.end(), offset,
      [](uint64_t o, const std::shared_ptr<Segment>& s) { return o < s->info.first_offset; });
  if (it == segments_.begin()) return nullptr;
  return *(it - 1);
}

Result<std::shared_ptr<File>> StreamLog::segment_file(const std::shared_ptr<Segment>& seg) {
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

Result<std::shared_ptr<File>> StreamLog::index_file(const std::shared_ptr<Segment>& seg) {
  std::lock_guard<std::mutex> g(files_mu_);
  if (seg->pinned_index) return seg->pinned_index;
  if (auto f = seg->index_cache.lock()) return f;
  STRATA_ASSIGN_OR_RETURN(auto f, fs_.open(seg->index_path, OpenOptions::read_only()));
  std::shared_ptr<File> sf(std::move(f));
  seg->index_cache = sf;
  return sf;
}

// ------------------------------------------------------------- resolution

Result<IndexRecord> StreamLog::lookup_offset(const std::shared_ptr<Segment>& seg, uint64_t chunks,
                                             uint64_t offset) {
  IndexRecord rec;
  if (seg->mem_indexed) {
    std::lock_guard<std::mutex> g(mu_);
    rec = find_chunk_by_offset(std::span<const IndexRecord>(seg->records.data(), chunks), offset);
  } else {
    STRATA_ASSIGN_OR_RETURN(auto f, index_file(seg));
    STRATA_ASSIGN_OR_RETURN(rec, find_chunk_by_offset(*f, seg->index_path, chunks, offset));
  }
  if (offset < rec.first_offset || offset >= rec.next_offset()) {
    return Error(Errc::corrupt,
                 fmt::format("{}: index lookup for offset {} found chunk {}..{}", seg->index_path,
                             offset, rec.first_offset, rec.next_offset()));
  }
  return rec;
}

Result<std::optional<IndexRecord>> StreamLog::lookup_timestamp(const std::shared_ptr<Segment>& seg,
                                                               uint64_t chunks, int64_t ts) {
  if (seg->mem_indexed) {
    std::lock_guard<std::mutex> g(mu_);
    return find_chunk_by_timestamp(std::span<const IndexRecord>(seg->records.data(), chunks), ts);
  }
  STRATA_ASSIGN_OR_RETURN(auto f, index_file(seg));
  return find_chunk_by_timestamp(*f, seg->index_path, chunks, ts);
}

Result<Resolution> StreamLog::resolve(const OffsetSpec& spec) {
  using K = OffsetSpec::Kind;
  std::unique_lock<std::mutex> l(mu_);
  if (closed_) return Error(Errc::closed, fmt::format("stream {} is closed", dir_));
  const uint64_t committed = committed_next();
  const auto& front = segments_.front();
  const auto& back = segments_.back();
  Resolution at_end;
  at_end.segment_first_offset = back->info.first_offset;
  at_end.position = back->info.size_bytes;
  at_end.chunk_first_offset = at_end.start_offset = committed;
  Resolution oldest;
  oldest.segment_first_offset = front->info.first_offset;
  oldest.position = kFileHeaderSize;
  oldest.chunk_first_offset = oldest.start_offset = front->info.first_offset;
  LocalRange range;
  range.first_offset = front->info.first_offset;
  range.next_offset = committed;
  for (const auto& s : segments_) {
    if (s->info.chunks > 0) {
      range.first_timestamp_ms = s->info.first_timestamp_ms;
      break;
    }
  }
  bool below = false;
  std::shared_ptr<Segment> seg;
  uint64_t chunks = 0;
  switch (spec.kind) {
    case K::next:
      return at_end;
    case K::first:
      below = true;
      break;
    case K::last:
      for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
        if ((*it)->info.chunks > 0) {
          seg = *it;
          break;
        }
      }
      if (!seg) return at_end;
      chunks = seg->info.chunks;
      break;
    case K::offset:
      if (spec.offset() >= committed) return at_end;
      if (spec.offset() < range.first_offset) {
        below = true;
        break;
      }
      seg = segment_for_offset_locked(spec.offset());
      STRATA_ASSERT(seg && seg->info.next_offset > spec.offset(), "offset not in any segment");
      chunks = seg->info.chunks;
      break;
    case K::timestamp:
      if (committed == range.first_offset) return at_end;
      if (spec.value < range.first_timestamp_ms) {
        below = true;
        break;
      }
      for (const auto& s : segments_) {
        if (s->info.chunks > 0 && s->info.last_timestamp_ms >= spec.value) {
          seg = s;
          break;
        }
      }
      if (!seg) return at_end;
      chunks = seg->info.chunks;
      break;
  }
  l.unlock();
  if (below) {
    if (opts_.hooks) {
      if (auto claim = opts_.hooks->resolve_below_local(spec, range)) {
        Resolution r;
        r.claim = *claim;
        return r;
      }
    }
    if (spec.kind == K::offset) oldest.start_offset = std::max(oldest.start_offset, spec.offset());
    return oldest;
  }
  Resolution r;
  r.segment_first_offset = seg->info.first_offset;
  IndexRecord rec;
  if (spec.kind == K::last) {
    if (seg->mem_indexed) {
      std::lock_guard<std::mutex> g(mu_);
      rec = seg->records[chunks - 1];
    } else {
      STRATA_ASSIGN_OR_RETURN(auto f, index_file(seg));
      STRATA_ASSIGN_OR_RETURN(rec, read_index_record(*f, seg->index_path, chunks - 1));
    }
    r.start_offset = rec.first_offset;
  } else if (spec.kind == K::offset) {
    STRATA_ASSIGN_OR_RETURN(rec, lookup_offset(seg, chunks, spec.offset()));
    r.start_offset = spec.offset();
  } else {
    STRATA_ASSIGN_OR_RETURN(auto found, lookup_timestamp(seg, chunks, spec.value));
    if (!found) {
      return Error(Errc::corrupt,
                   fmt::format("{}: no index record with timestamp >= {} although "
                               "the segment's last chunk has {}",
                               seg->index_path, spec.value, seg->info.last_timestamp_ms));
    }
    rec = *found;
    r.start_offset = rec.first_offset;
  }
  r.position = rec.position;
  r.chunk_first_offset = rec.first_offset;
  return r;
}

Result<std::unique_ptr<Reader>> StreamLog::open_reader(const OffsetSpec& spec) {
  return open_reader(spec, ReaderOptions{});
}

Result<std::unique_ptr<Reader>> StreamLog::open_reader(const OffsetSpec& spec,
                                                       const ReaderOptions& ro) {
  STRATA_ASSIGN_OR_RETURN(Resolution r, resolve(spec));
  if (r.claim) {
    return Error(Errc::out_of_range,
                 fmt::format("stream {}: {} is below the local log (first offset {}); a hook "
                             "claimed it at offset {}",
                             dir_, to_string(spec), first_offset(), r.claim->offset));
  }
  return open_reader_at(r, ro);
}

Result<std::unique_ptr<Reader>> StreamLog::open_reader_at(const Resolution& r,
                                                          const ReaderOptions& ro) {
  if (r.claim) return Error(Errc::invalid_argument, "open_reader_at with a claimed resolution");
  std::shared_ptr<Segment> seg;
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
  return std::unique_ptr<Reader>(
      new Reader(shared_from_this(), std::move(seg), std::move(file), r, ro));
}

bool StreamLog::wait_for_commit(uint64_t offset, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  commit_cv_.wait_for(l, timeout,
                      [&] { return committed_next() > offset || closed_ || failed_.has_value(); });
  return committed_next() > offset;
}

// ------------------------------------------------------------- raw access

Result<Bytes> StreamLog::read_raw_chunk(uint64_t segment_first_offset, uint64_t position,
                                        bool verify_crc) {
  std::shared_ptr<Segment> seg;
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

Result<Bytes> StreamLog::read_segment_range(uint64_t segment_first_offset, uint64_t position,
                                            uint64_t length, bool verify_crc) {
  std::shared_ptr<Segment> seg;
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
  if (position > end || length > end - position) {
    return Error(Errc::out_of_range, fmt::format("{}: range {}+{} is beyond the committed end {}",
                                                 seg->path, position, length, end));
  }
  STRATA_ASSIGN_OR_RETURN(auto f, segment_file(seg));
  Bytes out(length, '\0');
  STRATA_TRY(read_exact(*f, position, out.data(), out.size()));
  if (!verify_crc) return out;
  uint64_t at = 0;
  while (at < length) {
    std::string where = fmt::format("{} position {}", seg->path, position + at);
    if (length - at < kChunkHeaderSize) {
      return Error(Errc::invalid_argument,
                   fmt::format("{}: range {}+{} does not end on a chunk boundary", seg->path,
                               position, length));
    }
    STRATA_ASSIGN_OR_RETURN(ChunkHeader h, decode_chunk_header(BytesView(out).substr(at), where));
    if (h.total_size() > length - at) {
      return Error(Errc::invalid_argument,
                   fmt::format("{}: range {}+{} does not end on a chunk boundary", seg->path,
                               position, length));
    }
    STRATA_TRY(verify_chunk_body(
        h, BytesView(out).substr(at + kChunkHeaderSize, h.total_size() - kChunkHeaderSize), where));
    at += h.total_size();
  }
  return out;
}

// -------------------------------------------------------------- retention

Result<RetentionOutcome> StreamLog::apply_retention() {
  if (opts_.read_only) {
    return Error(Errc::invalid_argument, fmt::format("stream {} is open read-only", dir_));
  }
  std::lock_guard<std::mutex> rl(retention_mu_);
  std::vector<SegmentInfo> infos = segments();
  RetentionOutcome out;
  RetentionPlan plan = plan_retention(infos, opts_.retention, clock_.now_ms());
  for (size_t i = 0; i < plan.count; ++i) {
    if (opts_.hooks && !opts_.hooks->may_delete_segment(infos[i])) {
      out.vetoed = true;
      break;
    }
    std::shared_ptr<Segment> seg;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (closed_) break;
      seg = segments_.front();
      STRATA_ASSERT(seg->info.first_offset == infos[i].first_offset && segments_.size() > 1,
                    "retention raced with another change of the segment list");
      // Out of the list first, so no new reader resolves into it; readers
      // already in it keep their open handle.
      segments_.pop_front();
    }
    Status s = fs_.remove(seg->path);
    if (s.ok()) {
      Status si = fs_.remove(seg->index_path);
      if (!si.ok() && si.code() != Errc::not_found) s = si;
    }
    if (!s.ok()) {
      if (!out.deleted.empty()) (void)fs_.sync_dir(dir_);
      return std::move(s).error().with_context(fmt::format("stream {}: retention", dir_));
    }
    spdlog::info("stream {}: retention ({}) deleted segment {} (offsets {}..{}, {} bytes)", dir_,
                 plan.reasons[i], seg->path, infos[i].first_offset, infos[i].next_offset,
                 infos[i].size_bytes);
    out.bytes_deleted += infos[i].size_bytes;
    out.deleted.push_back(infos[i]);
  }
  if (!out.deleted.empty()) STRATA_TRY(fs_.sync_dir(dir_));
  out.first_offset = first_offset();
  return out;
}

// ------------------------------------------------------ read-only refresh

Result<uint64_t> StreamLog::refresh() {
  if (!opts_.read_only) return committed_next();
  std::lock_guard<std::mutex> rg(refresh_mu_);
  // Segments whose files are gone were removed by the writer's retention.
  {
    std::vector<std::shared_ptr<Segment>> front;
    {
      std::lock_guard<std::mutex> g(mu_);
      front.assign(segments_.begin(), segments_.end() - 1);
    }
    size_t gone = 0;
    for (const auto& s : front) {
      if (exists(fs_, s->path)) break;
      ++gone;
    }
    std::lock_guard<std::mutex> g(mu_);
    for (size_t i = 0; i < gone; ++i) segments_.pop_front();
  }
  while (true) {
    std::shared_ptr<Segment> seg;
    uint64_t from, next;
    {
      std::lock_guard<std::mutex> g(mu_);
      seg = segments_.back();
      from = seg->info.size_bytes;
      next = seg->info.next_offset;
    }
    STRATA_ASSIGN_OR_RETURN(auto f, segment_file(seg));
    ScanOptions so;
    so.start_position = from;
    so.expected_first_offset = next;
    STRATA_ASSIGN_OR_RETURN(ScanResult scan, scan_segment(*f, seg->path, so));
    {
      std::lock_guard<std::mutex> g(mu_);
      for (const auto& rec : scan.chunks) {
        if (seg->info.chunks == 0) seg->info.first_timestamp_ms = rec.timestamp_ms;
        seg->info.chunks += 1;
        seg->info.next_offset = rec.next_offset();
        seg->info.size_bytes = rec.end_position();
        seg->info.last_timestamp_ms = rec.timestamp_ms;
        seg->last_epoch = rec.epoch;
        seg->records.push_back(rec);
      }
      committed_next_.store(seg->info.next_offset, std::memory_order_release);
    }
    if (scan.damage) break;  // an incomplete chunk: being written right now
    // The segment was consumed to its end; did the writer roll past it? (A
    // writer rolls only after a segment holds a chunk.)
    uint64_t succ_first = scan.next_offset(next);
    if (succ_first == seg->info.first_offset) break;
    std::string succ = path_join(dir_, segment_file_name(succ_first));
    auto fr = fs_.open(succ, OpenOptions::read_only());
    if (!fr.ok()) break;
    STRATA_ASSIGN_OR_RETURN(uint64_t size, (*fr)->size());
    if (size < kFileHeaderSize) break;  // being created
    char hb[kFileHeaderSize];
    STRATA_TRY(read_exact(**fr, 0, hb, sizeof hb));
    STRATA_ASSIGN_OR_RETURN(uint64_t hdr_first, decode_file_header(LogFileKind::segment,
                                                                   BytesView(hb, sizeof hb), succ));
    if (hdr_first != succ_first) {
      return Error(Errc::corrupt, fmt::format("{}: header says first offset {}, file name says {}",
                                              succ, hdr_first, succ_first));
    }
    auto ns = std::make_shared<Segment>(succ, path_join(dir_, index_file_name(succ_first)));
    ns->info.first_offset = ns->info.next_offset = succ_first;
    ns->info.size_bytes = kFileHeaderSize;
    ns->info.file = succ;
    ns->mem_indexed = true;
    std::lock_guard<std::mutex> g(mu_);
    segments_.push_back(std::move(ns));
  }
  commit_cv_.notify_all();
  return committed_next();
}

}  // namespace strata::log
