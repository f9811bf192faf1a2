#include "objstore/digest.h"

#include <openssl/evp.h>

#include "common/bytes.h"
#include "common/endian.h"
#include "net/base64.h"

namespace strata::objstore {

namespace {
std::string digest(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, md, nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}
}  // namespace

std::string sha256_hex(std::string_view data) {
  return to_hex(digest(EVP_sha256(), data));
}

std::string md5_base64(std::string_view data) {
  return net::base64_encode(digest(EVP_md5(), data));
}

std::string crc32c_base64(uint32_t crc) {
  char be[4];
  put_be32(u8(be), crc);
  return net::base64_encode(std::string_view(be, 4));
}

std::optional<uint32_t> crc32c_from_base64(std::string_view s) {
  auto raw = net::base64_decode(s);
  if (!raw || raw->size() != 4) return std::nullopt;
  return get_be32(u8(raw->data()));
}

}  // namespace strata::objstore
