// Strict base64 (RFC 4648, with padding) for stored password hashes. auth
// sits below net/ (whose base64.h serves HTTP), so it has its own, over
// OpenSSL's block coder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace strata::auth {

std::string base64_encode(const uint8_t* data, size_t size);

// invalid_argument naming the offending position: a character outside the
// alphabet, a length not a multiple of 4, padding anywhere but the end.
Result<std::vector<uint8_t>> base64_decode(std::string_view text);

}  // namespace strata::auth
