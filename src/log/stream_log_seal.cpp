// Seal syncs off the append path (FsyncPolicy::never) and the sync mark
// (sync_mark.h). Under `always` and `interval` roll() seals inline, as
// before; under `never` it hands the sealed segment to a thread the log
// owns, started when a seal is queued and ended when none is left, so an
// idle log (or a thousand of them) holds no thread.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "log/log_limits.h"
#include "log/stream_log_impl.h"
#include "log/sync_mark.h"

namespace strata::log {

Status StreamLog::Impl::settle_sync_mark(std::optional<uint64_t> mark) {
  std::vector<std::shared_ptr<LogSegment>> unsynced;
  uint64_t active_first = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    active_first = segments_.back()->info.first_offset;
    for (size_t i = 0; i + 1 < segments_.size(); ++i) {
      if (mark && segments_[i]->info.first_offset >= *mark) unsynced.push_back(segments_[i]);
    }
  }
  // A process crash under `never` can leave sealed segments that recovery
  // read from the page cache but no fsync covered: sync them before the
  // mark moves past them (or goes away).
  for (const auto& seg : unsynced) {
    for (const std::string* p : {&seg->path, &seg->index_path}) {
      STRATA_ASSIGN_OR_RETURN(auto f, fs_.open(*p, OpenOptions::read_write()));
      // The crash may have come before the seal freed the reserved space.
      if (p == &seg->path) release_reserved(*f);
      STRATA_TRY(f->sync());
    }
  }
  if (opts_.fsync == FsyncPolicy::never) {
    // The mark must be durable before the first background seal, or a power
    // loss could leave a torn sealed segment that recovery trusts.
    if (mark != active_first) STRATA_TRY(write_sync_mark(fs_, dir_, active_first));
  } else if (mark) {
    // `always` and `interval` seal inline: every sealed segment is synced,
    // which is what no mark says.
    STRATA_TRY(remove_sync_mark(fs_, dir_));
  }
  return Status::OK();
}

Status StreamLog::Impl::wait_for_seal_room() {
  std::unique_lock<std::mutex> l(seal_mu_);
  const size_t room = opts_.max_pending_seal_syncs;
  if (seals_.size() >= room && !seal_error_) {
    ++seal_waits_;
    seal_waiting_ = true;
    seal_cv_.wait(l, [&] { return seals_.size() < room || seal_error_.has_value(); });
    seal_waiting_ = false;
  }
  if (seal_error_) return *seal_error_;
  return Status::OK();
}

void StreamLog::Impl::seal_in_background(SealJob job) {
  std::lock_guard<std::mutex> g(seal_mu_);
  seals_.push_back(std::move(job));
  seal_start_cv_.notify_all();
  if (sealer_active_) return;
  // A previous sealer set sealer_active_ false as its last step under
  // seal_mu_, so joining it here cannot wait for more than its return.
  if (sealer_.joinable()) sealer_.join();
  sealer_active_ = true;
  sealer_ = std::thread([this] { seal_loop(); });
}

void StreamLog::Impl::seal_loop() {
  // The sync does the segment's writeback on this thread (ext4 submits the
  // pages from the fsync caller): let appenders have the CPU first. It
  // cannot starve: once max_pending_seal_syncs are pending the appender
  // waits for this thread. (Raising one's own nice value needs no
  // privilege; if it fails the sync just competes as before.)
  (void)::setpriority(PRIO_PROCESS, id_t(::gettid()), kSealerNice);
  std::unique_lock<std::mutex> l(seal_mu_);
  while (!seals_.empty()) {
    wait_for_seal_start(l);
    // The job stays queued while it runs: it still counts as pending.
    const SealJob job = seals_.front();
    l.unlock();
    Status s = run_seal(job);
    l.lock();
    seals_.pop_front();
    if (s.ok()) {
      ++seals_completed_;
      seal_cv_.notify_all();
      continue;
    }
    // Later seals are dropped: the log is stopped and reopening (recovery)
    // is the way back, as after any I/O error.
    seal_error_ = s.error();
    seal_failed_.store(true, std::memory_order_release);
    seals_.clear();
    seal_cv_.notify_all();
    l.unlock();
    seal_failed(s.error());
    l.lock();
  }
  sealer_active_ = false;
}

