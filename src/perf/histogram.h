// A log-bucket latency histogram in the spirit of HdrHistogram: each power
// of two is split into 32 linear sub-buckets, so any recorded value is
// reported within 1/32 (about 3%) of itself, from 0 to 2^63, in a fixed
// 1,920-slot array (15 KiB) — no allocation on record, cheap to merge.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace strata::perf {

class LogHistogram {
 public:
  static constexpr int kSubBits = 5;
  static constexpr uint64_t kSub = uint64_t(1) << kSubBits;
  static constexpr size_t kBuckets = (64 - kSubBits + 1) * kSub;

  void record(uint64_t v) { record_n(v, 1); }
  void record_n(uint64_t v, uint64_t n);
  void merge(const LogHistogram& o);
  void reset() { *this = LogHistogram(); }

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? double(sum_) / double(count_) : 0.0; }
  // The value at quantile q in [0, 1]: the upper end of the bucket holding
  // it, capped at the largest value recorded. 0 when empty.
  uint64_t quantile(double q) const;

  // Bucket arithmetic, exposed for tests.
  static size_t index_of(uint64_t v);
  static uint64_t lowest_in(size_t index);
  static uint64_t highest_in(size_t index);

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace strata::perf
