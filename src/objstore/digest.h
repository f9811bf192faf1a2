// Digests the S3 protocol asks for (OpenSSL): hex SHA-256 for
// x-amz-content-sha256, base64 MD5 for Content-MD5 (DeleteObjects requires
// it), and base64 of the big-endian CRC32C for x-amz-checksum-crc32c.
// Base64 itself is net/base64.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::objstore {

std::string sha256_hex(std::string_view data);
std::string md5_base64(std::string_view data);

// x-amz-checksum-crc32c form of a CRC32C, and back.
std::string crc32c_base64(uint32_t crc);
std::optional<uint32_t> crc32c_from_base64(std::string_view s);

// The SHA-256 of an empty body.
constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace strata::objstore
