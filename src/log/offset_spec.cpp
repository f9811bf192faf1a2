#include "log/offset_spec.h"

#include <fmt/format.h>

#include <charconv>

namespace strata::log {

namespace {

template <typename T>
bool parse_number(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

Result<OffsetSpec> parse_offset_spec(std::string_view text) {
  if (text == "first") return OffsetSpec::first();
  if (text == "last") return OffsetSpec::last();
  if (text == "next") return OffsetSpec::next();
  auto bad = [&](const char* why) {
    return Error(Errc::invalid_argument,
                 fmt::format("bad offset spec '{}': {} (want first|last|next|offset:N|timestamp:T)",
                             text, why));
  };
  uint64_t o;
  if (parse_number(text, &o)) return OffsetSpec::at_offset(o);
  if (text.starts_with("offset:")) {
    if (!parse_number(text.substr(7), &o)) return bad("N must be a non-negative integer");
    return OffsetSpec::at_offset(o);
  }
  if (text.starts_with("timestamp:")) {
    int64_t t;
    if (!parse_number(text.substr(10), &t))
      return bad("T must be an integer (ms since the Unix epoch)");
    return OffsetSpec::at_timestamp(t);
  }
  return bad("unknown form");
}

std::string to_string(const OffsetSpec& s) {
  switch (s.kind) {
    case OffsetSpec::Kind::first:
      return "first";
    case OffsetSpec::Kind::last:
      return "last";
    case OffsetSpec::Kind::next:
      return "next";
    case OffsetSpec::Kind::offset:
      return fmt::format("offset:{}", s.offset());
    case OffsetSpec::Kind::timestamp:
      return fmt::format("timestamp:{}", s.value);
  }
  return "?";
}

}  // namespace strata::log
