// GroupCommitQueue: who leads, what a group holds, that every caller ends
// exactly once and in queue order — with real threads and handshakes.
#include "common/group_commit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "support/temp_dir.h"

namespace strata {
namespace {

struct Call : GroupCommitWaiter {
  int id = 0;
  uint64_t cost = 1;
  bool led = false;
  std::string outcome;
};

struct Queue {
  std::mutex mu;
  GroupCommitQueue<Call> q;
  size_t queued = 0;  // calls that joined (guarded by mu)
  std::condition_variable joined;
};

TEST(GroupCommit, AnIdleCallerLeadsAtOnce) {
  Queue s;
  Call c;
  std::unique_lock<std::mutex> l(s.mu);
  ASSERT_TRUE(s.q.join(l, &c));
  auto group = s.q.take(8, 100, [](const Call& x) { return x.cost; });
  ASSERT_EQ(group, std::vector<Call*>{&c});
  EXPECT_TRUE(s.q.release(group));
  EXPECT_TRUE(c.done);
  EXPECT_TRUE(s.q.empty());
}

// The leader holds the front while others queue behind it; a group is a
// prefix within the bounds, the leader always in it, and the next caller in
// line leads the rest.
TEST(GroupCommit, GroupsArePrefixesWithinTheBoundsAndLeadershipPassesOn) {
  Queue s;
  Call leader;
  leader.cost = 1000;  // over the cost bound: the leader is taken anyway
  std::unique_lock<std::mutex> l(s.mu);
  ASSERT_TRUE(s.q.join(l, &leader));
  ++s.queued;
  std::vector<Call> calls(5);
  std::vector<std::vector<int>> groups;  // led by the threads, guarded by mu
  std::vector<std::thread> ts;
  for (int i = 0; i < 5; ++i) {
    calls[i].id = i + 1;
    ts.emplace_back([&, i] {
      std::unique_lock<std::mutex> tl(s.mu);
      ++s.queued;
      s.joined.notify_all();
      Call& c = calls[i];
      if (!s.q.join(tl, &c)) return;
      c.led = true;
      auto g = s.q.take(2, 100, [](const Call& x) { return x.cost; });
      std::vector<int> ids;
      for (Call* x : g) ids.push_back(x->id);
      groups.push_back(ids);
      s.q.release(g);
    });
  }
  // Handshake: all five are queued behind the leader.
  s.joined.wait(l, [&] { return s.queued == 6; });
  auto first = s.q.take(3, 10, [](const Call& x) { return x.cost; });
  ASSERT_EQ(first.size(), 1u) << "the next call would pass the cost bound";
  EXPECT_EQ(first[0], &leader);
  EXPECT_FALSE(s.q.release(first));
  l.unlock();
  for (auto& t : ts) t.join();
  // Every call ended exactly once: in some group, the leaders in groups of
  // at most two, together covering all five.
  std::vector<int> seen;
  for (const auto& g : groups) {
    EXPECT_LE(g.size(), 2u);
    seen.insert(seen.end(), g.begin(), g.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(groups.size(), 3u);  // 2 + 2 + 1
  for (const auto& c : calls) EXPECT_TRUE(c.done);
  EXPECT_TRUE(s.q.empty());
}

TEST(GroupCommit, ReleaseAllEndsEveryCallerLeaderFirst) {
  Queue s;
  Call leader;
  std::unique_lock<std::mutex> l(s.mu);
  ASSERT_TRUE(s.q.join(l, &leader));
  ++s.queued;
  std::vector<Call> calls(3);
  std::atomic<int> returned{0};
  std::vector<std::thread> ts;
  for (auto& c : calls) {
    ts.emplace_back([&] {
      std::unique_lock<std::mutex> tl(s.mu);
      ++s.queued;
      s.joined.notify_all();
      EXPECT_FALSE(s.q.join(tl, &c)) << "nobody leads after a fail-stop";
      ++returned;
    });
  }
  s.joined.wait(l, [&] { return s.queued == 4; });
  int leaders = 0;
  s.q.release_all([&](Call& c, bool is_leader) {
    c.outcome = is_leader ? "io error" : "stopped";
    leaders += is_leader;
  });
  EXPECT_EQ(leaders, 1);
  EXPECT_EQ(leader.outcome, "io error");
  EXPECT_TRUE(s.q.empty());
  l.unlock();
  for (auto& t : ts) t.join();
  EXPECT_EQ(returned.load(), 3);
  for (const auto& c : calls) EXPECT_EQ(c.outcome, "stopped");
}

// Many callers, random costs: every call completes once, groups respect the
// bounds, and the queue ends empty.
TEST(GroupCommit, ManyCallersRandomCosts) {
  Queue s;
  Random seed_rng(test::test_seed(12));
  const int kThreads = 8, kCalls = test::scaled(200);
  std::atomic<int> completed{0}, committed{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    uint64_t seed = seed_rng.next();
    ts.emplace_back([&, seed] {
      Random rng(seed);
      for (int i = 0; i < kCalls; ++i) {
        Call c;
        c.cost = rng.range(1, 40);
        std::unique_lock<std::mutex> l(s.mu);
        if (s.q.join(l, &c)) {
          auto g = s.q.take(4, 64, [](const Call& x) { return x.cost; });
          uint64_t total = 0;
          for (Call* x : g) total += x->cost;
          EXPECT_TRUE(g.size() == 1 || (g.size() <= 4 && total <= 64));
          EXPECT_EQ(g.front(), &c);
          l.unlock();  // the commit runs without the lock
          committed += int(g.size());
          l.lock();
          s.q.release(g);
        }
        EXPECT_TRUE(c.done);
        ++completed;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(completed.load(), kThreads * kCalls);
  EXPECT_EQ(committed.load(), kThreads * kCalls);
  EXPECT_TRUE(s.q.empty());
}

}  // namespace
}  // namespace strata
