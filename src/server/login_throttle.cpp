#include "server/login_throttle.h"

#include <algorithm>

namespace strata::server {

using std::chrono::milliseconds;

LoginThrottle::Admission LoginThrottle::admit(const std::string& address, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = records_.find(address);
  if (it == records_.end()) return {};
  Record& r = it->second;
  const uint32_t free = std::max<uint32_t>(rules_.free_failures, 1);
  if (now - r.last > rules_.window || r.failures < free) return {};
  // Doubling per failure past the free ones; the shift is bounded so it
  // cannot overflow before the cap applies.
  const uint32_t doublings = std::min<uint32_t>(r.failures - free, 20);
  const auto step =
      std::min<milliseconds>(rules_.first_wait * (int64_t(1) << doublings), rules_.max_wait);
  const Clock::time_point when = std::max(now, r.next_slot) + step;
  const auto wait = std::chrono::duration_cast<milliseconds>(when - now);
  if (wait > rules_.max_wait) return Admission{milliseconds(0), true};
  r.next_slot = when;
  return Admission{wait, false};
}

void LoginThrottle::failed(const std::string& address, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = records_.find(address);
  if (it == records_.end()) {
    if (records_.size() >= rules_.max_addresses) forget_oldest();
    it = records_.emplace(address, Record{}).first;
  } else if (now - it->second.last > rules_.window) {
    it->second.failures = 0;
  }
  it->second.failures += 1;
  it->second.last = now;
}

void LoginThrottle::succeeded(const std::string& address) {
  std::lock_guard lock(mu_);
  records_.erase(address);
}

size_t LoginThrottle::addresses() const {
  std::lock_guard lock(mu_);
  return records_.size();
}

// A linear scan: it runs only when the table is full, i.e. under a spray of
// failures from very many addresses, each of which waits anyway.
void LoginThrottle::forget_oldest() {
  auto oldest = records_.begin();
  for (auto it = records_.begin(); it != records_.end(); ++it) {
    if (it->second.last < oldest->second.last) oldest = it;
  }
  if (oldest != records_.end()) records_.erase(oldest);
}

}  // namespace strata::server
