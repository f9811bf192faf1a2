// Refresh of a read-only log: its writer is another process, so it picks up
// from the files what that writer committed since (up to the last complete
// chunk), following segment rolls and retention.
#include <fmt/format.h>

#include <algorithm>

#include "log/audit.h"
#include "log/segment_scan.h"
#include "log/stream_log_impl.h"

namespace strata::log {

Result<uint64_t> StreamLog::Impl::refresh() {
  if (!opts_.read_only) return committed_next();
  std::lock_guard<std::mutex> rg(refresh_mu_);
  drop_removed_segments();
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool consumed, refresh_newest());
    if (!consumed) break;
    STRATA_ASSIGN_OR_RETURN(bool added, add_successor());
    if (!added) break;
  }
  commit_cv_.notify_all();
  return committed_next();
}

// Segments whose files are gone were removed by the writer's retention.
void StreamLog::Impl::drop_removed_segments() {
  std::vector<std::shared_ptr<LogSegment>> older;
  {
    std::lock_guard<std::mutex> g(mu_);
    older.assign(segments_.begin(), segments_.end() - 1);
  }
  size_t gone = 0;
  for (const auto& s : older) {
    if (exists(fs_, s->path)) break;
    ++gone;
  }
  std::lock_guard<std::mutex> g(mu_);
  for (size_t i = 0; i < gone; ++i) segments_.pop_front();
}

Result<bool> StreamLog::Impl::refresh_newest() {
  std::shared_ptr<LogSegment> seg;
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
  // Damage here is an incomplete chunk: being written right now.
  return !scan.damage;
}

Result<bool> StreamLog::Impl::add_successor() {
  uint64_t succ_first, seg_first;
  {
    std::lock_guard<std::mutex> g(mu_);
    succ_first = segments_.back()->info.next_offset;
    seg_first = segments_.back()->info.first_offset;
  }
  // A writer rolls only after a segment holds a chunk.
  if (succ_first == seg_first) return false;
  std::string succ = path_join(dir_, segment_file_name(succ_first));
  auto fr = fs_.open(succ, OpenOptions::read_only());
  if (!fr.ok()) return false;
  STRATA_ASSIGN_OR_RETURN(uint64_t size, (*fr)->size());
  Bytes head(size_t(std::min<uint64_t>(size, kFileHeaderSize)), '\0');
  STRATA_TRY(read_exact(**fr, 0, head.data(), head.size()));
  HeaderVerdict hv = audit_header(head, size, succ_first, succ, /*newest=*/true);
  if (hv.kind == HeaderVerdict::Kind::absent) return false;  // being created
  if (hv.kind == HeaderVerdict::Kind::corrupt) return std::move(*hv.problem);
  auto ns = std::make_shared<LogSegment>(succ, path_join(dir_, index_file_name(succ_first)));
  ns->info.first_offset = ns->info.next_offset = succ_first;
  ns->info.size_bytes = kFileHeaderSize;
  ns->info.file = succ;
  ns->mem_indexed = true;
  std::lock_guard<std::mutex> g(mu_);
  segments_.push_back(std::move(ns));
  return true;
}

}  // namespace strata::log
