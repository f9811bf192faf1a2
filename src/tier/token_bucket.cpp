#include "tier/token_bucket.h"

#include <algorithm>
#include <limits>

namespace strata::tier {

namespace {
constexpr int64_t kMaxMilli = std::numeric_limits<int64_t>::max() / 4;

int64_t to_milli(uint64_t bytes) {
  if (bytes > uint64_t(kMaxMilli / 1000)) return kMaxMilli;
  return int64_t(bytes) * 1000;
}
}  // namespace

TokenBucket TokenBucket::unlimited() {
  return TokenBucket();
}

TokenBucket TokenBucket::limited(uint64_t rate, uint64_t burst, int64_t now_ms) {
  TokenBucket b;
  b.unlimited_ = false;
  b.rate_ = std::max<uint64_t>(rate, 1);
  b.burst_ = burst != 0 ? burst : std::max<uint64_t>(b.rate_ / 5, 1);
  b.tokens_milli_ = to_milli(b.burst_);
  b.last_ms_ = now_ms;
  return b;
}

int64_t TokenBucket::refilled(int64_t now_ms) const {
  int64_t cap = to_milli(burst_);
  if (now_ms <= last_ms_) return tokens_milli_;
  int64_t elapsed = now_ms - last_ms_;
  // Refill needed to reach the cap; if the elapsed time covers it there is no
  // need to multiply (which could overflow for long idle periods).
  int64_t missing = cap - tokens_milli_;
  if (missing <= 0) return tokens_milli_;
  if (uint64_t(elapsed) >= (uint64_t(missing) + rate_ - 1) / rate_) return cap;
  return tokens_milli_ + elapsed * int64_t(rate_);
}

int64_t TokenBucket::available(int64_t now_ms) const {
  if (unlimited_) return std::numeric_limits<int64_t>::max();
  return refilled(now_ms) / 1000;
}

Admission TokenBucket::request(uint64_t bytes, int64_t now_ms) {
  if (unlimited_) return Admission{true, 0};
  tokens_milli_ = refilled(now_ms);
  last_ms_ = std::max(last_ms_, now_ms);
  int64_t need = to_milli(std::min(bytes, burst_));
  if (tokens_milli_ >= need) {
    tokens_milli_ = std::max(tokens_milli_ - to_milli(bytes), -kMaxMilli);
    return Admission{true, 0};
  }
  int64_t short_by = need - tokens_milli_;
  int64_t wait = (short_by + int64_t(rate_) - 1) / int64_t(rate_);
  return Admission{false, std::max<int64_t>(wait, 1)};
}

}  // namespace strata::tier
