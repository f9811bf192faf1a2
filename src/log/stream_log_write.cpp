// The write path: group commit (common/group_commit.h), packing batches into
// chunks, segment rolls, commit notification and fail-stop.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/assert.h"
#include "log/entries.h"
#include "log/index_file.h"
#include "log/log_limits.h"
#include "log/stream_log_impl.h"

namespace strata::log {

namespace {

void shrink(Bytes& b) {
  if (b.capacity() > kKeepBufferBytes) Bytes().swap(b);
}

}  // namespace

struct StreamLog::Impl::PendingAppend : GroupCommitWaiter {
  // A batch of records (append), or of osiris entries taken verbatim
  // (append_entries).
  std::span<const BytesView> records;
  BytesView entries;
  uint32_t num_entries = 0;  // entries the batch adds to its chunk
  uint32_t num_records = 0;  // offsets it occupies
  std::string_view writer_ref;
  uint64_t writer_seq = 0;
  const FilterValues* filter = nullptr;
  const ImportedChunk* imported = nullptr;
  uint64_t data_bytes = 0;
  Result<AppendResult> result{Error(Errc::internal, "append not processed")};
};

struct StreamLog::Impl::WrittenChunk {
  std::shared_ptr<LogSegment> seg;
  IndexRecord rec;
  ChunkHeader header;
  WriterTrailer writers;  // the highest sequence per writer in this chunk
};

Status StreamLog::Impl::check_batch(std::span<const BytesView> records, PendingAppend* w) const {
  if (opts_.read_only) {
    return Error(Errc::invalid_argument, fmt::format("stream {} is open read-only", dir_));
  }
  if (records.empty() || records.size() > 0xFFFF) {
    return Error(
        Errc::invalid_argument,
        fmt::format("stream {}: a batch holds 1..65535 records, got {}", dir_, records.size()));
  }
  w->records = records;
  w->num_entries = uint32_t(records.size());
  w->num_records = uint32_t(records.size());
  for (const auto& r : records) {
    if (r.size() > kMaxRecordSize) {
      return Error(
          Errc::invalid_argument,
          fmt::format("stream {}: record of {} bytes exceeds the record limit", dir_, r.size()));
    }
    w->data_bytes += ChunkBuilder::entry_size(r);
  }
  if (w->data_bytes > opts_.max_chunk_bytes) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: batch of {} bytes exceeds max_chunk_bytes ({}); split it",
                             dir_, w->data_bytes, opts_.max_chunk_bytes));
  }
  return Status::OK();
}

Status StreamLog::Impl::check_entry_batch(const EntryBatch& b, PendingAppend* w) const {
  if (opts_.read_only) {
    return Error(Errc::invalid_argument, fmt::format("stream {} is open read-only", dir_));
  }
  if (b.num_entries == 0 || b.entries.empty()) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: an entry batch holds 1..65535 entries, got {}", dir_,
                             b.num_entries));
  }
  if (b.writer_ref.size() > kMaxWriterRefSize) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: writer reference of {} bytes exceeds {} bytes", dir_,
                             b.writer_ref.size(), kMaxWriterRefSize));
  }
  // An imported chunk keeps the size its source gave it (it cannot be
  // split without moving offsets), below the log's hard bound.
  const uint64_t bound = b.imported ? kMaxChunkSize / 2 : opts_.max_chunk_bytes;
  if (b.entries.size() > bound) {
    return Error(
        Errc::invalid_argument,
        fmt::format("stream {}: entry batch of {} bytes exceeds {} ({}); split it", dir_,
                    b.entries.size(), b.imported ? "the chunk bound" : "max_chunk_bytes", bound));
  }
  EntryCounts n;
  if (auto p = count_entries(b.entries, &n)) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: entry batch: {}", dir_, p->reason));
  }
  if (n.entries != b.num_entries || n.records != b.num_records) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: entry batch holds {} entries / {} records, the batch "
                             "says {} entries / {} records",
                             dir_, n.entries, n.records, b.num_entries, b.num_records));
  }
  w->entries = b.entries;
  w->num_entries = b.num_entries;
  w->num_records = b.num_records;
  w->writer_ref = b.writer_ref;
  w->writer_seq = b.writer_seq;
  w->filter = b.filter && !b.filter->empty() ? b.filter : nullptr;
  w->data_bytes = b.entries.size();
  if (b.imported && !b.writer_ref.empty()) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: an imported chunk names its writers in the import, "
                             "not in writer_ref",
                             dir_));
  }
  // Where it starts is checked by the writer (write_group), which alone
  // knows the log's end when the chunk is written.
  w->imported = b.imported;
  return Status::OK();
}

