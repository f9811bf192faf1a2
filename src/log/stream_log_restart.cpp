// StreamLog::restart_writer: making a fail-stopped log writable again
// without closing it (stream_log.h states the contract). Readers, listeners
// and the uploader keep their log; only the writer's state is rebuilt from
// the committed view, which is what every reader has seen and every confirm
// was given for.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "log/recovery.h"
#include "log/segment_scan.h"
#include "log/stream_log_impl.h"
#include "log/sync_mark.h"

namespace strata::log {

Status StreamLog::Impl::restart_writer() {
  if (opts_.read_only) {
    return Error(Errc::unsupported, fmt::format("stream {} is read-only: it has no writer", dir_));
  }
  // One restart at a time, and never beside close() (both rebuild w_).
  std::lock_guard<std::mutex> restart(restart_mu_);
  std::unique_lock<std::mutex> l(mu_);
  if (closed_) return Error(Errc::closed, fmt::format("stream {} is closed", dir_));
  if (!failed_) return Status::OK();
  // The failed group's leader releases the queue; appends arriving since
  // fail at once (failed_ stays set until the writer is back).
  idle_cv_.wait(l, [&] { return queue_.empty(); });
  const Error cause = *failed_;
  const uint64_t committed = committed_next();
  l.unlock();

  // No seal may move the sync mark while the segments change.
  STRATA_TRY(quiesce_seals());

  // A roll whose group failed left a segment past the committed end: it
  // holds nothing committed, so the writer goes back to its predecessor.
  std::vector<uint64_t> unfinished;
  std::shared_ptr<LogSegment> active;
  {
    std::lock_guard<std::mutex> g(mu_);
    while (segments_.size() > 1 && segments_.back()->info.first_offset > committed) {
      STRATA_ASSERT(segments_.back()->info.chunks == 0, "a committed chunk past committed_next");
      unfinished.push_back(segments_.back()->info.first_offset);
      segments_.pop_back();
    }
    active = segments_.back();
    active->info.active = true;
  }
  // Files of such a roll, and of one that failed before its segment was
  // listed (create_segment_files done, the open of its files not).
  STRATA_ASSIGN_OR_RETURN(auto names, fs_.list_dir(dir_));
  for (const auto& name : names) {
    auto parsed = parse_log_file_name(name);
    if (!parsed.ok() || !*parsed || (*parsed)->first_offset <= active->info.first_offset) continue;
    STRATA_TRY(fs_.remove(path_join(dir_, name)));
  }
  if (!unfinished.empty()) STRATA_TRY(fs_.sync_dir(dir_));

  // The active segment is cut back to its committed end: what lies past it
  // was never confirmed (a torn or refused write). The committed chunks are
  // verified again, since a failed writeback may have dropped pages that
  // were confirmed without an fsync (never, interval): a log whose confirmed
  // bytes are gone stays stopped, and a reopen's recovery decides.
  const SegmentInfo info = [&] {
    std::lock_guard<std::mutex> g(mu_);
    return active->info;
  }();
  STRATA_ASSIGN_OR_RETURN(auto f, fs_.open(active->path, OpenOptions::read_write()));
  STRATA_TRY(f->truncate(info.size_bytes));
  ScanOptions so;
  so.expected_first_offset = info.first_offset;
  so.limit = info.size_bytes;
  STRATA_ASSIGN_OR_RETURN(ScanResult scan, scan_segment(*f, active->path, so));
  if (scan.damage || scan.chunks.size() != info.chunks ||
      scan.next_offset(info.first_offset) != info.next_offset) {
    return Error(Errc::corrupt,
                 fmt::format("stream {}: the committed chunks of {} no longer verify ({} of {} "
                             "chunks{}); the writer stays stopped, a reopen's recovery decides",
                             dir_, active->path, scan.chunks.size(), info.chunks,
                             scan.damage ? ": " + scan.damage->message : std::string()));
  }
  // The index is rewritten from the scan (same bytes where it was right,
  // so a reader looking a chunk up meanwhile reads what it would have).
  STRATA_ASSIGN_OR_RETURN(auto idx, fs_.open(active->index_path, OpenOptions::read_write()));
  Bytes records(scan.chunks.size() * kIndexRecordSize, '\0');
  for (size_t i = 0; i < scan.chunks.size(); ++i) {
    encode_index_record(scan.chunks[i], u8(records.data() + i * kIndexRecordSize));
  }
  STRATA_TRY(idx->truncate(kFileHeaderSize + records.size()));
  if (!records.empty()) STRATA_TRY(idx->write_at(kFileHeaderSize, records));
  STRATA_TRY(f->sync());
  STRATA_TRY(idx->sync());
  // Sealed segments whose background sync failed or never ran are synced
  // now, and the mark says so (as at open).
  STRATA_ASSIGN_OR_RETURN(auto mark, read_sync_mark(fs_, dir_));
  STRATA_TRY(settle_sync_mark(mark));

  std::shared_ptr<File> file(std::move(f));
  std::shared_ptr<File> index(std::move(idx));
  if (w_.file && w_.reserved_end > 0) release_reserved(*w_.file);
  {
    std::lock_guard<std::mutex> g(files_mu_);
    active->pinned_file = file;
    active->pinned_index = index;
  }
  l.lock();
  if (closed_) return Error(Errc::closed, fmt::format("stream {} is closed", dir_));
  w_.seg = active;
  w_.file = std::move(file);
  w_.index = std::move(index);
  w_.next = committed;
  w_.pos = info.size_bytes;
  w_.chunks = info.chunks;
  w_.reserved_end = 0;
  w_.reserving = true;
  w_.seg_buf.clear();
  w_.idx_buf.clear();
  w_.last_sync = std::chrono::steady_clock::now();
  w_.rolled = false;
  w_.writers = writers_;
  failed_.reset();
  writer_restarts_.fetch_add(1, std::memory_order_relaxed);
  l.unlock();
  spdlog::info("stream {}: writer restarted at offset {} after: {}", dir_, committed,
               cause.to_string());
  return Status::OK();
}

Status StreamLog::Impl::quiesce_seals() {
  // Its error (a failed seal) is what the restart syncs again.
  (void)drain_seals();
  std::lock_guard<std::mutex> g(seal_mu_);
  seal_now_ = false;
  seal_error_.reset();
  seal_failed_.store(false, std::memory_order_release);
  return Status::OK();
}

}  // namespace strata::log
