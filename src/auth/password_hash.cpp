#include "auth/password_hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <vector>

#include "auth/base64.h"

namespace strata::auth {

namespace {
constexpr std::string_view kSha256 = "rabbit_password_hashing_sha256";
constexpr std::string_view kSha512 = "rabbit_password_hashing_sha512";
constexpr std::string_view kMd5 = "rabbit_password_hashing_md5";

const EVP_MD* evp_of(HashAlgorithm a) {
  switch (a) {
    case HashAlgorithm::sha256:
      return EVP_sha256();
    case HashAlgorithm::sha512:
      return EVP_sha512();
    case HashAlgorithm::md5:
      return EVP_md5();
  }
  return EVP_sha256();
}

// H(salt ++ password) into `out` (digest_size(a) bytes).
void salted_digest(std::string_view password, HashAlgorithm a, const uint8_t* salt, uint8_t* out) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned int n = 0;
  EVP_DigestInit_ex(ctx, evp_of(a), nullptr);
  EVP_DigestUpdate(ctx, salt, kSaltSize);
  EVP_DigestUpdate(ctx, password.data(), password.size());
  EVP_DigestFinal_ex(ctx, out, &n);
  EVP_MD_CTX_free(ctx);
}

Result<std::vector<uint8_t>> decode_stored(std::string_view stored_b64, HashAlgorithm a) {
  auto raw = base64_decode(stored_b64);
  if (!raw.ok()) {
    return Error(Errc::corrupt, "stored password hash is not base64: " + raw.error().message);
  }
  size_t want = kSaltSize + digest_size(a);
  if (raw->size() != want) {
    return Error(Errc::corrupt, "stored password hash is " + std::to_string(raw->size()) +
                                    " bytes; " + std::string(hash_algorithm_name(a)) + " needs " +
                                    std::to_string(want) + " (4 salt + digest)");
  }
  return std::move(raw).value();
}
}  // namespace

std::string_view hash_algorithm_name(HashAlgorithm a) {
  switch (a) {
    case HashAlgorithm::sha256:
      return kSha256;
    case HashAlgorithm::sha512:
      return kSha512;
    case HashAlgorithm::md5:
      return kMd5;
  }
  return kSha256;
}

Result<HashAlgorithm> parse_hash_algorithm(std::string_view name) {
  if (name == kSha256) return HashAlgorithm::sha256;
  if (name == kSha512) return HashAlgorithm::sha512;
  if (name == kMd5) return HashAlgorithm::md5;
  return Error(Errc::invalid_argument, "unknown password hashing algorithm '" + std::string(name) +
                                           "' (known: " + std::string(kSha256) + ", " +
                                           std::string(kSha512) + ", " + std::string(kMd5) + ")");
}

size_t digest_size(HashAlgorithm a) {
  switch (a) {
    case HashAlgorithm::sha256:
      return 32;
    case HashAlgorithm::sha512:
      return 64;
    case HashAlgorithm::md5:
      return 16;
  }
  return 32;
}

std::string hash_password(std::string_view password, HashAlgorithm a, const Salt& salt) {
  uint8_t buf[kSaltSize + EVP_MAX_MD_SIZE];
  std::copy(salt.begin(), salt.end(), buf);
  salted_digest(password, a, salt.data(), buf + kSaltSize);
  return base64_encode(buf, kSaltSize + digest_size(a));
}

Result<std::string> hash_password_random(std::string_view password, HashAlgorithm a) {
  Salt salt;
  if (RAND_bytes(salt.data(), static_cast<int>(salt.size())) != 1) {
    return Error(Errc::internal, "RAND_bytes failed to make a password salt");
  }
  return hash_password(password, a, salt);
}

Status check_stored_hash(std::string_view stored_b64, HashAlgorithm a) {
  auto raw = decode_stored(stored_b64, a);
  if (!raw.ok()) return std::move(raw).error();
  return Status::OK();
}

Result<bool> verify_password(std::string_view password, std::string_view stored_b64,
                             HashAlgorithm a) {
  STRATA_ASSIGN_OR_RETURN(auto raw, decode_stored(stored_b64, a));
  uint8_t digest[EVP_MAX_MD_SIZE];
  salted_digest(password, a, raw.data(), digest);
  // CRYPTO_memcmp takes the same time wherever the first difference is, so
  // the answer's timing does not leak how much of a guess was right.
  return CRYPTO_memcmp(digest, raw.data() + kSaltSize, digest_size(a)) == 0;
}

}  // namespace strata::auth
