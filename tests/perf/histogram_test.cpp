#include "perf/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "perf/options.h"
#include "support/temp_dir.h"

namespace strata::perf {
namespace {

TEST(LogHistogram, BucketsCoverEveryValueWithinThreePercent) {
  // Buckets tile the range with no gaps or overlaps.
  for (size_t i = 0; i + 1 < LogHistogram::kBuckets; ++i) {
    ASSERT_EQ(LogHistogram::highest_in(i) + 1, LogHistogram::lowest_in(i + 1)) << i;
  }
  EXPECT_EQ(LogHistogram::highest_in(LogHistogram::kBuckets - 1), UINT64_MAX);
  std::mt19937_64 rng(test::test_seed(42));
  for (int i = 0; i < test::scaled(100000); ++i) {
    uint64_t v = rng() >> (rng() % 64);
    size_t idx = LogHistogram::index_of(v);
    ASSERT_LT(idx, LogHistogram::kBuckets);
    ASSERT_LE(LogHistogram::lowest_in(idx), v);
    ASSERT_GE(LogHistogram::highest_in(idx), v);
    uint64_t width = LogHistogram::highest_in(idx) - LogHistogram::lowest_in(idx);
    ASSERT_LE(double(width), double(v) / 32.0) << v;
  }
}

TEST(LogHistogram, QuantilesMatchSortedValues) {
  std::mt19937_64 rng(test::test_seed(7));
  std::lognormal_distribution<double> dist(11.0, 1.5);  // latencies around 60 us in ns
  std::vector<uint64_t> values;
  LogHistogram h;
  for (int i = 0; i < test::scaled(50000); ++i) {
    uint64_t v = uint64_t(dist(rng));
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(h.count(), values.size());
  EXPECT_EQ(h.max(), values.back());
  EXPECT_EQ(h.min(), values.front());
  for (double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    size_t rank = std::max<size_t>(1, size_t(std::ceil(q * double(values.size()))));
    uint64_t exact = values[rank - 1];
    uint64_t got = h.quantile(q);
    EXPECT_GE(got, exact) << q;
    EXPECT_LE(double(got), double(exact) * (1 + 1.0 / 32) + 1) << q;
  }
}

TEST(LogHistogram, MergeAndEmpty) {
  LogHistogram a, b;
  EXPECT_EQ(a.quantile(0.5), 0u);
  EXPECT_EQ(a.count(), 0u);
  a.record(10);
  b.record_n(1000, 3);
  a.merge(b);
  EXPECT_EQ(a.count(), 4u);
  EXPECT_EQ(a.quantile(0.25), 10u);
  EXPECT_EQ(a.quantile(0.5), 1000u);  // capped at the max recorded
  EXPECT_EQ(a.min(), 10u);
  a.reset();
  EXPECT_EQ(a.count(), 0u);
}

TEST(PerfOptions, OffsetSpecsAndUris) {
  EXPECT_EQ(parse_offset_spec("first")->type, proto::OffsetType::first);
  EXPECT_EQ(parse_offset_spec("next")->type, proto::OffsetType::next);
  auto n = parse_offset_spec("42");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->type, proto::OffsetType::offset);
  EXPECT_EQ(n->value, 42);
  auto t = parse_offset_spec("@1700000000000");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->type, proto::OffsetType::timestamp);
  EXPECT_FALSE(parse_offset_spec("-3").ok());
  EXPECT_FALSE(parse_offset_spec("sometimes").ok());

  ConnectOptions c;
  ASSERT_TRUE(apply_uri("rabbitmq-stream://u:p@h.example:5553/%2f", &c).ok());
  EXPECT_EQ(c.username, "u");
  EXPECT_EQ(c.password, "p");
  EXPECT_EQ(c.host, "h.example");
  EXPECT_EQ(c.port, 5553);
  EXPECT_EQ(c.virtual_host, "/");
  ConnectOptions d;
  ASSERT_TRUE(apply_uri("127.0.0.2:6000", &d).ok());
  EXPECT_EQ(d.host, "127.0.0.2");
  EXPECT_EQ(d.port, 6000);
  EXPECT_FALSE(apply_uri("h:notaport", &d).ok());
  EXPECT_FALSE(apply_uri("h:70000", &d).ok());
}

}  // namespace
}  // namespace strata::perf
