// RabbitMQ's password hashing (its internal authentication backend), byte
// for byte, so a user's stored hash moves between RabbitMQ's definitions
// and strata in both directions.
//
// The stored form is base64( salt ++ H(salt ++ password) ) with a 4-byte
// salt and H one of SHA-256, SHA-512, MD5 — what RabbitMQ's
// rabbit_password:hash/2 returns and its definitions export base64-encodes.
// The layout and the names are in docs/formats/access.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace strata::auth {

enum class HashAlgorithm { sha256, sha512, md5 };

// The name RabbitMQ writes in definitions ("hashing_algorithm"): the Erlang
// module that hashes, e.g. "rabbit_password_hashing_sha256".
std::string_view hash_algorithm_name(HashAlgorithm a);

// The algorithm a definitions name stands for; invalid_argument naming the
// value for any other name (a custom hashing module RabbitMQ might load is
// not one strata can run).
Result<HashAlgorithm> parse_hash_algorithm(std::string_view name);

// Bytes of H's digest: 32, 64 or 16.
size_t digest_size(HashAlgorithm a);

inline constexpr size_t kSaltSize = 4;
using Salt = std::array<uint8_t, kSaltSize>;

// base64(salt ++ H(salt ++ password)).
std::string hash_password(std::string_view password, HashAlgorithm a, const Salt& salt);

// As hash_password with a salt from OpenSSL's RAND_bytes; internal if the
// generator fails (it does not when the OS has entropy).
Result<std::string> hash_password_random(std::string_view password, HashAlgorithm a);

// Whether `password` is the one `stored_b64` was made from. A stored hash
// that is not base64 or whose length is not 4 + digest_size(a) is an error
// (corrupt, naming what is wrong), not false: it is a broken record, not a
// wrong password. The digests are compared in constant time.
Result<bool> verify_password(std::string_view password, std::string_view stored_b64,
                             HashAlgorithm a);

// The shape check verify_password makes first, for validating a record
// without a password at hand.
Status check_stored_hash(std::string_view stored_b64, HashAlgorithm a);

}  // namespace strata::auth
