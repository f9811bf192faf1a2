// Latency histograms (quantiles within their bucket error) and the
// Prometheus text format.
#include "common/metrics.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(LatencyHistogram, QuantilesAreWithinTheBucketError) {
  LatencyHistogram h;
  for (uint64_t ms = 1; ms <= 1000; ++ms) h.record_ms(double(ms));
  auto s = h.snapshot();
  EXPECT_EQ(s.count, 1000u);
  double p50 = s.quantile_ms(0.5), p99 = s.quantile_ms(0.99);
  EXPECT_GE(p50, 500.0);
  EXPECT_LE(p50, 500.0 * 1.25);
  EXPECT_GE(p99, 990.0);
  EXPECT_LE(p99, 1000.0);  // never above the largest sample
  EXPECT_NEAR(s.mean_ms(), 500.5, 0.01);
}

TEST(LatencyHistogram, BucketsAreContiguousAndOrdered) {
  for (uint64_t us : {0ull, 1ull, 3ull, 4ull, 5ull, 7ull, 8ull, 1000ull, 123456789ull}) {
    size_t b = LatencyHistogram::bucket_of(us);
    EXPECT_LT(us, LatencyHistogram::bucket_upper_us(b)) << us;
    if (b > 0) {
      EXPECT_GE(us, LatencyHistogram::bucket_upper_us(b - 1)) << us;
    }
  }
}

TEST(PromWriter, WritesFamiliesOnceWithEscapedLabels) {
  PromWriter w;
  w.counter("strata_x_total", "X things.", {{"stream", "a\"b\\c"}}, 3);
  w.gauge("strata_y", "Y.", {}, 1);
  w.counter("strata_x_total", "X things.", {{"stream", "d"}}, 4.5);
  LatencyHistogram h;
  h.record_ms(2);
  h.record_ms(20);
  w.histogram("strata_lat_seconds", "Latency.", {}, h.snapshot());
  const std::string t = w.text();
  // A family's samples are contiguous even when written interleaved.
  EXPECT_LT(t.find("strata_x_total{stream=\"d\"}"), t.find("# TYPE strata_y"));
  EXPECT_EQ(t.find("# TYPE strata_x_total counter"), t.rfind("# TYPE strata_x_total counter"));
  EXPECT_NE(t.find("strata_x_total{stream=\"a\\\"b\\\\c\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("strata_x_total{stream=\"d\"} 4.5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("strata_lat_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("strata_lat_seconds_bucket{le=\"+Inf\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("strata_lat_seconds_count 2\n"), std::string::npos) << t;
}

}  // namespace
}  // namespace strata
