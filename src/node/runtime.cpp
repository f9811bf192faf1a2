#include "node/runtime.h"

#include <asio/executor_work_guard.hpp>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/assert.h"
#include "node/node_limits.h"

namespace strata::node {

struct Runtime::Impl {
  // An io_context whose shutdown (destroying every handler still queued)
  // stop() may call.
  struct EventLoop : asio::io_context {
    using asio::io_context::shutdown;
  };

  RuntimeOptions opts;
  std::shared_ptr<EventLoop> io = std::make_shared<EventLoop>();
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  std::shared_ptr<BlockingPool> pool;
  std::shared_ptr<IoLifetime> lifetime = std::make_shared<IoLifetime>();
  std::mutex stop_mu;
  bool stopped = false;
};

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::shared_ptr<Runtime> Runtime::start(const RuntimeOptions& o) {
  STRATA_ASSERT(o.io_threads >= 1, "a runtime needs an event-loop thread");
  auto impl = std::make_unique<Impl>();
  impl->opts = o;
  BlockingPoolOptions po;
  po.threads = o.blocking_threads;
  po.max_threads = std::max(o.max_blocking_threads, o.blocking_threads);
  impl->pool = std::make_shared<BlockingPool>(po);
  impl->work.emplace(asio::make_work_guard(*impl->io));
  for (uint32_t i = 0; i < o.io_threads; ++i) {
    impl->threads.emplace_back([io = impl->io] { io->run(); });
  }
  return std::shared_ptr<Runtime>(new Runtime(std::move(impl)));
}

Runtime::~Runtime() {
  stop();
}

asio::io_context& Runtime::io() {
  return *impl_->io;
}

std::shared_ptr<asio::io_context> Runtime::io_shared() {
  return impl_->io;
}

TaskContext Runtime::tasks() {
  return TaskContext{impl_->pool.get(), impl_->lifetime};
}

std::shared_ptr<BlockingPool> Runtime::pool() {
  return impl_->pool;
}

BlockingPoolStats Runtime::pool_stats() const {
  return impl_->pool->stats();
}

const RuntimeOptions& Runtime::options() const {
  return impl_->opts;
}

void Runtime::stop() {
  Impl& m = *impl_;
  {
    std::lock_guard l(m.stop_mu);
    if (m.stopped) return;
    m.stopped = true;
  }
  for (const auto& t : m.threads) {
    STRATA_ASSERT(t.get_id() != std::this_thread::get_id(),
                  "a runtime is stopped from one of its own threads (it would join itself)");
  }
  // In-flight tasks: given the pool's grace to finish, then abandoned. Only
  // then the event loop stops (their outcomes are dropped).
  m.pool->stop();
  m.lifetime->end();
  m.work.reset();
  m.io->stop();
  for (auto& t : m.threads) t.join();
  m.threads.clear();
  // Handlers still queued (an uploader's close, cancelled timers) own the
  // shells, which own the event loop: run them out here, on this thread,
  // so nothing is left holding the loop alive. A closed shell's handlers
  // only tidy up and start nothing new; the bound is a safety net.
  m.io->restart();
  for (int round = 0; round < kRuntimeDrainRounds && m.io->poll() > 0; ++round) {
  }
  // What is left (timers of tasks abandoned at the pool's stop) is
  // destroyed unrun.
  m.io->shutdown();
}

}  // namespace strata::node
