// StreamDeletion: one run of a stream's deletion, the shell around
// DeletionCore (node/deletion_core.h). Each step the core asks for runs on
// the node's BlockingPool through run_task (common/task.h), so it ends in
// exactly one event — its outcome, its exception (fatal), its deadline
// (transient: the step is abandoned and retried) or its cancellation (the
// node is closing: the run ends with Errc::cancelled). Retry delays are
// timers on the run's strand of the node's io_context; no thread of its own.
//
// The run starts at `fence` whatever an earlier run reached: every step is
// idempotent. It ends by calling `done` once, on its strand — unless the
// node's event loop is shut down first, in which case the node (which owns
// the runs) reports the end itself.
//
// What a run does not do: write the marker, stop the uploader or close the
// log. The node does these before it starts a run (node/node.h,
// delete_stream), and a run started at open finds them done.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <functional>
#include <memory>
#include <mutex>

#include "common/task.h"
#include "node/deletion_core.h"
#include "node/deletion_steps.h"

namespace strata::node {

struct DeletionRunOptions {
  DeletionCoreOptions core;
  // A step's deadline (a listing, a batch removal of up to 1000 keys, a
  // catalog write, a directory removal).
  int64_t step_deadline_ms = 180'000;
  uint64_t seed = 0;  // of the backoff jitter; 0: from the clock
};

class StreamDeletion : public std::enable_shared_from_this<StreamDeletion> {
 public:
  using Done = std::function<void(Status)>;

  // Starts the run at once (its first step is posted to the pool).
  static std::shared_ptr<StreamDeletion> start(std::shared_ptr<asio::io_context> io,
                                               TaskContext tasks, DeletionTargets targets,
                                               DeletionRunOptions options, Done done);

  // A snapshot, from any thread.
  DeletionProgress progress() const;
  const std::string& stream() const { return targets_.stream; }

  StreamDeletion(std::shared_ptr<asio::io_context> io, TaskContext tasks, DeletionTargets targets,
                 DeletionRunOptions options, Done done);

 private:
  void apply(DeletionEffect e);
  void execute(RunStep r);
  void on_outcome(DeletionStep step, TaskOutcome<StepOutcome> o);
  void finish(Status s);
  void publish();

  // Shared: the strand and timer must not outlive their io_context.
  std::shared_ptr<asio::io_context> io_;
  TaskContext tasks_;
  const DeletionTargets targets_;
  const DeletionRunOptions opts_;
  Done done_;
  Strand strand_;
  asio::steady_timer timer_;
  DeletionCore core_;  // strand only

  mutable std::mutex mu_;
  DeletionProgress progress_;
};

}  // namespace strata::node
