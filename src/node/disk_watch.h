// DiskWatch: the shell of DiskGuard (node/disk_guard.h). Every interval it
// reads the data directory's free space and which writers are fail-stopped
// (a task on the blocking pool, so a hung file system never stalls the
// event loop), feeds the guard, logs what changed, and runs the restarts
// it asks for, one task each. Every task ends in exactly one outcome
// (common/task.h): a sample that hangs past its deadline counts as
// unreadable, a restart that hangs as a failed one.
//
// Thread safety: start/stop from any thread; the readers (alarm, snapshot)
// from any thread.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/task.h"
#include "log/stream_log.h"
#include "node/disk_guard.h"

namespace strata::node {

// The file system holding `dir`: bytes available to the node and its size
// (statvfs); nullopt when it cannot be read.
std::optional<DiskSpace> disk_space(const std::string& dir);

// How often the free space is read while the alarm is raised.
inline constexpr int64_t kAlarmCheckIntervalMs = 100;

struct DiskWatchOptions {
  DiskGuardOptions guard;
  int64_t interval_ms = 1'000;
  int64_t sample_deadline_ms = 10'000;
  int64_t restart_deadline_ms = 60'000;
};

class DiskWatch : public std::enable_shared_from_this<DiskWatch> {
 public:
  // The node's open logs by stream name (called on the watch's strand:
  // quick, no I/O).
  using Writers =
      std::function<std::vector<std::pair<std::string, std::shared_ptr<log::StreamLog>>>()>;

  DiskWatch(std::shared_ptr<asio::io_context> io, TaskContext tasks, std::string dir,
            DiskWatchOptions opts, Writers writers);
  // Takes the first sample at once.
  void start();
  // No sample or restart starts after this; one in flight ends unheeded.
  void stop();

  // Raised: publishing is to be refused. The flag itself is shared with
  // whoever checks it on every publish (StreamHandle).
  bool alarm() const { return alarm_->load(std::memory_order_acquire); }
  std::shared_ptr<const std::atomic<bool>> alarm_flag() const { return alarm_; }
  DiskWatchSnapshot snapshot() const;

 private:
  void tick();
  void on_sample(TaskOutcome<std::optional<DiskSpace>> out);
  void restart(const std::string& name, std::shared_ptr<log::StreamLog> log);
  void arm();

  std::shared_ptr<asio::io_context> io_;
  TaskContext tasks_;
  const std::string dir_;
  const DiskWatchOptions opts_;
  Writers writers_;
  Strand strand_;
  asio::steady_timer timer_;
  std::shared_ptr<std::atomic<bool>> alarm_ = std::make_shared<std::atomic<bool>>(false);
  std::atomic<bool> stopped_{false};
  DiskGuard guard_;  // on strand_
  // The fail-stopped writers the current sample found; on strand_.
  std::vector<std::pair<std::string, std::shared_ptr<log::StreamLog>>> stopped_logs_;
  mutable std::mutex mu_;
  DiskWatchSnapshot snap_;  // guarded by mu_
};

}  // namespace strata::node
