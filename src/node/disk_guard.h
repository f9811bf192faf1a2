// DiskGuard: the node's free-space alarm and the way back of its
// fail-stopped writers, as a pure state machine (samples and time passed
// in; node/disk_watch.h is its shell).
//
// The alarm is RabbitMQ's disk alarm: raised while the data directory's
// file system has less free space than the limit (RabbitMQ's default
// disk_free_limit, 50 MB), cleared as soon as it has at least that much
// again. While it is raised the server refuses publishes (consumers read
// on; uploads and retention go on freeing space).
//
// A writer that fail-stopped (a full disk, an I/O error) is restarted in
// place (log/stream_log.h, restart_writer) once the alarm is clear:
// first_retry_ms after it was seen stopped, then after a doubling delay (up
// to max_retry_ms) while its restarts fail — or succeed but the writer
// stops again within max_retry_ms (a disk still full with the alarm off: a
// restart needs no space, the next append does), so a writer that cannot
// stay up costs one restart per max_retry_ms, not one per check. A writer
// up for max_retry_ms after its restart, or a stream no longer open, is
// forgotten.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace strata::node {

struct DiskGuardOptions {
  // 0: no alarm.
  uint64_t free_limit_bytes = 50'000'000;
  int64_t first_retry_ms = 1'000;
  int64_t max_retry_ms = 30'000;
};

struct DiskSample {
  int64_t now_ms = 0;
  // Free bytes for the node on the data directory's file system; nullopt
  // when they could not be read (the alarm keeps its state).
  std::optional<uint64_t> free_bytes;
  // The streams whose writer is fail-stopped now.
  std::vector<std::string> stopped;
};

enum class AlarmChange { none, raised, cleared };

struct DiskEffects {
  AlarmChange alarm = AlarmChange::none;
  // Writers to restart now (each answered by on_restart).
  std::vector<std::string> restart;
};

// A stopped writer as the guard sees it (status).
struct StoppedWriter {
  std::string stream;
  uint32_t failed_restarts = 0;
  int64_t next_attempt_ms = 0;
  bool restarting = false;
  std::string last_error;
  // Set by a restart that worked: the writer is watched until it has been
  // up for max_retry_ms; stopped again before, it counts as a failure.
  std::optional<int64_t> up_since_ms;
};

struct DiskSpace {
  uint64_t free_bytes = 0;
  uint64_t size_bytes = 0;
};

// What the node's disk watch (node/disk_watch.h) knows now: status and
// metrics.
struct DiskWatchSnapshot {
  std::optional<DiskSpace> space;  // as last read
  uint64_t free_limit_bytes = 0;
  bool alarm = false;
  uint64_t alarms_raised = 0;
  uint64_t restarts = 0;         // writers brought back
  uint64_t failed_restarts = 0;  // attempts that failed
  std::vector<StoppedWriter> stopped;
};

class DiskGuard {
 public:
  explicit DiskGuard(DiskGuardOptions o) : opts_(o) {}

  DiskEffects on(const DiskSample& s);
  // The outcome of a restart on() asked for; `error` empty when it worked.
  void on_restart(const std::string& stream, const std::string& error, int64_t now_ms);

  bool alarm() const { return alarm_; }
  uint64_t alarms_raised() const { return raised_; }
  const DiskGuardOptions& options() const { return opts_; }
  std::vector<StoppedWriter> stopped() const;

 private:
  // The next attempt after a failure: first_retry_ms doubling per failure.
  void backoff(StoppedWriter& w, int64_t now_ms) const;

  DiskGuardOptions opts_;
  bool alarm_ = false;
  uint64_t raised_ = 0;
  std::map<std::string, StoppedWriter> stopped_;
};

}  // namespace strata::node
