#include "common/result.h"

#include <cstdio>
#include <cstdlib>

namespace strata {

namespace detail {

void result_misuse(const char* what, std::string_view detail) {
  std::fprintf(stderr, "strata: %s%s%.*s\n", what, detail.empty() ? "" : ": ", int(detail.size()),
               detail.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace detail

std::string_view errc_name(Errc c) {
  switch (c) {
    case Errc::ok:
      return "ok";
    case Errc::io:
      return "io_error";
    case Errc::not_found:
      return "not_found";
    case Errc::already_exists:
      return "already_exists";
    case Errc::corrupt:
      return "corrupt";
    case Errc::invalid_argument:
      return "invalid_argument";
    case Errc::unsupported_version:
      return "unsupported_version";
    case Errc::unsupported:
      return "unsupported";
    case Errc::schema_mismatch:
      return "schema_mismatch";
    case Errc::store_full:
      return "store_full";
    case Errc::string_table_full:
      return "string_table_full";
    case Errc::key_too_long:
      return "key_too_long";
    case Errc::unknown_field:
      return "unknown_field";
    case Errc::conflict:
      return "conflict";
    case Errc::transient:
      return "transient";
    case Errc::fatal:
      return "fatal";
    case Errc::timeout:
      return "timeout";
    case Errc::cancelled:
      return "cancelled";
    case Errc::closed:
      return "closed";
    case Errc::out_of_range:
      return "out_of_range";
    case Errc::unavailable:
      return "unavailable";
    case Errc::fail_stopped:
      return "fail_stopped";
    case Errc::simulated_crash:
      return "simulated_crash";
    case Errc::internal:
      return "internal";
  }
  return "unknown";
}

std::string Error::to_string() const {
  std::string s(errc_name(code));
  s += ": ";
  s += message;
  return s;
}

}  // namespace strata
