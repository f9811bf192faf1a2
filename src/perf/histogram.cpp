#include "perf/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace strata::perf {

size_t LogHistogram::index_of(uint64_t v) {
  if (v < kSub) return size_t(v);
  int e = 63 - std::countl_zero(v);  // v in [2^e, 2^(e+1))
  int shift = e - kSubBits;
  // (v >> shift) is in [kSub, 2 kSub): the sub-bucket within this power.
  return size_t(shift) * kSub + size_t(v >> shift);
}

uint64_t LogHistogram::lowest_in(size_t index) {
  if (index < 2 * kSub) return index;
  size_t shift = index / kSub - 1;
  uint64_t sub = index % kSub + kSub;
  return sub << shift;
}

uint64_t LogHistogram::highest_in(size_t index) {
  if (index < 2 * kSub) return index;
  size_t shift = index / kSub - 1;
  return lowest_in(index) + ((uint64_t(1) << shift) - 1);
}

void LogHistogram::record_n(uint64_t v, uint64_t n) {
  if (n == 0) return;
  counts_[index_of(v)] += n;
  count_ += n;
  sum_ += v * n;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

void LogHistogram::merge(const LogHistogram& o) {
  for (size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

uint64_t LogHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the value asked for, 1-based: p50 of 10 values is the 5th.
  uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(q * double(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(highest_in(i), max_);
  }
  return max_;
}

}  // namespace strata::perf
