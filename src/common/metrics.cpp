#include "common/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <vector>

namespace strata {

size_t LatencyHistogram::bucket_of(uint64_t us) {
  if (us < 4) return size_t(us);
  int e = 63 - std::countl_zero(us);  // >= 2
  uint64_t s = (us >> (e - 2)) & 3;
  size_t idx = size_t(4 * (e - 1)) + size_t(s);
  return std::min(idx, kBuckets - 1);
}

uint64_t LatencyHistogram::bucket_upper_us(size_t i) {
  if (i < 4) return i + 1;
  int e = int(i / 4) + 1;
  uint64_t s = i % 4;
  return (5 + s) << (e - 2);
}

void LatencyHistogram::record_us(uint64_t us) {
  counts_[bucket_of(us)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(us, std::memory_order_relaxed);
  uint64_t m = max_us_.load(std::memory_order_relaxed);
  while (us > m && !max_us_.compare_exchange_weak(m, us, std::memory_order_relaxed)) {
  }
}

LatencyHistogram::Snapshot LatencyHistogram::snapshot() const {
  Snapshot s;
  for (size_t i = 0; i < kBuckets; ++i) {
    s.counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.count += s.counts[i];
  }
  s.sum_us = sum_us_.load(std::memory_order_relaxed);
  s.max_us = max_us_.load(std::memory_order_relaxed);
  return s;
}

double LatencyHistogram::Snapshot::quantile_ms(double q) const {
  if (count == 0) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(q * double(count))));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts[i];
    if (seen >= rank) {
      // Never report more than the largest sample.
      return double(std::min(bucket_upper_us(i), std::max<uint64_t>(max_us, 1))) / 1000.0;
    }
  }
  return double(max_us) / 1000.0;
}

std::string prom_escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string& PromWriter::family(std::string_view name, std::string_view help,
                                std::string_view type) {
  auto it = families_.find(name);
  if (it != families_.end()) return it->second;
  order_.emplace_back(name);
  auto& out = families_[std::string(name)];
  out = fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  return out;
}

std::string PromWriter::text() const {
  size_t size = 0;
  for (const auto& [n, f] : families_) size += f.size();
  std::string t;
  t.reserve(size);
  for (const auto& n : order_) t += families_.at(n);
  return t;
}

void PromWriter::sample(std::string& out, std::string_view name, const Labels& labels,
                        double value) {
  // Appended in place: a scrape of a node with a thousand streams writes
  // tens of thousands of samples.
  out += name;
  if (!labels.empty()) {
    out += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out += ',';
      out += labels[i].first;
      out += "=\"";
      const std::string& v = labels[i].second;
      if (v.find_first_of("\\\"\n") == std::string::npos) {
        out += v;
      } else {
        out += prom_escape(v);
      }
      out += '"';
    }
    out += '}';
  }
  if (std::isinf(value)) {
    out += value > 0 ? " +Inf\n" : " -Inf\n";
  } else if (value == std::floor(value) && std::fabs(value) < 1e15) {
    fmt::format_to(std::back_inserter(out), " {}\n", int64_t(value));
  } else {
    fmt::format_to(std::back_inserter(out), " {}\n", value);
  }
}

void PromWriter::counter(std::string_view name, std::string_view help, const Labels& labels,
                         double value) {
  sample(family(name, help, "counter"), name, labels, value);
}

void PromWriter::gauge(std::string_view name, std::string_view help, const Labels& labels,
                       double value) {
  sample(family(name, help, "gauge"), name, labels, value);
}

void PromWriter::untyped(std::string_view name, std::string_view help, const Labels& labels,
                         double value) {
  sample(family(name, help, "untyped"), name, labels, value);
}

void PromWriter::histogram(std::string_view name, std::string_view help, const Labels& labels,
                           const LatencyHistogram::Snapshot& s) {
  std::string& out = family(name, help, "histogram");
  // Exported bounds (seconds); each count is the exact cumulative count of
  // the fine buckets whose upper bound is at or below the bound.
  static constexpr double kBounds[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                       1,     2.5,   5,    10,    30,   60,  120,  300};
  static const std::vector<std::string> kLe = [] {
    std::vector<std::string> v;
    for (double b : kBounds) v.push_back(fmt::format("{}", b));
    return v;
  }();
  std::string bucket = std::string(name) + "_bucket";
  size_t fine = 0;
  uint64_t cum = 0;
  Labels l = labels;
  l.emplace_back("le", "");
  for (size_t i = 0; i < std::size(kBounds); ++i) {
    uint64_t bound_us = uint64_t(kBounds[i] * 1e6);
    while (fine < LatencyHistogram::kBuckets &&
           LatencyHistogram::bucket_upper_us(fine) <= bound_us) {
      cum += s.counts[fine++];
    }
    l.back().second = kLe[i];
    sample(out, bucket, l, double(cum));
  }
  l.back().second = "+Inf";
  sample(out, bucket, l, double(s.count));
  sample(out, std::string(name) + "_sum", labels, double(s.sum_us) / 1e6);
  sample(out, std::string(name) + "_count", labels, double(s.count));
}

}  // namespace strata
