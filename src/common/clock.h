// Time as an injected dependency. Pure cores never read a clock: shells read
// one of these and pass `now` in. Tests use ManualClock to drive time.
#pragma once

#include <atomic>
#include <cstdint>

namespace strata {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock milliseconds since the Unix epoch (chunk timestamps, ages).
  virtual int64_t now_ms() const = 0;
  // Monotonic nanoseconds from an arbitrary origin (deadlines, intervals).
  virtual int64_t monotonic_ns() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t now_ms() const override;
  int64_t monotonic_ns() const override;
};

// The process-wide real clock.
Clock& system_clock();

// A clock that moves only when told to; thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : ms_(start_ms), ns_(0) {}
  int64_t now_ms() const override { return ms_.load(); }
  int64_t monotonic_ns() const override { return ns_.load(); }
  void advance_ms(int64_t d) {
    ms_ += d;
    ns_ += d * 1'000'000;
  }
  void set_ms(int64_t ms) { ms_ = ms; }

 private:
  std::atomic<int64_t> ms_;
  std::atomic<int64_t> ns_;
};

}  // namespace strata
