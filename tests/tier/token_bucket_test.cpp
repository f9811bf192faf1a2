#include "tier/token_bucket.h"

#include <gtest/gtest.h>

namespace strata::tier {

TEST(TierTokenBucket, UnlimitedAdmitsEverythingAtOnce) {
  TokenBucket b = TokenBucket::unlimited();
  EXPECT_TRUE(b.is_unlimited());
  for (int i = 0; i < 1000; ++i) {
    Admission a = b.request(uint64_t(1) << 40, 0);
    EXPECT_TRUE(a.admitted);
    EXPECT_EQ(a.wait_ms, 0);
  }
}

TEST(TierTokenBucket, BurstDefaultsToAFifthOfTheRate) {
  TokenBucket b = TokenBucket::limited(1000, 0, 0);
  EXPECT_EQ(b.burst(), 200u);
  EXPECT_EQ(b.available(0), 200);
  EXPECT_EQ(TokenBucket::limited(3, 0, 0).burst(), 1u);  // never zero
}

TEST(TierTokenBucket, AdmitsWithinBurstThenWaitsForRefill) {
  TokenBucket b = TokenBucket::limited(1000, 200, 0);
  EXPECT_TRUE(b.request(150, 0).admitted);
  Admission a = b.request(100, 0);  // 50 left, 100 needed: 50 bytes at 1 B/ms
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.wait_ms, 50);
  EXPECT_FALSE(b.request(100, 49).admitted);
  EXPECT_TRUE(b.request(100, 50).admitted);
  EXPECT_EQ(b.available(50), 0);
}

TEST(TierTokenBucket, RefillIsCappedAtBurst) {
  TokenBucket b = TokenBucket::limited(1000, 200, 0);
  EXPECT_TRUE(b.request(200, 0).admitted);
  EXPECT_EQ(b.available(1'000'000'000), 200);  // a very long idle period
}

TEST(TierTokenBucket, FractionalRefillIsNotLost) {
  // 1 byte per second: one byte every 1000 ms, across many small steps.
  TokenBucket b = TokenBucket::limited(1, 1, 0);
  EXPECT_TRUE(b.request(1, 0).admitted);
  int64_t t = 0;
  while (!b.request(1, t).admitted) t += 7;
  EXPECT_GE(t, 1000);
  EXPECT_LT(t, 1007);
}

TEST(TierTokenBucket, OversizedRequestGoesIntoDebtInsteadOfWaitingForever) {
  TokenBucket b = TokenBucket::limited(1000, 200, 0);
  // 10x the burst: admitted once the bucket is full (min(size, burst)).
  Admission a = b.request(2000, 0);
  EXPECT_TRUE(a.admitted);
  EXPECT_EQ(b.available(0), -1800);
  // The debt is repaid before anything else gets through.
  Admission next = b.request(1, 0);
  EXPECT_FALSE(next.admitted);
  EXPECT_EQ(next.wait_ms, 1801);
  EXPECT_TRUE(b.request(1, 1801).admitted);
}

TEST(TierTokenBucket, OversizedRequestWaitsOnlyForAFullBucket) {
  TokenBucket b = TokenBucket::limited(1000, 200, 0);
  EXPECT_TRUE(b.request(200, 0).admitted);
  Admission a = b.request(5000, 0);
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.wait_ms, 200);  // burst, not 5000 bytes
  EXPECT_TRUE(b.request(5000, 200).admitted);
}

TEST(TierTokenBucket, TimeGoingBackwardsAddsNothing) {
  TokenBucket b = TokenBucket::limited(1000, 200, 1000);
  EXPECT_TRUE(b.request(200, 1000).admitted);
  EXPECT_FALSE(b.request(10, 500).admitted);
  EXPECT_EQ(b.available(500), 0);
  EXPECT_TRUE(b.request(10, 1010).admitted);
}

TEST(TierTokenBucket, ThroughputMatchesRateOverTime) {
  TokenBucket b = TokenBucket::limited(10'000, 0, 0);
  uint64_t sent = 0;
  int64_t t = 0;
  while (t <= 10'000) {
    Admission a = b.request(700, t);
    if (a.admitted) {
      sent += 700;
    } else {
      t += a.wait_ms;
    }
  }
  // 10 s at 10 kB/s plus the initial burst (2 kB), within one request.
  EXPECT_GE(sent, 100'000u);
  EXPECT_LE(sent, 102'000u + 700);
}

}  // namespace strata::tier
