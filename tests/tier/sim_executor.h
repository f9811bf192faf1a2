// SimExecutor: a deterministic stand-in for a node's blocking pool and
// steady clock (common/task_sim.h), for simulations of a shell. Everything
// runs on the calling thread: the test picks which queued handler, job or
// timer goes next, from its seed, so a schedule replays exactly.
//
//  - Jobs (run_task's blocking work) wait in a queue until the test runs
//    one (any one: completions reorder), holds one until a later time (a
//    hang: its task meets its deadline first), or drops them all (a pool
//    stopping: the tasks end cancelled).
//  - Timers fire when the test moves the clock past them, in expiry order;
//    a cancelled wait ends with operation_aborted, as asio's does.
//  - Handlers posted to the io_context run one poll_one() at a time.
//  - Every task is tracked from task_started to task_ended: a second end is
//    recorded as a violation at once, and ended_once() says whether every
//    task has ended exactly once.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <asio/error.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/random.h"
#include "common/result.h"
#include "common/task_sim.h"

namespace strata::tier::test {

class SimExecutor final : public TaskSim {
 public:
  SimExecutor(asio::io_context& io, ManualClock& clock) : io_(io), clock_(clock) {}

  // ---- TaskSim ----
  uint64_t task_started(const std::string& what) override {
    uint64_t id = next_task_++;
    tasks_[id].what = what;
    return id;
  }
  void post_job(uint64_t task, std::function<void()> job) override {
    Task& t = tasks_[task];
    t.job = std::move(job);
    t.queued = true;
    queue_.push_back(task);
  }
  void task_ended(uint64_t task, TaskEnd end) override {
    Task& t = tasks_[task];
    t.ends += 1;
    t.end = end;
    if (t.ends > 1 && violation_.empty()) {
      violation_ =
          fmt::format("task {} '{}' ended twice (now as {})", task, t.what, task_end_name(end));
    }
  }
  uint64_t arm_timer(const Strand& strand, std::chrono::milliseconds after,
                     std::function<void(const std::error_code&)> fire) override {
    uint64_t id = next_timer_++;
    int64_t at = clock_.now_ms() + std::max<int64_t>(0, after.count());
    timers_.emplace(std::make_pair(at, id), Timer{strand, std::move(fire)});
    timer_at_[id] = at;
    return id;
  }
  void cancel_timer(uint64_t id) override {
    auto it = timer_at_.find(id);
    if (it == timer_at_.end()) return;  // fired already, or shut down
    auto t = timers_.find(std::make_pair(it->second, id));
    timer_at_.erase(it);
    Timer timer = std::move(t->second);
    timers_.erase(t);
    asio::post(timer.strand,
               [fire = std::move(timer.fire)] { fire(asio::error::operation_aborted); });
  }

  // ---- driving ----
  // Runs one ready handler of the io_context; false when none is ready.
  bool run_handler() { return io_.poll_one() > 0; }
  // Jobs that may run now (queued, not held past the clock).
  std::vector<uint64_t> runnable() const {
    std::vector<uint64_t> out;
    for (uint64_t id : queue_) {
      if (tasks_.at(id).held_until <= clock_.now_ms()) out.push_back(id);
    }
    return out;
  }
  // Runs the job of `task` (on this thread); its outcome is posted.
  void run_job(uint64_t task) {
    Task& t = take(task);
    std::function<void()> job = std::move(t.job);
    t.ran = true;
    job();
  }
  // Keeps the job of `task` from running before `until` (clock ms).
  void hold_job(uint64_t task, int64_t until) { tasks_.at(task).held_until = until; }
  // Destroys every queued job unrun, as a stopping pool does.
  void drop_all_jobs() {
    std::vector<uint64_t> q = queue_;
    for (uint64_t id : q) {
      Task& t = take(id);
      t.dropped = true;
      std::function<void()> job = std::move(t.job);
      job = nullptr;  // its guard ends the task as cancelled
    }
  }
  // When something next becomes due by time alone: a timer or a held job.
  std::optional<int64_t> next_due() const {
    std::optional<int64_t> at;
    if (!timers_.empty()) at = timers_.begin()->first.first;
    for (uint64_t id : queue_) {
      int64_t h = tasks_.at(id).held_until;
      if (h > clock_.now_ms()) at = at ? std::min(*at, h) : h;
    }
    return at;
  }
  // Moves the clock to `t` (never back) and fires the timers due by then,
  // in expiry order.
  void advance_to(int64_t t) {
    if (t > clock_.now_ms()) clock_.advance_ms(t - clock_.now_ms());
    while (!timers_.empty() && timers_.begin()->first.first <= clock_.now_ms()) {
      auto it = timers_.begin();
      timer_at_.erase(it->first.second);
      Timer timer = std::move(it->second);
      timers_.erase(it);
      asio::post(timer.strand, [fire = std::move(timer.fire)] { fire(std::error_code()); });
    }
  }

