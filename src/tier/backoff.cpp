#include "tier/backoff.h"

#include <algorithm>

namespace strata::tier {

int64_t nominal_backoff_ms(const BackoffPolicy& p, uint32_t attempt) {
  if (attempt == 0) attempt = 1;
  uint32_t doublings = attempt - 1;
  if (p.immediate_first) {
    if (attempt == 1) return 0;
    doublings = attempt - 2;
  }
  int64_t d = std::max<int64_t>(p.initial_ms, 0);
  // Doubling stops at the cap; 63 doublings would overflow long before.
  for (uint32_t i = 0; i < doublings && d < p.max_ms; ++i) d *= 2;
  return std::min(d, p.max_ms);
}

int64_t backoff_ms(const BackoffPolicy& p, uint32_t attempt, Random& rng) {
  int64_t d = nominal_backoff_ms(p, attempt);
  if (d <= 1) return d;
  int64_t half = d / 2;
  return half + int64_t(rng.uniform(uint64_t(d - half) + 1));
}

}  // namespace strata::tier
