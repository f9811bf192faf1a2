#include "tier/backoff.h"

#include <gtest/gtest.h>

namespace strata::tier {

TEST(TierBackoff, TransientRetriesAtOnceThenTenMsDoublingToFiveSeconds) {
  BackoffPolicy p = BackoffPolicy::transient();
  EXPECT_EQ(nominal_backoff_ms(p, 1), 0);
  EXPECT_EQ(nominal_backoff_ms(p, 2), 10);
  EXPECT_EQ(nominal_backoff_ms(p, 3), 20);
  EXPECT_EQ(nominal_backoff_ms(p, 4), 40);
  EXPECT_EQ(nominal_backoff_ms(p, 11), 5000);  // 10 * 2^9 = 5120, capped
  EXPECT_EQ(nominal_backoff_ms(p, 1000), 5000);
}

TEST(TierBackoff, FatalRetriesAfterOneSecondDoublingToThirty) {
  BackoffPolicy p = BackoffPolicy::fatal();
  EXPECT_EQ(nominal_backoff_ms(p, 1), 1000);
  EXPECT_EQ(nominal_backoff_ms(p, 2), 2000);
  EXPECT_EQ(nominal_backoff_ms(p, 5), 16000);
  EXPECT_EQ(nominal_backoff_ms(p, 6), 30000);
  EXPECT_EQ(nominal_backoff_ms(p, 4'000'000'000u), 30000);
}

TEST(TierBackoff, JitterStaysWithinHalfToFullAndIsSeeded) {
  BackoffPolicy p = BackoffPolicy::fatal();
  Random a(42), b(42);
  bool varied = false;
  int64_t first = backoff_ms(p, 3, a);
  EXPECT_EQ(first, backoff_ms(p, 3, b));
  for (int i = 0; i < 1000; ++i) {
    int64_t d = backoff_ms(p, 3, a);
    EXPECT_GE(d, 2000);
    EXPECT_LE(d, 4000);
    varied |= d != first;
  }
  EXPECT_TRUE(varied);
  Random r(1);
  EXPECT_EQ(backoff_ms(BackoffPolicy::transient(), 1, r), 0);
}

}  // namespace strata::tier
