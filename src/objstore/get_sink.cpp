#include "objstore/get_sink.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include "objstore/retry_class.h"

namespace strata::objstore {

ObjectError over_cap_error(Op op, std::string_view key, uint64_t cap,
                           std::optional<uint64_t> announced) {
  ObjectError e;
  e.op = op;
  e.key = std::string(key);
  e.retry = RetryClass::fatal;
  e.message = announced ? fmt::format(
                              "object of {} bytes exceeds the cap of {} bytes "
                              "(max_get_bytes); nothing read",
                              *announced, cap)
                        : fmt::format(
                              "more than the cap of {} bytes (max_get_bytes) arrived; "
                              "transfer aborted",
                              cap);
  return e;
}

ObjectError sink_error(Op op, std::string_view key, uint64_t delivered, const Error& err) {
  ObjectError e;
  e.op = op;
  e.key = std::string(key);
  e.retry = classify_errc(err.code);
  e.message =
      fmt::format("the caller's sink failed after {} bytes: {}", delivered, err.to_string());
  return e;
}

void reserve_body(Bytes* out, uint64_t n) {
  out->reserve(n);
  constexpr uintptr_t kHuge = 2u << 20;
  if (n < 2 * kHuge) return;
  auto start = reinterpret_cast<uintptr_t>(out->data());
  uintptr_t a = (start + kHuge - 1) & ~(kHuge - 1);
  uintptr_t b = (start + out->capacity()) & ~(kHuge - 1);
  // Advice only: failure (no THP support) changes nothing but speed.
  if (b > a) (void)::madvise(reinterpret_cast<void*>(a), b - a, MADV_HUGEPAGE);
}

}  // namespace strata::objstore
