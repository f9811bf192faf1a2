#include "common/assert.h"

#include <cstdio>
#include <cstdlib>

namespace strata::detail {

void assert_fail(const char* expr, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "strata: invariant violated at %s:%d: %s (%s)\n", file, line, msg, expr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace strata::detail
