// The seam a deterministic simulation drives a shell through (tests only).
//
// A shell takes its blocking pool and its io_context from the node
// (TaskContext, common/task.h). In production TaskContext::sim is null and
// nothing here changes what runs: jobs go to the BlockingPool and every
// ShellTimer is an asio::steady_timer. A test that sets TaskContext::sim
// gets, instead:
//  - every job run_task would post to the pool, to run (on the simulation's
//    own thread) or drop when the simulation chooses;
//  - every ShellTimer wait, to fire when the simulation's clock reaches it —
//    virtual time, so a 30 s persist deadline costs nothing to reach;
//  - the start and the end of every task, to check that each ends once.
// With the io_context driven by the same thread (poll_one), the whole shell
// then runs in an order the simulation's seed alone decides.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace strata {

using Strand = asio::strand<asio::io_context::executor_type>;

enum class TaskEnd : uint8_t { completed, threw, deadline, cancelled };
std::string_view task_end_name(TaskEnd e);

class TaskSim {
 public:
  virtual ~TaskSim() = default;

  // run_task began a task described by `what`; the id names it below.
  virtual uint64_t task_started(const std::string& what) = 0;
  // The task's job, in place of BlockingPool::post. The simulation runs it
  // once, or destroys it unrun (then the task ends as cancelled).
  virtual void post_job(uint64_t task, std::function<void()> job) = 0;
  // The task's outcome is being handed to its caller, on its strand.
  virtual void task_ended(uint64_t task, TaskEnd end) = 0;

  // A ShellTimer wait: `fire` is to be posted to `strand` with no error once
  // the simulation's clock is `after` past now, or with
  // asio::error::operation_aborted if cancel_timer(id) comes first.
  virtual uint64_t arm_timer(const Strand& strand, std::chrono::milliseconds after,
                             std::function<void(const std::error_code&)> fire) = 0;
  virtual void cancel_timer(uint64_t id) = 0;
};

// A timer on a strand, with the part of asio::steady_timer's interface the
// shells use (expires_after, async_wait, cancel; a new expiry or the
// destructor cancels pending waits). Without a TaskSim it is that timer.
class ShellTimer {
 public:
  ShellTimer(const Strand& strand, TaskSim* sim) : real_(strand), sim_(sim) {
    if (sim_) strand_.emplace(strand);
  }
  ~ShellTimer() {
    if (sim_) cancel();
  }
  ShellTimer(const ShellTimer&) = delete;
  ShellTimer& operator=(const ShellTimer&) = delete;

  void expires_after(std::chrono::milliseconds d) {
    if (!sim_) {
      real_.expires_after(d);
      return;
    }
    cancel();
    after_ = d;
  }
  template <class Handler>
  void async_wait(Handler&& h) {
    if (!sim_) {
      real_.async_wait(std::forward<Handler>(h));
      return;
    }
    waits_.push_back(sim_->arm_timer(
        *strand_, after_, std::function<void(const std::error_code&)>(std::forward<Handler>(h))));
  }
  void cancel() {
    if (!sim_) {
      real_.cancel();
      return;
    }
    for (uint64_t id : waits_) sim_->cancel_timer(id);
    waits_.clear();
  }

 private:
  asio::steady_timer real_;
  TaskSim* sim_ = nullptr;
  // Simulated: the strand waits end on, the expiry, the waits armed since.
  std::optional<Strand> strand_;
  std::chrono::milliseconds after_{0};
  std::vector<uint64_t> waits_;
};

}  // namespace strata
