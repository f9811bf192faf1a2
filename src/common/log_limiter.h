// LogLimiter: one warning of a repeated cause (a failing object store, a
// peer that refuses) rate-limited: the first of a streak is logged at once,
// then at most one per interval, saying how many were held back. Pure: the
// time is passed in; the caller logs.
#pragma once

#include <cstdint>

namespace strata {

class LogLimiter {
 public:
  explicit LogLimiter(int64_t interval_ms) : interval_ms_(interval_ms) {}

  // Whether to log the warning that happens at `now_ms`; when it is, the
  // warnings held back since the last one logged (0: none) go in
  // *suppressed.
  bool admit(int64_t now_ms, uint64_t* suppressed) {
    if (logged_ && now_ms - last_ms_ < interval_ms_) {
      held_ += 1;
      return false;
    }
    *suppressed = held_;
    held_ = 0;
    logged_ = true;
    last_ms_ = now_ms;
    return true;
  }
  // The cause is gone (a success): the next warning is logged at once.
  // Returns how many were held back and never logged.
  uint64_t reset() {
    const uint64_t held = held_;
    held_ = 0;
    logged_ = false;
    return held;
  }

 private:
  const int64_t interval_ms_;
  bool logged_ = false;
  int64_t last_ms_ = 0;
  uint64_t held_ = 0;
};

}  // namespace strata
