// TokenBucket: pure byte-rate limiter for upload pacing (the governor's
// arithmetic, without the governor's queue or clock).
//
// Tokens are bytes. The bucket holds at most `burst` bytes and refills at
// `rate` bytes per second from the time passed in by the caller; nothing here
// reads a clock. A request of `n` bytes is admitted when min(n, burst) bytes
// are available; it then takes all n, so an oversized request drives the
// bucket into debt (negative tokens) instead of waiting for a level the
// bucket can never reach. Later requests wait until the debt is repaid.
//
// `unlimited()` is a bucket with no state at all: every request is admitted
// at once, so a node without a configured rate pays nothing per transfer.
//
// Time must not go backwards; if it does, the elapsed time counts as zero.
#pragma once

#include <cstdint>

namespace strata::tier {

// The answer to a request: admitted now, or wait at least `wait_ms` and ask
// again (the wait is exact for a bucket nobody else draws from meanwhile).
struct Admission {
  bool admitted = false;
  int64_t wait_ms = 0;
};

class TokenBucket {
 public:
  // A bucket that admits everything immediately.
  static TokenBucket unlimited();
  // rate_bytes_per_sec > 0. burst_bytes == 0 means the default, rate/5 (at
  // least 1 byte). The bucket starts full at `now_ms`.
  static TokenBucket limited(uint64_t rate_bytes_per_sec, uint64_t burst_bytes, int64_t now_ms);

  // Asks for `bytes` at `now_ms`. On admission the tokens are taken.
  Admission request(uint64_t bytes, int64_t now_ms);

  bool is_unlimited() const { return unlimited_; }
  uint64_t rate() const { return rate_; }
  uint64_t burst() const { return burst_; }
  // Whole bytes available at `now_ms` (negative while in debt). Does not
  // change the bucket.
  int64_t available(int64_t now_ms) const;

 private:
  TokenBucket() = default;
  // Milli-bytes after refilling up to now_ms (rate bytes/s == rate milli-bytes/ms,
  // so refill is exact integer arithmetic with no lost fractions).
  int64_t refilled(int64_t now_ms) const;

  bool unlimited_ = true;
  uint64_t rate_ = 0;
  uint64_t burst_ = 0;
  int64_t tokens_milli_ = 0;  // milli-bytes; negative = debt
  int64_t last_ms_ = 0;
};

}  // namespace strata::tier
