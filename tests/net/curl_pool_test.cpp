// CurlPool: at most max_handles lent at once (the bound on requests in
// flight), a handle given back is lent again (its connection reused), and a
// wait for a free handle ends empty at its deadline.
#include "net/curl_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace strata::net {
namespace {

using namespace std::chrono_literals;

TEST(CurlPool, LendsAtMostItsHandlesAndReusesAReturnedOne) {
  CurlPool pool(2);
  auto a = pool.acquire(0ms);
  auto b = pool.acquire(0ms);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a.get(), b.get());
  EXPECT_EQ(pool.in_flight(), 2);
  // Full: a wait ends empty at its deadline.
  const auto t0 = std::chrono::steady_clock::now();
  auto c = pool.acquire(50ms);
  EXPECT_FALSE(c);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms);
  CURL* first = a.get();
  { auto gone = std::move(a); }
  EXPECT_EQ(pool.in_flight(), 1);
  auto d = pool.acquire(0ms);
  ASSERT_TRUE(d);
  EXPECT_EQ(d.get(), first) << "a returned handle (and its connection) is lent again";
}

TEST(CurlPool, AWaiterGetsTheHandleReturnedMeanwhile) {
  CurlPool pool(1);
  auto held = std::make_unique<CurlPool::Lease>(pool.acquire(0ms));
  ASSERT_TRUE(*held);
  std::thread giver([&] {
    std::this_thread::sleep_for(20ms);
    held.reset();
  });
  auto got = pool.acquire(5s);
  giver.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(pool.in_flight(), 1);
}

}  // namespace
}  // namespace strata::net