  // Drops every job and timer without running or posting anything (the
  // test is over; the io_context goes next).
  void shut_down() {
    std::vector<std::function<void()>> jobs;
    for (uint64_t id : queue_) {
      jobs.push_back(std::move(tasks_.at(id).job));
      tasks_.at(id).queued = false;
    }
    queue_.clear();
    auto timers = std::move(timers_);
    timers_.clear();
    timer_at_.clear();
    // Destroying them may destroy a shell, whose timers cancel: nothing is
    // left to find.
    jobs.clear();
    timers.clear();
  }

  // ---- checking ----
  const std::string& violation() const { return violation_; }
  // Every task started has ended exactly once, and every job ran or was
  // dropped. An error names the first task that did not.
  Status ended_once() const {
    for (const auto& [id, t] : tasks_) {
      if (t.ends != 1) {
        return Error(Errc::internal, fmt::format("task {} '{}' ended {} times (job {})", id, t.what,
                                                 t.ends, job_state(t)));
      }
      if (t.queued) {
        return Error(Errc::internal, fmt::format("task {} '{}': its job never ran", id, t.what));
      }
    }
    return Status::OK();
  }
  bool idle() const { return queue_.empty() && timers_.empty(); }
  size_t tasks() const { return tasks_.size(); }
  size_t queued() const { return queue_.size(); }
  size_t timers() const { return timers_.size(); }
  uint64_t held() const { return held_; }
  void count_hold() { held_ += 1; }
  // Tasks that ended as `e`.
  uint64_t ended_as(TaskEnd e) const {
    uint64_t n = 0;
    for (const auto& [id, t] : tasks_) n += t.ends > 0 && t.end == e;
    return n;
  }

 private:
  struct Task {
    std::string what;
    std::function<void()> job;
    bool queued = false;
    bool ran = false;
    bool dropped = false;
    int64_t held_until = 0;
    int ends = 0;
    TaskEnd end = TaskEnd::completed;
  };
  struct Timer {
    Strand strand;
    std::function<void(const std::error_code&)> fire;
  };
  static std::string job_state(const Task& t) {
    if (t.ran) return "ran";
    if (t.dropped) return "dropped";
    return t.queued ? "queued" : "never posted";
  }
  Task& take(uint64_t task) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), task));
    Task& t = tasks_.at(task);
    t.queued = false;
    return t;
  }

  asio::io_context& io_;
  ManualClock& clock_;
  std::map<uint64_t, Task> tasks_;
  std::vector<uint64_t> queue_;  // task ids with a job waiting, in post order
  std::map<std::pair<int64_t, uint64_t>, Timer> timers_;  // by (expiry, id)
  std::map<uint64_t, int64_t> timer_at_;                  // id -> expiry
  uint64_t next_task_ = 1;
  uint64_t next_timer_ = 1;
  uint64_t held_ = 0;
  std::string violation_;
};

}  // namespace strata::tier::test
