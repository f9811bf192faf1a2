#include "node/disk_watch.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/statvfs.h>

#include <asio/post.hpp>
#include <chrono>

#include "common/stream_name.h"

namespace strata::node {

std::optional<DiskSpace> disk_space(const std::string& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return std::nullopt;
  return DiskSpace{uint64_t(v.f_bavail) * v.f_frsize, uint64_t(v.f_blocks) * v.f_frsize};
}

namespace {
std::string mb(uint64_t bytes) {
  return fmt::format("{:.1f} MB", double(bytes) / 1e6);
}
int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

DiskWatch::DiskWatch(std::shared_ptr<asio::io_context> io, TaskContext tasks, std::string dir,
                     DiskWatchOptions opts, Writers writers)
    : io_(std::move(io)),
      tasks_(std::move(tasks)),
      dir_(std::move(dir)),
      opts_(opts),
      writers_(std::move(writers)),
      strand_(asio::make_strand(*io_)),
      timer_(strand_),
      guard_(opts.guard) {
  snap_.free_limit_bytes = opts.guard.free_limit_bytes;
}

void DiskWatch::start() {
  asio::post(strand_, [self = shared_from_this()] { self->tick(); });
}

void DiskWatch::stop() {
  stopped_.store(true, std::memory_order_release);
  asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
}

DiskWatchSnapshot DiskWatch::snapshot() const {
  std::lock_guard l(mu_);
  return snap_;
}

void DiskWatch::arm() {
  if (stopped_.load(std::memory_order_acquire)) return;
  // Under the alarm every publisher waits for the next look: it comes
  // sooner (a statvfs costs microseconds), so publishing resumes within a
  // tenth of a second of space being freed, not a whole interval.
  const int64_t ms =
      guard_.alarm() ? std::min(opts_.interval_ms, kAlarmCheckIntervalMs) : opts_.interval_ms;
  timer_.expires_after(std::chrono::milliseconds(ms));
  timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (!ec) self->tick();
  });
}

void DiskWatch::tick() {
  if (stopped_.load(std::memory_order_acquire)) return;
  // Which writers stopped: a look at the node's table and each log's state
  // (locks never held across I/O), here; the free space, which may block
  // on a hung file system, on the pool.
  stopped_logs_.clear();
  for (auto& [name, log] : writers_()) {
    if (!log->closed() && !log->health().ok()) stopped_logs_.emplace_back(name, std::move(log));
  }
  run_task<std::optional<DiskSpace>>(
      tasks_, strand_, std::chrono::milliseconds(opts_.sample_deadline_ms),
      "reading the free space of " + dir_, [dir = dir_] { return disk_space(dir); },
      [self = shared_from_this()](TaskOutcome<std::optional<DiskSpace>> out) {
        self->on_sample(std::move(out));
      });
}

void DiskWatch::on_sample(TaskOutcome<std::optional<DiskSpace>> out) {
  if (stopped_.load(std::memory_order_acquire)) return;
  std::optional<DiskSpace> space;
  if (out.end == TaskEnd::completed) {
    space = *out.value;
  } else {
    // Unknown this time: the alarm keeps its state.
    spdlog::warn("disk: {}", out.error.to_string());
  }
  DiskSample ds;
  ds.now_ms = now_ms();
  if (space) ds.free_bytes = space->free_bytes;
  for (const auto& [name, log] : stopped_logs_) ds.stopped.push_back(name);
  const DiskEffects e = guard_.on(ds);
  const uint64_t limit = opts_.guard.free_limit_bytes;
  if (e.alarm == AlarmChange::raised) {
    spdlog::error(
        "disk alarm: {} free on the file system of {}, below the limit of {} "
        "(disk.free_limit_bytes): publishing is refused (code 6, stream_not_available) until "
        "there is more; consumers, uploads and retention go on",
        mb(space->free_bytes), dir_, mb(limit));
  } else if (e.alarm == AlarmChange::cleared) {
    spdlog::info(
        "disk alarm cleared: {} free on the file system of {} (limit {}): publishing "
        "resumes",
        mb(space->free_bytes), dir_, mb(limit));
  }
  alarm_->store(guard_.alarm(), std::memory_order_release);
  {
    std::lock_guard l(mu_);
    if (space) snap_.space = space;
    snap_.alarm = guard_.alarm();
    snap_.alarms_raised = guard_.alarms_raised();
    snap_.stopped = guard_.stopped();
  }
  for (const auto& name : e.restart) {
    for (auto& [n, log] : stopped_logs_) {
      if (n == name) restart(name, log);
    }
  }
  arm();
}

void DiskWatch::restart(const std::string& name, std::shared_ptr<log::StreamLog> log) {
  run_task<Status>(
      tasks_, strand_, std::chrono::milliseconds(opts_.restart_deadline_ms),
      "restarting the writer of stream " + name, [log] { return log->restart_writer(); },
      [self = shared_from_this(), name](TaskOutcome<Status> out) {
        std::string error;
        if (out.end != TaskEnd::completed) {
          error = out.error.to_string();
        } else if (!out.value->ok()) {
          error = out.value->error().to_string();
        }
        if (!error.empty()) {
          spdlog::warn("stream {}: the writer stays stopped, restart failed: {}",
                       printable_stream(name), error);
        }
        self->guard_.on_restart(name, error, now_ms());
        std::lock_guard l(self->mu_);
        (error.empty() ? self->snap_.restarts : self->snap_.failed_restarts) += 1;
        self->snap_.stopped = self->guard_.stopped();
      });
}

}  // namespace strata::node
