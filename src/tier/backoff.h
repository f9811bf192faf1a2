// Retry delays for the upload path: exponential backoff with jitter drawn
// from an injected random source (so simulations replay exactly).
//
//   transient failures: attempt 1 retries at once, then 10 ms doubling to 5 s
//   fatal failures:     1 s doubling to 30 s (the pipeline stalls meanwhile)
//
// Jitter is "equal jitter": a nominal delay d becomes a uniform draw in
// [d/2, d], so retries of many streams spread out but none waits longer than
// the nominal schedule.
#pragma once

#include <cstdint>

#include "common/random.h"

namespace strata::tier {

struct BackoffPolicy {
  bool immediate_first = false;  // attempt 1 has no delay
  int64_t initial_ms = 0;        // nominal delay of the first delayed attempt
  int64_t max_ms = 0;            // cap of the nominal delay

  static BackoffPolicy transient() { return BackoffPolicy{true, 10, 5000}; }
  static BackoffPolicy fatal() { return BackoffPolicy{false, 1000, 30000}; }
};

// Nominal (unjittered) delay before retry number `attempt` (1-based).
int64_t nominal_backoff_ms(const BackoffPolicy& p, uint32_t attempt);

// Jittered delay before retry number `attempt`: uniform in [d/2, d] where d is
// the nominal delay; 0 when the nominal delay is 0.
int64_t backoff_ms(const BackoffPolicy& p, uint32_t attempt, Random& rng);

}  // namespace strata::tier
