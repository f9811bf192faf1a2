// Tasks that always end (common/task.h) and the pool under them
// (common/blocking_pool.h): every task delivers exactly one outcome —
// completed, threw, deadline or cancelled — and a hung job neither blocks
// the pool nor delivers a second outcome when it finally returns.
#include "common/task.h"

#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace strata {
namespace {

struct Loop {
  Loop(BlockingPoolOptions o = {})
      : pool(o),
        lifetime(std::make_shared<IoLifetime>()),
        guard(asio::make_work_guard(io)),
        strand(asio::make_strand(io)),
        thread([this] { io.run(); }) {}
  ~Loop() {
    pool.stop();
    lifetime->end();
    guard.reset();
    io.stop();
    thread.join();
  }
  TaskContext ctx() { return TaskContext{&pool, lifetime}; }
  // Runs fn on the strand (run_task must be called there).
  void on_strand(std::function<void()> fn) { asio::post(strand, std::move(fn)); }

  asio::io_context io;
  BlockingPool pool;
  std::shared_ptr<IoLifetime> lifetime;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  Strand strand;
  std::thread thread;
};

// Collects outcomes; wait_for(n) blocks until n arrived.
template <class R>
struct Outcomes {
  void add(TaskOutcome<R> o) {
    std::lock_guard l(mu);
    got.push_back(std::move(o));
    cv.notify_all();
  }
  bool wait_for(size_t n, std::chrono::milliseconds t = std::chrono::seconds(10)) {
    std::unique_lock l(mu);
    return cv.wait_for(l, t, [&] { return got.size() >= n; });
  }
  size_t count() {
    std::lock_guard l(mu);
    return got.size();
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<TaskOutcome<R>> got;
};

TEST(Task, CompletedDeliversTheJobsValueOnce) {
  Loop loop;
  Outcomes<int> out;
  loop.on_strand([&] {
    run_task<int>(
        loop.ctx(), loop.strand, std::chrono::seconds(5), "answer", [] { return 42; },
        [&](TaskOutcome<int> o) { out.add(std::move(o)); });
  });
  ASSERT_TRUE(out.wait_for(1));
  EXPECT_EQ(out.got[0].end, TaskEnd::completed);
  EXPECT_EQ(*out.got[0].value, 42);
}

TEST(Task, AJobThatThrowsEndsAsThrewWithTheMessage) {
  Loop loop;
  Outcomes<int> out;
  loop.on_strand([&] {
    run_task<int>(
        loop.ctx(), loop.strand, std::chrono::seconds(5), "thrower",
        []() -> int { throw std::runtime_error("boom"); },
        [&](TaskOutcome<int> o) { out.add(std::move(o)); });
  });
  ASSERT_TRUE(out.wait_for(1));
  EXPECT_EQ(out.got[0].end, TaskEnd::threw);
  EXPECT_FALSE(out.got[0].value.has_value());
  EXPECT_NE(out.got[0].error.message.find("thrower: threw: boom"), std::string::npos);
}

TEST(Task, AHungJobEndsAtItsDeadlineAndItsLateResultIsDropped) {
  Loop loop;
  Outcomes<int> out;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false, returned = false;
  loop.on_strand([&] {
    run_task<int>(
        loop.ctx(), loop.strand, std::chrono::milliseconds(50), "hung",
        [&] {
          std::unique_lock l(mu);
          cv.wait(l, [&] { return release; });
          returned = true;
          cv.notify_all();
          return 1;
        },
        [&](TaskOutcome<int> o) { out.add(std::move(o)); });
  });
  ASSERT_TRUE(out.wait_for(1));
  EXPECT_EQ(out.got[0].end, TaskEnd::deadline);
  EXPECT_EQ(out.got[0].error.code, Errc::timeout);
  EXPECT_EQ(loop.pool.stats().abandoned, 1u);
  {
    std::unique_lock l(mu);
    release = true;
    cv.notify_all();
    cv.wait(l, [&] { return returned; });
  }
  // The late result must not become a second outcome: run one more task on
  // the same strand and check it is the only other outcome.
  Outcomes<int> after;
  loop.on_strand([&] {
    run_task<int>(
        loop.ctx(), loop.strand, std::chrono::seconds(5), "after", [] { return 2; },
        [&](TaskOutcome<int> o) { after.add(std::move(o)); });
  });
  ASSERT_TRUE(after.wait_for(1));
  EXPECT_EQ(out.count(), 1u);
}

TEST(Task, AJobDroppedUnrunEndsAsCancelled) {
  Loop loop;
  Outcomes<int> out;
  std::promise<void> posted;
  loop.pool.stop();  // every job posted from now on is dropped
  loop.on_strand([&] {
    run_task<int>(
        loop.ctx(), loop.strand, std::chrono::seconds(5), "dropped", [] { return 1; },
        [&](TaskOutcome<int> o) { out.add(std::move(o)); });
  });
  ASSERT_TRUE(out.wait_for(1));
  EXPECT_EQ(out.got[0].end, TaskEnd::cancelled);
  EXPECT_EQ(out.got[0].error.code, Errc::cancelled);
}

// A node closes while a job it abandoned still hangs (the pool does not wait
// for abandoned jobs): when the job finally returns, after the io_context is
// gone, nothing of the task's timer or strand may be touched (the sanitizer
// build reports it as a use after free).
TEST(Task, AHungJobThatOutlivesItsIoContextTouchesNothingOfIt) {
  auto io = std::make_unique<asio::io_context>();
  auto lifetime = std::make_shared<IoLifetime>();
  BlockingPoolOptions o;
  o.stop_grace = std::chrono::milliseconds(50);
  BlockingPool pool(o);
  auto guard = asio::make_work_guard(*io);
  std::optional<Strand> strand(asio::make_strand(*io));
  std::thread thread([&] { io->run(); });

  auto gate = std::make_shared<std::promise<void>>();
  std::shared_future<void> opened = gate->get_future().share();
  Outcomes<int> out;
  asio::post(*strand, [&] {
    run_task<int>(
        TaskContext{&pool, lifetime}, *strand, std::chrono::milliseconds(50), "outlives",
        [opened] {
          opened.wait();
          return 1;
        },
        [&](TaskOutcome<int> r) { out.add(std::move(r)); });
  });
  ASSERT_TRUE(out.wait_for(1));
  EXPECT_EQ(out.got[0].end, TaskEnd::deadline);

  // The node's close, in its order; then the io_context is destroyed.
  pool.stop();
  lifetime->end();
  guard.reset();
  io->stop();
  thread.join();
  strand.reset();
  io.reset();
  gate->set_value();  // the job returns now, on its detached thread
  // The pool counts a job as run once its closure is destroyed.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool.stats().jobs_run == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  EXPECT_EQ(pool.stats().jobs_run, 1u);
  EXPECT_EQ(out.count(), 1u);
}

TEST(BlockingPool, AbandonedJobsLetThePoolGrowWithinItsBound) {
  BlockingPoolOptions o;
  o.threads = 1;
  o.max_threads = 2;
  o.stop_grace = std::chrono::milliseconds(100);
  BlockingPool pool(o);
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  bool release = false;
  auto hang = [&] {
    std::unique_lock l(mu);
    started += 1;
    cv.notify_all();
    cv.wait(l, [&] { return release; });
  };
  auto t1 = pool.post(hang);
  {
    std::unique_lock l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(5), [&] { return started == 1; }));
  }
  // Not abandoned: the second job waits for the only thread.
  auto t2 = pool.post(hang);
  EXPECT_EQ(pool.stats().queued, 1u);
  t1.abandon();  // its deadline passed: one more thread may run
  {
    std::unique_lock l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(5), [&] { return started == 2; }));
  }
  t2.abandon();
  // At max_threads: a third job queues.
  auto t3 = pool.post([] {});
  EXPECT_EQ(pool.stats().threads, 2u);
  EXPECT_EQ(pool.stats().queued, 1u);
  {
    std::lock_guard l(mu);
    release = true;
    cv.notify_all();
  }
  // Once released, the abandoned jobs finish and the bound applies again.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (pool.stats().abandoned != 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  EXPECT_EQ(pool.stats().abandoned, 0u);
  pool.stop();
}

TEST(BlockingPool, StopDropsQueuedJobsAndDoesNotWaitForeverOnAHungOne) {
  BlockingPoolOptions o;
  o.threads = 1;
  o.stop_grace = std::chrono::milliseconds(50);
  auto pool = std::make_unique<BlockingPool>(o);
  auto gate = std::make_shared<std::promise<void>>();
  std::shared_future<void> opened = gate->get_future().share();
  std::promise<void> running;
  pool->post([opened, &running] {
    running.set_value();
    opened.wait();
  });
  running.get_future().wait();
  bool ran = false;
  pool->post([&ran] { ran = true; });
  auto t0 = std::chrono::steady_clock::now();
  pool->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(pool->stats().jobs_dropped, 1u);
  pool.reset();
  gate->set_value();  // the detached thread finishes on its own
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace strata
