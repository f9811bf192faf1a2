// Governor: concurrency bound, round-robin fairness across owners, FIFO per
// owner, byte pacing with the unlimited fast path, and cancellation.
#include "tier/governor.h"

#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::tier {
namespace {

struct Loop {
  Loop() : guard(asio::make_work_guard(io)), thread([this] { io.run(); }) {}
  ~Loop() {
    guard.reset();
    io.stop();
    thread.join();
  }
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  std::thread thread;
};

struct Recorder {
  void grant(uint64_t owner, int n, Governor::Permit p) {
    std::lock_guard l(mu);
    order.emplace_back(owner, n);
    permits.push_back(std::move(p));
  }
  std::vector<std::pair<uint64_t, int>> order;
  std::vector<Governor::Permit> permits;
  std::mutex mu;
};

TEST(Governor, BoundsConcurrencyAndServesOwnersRoundRobin) {
  Loop loop;
  GovernorConfig c;
  c.max_concurrent = 1;
  auto g = Governor::make(loop.io, c, system_clock());
  Recorder r;
  // Owner 1 queues a backlog of 5 before owner 2's single request.
  for (int i = 0; i < 5; ++i) {
    g->request(1, 100, [&r, i](Governor::Permit p) { r.grant(1, i, std::move(p)); });
  }
  g->request(2, 100, [&r](Governor::Permit p) { r.grant(2, 0, std::move(p)); });
  ASSERT_EQ(r.order.size(), 1u);  // one slot
  EXPECT_EQ(g->stats().in_flight, 1u);
  EXPECT_EQ(g->stats().queued, 5u);
  // Releasing one permit admits the next; owner 2 is served after at most
  // one more transfer of owner 1's backlog, not after all of it.
  for (int step = 0; step < 5; ++step) {
    Governor::Permit p;
    {
      std::lock_guard l(r.mu);
      p = std::move(r.permits.back());
    }
    p.release();
  }
  ASSERT_EQ(r.order.size(), 6u);
  EXPECT_EQ(r.order[0], std::make_pair(uint64_t(1), 0));
  EXPECT_EQ(r.order[1], std::make_pair(uint64_t(1), 1));
  EXPECT_EQ(r.order[2], std::make_pair(uint64_t(2), 0));
  // Owner 1's own requests stay in FIFO order.
  for (int i = 2; i < 5; ++i) EXPECT_EQ(r.order[size_t(i) + 1], std::make_pair(uint64_t(1), i));
}

TEST(Governor, UnlimitedAdmitsAtOnceUpToTheConcurrencyBound) {
  Loop loop;
  GovernorConfig c;
  c.max_concurrent = 3;
  auto g = Governor::make(loop.io, c, system_clock());
  Recorder r;
  for (int i = 0; i < 5; ++i) {
    g->request(7, 1ull << 40, [&r, i](Governor::Permit p) { r.grant(7, i, std::move(p)); });
  }
  EXPECT_EQ(r.order.size(), 3u);
  EXPECT_TRUE(g->stats().unlimited);
  EXPECT_EQ(g->stats().throttle_waits, 0u);
  // The two queued requests would be granted into `r` while its permits
  // are destroyed (the recorder goes before the governor).
  g->cancel(7);
}

TEST(Governor, RateLimitedRequestsWaitForTokensAndOversizedOnesGoIntoDebt) {
  Loop loop;
  GovernorConfig c;
  c.rate_bytes_per_sec = 100'000;  // burst 20 000
  c.max_concurrent = 100;
  auto g = Governor::make(loop.io, c, system_clock());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::chrono::steady_clock::time_point> at;
  std::vector<Governor::Permit> keep;
  auto t0 = std::chrono::steady_clock::now();
  // 50 000 bytes (more than the burst: admitted into debt), then 20 000:
  // must wait for the debt to be repaid (~0.5 s at 100 kB/s).
  for (uint64_t bytes : {50'000ull, 20'000ull}) {
    g->request(1, bytes, [&](Governor::Permit p) {
      std::lock_guard l(mu);
      at.push_back(std::chrono::steady_clock::now());
      keep.push_back(std::move(p));
      cv.notify_all();
    });
  }
  std::unique_lock l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(5), [&] { return at.size() == 2; }));
  auto first = std::chrono::duration_cast<std::chrono::milliseconds>(at[0] - t0).count();
  auto second = std::chrono::duration_cast<std::chrono::milliseconds>(at[1] - t0).count();
  EXPECT_LT(first, 100);
  EXPECT_GE(second, 400);
  EXPECT_GE(g->stats().throttle_waits, 1u);
}

TEST(Governor, CancelDropsAnOwnersQueuedRequestsUncalled) {
  Loop loop;
  GovernorConfig c;
  c.max_concurrent = 1;
  auto g = Governor::make(loop.io, c, system_clock());
  Recorder r;
  g->request(1, 10, [&r](Governor::Permit p) { r.grant(1, 0, std::move(p)); });
  for (int i = 1; i < 4; ++i) {
    g->request(1, 10, [&r, i](Governor::Permit p) { r.grant(1, i, std::move(p)); });
  }
  g->request(2, 10, [&r](Governor::Permit p) { r.grant(2, 0, std::move(p)); });
  g->cancel(1);
  EXPECT_EQ(g->stats().cancelled, 3u);
  Governor::Permit p = std::move(r.permits.back());
  p.release();
  ASSERT_EQ(r.order.size(), 2u);
  EXPECT_EQ(r.order[1].first, 2u);
  EXPECT_EQ(g->stats().queued, 0u);
}

}  // namespace
}  // namespace strata::tier
