// LoginThrottle's rules, with time passed in.
#include "server/login_throttle.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

using namespace std::chrono_literals;
using Clock = LoginThrottle::Clock;

TEST(LoginThrottle, FreeFailuresThenDoublingWaitsUpToTheCap) {
  LoginThrottle t(LoginThrottleRules{.free_failures = 2,
                                     .first_wait = 100ms,
                                     .max_wait = 1000ms,
                                     .window = 60s,
                                     .max_addresses = 10});
  Clock::time_point now{};
  std::vector<int64_t> waits;
  for (int i = 0; i < 8; ++i) {
    // Each attempt made after the previous one was decided.
    now += 5s;
    auto a = t.admit("10.0.0.1", now);
    EXPECT_FALSE(a.refuse) << i;
    waits.push_back(a.wait.count());
    t.failed("10.0.0.1", now + a.wait);
  }
  EXPECT_EQ(waits, (std::vector<int64_t>{0, 0, 100, 200, 400, 800, 1000, 1000}));
  // Another address is not affected.
  EXPECT_EQ(t.admit("10.0.0.2", now).wait.count(), 0);
}

TEST(LoginThrottle, AttemptsSideBySideQueueAndTooLongAQueueIsRefused) {
  LoginThrottle t(LoginThrottleRules{.free_failures = 0,
                                     .first_wait = 300ms,
                                     .max_wait = 1000ms,
                                     .window = 60s,
                                     .max_addresses = 10});
  const Clock::time_point now{};
  t.failed("a", now);
  // Three attempts at the same instant: 300, 600, 900 ms; the fourth would
  // wait 1200 ms, beyond the cap: refused unchecked.
  EXPECT_EQ(t.admit("a", now).wait.count(), 300);
  EXPECT_EQ(t.admit("a", now).wait.count(), 600);
  EXPECT_EQ(t.admit("a", now).wait.count(), 900);
  auto fourth = t.admit("a", now);
  EXPECT_TRUE(fourth.refuse);
  // Once the queue has drained, attempts are admitted again.
  EXPECT_FALSE(t.admit("a", now + 2s).refuse);
}

TEST(LoginThrottle, ASuccessOrAQuietWindowForgets) {
  LoginThrottle t(LoginThrottleRules{.free_failures = 2,
                                     .first_wait = 100ms,
                                     .max_wait = 1000ms,
                                     .window = 10s,
                                     .max_addresses = 10});
  Clock::time_point now{};
  t.failed("a", now);
  t.failed("a", now);
  EXPECT_GT(t.admit("a", now + 1s).wait.count(), 0);
  t.succeeded("a");
  EXPECT_EQ(t.admit("a", now + 1s).wait.count(), 0);
  t.failed("b", now);
  t.failed("b", now);
  // Past the window the failures are forgotten, and a new one starts over.
  EXPECT_EQ(t.admit("b", now + 11s).wait.count(), 0);
  t.failed("b", now + 11s);
  EXPECT_EQ(t.admit("b", now + 12s).wait.count(), 0);
}

TEST(LoginThrottle, ASprayFromManyAddressesIsBounded) {
  LoginThrottle t(LoginThrottleRules{.free_failures = 0,
                                     .first_wait = 100ms,
                                     .max_wait = 1000ms,
                                     .window = 60s,
                                     .max_addresses = 100});
  Clock::time_point now{};
  for (int i = 0; i < 1000; ++i)
    t.failed("10.1." + std::to_string(i), now + std::chrono::milliseconds(i));
  EXPECT_EQ(t.addresses(), 100u);
  // The newest are kept, the oldest forgotten.
  EXPECT_GT(t.admit("10.1.999", now + 1s).wait.count(), 0);
  EXPECT_EQ(t.admit("10.1.0", now + 1s).wait.count(), 0);
}

}  // namespace
}  // namespace strata::server
