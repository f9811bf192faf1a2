// Metrics: lock-free counters and latency histograms, and a writer of the
// Prometheus text exposition format (version 0.0.4) for /metrics.
//
// LatencyHistogram keeps log-linear buckets (four per power of two, from
// 1 µs to about 2.3 hours), so any quantile it reports is within 19% of the
// true sample; record() is two relaxed atomic adds. The Prometheus view
// exports a fixed, coarser set of `le` bounds in seconds.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class LatencyHistogram {
 public:
  static constexpr size_t kBuckets = 4 * 34;  // 2^0 .. 2^34 microseconds

  void record_us(uint64_t us);
  void record_ms(double ms) { record_us(ms <= 0 ? 0 : uint64_t(ms * 1000.0)); }

  struct Snapshot {
    std::array<uint64_t, kBuckets> counts{};
    uint64_t count = 0;
    uint64_t sum_us = 0;
    uint64_t max_us = 0;
    // Value (ms) at quantile q in [0, 1]: the upper bound of the bucket
    // holding it (0 when empty).
    double quantile_ms(double q) const;
    double mean_ms() const { return count ? double(sum_us) / 1000.0 / double(count) : 0.0; }
  };
  Snapshot snapshot() const;

  // Upper bound (µs) of bucket i.
  static uint64_t bucket_upper_us(size_t i);
  static size_t bucket_of(uint64_t us);

 private:
  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_us_{0};
  std::atomic<uint64_t> max_us_{0};
};

// Labels of one sample, rendered in the given order.
using Labels = std::vector<std::pair<std::string, std::string>>;

// Builds a Prometheus text page. Each metric family is declared once (HELP
// and TYPE) by the first sample written under its name, and its samples are
// grouped under it whatever order they were written in (the format
// requires a family's lines to be contiguous).
class PromWriter {
 public:
  void counter(std::string_view name, std::string_view help, const Labels& labels, double value);
  void gauge(std::string_view name, std::string_view help, const Labels& labels, double value);
  // TYPE untyped: only where a peer's name must keep the peer's type
  // (RabbitMQ's alarm families are untyped).
  void untyped(std::string_view name, std::string_view help, const Labels& labels, double value);
  // A histogram in seconds from a latency snapshot.
  void histogram(std::string_view name, std::string_view help, const Labels& labels,
                 const LatencyHistogram::Snapshot& s);
  std::string text() const;

 private:
  std::string& family(std::string_view name, std::string_view help, std::string_view type);
  static void sample(std::string& out, std::string_view name, const Labels& labels, double value);
  std::vector<std::string> order_;
  std::map<std::string, std::string, std::less<>> families_;
};

// Escapes a label value for the text format (backslash, quote, newline).
std::string prom_escape(std::string_view v);

}  // namespace strata
