#include "common/random.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {

TEST(Random, DeterministicPerSeed) {
  Random a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differs |= x != c.next();
  }
  EXPECT_TRUE(differs);
}

TEST(Random, UniformStaysInRangeAndCoversIt) {
  Random r(1);
  std::vector<int> hits(10, 0);
  for (int i = 0; i < 10000; ++i) {
    uint64_t v = r.uniform(10);
    ASSERT_LT(v, 10u);
    hits[v]++;
  }
  for (int h : hits) EXPECT_GT(h, 800);
  for (int i = 0; i < 1000; ++i) {
    int64_t v = r.range(-3, 3);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
  }
}

}  // namespace strata
