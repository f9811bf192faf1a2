// Runtime: the one event loop and the one blocking pool of a process. Every
// shell of a node runs on it — uploaders and deletions as strands of its
// io_context, their blocking work as tasks on its BlockingPool
// (common/task.h) — and so does `strata serve` (connections, appends,
// readers). A process that opened two of them would run twice the threads
// for the same work and split one budget of blocking threads in two.
//
// Stopping runs in a fixed order, because handlers still queued own the
// objects (uploaders, connections) that own strands and timers of the
// io_context: the pool is stopped first (queued jobs cancelled, running
// ones given its grace, then abandoned), then the io lifetime ends (late
// jobs post nothing), the loop stops and its threads are joined, the
// handlers still queued are run out on the stopping thread (closed shells
// only tidy up), and what is left is destroyed unrun.
//
// Thread safety: every method may be called from any thread; stop() is
// idempotent and must not be called from one of the runtime's threads.
#pragma once

#include <asio/io_context.hpp>
#include <cstdint>
#include <memory>

#include "common/blocking_pool.h"
#include "common/task.h"

namespace strata::node {

struct RuntimeOptions {
  uint32_t io_threads = 2;
  size_t blocking_threads = 8;
  // The pool's hard bound, hung jobs included (common/blocking_pool.h).
  size_t max_blocking_threads = 64;
};

class Runtime {
 public:
  static std::shared_ptr<Runtime> start(const RuntimeOptions& o);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  asio::io_context& io();
  // Shared ownership of the io_context, for shells (uploaders, deletions)
  // whose strands and timers may outlive the object that made them.
  std::shared_ptr<asio::io_context> io_shared();
  TaskContext tasks();
  std::shared_ptr<BlockingPool> pool();
  BlockingPoolStats pool_stats() const;
  const RuntimeOptions& options() const;

  void stop();

 private:
  struct Impl;
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::node
