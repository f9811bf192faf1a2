#include "catalog/stream_name.h"

#include <fmt/format.h>

namespace strata::catalog {

namespace {

bool allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '~' || c == '-';
}

}  // namespace

std::string printable_name(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != '"') {
      out.push_back(c);
    } else {
      out += fmt::format("\\x{:02x}", uint8_t(c));
    }
  }
  return out;
}

Status validate_stream_name(std::string_view stream) {
  if (stream.empty()) return Error(Errc::invalid_argument, "catalog: stream name is empty");
  if (stream.size() > kMaxStreamNameBytes) {
    // Only the start of an over-long name: the message stays readable.
    return Error(Errc::invalid_argument,
                 fmt::format("catalog: stream name \"{}...\" is {} bytes; the limit is {} bytes",
                             printable_name(stream.substr(0, kErrorSnippetBytes)), stream.size(),
                             kMaxStreamNameBytes));
  }
  if (stream == "." || stream == "..") {
    return Error(Errc::invalid_argument,
                 fmt::format("catalog: stream name \"{}\" is not allowed", stream));
  }
  for (size_t i = 0; i < stream.size(); ++i) {
    if (!allowed(stream[i])) {
      return Error(Errc::invalid_argument,
                   fmt::format("catalog: stream name \"{}\" has byte {:#04x} at position {}; "
                               "allowed: A-Z a-z 0-9 . _ ~ -",
                               printable_name(stream), uint8_t(stream[i]), i));
    }
  }
  return Status::OK();
}

}  // namespace strata::catalog
