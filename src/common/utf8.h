// UTF-8 as strata accepts it in names and object keys: well-formed per
// RFC 3629 — no overlong forms, no surrogates (U+D800..U+DFFF), nothing
// above U+10FFFF, no sequence cut short.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace strata {

// The byte position of the first ill-formed sequence in s, or nullopt when
// all of s is well-formed.
std::optional<size_t> utf8_error_at(std::string_view s);

inline bool valid_utf8(std::string_view s) {
  return !utf8_error_at(s).has_value();
}

// The length (1..4) of the well-formed sequence that starts at s[i], or 0
// when none does (i past the end included).
size_t utf8_sequence_length(std::string_view s, size_t i);

}  // namespace strata
