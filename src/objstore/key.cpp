#include "objstore/key.h"

#include <fmt/format.h>

#include "common/utf8.h"

namespace strata::objstore {

namespace {

std::optional<std::string> check_chars(std::string_view s) {
  if (!valid_utf8(s)) return std::string("not valid UTF-8");
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) return fmt::format("control character 0x{:02x} at byte {}", c, i);
  }
  return std::nullopt;
}

// Checks the segments of s; `last_may_be_partial` allows an empty final
// segment (a prefix ending in '/') and an empty string.
std::optional<std::string> check_segments(std::string_view s, bool prefix) {
  size_t start = 0;
  while (true) {
    size_t end = s.find('/', start);
    bool last = end == std::string_view::npos;
    std::string_view seg = s.substr(start, last ? std::string_view::npos : end - start);
    if (seg.empty() && !(prefix && last)) {
      if (start == 0) return std::string("leading '/' (empty first segment)");
      if (last) return fmt::format("trailing '/' (empty last segment at byte {})", start);
      return fmt::format("empty segment ('//') at byte {}", start);
    }
    // In a prefix, a final "." or ".." may still be the start of a longer
    // segment ("..x"), so only complete segments are checked there.
    if (!(prefix && last) && (seg == "." || seg == "..")) {
      return fmt::format("segment '{}' at byte {}", seg, start);
    }
    if (seg.size() > kMaxSegmentBytes) {
      return fmt::format("segment at byte {} is {} bytes (max {})", start, seg.size(),
                         kMaxSegmentBytes);
    }
    if (last) break;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> key_problem(std::string_view key) {
  if (key.empty()) return std::string("empty key");
  if (key.size() > kMaxKeyBytes) {
    return fmt::format("key is {} bytes (max {})", key.size(), kMaxKeyBytes);
  }
  if (auto p = check_chars(key)) return p;
  return check_segments(key, false);
}

std::optional<std::string> prefix_problem(std::string_view prefix) {
  if (prefix.empty()) return std::nullopt;
  if (prefix.size() > kMaxKeyBytes) {
    return fmt::format("prefix is {} bytes (max {})", prefix.size(), kMaxKeyBytes);
  }
  if (auto p = check_chars(prefix)) return p;
  return check_segments(prefix, true);
}

}  // namespace strata::objstore
