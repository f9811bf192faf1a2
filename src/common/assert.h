// Invariant checks that stay on in release builds (TigerBeetle style): a
// violated invariant stops the process instead of letting it corrupt data.
#pragma once

namespace strata::detail {
[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const char* msg);
}

#define STRATA_ASSERT(cond, msg)                                       \
  do {                                                                 \
    if (!(cond)) [[unlikely]]                                          \
      ::strata::detail::assert_fail(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
