// LogLimiter: the first warning of a streak at once, then one per
// interval carrying the count held back; a success ends the streak.
#include "common/log_limiter.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(LogLimiter, FirstAtOnceThenOnePerIntervalWithTheCountHeldBack) {
  LogLimiter l(30'000);
  uint64_t held = 99;
  ASSERT_TRUE(l.admit(1'000, &held));
  EXPECT_EQ(held, 0u);
  // 175 more failures within the interval: none logged.
  for (int i = 0; i < 175; ++i) EXPECT_FALSE(l.admit(1'000 + 80 * i, &held));
  ASSERT_TRUE(l.admit(31'000, &held));
  EXPECT_EQ(held, 175u);
  EXPECT_FALSE(l.admit(31'001, &held));
  // A success ends the streak: the held-back count is handed over and the
  // next failure logs at once.
  EXPECT_EQ(l.reset(), 1u);
  ASSERT_TRUE(l.admit(31'002, &held));
  EXPECT_EQ(held, 0u);
  EXPECT_EQ(l.reset(), 0u);
}

}  // namespace
}  // namespace strata