Result<AppendResult> StreamLog::Impl::append(std::span<const BytesView> records) {
  PendingAppend w;
  STRATA_TRY(check_batch(records, &w));
  return enqueue(w);
}

Result<AppendResult> StreamLog::Impl::append_entries(const EntryBatch& batch) {
  PendingAppend w;
  STRATA_TRY(check_entry_batch(batch, &w));
  return enqueue(w);
}

Result<AppendResult> StreamLog::Impl::append_entries_all(std::span<const EntryBatch> batches) {
  std::vector<PendingAppend> ws(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) STRATA_TRY(check_entry_batch(batches[i], &ws[i]));
  return enqueue_all(ws);
}

Result<AppendResult> StreamLog::Impl::enqueue_all(std::span<PendingAppend> ws) {
  if (ws.empty()) return AppendResult{committed_next(), committed_next()};
  std::unique_lock<std::mutex> l(mu_);
  if (closed_) return Error(Errc::closed, fmt::format("stream {} is closed", dir_));
  if (failed_) {
    return Error(Errc::fail_stopped, fmt::format("stream {} stopped after an earlier failure: {}",
                                                 dir_, failed_->to_string()));
  }
  for (PendingAppend& w : ws) queue_.push(&w);
  // In queue order: each is either done by a group that took it, or at the
  // front, where this caller leads (taking the rest of its own along).
  for (PendingAppend& w : ws) {
    if (queue_.wait(l, &w)) lead(l);
    STRATA_ASSERT(w.done, "append returned before it was processed");
  }
  for (PendingAppend& w : ws) {
    if (!w.result.ok()) return std::move(w.result).error();
  }
  return AppendResult{ws.front().result->first_offset, ws.back().result->next_offset};
}

Result<AppendResult> StreamLog::Impl::enqueue(PendingAppend& w) {
  return enqueue_all(std::span<PendingAppend>(&w, 1));
}

void StreamLog::Impl::lead(std::unique_lock<std::mutex>& l) {
  if (opts_.fsync == FsyncPolicy::interval) {
    // Sleep out the rest of the interval; appenders arriving meanwhile join
    // this group, so there is one fsync per interval at most.
    auto deadline = w_.last_sync + std::chrono::milliseconds(opts_.fsync_interval_ms);
    leader_cv_.wait_until(l, deadline,
                          [&] { return closed_ || std::chrono::steady_clock::now() >= deadline; });
  }
  const std::vector<PendingAppend*> group =
      queue_.take(SIZE_MAX, kMaxGroupBytes, [](const PendingAppend& p) { return p.data_bytes; });
  l.unlock();
  std::vector<WrittenChunk> written;
  Status s = write_group(group, &written);
  l.lock();
  if (!s.ok()) {
    fail_stop_locked(s.error());
    return;
  }
  publish_locked(written);
  const bool rolled = w_.rolled;
  l.unlock();
  // Still the leader (our batch is at the queue front), so notifications of
  // consecutive groups cannot overtake each other.
  notify_commit(written);
  if (rolled && opts_.retention_on_roll && retention().any()) {
    auto r = apply_retention();
    if (!r.ok()) {
      spdlog::error("stream {}: retention after segment roll failed: {}", dir_,
                    r.error().to_string());
    }
  }
  l.lock();
  if (queue_.release(group)) idle_cv_.notify_all();
}

