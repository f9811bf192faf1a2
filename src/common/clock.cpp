#include "common/clock.h"

#include <chrono>

namespace strata {

int64_t SystemClock::now_ms() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t SystemClock::monotonic_ns() const {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

Clock& system_clock() {
  static SystemClock c;
  return c;
}

}  // namespace strata
