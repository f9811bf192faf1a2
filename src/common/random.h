// A small, fast, seedable PRNG (xoshiro256**) for simulations, jitter and
// test workloads. Deterministic for a seed, so a failing seed replays.
#pragma once

#include <cstdint>

namespace strata {

class Random {
 public:
  explicit Random(uint64_t seed) { reseed(seed); }
  void reseed(uint64_t seed);

  uint64_t next();
  // Uniform in [0, n); n > 0.
  uint64_t uniform(uint64_t n);
  // Uniform in [lo, hi]; lo <= hi.
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(uniform(uint64_t(hi - lo) + 1)); }
  // True with probability num/den.
  bool chance(uint64_t num, uint64_t den) { return uniform(den) < num; }
  double unit() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t s_[4];
};

}  // namespace strata