// The group's chunks become the committed view readers see.
void StreamLog::Impl::publish_locked(const std::vector<WrittenChunk>& written) {
  for (const auto& c : written) {
    SegmentInfo& info = c.seg->info;
    if (info.chunks == 0) info.first_timestamp_ms = c.rec.timestamp_ms;
    info.chunks += 1;
    info.next_offset = c.rec.next_offset();
    info.size_bytes = c.rec.end_position();
    info.last_timestamp_ms = c.rec.timestamp_ms;
    c.seg->last_epoch = c.rec.epoch;
    apply_writer_trailer(c.writers, &writers_);
  }
  committed_next_.store(w_.next, std::memory_order_release);
  commit_cv_.notify_all();
}

Status StreamLog::Impl::write_group(const std::vector<PendingAppend*>& group,
                                    std::vector<WrittenChunk>* out) {
  // A background seal sync failed: this group fails with its error.
  STRATA_TRY(seal_status());
  w_.rolled = false;
  ChunkBuilder b(&w_.seg_buf);
  size_t i = 0;
  while (i < group.size()) {
    // Pack whole batches [i, j) into one chunk (at most 65535 entries).
    uint64_t bytes = group[i]->data_bytes;
    uint64_t entries = group[i]->num_entries;
    uint64_t recs = group[i]->num_records;
    size_t j = i + 1;
    // An imported chunk is a chunk of its own (its offsets, time and type).
    while (j < group.size() && !group[i]->imported && !group[j]->imported &&
           bytes + group[j]->data_bytes <= opts_.max_chunk_bytes &&
           entries + group[j]->num_entries <= 0xFFFF) {
      bytes += group[j]->data_bytes;
      entries += group[j]->num_entries;
      recs += group[j]->num_records;
      ++j;
    }
    // An imported chunk not at the log's end fails alone, nothing of it
    // written.
    if (group[i]->imported && group[i]->imported->first_offset != w_.next) {
      group[i]->result = Error(
          Errc::invalid_argument,
          fmt::format("stream {}: an imported chunk starts at offset {} but the log ends at {}",
                      dir_, group[i]->imported->first_offset, w_.next));
      i = j;
      continue;
    }
    // A copied chunk from an older writer than the log's last chunk fails
    // alone too: a copy never goes back in epoch.
    if (group[i]->imported && group[i]->imported->epoch && *group[i]->imported->epoch < epoch_) {
      group[i]->result = Error(
          Errc::conflict,
          fmt::format(
              "stream {}: a copied chunk at offset {} has epoch {}, older than the log's {}", dir_,
              group[i]->imported->first_offset, *group[i]->imported->epoch, epoch_.load()));
      i = j;
      continue;
    }
    // The writers of these batches, each with its highest sequence.
    WriterTrailer delta;
    {
      WriterSequences seen;
      auto raise = [&seen](std::string_view ref, uint64_t seq) {
        auto [it, inserted] = seen.try_emplace(std::string(ref), seq);
        if (!inserted) it->second = std::max(it->second, seq);
      };
      for (size_t k = i; k < j; ++k) {
        if (!group[k]->writer_ref.empty()) raise(group[k]->writer_ref, group[k]->writer_seq);
      }
      if (group[i]->imported && group[i]->imported->writers) {
        for (const auto& [ref, seq] : *group[i]->imported->writers) raise(ref, seq);
      }
      delta.writers.assign(seen.begin(), seen.end());
    }
    // The filter of the messages' values, when one has a value: the
    // trailer's first section (log/chunk_filter.h).
    w_.filter.clear();
    if (group[i]->imported && !group[i]->imported->filter.empty()) {
      // A copied chunk keeps the filter it was stored with.
      encode_filter_section(group[i]->imported->filter, &w_.filter);
    } else {
      FilterValues values;
      bool any = false;
      for (size_t k = i; k < j; ++k) {
        if (group[k]->filter) {
          values.merge(*group[k]->filter);
          any = true;
        } else {
          values.unfiltered = true;
        }
      }
      if (any)
        encode_filter_section(build_chunk_filter(values, opts_.filter_size_bytes), &w_.filter);
    }
    w_.trailer.assign(w_.filter);
    if (!delta.writers.empty()) encode_writer_trailer(delta, &w_.trailer);
    if (w_.chunks > 0 &&
        (w_.pos + kChunkHeaderSize + bytes + w_.trailer.size() > opts_.max_segment_bytes ||
         w_.chunks >= opts_.max_segment_chunks)) {
      STRATA_TRY(roll());
    }
    apply_writer_trailer(delta, &w_.writers);
    if (w_.chunks == 0 && !w_.writers.empty()) {
      // A segment's first chunk carries every writer's sequence, so the
      // newest segment alone rebuilds the map.
      WriterTrailer snapshot;
      snapshot.snapshot = true;
      snapshot.writers.assign(w_.writers.begin(), w_.writers.end());
      w_.trailer.assign(w_.filter);
      encode_writer_trailer(snapshot, &w_.trailer);
    }
    const uint64_t chunk_size = kChunkHeaderSize + bytes + w_.trailer.size();
    const uint64_t first = w_.next;
    const ImportedChunk* imported = group[i]->imported;
    b.begin();
    for (size_t k = i; k < j; ++k) {
      const uint64_t batch_first = first + b.records();
      if (group[k]->entries.empty()) {
        b.add_records(group[k]->records);
      } else {
        b.add_entries(group[k]->entries, group[k]->num_entries, group[k]->num_records);
      }
      group[k]->result = AppendResult{batch_first, batch_first + group[k]->num_records};
    }
    int64_t ts = 0;
    if (imported) {
      // The original time, as it was (the clock is not consulted).
      ts = imported->timestamp_ms;
      w_.last_ts = std::max(ts, w_.last_ts);
    } else {
      ts = w_.last_ts = std::max(clock_.now_ms(), w_.last_ts);
    }
    uint64_t epoch = epoch_.load(std::memory_order_relaxed);
    if (imported && imported->epoch && *imported->epoch > epoch) {
      epoch = *imported->epoch;
      epoch_.store(epoch, std::memory_order_release);
    }
    ChunkHeader h =
        b.finish(first, epoch, ts, imported ? imported->type : ChunkType::user, w_.trailer);
    IndexRecord rec = index_record_for(h, w_.pos);
    size_t at = w_.idx_buf.size();
    w_.idx_buf.resize(at + kIndexRecordSize);
    encode_index_record(rec, u8(w_.idx_buf.data() + at));
    out->push_back(WrittenChunk{w_.seg, rec, h, std::move(delta)});
    w_.pos += chunk_size;
    w_.chunks += 1;
    w_.next += recs;
    if (w_.seg_buf.size() >= kFlushBytes) STRATA_TRY(flush_buffers());
    i = j;
  }
  STRATA_TRY(flush_buffers());
  if (opts_.fsync != FsyncPolicy::never) {
    STRATA_TRY(w_.file->sync());
    w_.last_sync = std::chrono::steady_clock::now();
  }
  shrink(w_.seg_buf);
  shrink(w_.idx_buf);
  last_write_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                       std::memory_order_relaxed);
  return Status::OK();
}

