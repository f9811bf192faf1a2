// RangePrefetch (the reader's read-ahead) and GroupCache (the node's group
// objects): every fetch ends in exactly one outcome — bytes, error,
// deadline or cancelled — including when the worker throws or hangs, and
// the byte budget and LRU bound hold.
#include "tier/range_prefetch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "objstore/fs_store.h"
#include "support/assertions.h"
#include "support/temp_dir.h"
#include "tier/group_cache.h"
#include "tier/manifest_codec.h"
#include "tier/shell_harness.h"

namespace strata::tier {
namespace {

using strata::test::TempDir;
using test::Fault;
using test::FaultyStore;

struct Fixture {
  TempDir dir;
  std::shared_ptr<objstore::ObjectStore> real;
  std::shared_ptr<FaultyStore> store;
  std::shared_ptr<BlockingPool> pool = std::make_shared<BlockingPool>(BlockingPoolOptions{4, 16});
  Bytes body;

  Fixture() {
    auto s = objstore::FsObjectStore::open(posix_fs(), dir.sub("objects"), true);
    EXPECT_TRUE(s.ok());
    real = std::move(s).value();
    store = std::make_shared<FaultyStore>(real);
    for (int i = 0; i < 100'000; ++i) body.push_back(char('a' + i % 23));
    EXPECT_TRUE(real->put("obj", body).ok());
  }
  ~Fixture() {
    store->release();
    // A released hung call finishes on a thread the pool detached (its job
    // was abandoned at the deadline), and stop() does not wait for those:
    // wait here, so that none runs on past the test into the process's exit
    // (seen once in the sanitizer stage: a SEGV after the test passed).
    for (int i = 0; i < 2000 && pool->stats().busy > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pool->stop();
  }
  RangePrefetch make(RangePrefetchOptions o) { return RangePrefetch(store, pool, o); }
};

TEST(RangePrefetch, DeliversRangesInOrderWithinTheBudget) {
  Fixture f;
  RangePrefetchOptions o;
  o.budget_bytes = 30'000;
  o.max_in_flight = 2;
  RangePrefetch p = f.make(o);
  uint64_t pushed = 0, taken = 0;
  Bytes got;
  while (taken < f.body.size()) {
    while (pushed < f.body.size() && p.has_room(10'000)) {
      p.push(ObjectRange{"obj", pushed, 10'000});
      pushed += 10'000;
      EXPECT_LE(p.held_bytes(), o.budget_bytes);
    }
    auto b = p.at(0);
    ASSERT_OK(b);
    got += **b;
    taken += (*b)->size();
    p.pop_front();
  }
  EXPECT_EQ(got, f.body);
  EXPECT_EQ(p.stats().gets, 10u);
  EXPECT_LE(p.stats().peak_bytes, o.budget_bytes);
  // One range is always allowed, however large.
  RangePrefetch q = f.make(o);
  EXPECT_TRUE(q.has_room(1 << 20));
}

TEST(RangePrefetch, AHungFetchEndsAtItsDeadlineAndItsLateResultIsIgnored) {
  Fixture f;
  f.store->set_range_fault(Fault::hang, "obj", 1);
  RangePrefetchOptions o;
  o.deadline = std::chrono::milliseconds(100);
  o.transient_retries = 0;
  RangePrefetch p = f.make(o);
  p.push(ObjectRange{"obj", 0, 1000});
  auto b = p.at(0);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, Errc::transient);
  EXPECT_NE(b.error().message.find("deadline"), std::string::npos) << b.error().message;
  EXPECT_EQ(p.stats().deadlines, 1u);
  // The range stayed queued: asking again fetches it anew and succeeds,
  // while the first fetch is still hung.
  b = p.at(0);
  ASSERT_OK(b);
  EXPECT_EQ(**b, f.body.substr(0, 1000));
  EXPECT_EQ(f.store->hung(), 1);
  f.store->release();  // the hung one finishes now; its result goes nowhere
  p.pop_front();
  EXPECT_TRUE(p.empty());
}

TEST(RangePrefetch, AThrowingOrFailingFetchIsRetriedThenReported) {
  Fixture f;
  RangePrefetchOptions o;
  o.transient_retries = 2;
  {
    f.store->set_range_fault(Fault::throw_exception, "obj", 2);
    RangePrefetch p = f.make(o);
    p.push(ObjectRange{"obj", 5, 10});
    auto b = p.at(0);
    ASSERT_OK(b);
    EXPECT_EQ(**b, f.body.substr(5, 10));
    EXPECT_EQ(p.stats().retries, 2u);
  }
  {
    f.store->set_range_fault(Fault::fail_transient, "obj", 3);
    RangePrefetch p = f.make(o);
    p.push(ObjectRange{"obj", 5, 10});
    auto b = p.at(0);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().code, Errc::transient);
    EXPECT_NE(b.error().message.find("obj"), std::string::npos);
    b = p.at(0);  // the fault is used up: the retry succeeds
    ASSERT_OK(b);
  }
  {
    f.store->set_range_fault(Fault::fail_fatal, "obj", 1);
    RangePrefetch p = f.make(o);
    p.push(ObjectRange{"obj", 5, 10});
    auto b = p.at(0);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().code, Errc::fatal);
    EXPECT_EQ(p.stats().retries, 0u);  // fatal: not retried
  }
}

TEST(RangePrefetch, AFetchThePoolDropsEndsAsCancelled) {
  Fixture f;
  f.pool->stop();
  RangePrefetchOptions o;
  o.transient_retries = 1;
  RangePrefetch p = f.make(o);
  p.push(ObjectRange{"obj", 0, 10});
  auto b = p.at(0);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, Errc::transient);
  EXPECT_NE(b.error().message.find("dropped"), std::string::npos) << b.error().message;
}

TEST(RangePrefetch, WithoutAPoolFetchesOnTheCallersThread) {
  Fixture f;
  RangePrefetch p(f.store, nullptr, RangePrefetchOptions{});
  p.push(ObjectRange{"obj", 99'990, 100});
  auto b = p.at(0);
  ASSERT_OK(b);
  EXPECT_EQ(**b, f.body.substr(99'990));  // short at the object's end
}

// Readers run on the pool too (a consumer's remote reads): with every pool
// thread a reader waiting for its next range, a fetch queued behind them
// would never run (seen as 20 consumers from `first` on a node restored
// from the bucket hanging until the 180 s deadline). A waiting reader lets
// the pool run one more thread (BlockingPool::Waiting).
TEST(RangePrefetch, ReadersOnEveryPoolThreadDoNotWaitForEachOther) {
  Fixture f;
  auto pool = std::make_shared<BlockingPool>(BlockingPoolOptions{2, 8});
  RangePrefetchOptions o;
  o.max_in_flight = 4;
  o.deadline = std::chrono::milliseconds(20'000);
  struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    int done = 0;
    std::vector<std::string> errors;
  };
  auto out = std::make_shared<Outcome>();
  // As many readers as the pool has threads, each reading the whole object
  // in ranges, its read-ahead queued on the same (busy) pool.
  for (int r = 0; r < 2; ++r) {
    pool->post([&f, pool, o, out] {
      RangePrefetch p(f.store, pool, o);
      Bytes got;
      for (uint64_t at = 0; at < f.body.size(); at += 10'000) p.push(ObjectRange{"obj", at, 10'000});
      std::string error;
      while (!p.empty()) {
        auto b = p.at(0);
        if (!b.ok()) {
          error = b.error().to_string();
          break;
        }
        got += **b;
        p.pop_front();
      }
      if (error.empty() && got != f.body) error = "the bytes differ";
      std::lock_guard l(out->mu);
      if (!error.empty()) out->errors.push_back(error);
      out->done += 1;
      out->cv.notify_all();
    });
  }
  std::unique_lock l(out->mu);
  // Far below the fetch deadline: a reader that waited for a queued job
  // would only come back at the deadline, with its error.
  ASSERT_TRUE(out->cv.wait_for(l, std::chrono::seconds(15), [&] { return out->done == 2; }))
      << "readers on every pool thread waited for fetches queued behind them";
  EXPECT_TRUE(out->errors.empty()) << out->errors.front();
  l.unlock();
  pool->stop();
}

TEST(GroupCache, EvictsTheLeastRecentlyUsedBeyondItsBytes) {
  GroupCache c(300);
  auto g = std::make_shared<const ManifestGroup>();
  c.insert("a", g, 100);
  c.insert("b", g, 100);
  c.insert("c", g, 100);
  EXPECT_TRUE(c.find("a"));  // a is now the most recent
  c.insert("d", g, 100);     // evicts b
  EXPECT_FALSE(c.find("b"));
  EXPECT_TRUE(c.find("a"));
  EXPECT_TRUE(c.find("c"));
  EXPECT_TRUE(c.find("d"));
  c.insert("huge", g, 301);  // larger than the whole budget: not kept
  EXPECT_FALSE(c.find("huge"));
  auto s = c.stats();
  EXPECT_EQ(s.bytes, 300u);
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.evictions, 1u);
}

}  // namespace
}  // namespace strata::tier