// The sync of a sealed segment writes the whole segment back, and on a
// machine with few cores that writeback competes with the appender that is
// still filling the page cache (docs/BENCHMARKS.md, "fsync=never without
// syncs on the append path"). So, like the kernel's own writeback, it waits
// for the burst to pause: it starts when the writer has written nothing for
// kSealIdle, when max_pending_seal_syncs seals are pending (the next seal
// would make an append wait, so the bound on unsynced sealed segments is
// unchanged), kSealMaxDelay after the seal at the latest, or at close.
// `never` promises nothing at a power loss before the mark moves; the mark
// stays correct because it only moves after the sync.
void StreamLog::Impl::wait_for_seal_start(std::unique_lock<std::mutex>& l) {
  using clock = std::chrono::steady_clock;
  while (!seal_now_ && seals_.size() < opts_.max_pending_seal_syncs) {
    const auto now = clock::now();
    const auto last_write =
        clock::time_point(clock::duration(last_write_ns_.load(std::memory_order_relaxed)));
    const auto idle_at = last_write + kSealIdle;
    const auto latest = seals_.front().sealed_at + kSealMaxDelay;
    if (now >= idle_at || now >= latest) return;
    seal_start_cv_.wait_until(l, std::min(idle_at, latest));
  }
}

Status StreamLog::Impl::run_seal(const SealJob& job) {
  // Exactly one outcome whatever the file layer does: a throw becomes the
  // error that stops the log.
  try {
    // A no-op when nothing was reserved past the end.
    release_reserved(*job.file);
    Status s = job.file->sync();
    if (s.ok()) s = job.index->sync();
    // Syncs the directory too, so the successor's entry is durable as well.
    if (s.ok()) s = write_sync_mark(fs_, dir_, job.successor_first);
    if (s.ok()) return s;
    return Error(s.code(), fmt::format("stream {}: background sync of sealed segment {}: {}", dir_,
                                       job.file->path(), s.error().message));
  } catch (const std::exception& e) {
    return Error(Errc::internal, fmt::format("stream {}: background sync of sealed segment {} "
                                             "threw: {}",
                                             dir_, job.file->path(), e.what()));
  }
}

void StreamLog::Impl::release_reserved(File& f) {
  Status s = f.release_reserved();
  if (!s.ok()) {
    spdlog::warn("stream {}: space reserved past the end of {} stays allocated: {}", dir_, f.path(),
                 s.error().to_string());
  }
}

void StreamLog::Impl::seal_failed(const Error& e) {
  std::lock_guard<std::mutex> g(mu_);
  if (failed_) return;
  spdlog::error("stream {}: writer fail-stopped, committed offset stays at {}: {}", dir_,
                committed_next(), e.to_string());
  // New appends fail at once; a group being written now fails when its
  // leader next checks seal_status(), which releases the queue.
  failed_ = e;
  commit_cv_.notify_all();
}

Status StreamLog::Impl::seal_status() {
  if (!seal_failed_.load(std::memory_order_acquire)) return Status::OK();
  std::lock_guard<std::mutex> g(seal_mu_);
  return *seal_error_;
}

Status StreamLog::Impl::drain_seals() {
  std::unique_lock<std::mutex> l(seal_mu_);
  seal_now_ = true;
  seal_start_cv_.notify_all();
  seal_cv_.wait(l, [&] { return seals_.empty(); });
  std::thread t = std::move(sealer_);
  l.unlock();
  // The sealer's last step is under seal_mu_ after the queue emptied.
  if (t.joinable()) t.join();
  l.lock();
  if (seal_error_) return *seal_error_;
  return Status::OK();
}

SealSyncStats StreamLog::Impl::seal_syncs() const {
  std::lock_guard<std::mutex> g(seal_mu_);
  return SealSyncStats{seals_.size(), seals_completed_, seal_waits_, seal_waiting_};
}

}  // namespace strata::log