void StreamLog::Impl::reserve_ahead(uint64_t end) {
  // Under `always` and `interval` every write is soon followed by a sync,
  // which then also converts the reserved extents (measured ~10 % slower):
  // only `never` appends are bound by the page cache write itself.
  if (end <= w_.reserved_end || !w_.reserving || opts_.reserve_ahead_bytes == 0 ||
      opts_.fsync != FsyncPolicy::never) {
    return;
  }
  // A stream that writes little reserves little.
  const uint64_t to = reserve_ahead_to(end, opts_.reserve_ahead_bytes, opts_.max_segment_bytes);
  const uint64_t from = std::max(w_.reserved_end, end - w_.seg_buf.size());
  Status s = w_.file->reserve(from, to - from);
  if (s.ok()) {
    w_.reserved_end = to;
    return;
  }
  // Only a cost: writes work without it. Said once per segment.
  w_.reserving = false;
  if (s.code() != Errc::unsupported) {
    spdlog::warn("stream {}: cannot reserve space ahead of the writer, writing without: {}", dir_,
                 s.error().to_string());
  }
}

Status StreamLog::Impl::flush_buffers() {
  // Segment bytes first: an index record never describes bytes that were
  // not handed to the file before it (recovery copes either way).
  if (!w_.seg_buf.empty()) {
    reserve_ahead(w_.pos);
    STRATA_TRY(w_.file->append(w_.seg_buf));
    w_.seg_buf.clear();
  }
  if (!w_.idx_buf.empty()) {
    STRATA_TRY(w_.index->append(w_.idx_buf));
    w_.idx_buf.clear();
  }
  return Status::OK();
}

