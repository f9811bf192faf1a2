// Object key rules shared by every backend (docs/formats/objstore.md, "Keys"): a key
// is 1..1024 bytes of valid UTF-8, '/'-separated segments, none of them
// empty, "." or "..", and no control characters (U+0000..U+001F, U+007F).
// The rules make a key safe to map onto a file path and to put into a URL,
// and keep both backends interchangeable.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace strata::objstore {

constexpr size_t kMaxKeyBytes = 1024;
// A segment must fit a file name with the fs backend's 2-byte tag
// (NAME_MAX 255).
constexpr size_t kMaxSegmentBytes = 250;

// nullopt if the key is valid; otherwise why not ("empty segment at byte 4").
std::optional<std::string> key_problem(std::string_view key);

// Prefixes for list() follow the same rules, except that a prefix may be
// empty and may end inside a segment or right after a '/'.
std::optional<std::string> prefix_problem(std::string_view prefix);

}  // namespace strata::objstore
