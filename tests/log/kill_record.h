// The records log_crash_child writes: self-describing, so a record found
// after a kill -9 can be checked without knowing whether it was acknowledged.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace strata::log {

inline std::string kill_record(uint64_t seed, int thread, uint64_t seq, int i) {
  char head[96];
  int n = std::snprintf(head, sizeof head, "%llu/%d/%llu/%d/", (unsigned long long)seed, thread,
                        (unsigned long long)seq, i);
  std::string s(head, size_t(n));
  uint64_t x = seed * 1000003u + uint64_t(thread) * 7919u + seq * 104729u + uint64_t(i);
  size_t len = 20 + size_t(x % 300);
  while (s.size() < len) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s.push_back(char('A' + (x >> 58)));
  }
  return s;
}

// True if `r` is exactly a record kill_record() produces.
inline bool is_kill_record(const std::string& r) {
  unsigned long long seed, seq;
  int thread, i;
  if (std::sscanf(r.c_str(), "%llu/%d/%llu/%d/", &seed, &thread, &seq, &i) != 4) return false;
  return r == kill_record(seed, thread, seq, i);
}

}  // namespace strata::log
