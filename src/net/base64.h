// Base64 (RFC 4648, with padding): S3 sends checksums and continuation
// tokens in it, etcd's JSON gateway every key and value.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace strata::net {

std::string base64_encode(std::string_view data);
// nullopt if s is not valid base64 (its length not a multiple of 4, a
// character outside the alphabet).
std::optional<std::string> base64_decode(std::string_view s);

}  // namespace strata::net
