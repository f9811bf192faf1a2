// LoginThrottle: how long a login from an address waits before its
// credentials are even looked at. Failures from one address within a
// window make the next attempts wait longer and longer, so a brute-force
// loop is slowed whatever it does: the answer is not decided until the wait
// is over, so giving up early on a slow answer tells the client nothing.
// Attempts from one address queue behind each other (each takes its wait
// after the one before), so opening many connections at once does not
// multiply the rate; an attempt that would queue longer than max_wait is
// refused without its credentials being checked. A success from the
// address clears its record.
//
// Pure rules (time passed in) behind a mutex: connections on every thread
// share one.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace strata::server {

struct LoginThrottleRules {
  // Failures an address may have before its next login waits (at least
  // one: an address without failures never waits).
  uint32_t free_failures = 3;
  // The first wait; each further failure doubles it, up to max_wait.
  std::chrono::milliseconds first_wait{250};
  std::chrono::milliseconds max_wait{10'000};
  // A failure older than this is forgotten (with those before it).
  std::chrono::milliseconds window{60'000};
  // Addresses remembered at most; the oldest record goes first, so a
  // spray from many addresses costs bounded memory.
  size_t max_addresses = 10'000;
};

class LoginThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LoginThrottle(LoginThrottleRules rules = {}) : rules_(rules) {}

  struct Admission {
    std::chrono::milliseconds wait{0};  // before the credentials are checked
    bool refuse = false;                // refused unchecked: the queue is full
  };
  // A login from `address` now: how long it waits, or that it is refused.
  Admission admit(const std::string& address, Clock::time_point now);
  void failed(const std::string& address, Clock::time_point now);
  void succeeded(const std::string& address);
  size_t addresses() const;

 private:
  struct Record {
    uint32_t failures = 0;
    Clock::time_point last;
    // When the last admitted attempt is checked: the next one queues
    // behind it.
    Clock::time_point next_slot;
  };
  void forget_oldest();

  const LoginThrottleRules rules_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Record> records_;
};

}  // namespace strata::server
