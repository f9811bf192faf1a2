// StreamLog's public face, and the Impl steps of opening, closing, state
// views, listeners and readers (the other steps: stream_log_impl.h).
#include "log/stream_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/assert.h"
#include "log/chunk_filter.h"
#include "log/chunk_walk.h"
#include "log/reader.h"
#include "log/stream_log_impl.h"

namespace strata::log {

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

// ------------------------------------------------------------- public face

StreamLog::StreamLog(std::string dir, LogOptions opts)
    : impl_(std::make_unique<Impl>(std::move(dir), std::move(opts))) {}

StreamLog::~StreamLog() {
  Status s = close();
  if (!s.ok()) spdlog::warn("closing stream log {}: {}", dir(), s.to_string());
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
  if (opts.max_pending_seal_syncs == 0) {
    return Error(Errc::invalid_argument, "max_pending_seal_syncs must be at least 1");
  }
  std::shared_ptr<StreamLog> log(new StreamLog(dir, std::move(opts)));
  STRATA_TRY(log->impl_->open());
  return log;
}

Result<AppendResult> StreamLog::append(std::span<const BytesView> records) {
  return impl_->append(records);
}

Result<AppendResult> StreamLog::append_entries(const EntryBatch& batch) {
  return impl_->append_entries(batch);
}

namespace {

// What append_copy hands the writer for one stored chunk: the entry batch
// and the ImportedChunk it points at (which points at `writers`).
struct CopiedChunk {
  WriterSequences writers;
  ImportedChunk imported;
  EntryBatch batch;
};

Status decode_copy(BytesView stored, const std::string& where, CopiedChunk* out) {
  STRATA_ASSIGN_OR_RETURN(ChunkHeader h, decode_chunk_header(stored, where));
  if (stored.size() != h.total_size()) {
    return Error(Errc::corrupt, fmt::format("{}: a chunk of {} bytes whose header says {}", where,
                                            stored.size(), h.total_size()));
  }
  BytesView body = stored.substr(kChunkHeaderSize);
  STRATA_TRY(verify_chunk_body(h, body, where));
  BytesView trailer = body.substr(h.data_len, h.trailer_len);
  STRATA_ASSIGN_OR_RETURN(BytesView filter, chunk_filter_of(trailer, where));
  if (BytesView rest = skip_filter_section(trailer); !rest.empty()) {
    STRATA_ASSIGN_OR_RETURN(WriterTrailer t, decode_writer_trailer(rest, where));
    // Raised, never replaced: a snapshot lists every writer anyway.
    for (auto& [ref, seq] : t.writers) out->writers[ref] = seq;
  }
  ImportedChunk& ic = out->imported;
  ic.first_offset = h.first_offset;
  ic.timestamp_ms = h.timestamp_ms;
  ic.type = h.type;
  ic.writers = &out->writers;
  ic.epoch = h.epoch;
  ic.filter = filter;
  EntryBatch& b = out->batch;
  b.entries = body.substr(0, h.data_len);
  b.num_entries = h.num_entries;
  b.num_records = h.num_records;
  b.imported = &ic;
  return Status::OK();
}

}  // namespace

Result<AppendResult> StreamLog::append_copy(BytesView stored, const std::string& where) {
  CopiedChunk c;
  STRATA_TRY(decode_copy(stored, where, &c));
  auto r = impl_->append_entries(c.batch);
  if (!r.ok()) return std::move(r).error().with_context(where);
  return r;
}

Result<AppendResult> StreamLog::append_copies(std::span<const Bytes> stored,
                                              const std::string& where) {
  // Sized once: each batch points into its own element.
  std::vector<CopiedChunk> chunks(stored.size());
  std::vector<EntryBatch> batches;
  batches.reserve(stored.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    STRATA_TRY(decode_copy(stored[i], where, &chunks[i]));
    batches.push_back(chunks[i].batch);
  }
  auto r = impl_->append_entries_all(batches);
  if (!r.ok()) return std::move(r).error().with_context(where);
  return r;
}

std::optional<uint64_t> StreamLog::writer_sequence(std::string_view ref) const {
  return impl_->writer_sequence(ref);
}
bool StreamLog::seed_writer_sequences(const WriterSequences& writers) {
  return impl_->seed_writer_sequences(writers);
}
uint64_t StreamLog::committed_next() const {
  return impl_->committed_next();
}
uint64_t StreamLog::first_offset() const {
  return impl_->first_offset();
}
LocalRange StreamLog::local_range() const {
  return impl_->local_range();
}
std::vector<SegmentInfo> StreamLog::segments() const {
  return impl_->segments();
}
uint64_t StreamLog::epoch() const {
  return impl_->epoch();
}
uint64_t StreamLog::last_chunk_epoch() const {
  return impl_->last_chunk_epoch();
}
const std::string& StreamLog::dir() const {
  return impl_->dir();
}
const LogOptions& StreamLog::options() const {
  return impl_->options();
}
RetentionOptions StreamLog::retention() const {
  return impl_->retention();
}
void StreamLog::set_retention(const RetentionOptions& r) {
  impl_->set_retention(r);
}
const std::vector<std::string>& StreamLog::repairs() const {
  return impl_->repairs();
}
Status StreamLog::health() const {
  return impl_->health();
}
bool StreamLog::read_only() const {
  return impl_->options().read_only;
}
Result<Resolution> StreamLog::resolve(const OffsetSpec& spec) {
  return impl_->resolve(spec);
}
bool StreamLog::wait_for_commit(uint64_t offset, std::chrono::milliseconds timeout) {
  return impl_->wait_for_commit(offset, timeout);
}
size_t StreamLog::commit_waiters() const {
  return impl_->commit_waiters();
}
SealSyncStats StreamLog::seal_syncs() const {
  return impl_->seal_syncs();
}
Result<MappedRange> StreamLog::map_committed(uint64_t segment_first_offset, uint64_t position,
                                             uint64_t length) {
  return impl_->map_committed(segment_first_offset, position, length);
}
Result<RetentionOutcome> StreamLog::apply_retention() {
  return impl_->apply_retention();
}
uint64_t StreamLog::subscribe(std::function<void(const CommittedChunk&)> listener) {
  return impl_->subscribe(std::move(listener));
}
void StreamLog::unsubscribe(uint64_t id) {
  impl_->unsubscribe(id);
}
Result<uint64_t> StreamLog::refresh() {
  return impl_->refresh();
}
Status StreamLog::close() {
  return impl_->close();
}
Status StreamLog::restart_writer() {
  return impl_->restart_writer();
}
uint64_t StreamLog::writer_restarts() const {
  return impl_->writer_restarts();
}
bool StreamLog::closed() const {
  return impl_->closed();
}

Result<std::unique_ptr<Reader>> StreamLog::open_reader(const OffsetSpec& spec) {
  return open_reader(spec, ReaderOptions{});
}

Result<std::unique_ptr<Reader>> StreamLog::open_reader(const OffsetSpec& spec,
                                                       const ReaderOptions& ro) {
  STRATA_ASSIGN_OR_RETURN(Resolution r, resolve(spec));
  return open_reader_at(r, ro);
}

Result<std::unique_ptr<Reader>> StreamLog::open_reader_at(const Resolution& r,
                                                          const ReaderOptions& ro) {
  STRATA_ASSIGN_OR_RETURN(Impl::ReadStart start, impl_->read_start(r));
  return std::unique_ptr<Reader>(
      new Reader(shared_from_this(), std::move(start.segment), std::move(start.file), r, ro));
}

Result<std::unique_ptr<ChunkWalk>> StreamLog::walk_chunks(uint64_t offset) {
  STRATA_ASSIGN_OR_RETURN(Impl::WalkStart start, impl_->walk_start(offset));
  return std::unique_ptr<ChunkWalk>(
      new ChunkWalk(shared_from_this(), std::move(start.segment), start.position, offset));
}

// ------------------------------------------------------ opening and closing

StreamLog::Impl::Impl(std::string dir, LogOptions opts)
    : dir_(std::move(dir)),
      opts_(std::move(opts)),
      fs_(opts_.fs ? *opts_.fs : posix_fs()),
      clock_(opts_.clock ? *opts_.clock : system_clock()),
      limits_(opts_.retention) {}

Status StreamLog::Impl::open() {
  if (!opts_.read_only && &fs_ == &posix_fs()) {
    if (opts_.create_if_missing) STRATA_TRY(create_dirs(fs_, dir_));
    auto st = fs_.stat(dir_);
    if (!st.ok()) {
      return Error(st.code(), fmt::format("stream directory {} cannot be opened: {}", dir_,
                                          st.error().message));
    }
    if (!st->is_dir) {
      return Error(Errc::invalid_argument, fmt::format("{} is not a directory", dir_));
    }
    STRATA_ASSIGN_OR_RETURN(lock_, lock_stream(dir_));
  }
  RecoveryOptions ro;
  ro.read_only = opts_.read_only;
  ro.verify_sealed = opts_.verify_sealed_on_open;
  ro.create_if_missing = opts_.create_if_missing;
  ro.first_offset = opts_.first_offset;
  STRATA_ASSIGN_OR_RETURN(RecoveryResult rec, recover_stream(fs_, dir_, ro));
  const std::optional<uint64_t> mark = rec.synced_below;
  STRATA_TRY(init(std::move(rec)));
  if (opts_.read_only) return Status::OK();
  return settle_sync_mark(mark);
}

Status StreamLog::Impl::init(RecoveryResult&& rec) {
  STRATA_ASSERT(!rec.segments.empty(), "recovery returned no segments");
  repairs_ = std::move(rec.repairs);
  uint64_t last_epoch = 0;
  for (auto& r : rec.segments) {
    auto seg = std::make_shared<LogSegment>(r.info.file, r.index_file);
    seg->info = r.info;
    seg->last_epoch = r.last_epoch;
    seg->mem_indexed = opts_.read_only;
    seg->records = std::move(r.records);
    if (seg->info.chunks > 0) {
      last_epoch = std::max(last_epoch, r.last_epoch);
      w_.last_ts = seg->info.last_timestamp_ms;
    }
    segments_.push_back(std::move(seg));
  }
  if (opts_.epoch && *opts_.epoch < last_epoch) {
    return Error(Errc::conflict,
                 fmt::format("stream {}: writer epoch {} is older than the log's last epoch {}",
                             dir_, *opts_.epoch, last_epoch));
  }
  epoch_ = opts_.epoch.value_or(std::max<uint64_t>(last_epoch, 1));
  STRATA_TRY(load_writers());
  const auto& active = segments_.back();
  committed_next_.store(active->info.next_offset);
  if (opts_.read_only) return Status::OK();

  STRATA_ASSIGN_OR_RETURN(auto f, fs_.open(active->path, OpenOptions::read_write()));
  STRATA_ASSIGN_OR_RETURN(auto idx, fs_.open(active->index_path, OpenOptions::read_write()));
  w_.file = std::move(f);
  w_.index = std::move(idx);
  {
    std::lock_guard<std::mutex> g(files_mu_);
    active->pinned_file = w_.file;
    active->pinned_index = w_.index;
  }
  w_.seg = active;
  w_.next = active->info.next_offset;
  w_.pos = active->info.size_bytes;
  w_.chunks = active->info.chunks;
  return Status::OK();
}

// The newest segment holding a chunk rebuilds the writer sequences (its
// first chunk's snapshot, then deltas). One more read of that segment at
// open (it was just scanned by recovery, so usually from the page cache).
Status StreamLog::Impl::load_writers() {
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
    if ((*it)->info.chunks == 0) continue;
    STRATA_ASSIGN_OR_RETURN(auto f, fs_.open((*it)->path, OpenOptions::read_only()));
    STRATA_ASSIGN_OR_RETURN(auto map,
                            load_writer_sequences(*f, (*it)->path, (*it)->info.size_bytes));
    if (map) writers_ = std::move(*map);
    break;
  }
  w_.writers = writers_;
  return Status::OK();
}

