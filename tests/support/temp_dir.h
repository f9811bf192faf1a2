// A fresh directory under $TMPDIR (or /tmp) for one test, removed afterwards
// unless STRATA_KEEP_TEST_DIRS is set (to inspect a failure).
#pragma once

#include <string>

namespace strata::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Seeds and iteration counts: STRATA_TEST_SEED pins a seed to replay a
// failure; STRATA_TEST_SCALE (default 1.0) scales iteration counts (the
// sanitizer run uses less).
uint64_t test_seed(uint64_t fallback);
int scaled(int iterations);

}  // namespace strata::test