Status StreamLog::Impl::roll() {
  STRATA_TRY(flush_buffers());
  const uint64_t first = w_.next;
  const bool background = opts_.fsync == FsyncPolicy::never;
  if (background) {
    // Seal off the append path: the sealer thread syncs the old segment,
    // its index and the directory (the successor's entry), then moves the
    // sync mark past it; recovery treats segments above the mark as maybe
    // torn. Bounded: at most max_pending_seal_syncs wait, so this waits
    // while that many are pending.
    STRATA_TRY(wait_for_seal_room());
    STRATA_TRY(create_segment_files(fs_, dir_, first, /*sync=*/false));
  } else {
    // Seal: the old segment and its index become durable before the new
    // segment exists. Recovery relies on it.
    STRATA_TRY(w_.file->sync());
    STRATA_TRY(w_.index->sync());
    STRATA_TRY(create_segment_files(fs_, dir_, first));
    STRATA_TRY(fs_.sync_dir(dir_));
  }
  SealJob sealed{w_.file, w_.index, first, std::chrono::steady_clock::now()};
  auto seg = std::make_shared<LogSegment>(path_join(dir_, segment_file_name(first)),
                                          path_join(dir_, index_file_name(first)));
  STRATA_ASSIGN_OR_RETURN(auto f, fs_.open(seg->path, OpenOptions::read_write()));
  STRATA_ASSIGN_OR_RETURN(auto idx, fs_.open(seg->index_path, OpenOptions::read_write()));
  seg->info.first_offset = first;
  seg->info.next_offset = first;
  seg->info.size_bytes = kFileHeaderSize;
  seg->info.file = seg->path;
  seg->info.active = true;
  std::shared_ptr<LogSegment> old;
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
    w_.file = seg->pinned_file;
    w_.index = seg->pinned_index;
  }
  w_.seg = seg;
  if (background) seal_in_background(std::move(sealed));
  spdlog::debug("stream {}: rolled to segment {}", dir_, seg->path);
  w_.pos = kFileHeaderSize;
  w_.chunks = 0;
  w_.reserved_end = 0;
  w_.reserving = true;
  w_.last_sync = std::chrono::steady_clock::now();
  w_.rolled = true;
  return Status::OK();
}

void StreamLog::Impl::fail_stop_locked(const Error& e) {
  spdlog::error("stream {}: writer fail-stopped, committed offset stays at {}: {}", dir_,
                committed_next(), e.to_string());
  failed_ = e;
  queue_.release_all([&](PendingAppend& p, bool leader) {
    // The batches of the failed group get the I/O error itself; batches
    // still queued behind them learn that the log stopped.
    if (leader || p.result.ok()) {
      p.result = Error(e.code, e.message);
    } else {
      p.result =
          Error(Errc::fail_stopped, fmt::format("stream {} stopped: {}", dir_, e.to_string()));
    }
  });
  commit_cv_.notify_all();
  idle_cv_.notify_all();
}

void StreamLog::Impl::notify_commit(const std::vector<WrittenChunk>& chunks) {
  std::vector<std::function<void(const CommittedChunk&)>> ls;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& [id, f] : listeners_) ls.push_back(f);
  }
  if (ls.empty()) return;
  for (const auto& c : chunks) {
    const CommittedChunk cc{c.header, c.seg->info.first_offset, c.rec.position, c.rec.chunk_size};
    for (const auto& f : ls) f(cc);
  }
}

}  // namespace strata::log