bool StreamLog::Impl::seed_writer_sequences(const WriterSequences& writers) {
  std::lock_guard<std::mutex> g(mu_);
  if (closed_ || opts_.read_only || !queue_.empty() ||
      committed_next_.load() != segments_.front()->info.first_offset ||
      segments_.back()->info.chunks != 0) {
    return false;
  }
  // No append is queued or leading, so the writer state is ours to set.
  writers_ = writers;
  w_.writers = writers;
  return true;
}

std::optional<uint64_t> StreamLog::Impl::writer_sequence(std::string_view ref) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = writers_.find(ref);
  if (it == writers_.end()) return std::nullopt;
  return it->second;
}

Status StreamLog::Impl::close() {
  std::lock_guard<std::mutex> restart(restart_mu_);
  std::unique_lock<std::mutex> l(mu_);
  if (closed_) return Status::OK();
  closed_ = true;
  closed_flag_.store(true, std::memory_order_release);
  leader_cv_.notify_all();
  commit_cv_.notify_all();
  idle_cv_.wait(l, [&] { return queue_.empty(); });
  l.unlock();
  // The sealed segments still waiting for their background sync.
  Status s = drain_seals();
  l.lock();
  const bool failed = failed_.has_value();
  std::vector<std::shared_ptr<LogSegment>> all(segments_.begin(), segments_.end());
  l.unlock();
  if (!opts_.read_only && !failed && w_.file) {
    if (w_.reserved_end > 0) release_reserved(*w_.file);
    // A clean close leaves everything durable, whatever the policy.
    s = w_.file->sync();
    if (s.ok()) s = w_.index->sync();
  }
  {
    std::lock_guard<std::mutex> g(files_mu_);
    for (auto& seg : all) {
      seg->pinned_file.reset();
      seg->pinned_index.reset();
    }
  }
  w_.file.reset();
  w_.index.reset();
  lock_.release();
  return s;
}

