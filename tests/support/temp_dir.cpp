#include "support/temp_dir.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace strata::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/strata-test-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (std::getenv("STRATA_KEEP_TEST_DIRS")) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

uint64_t test_seed(uint64_t fallback) {
  if (const char* s = std::getenv("STRATA_TEST_SEED")) return std::strtoull(s, nullptr, 0);
  return fallback;
}

int scaled(int iterations) {
  double scale = 1.0;
  if (const char* s = std::getenv("STRATA_TEST_SCALE")) scale = std::atof(s);
  int n = int(iterations * scale);
  return n < 1 ? 1 : n;
}

}  // namespace strata::test