bool StreamLog::Impl::closed() const {
  std::lock_guard<std::mutex> g(mu_);
  return closed_;
}

Status StreamLog::Impl::health() const {
  std::lock_guard<std::mutex> g(mu_);
  if (failed_) return *failed_;
  return Status::OK();
}

// ------------------------------------------------------------- state views

std::vector<SegmentBounds> StreamLog::Impl::snapshot_locked() const {
  std::vector<SegmentBounds> out;
  out.reserve(segments_.size());
  for (const auto& s : segments_) out.push_back(s->bounds());
  return out;
}

uint64_t StreamLog::Impl::first_offset() const {
  std::lock_guard<std::mutex> g(mu_);
  return segments_.front()->info.first_offset;
}

LocalRange StreamLog::Impl::local_range() const {
  std::lock_guard<std::mutex> g(mu_);
  return local_range_of(snapshot_locked(), committed_next());
}

std::vector<SegmentInfo> StreamLog::Impl::segments() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<SegmentInfo> out;
  out.reserve(segments_.size());
  for (const auto& s : segments_) out.push_back(s->info);
  return out;
}

uint64_t StreamLog::Impl::last_chunk_epoch() const {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
    if ((*it)->info.chunks > 0) return (*it)->last_epoch;
  }
  return 0;
}

uint64_t StreamLog::Impl::subscribe(std::function<void(const CommittedChunk&)> listener) {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t id = next_listener_id_++;
  listeners_[id] = std::move(listener);
  return id;
}

void StreamLog::Impl::unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> g(mu_);
  listeners_.erase(id);
}

bool StreamLog::Impl::wait_for_commit(uint64_t offset, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  ++commit_waiters_;
  commit_cv_.wait_for(l, timeout,
                      [&] { return committed_next() > offset || closed_ || failed_.has_value(); });
  --commit_waiters_;
  return committed_next() > offset;
}

size_t StreamLog::Impl::commit_waiters() const {
  std::lock_guard<std::mutex> g(mu_);
  return commit_waiters_;
}

}  // namespace strata::log
