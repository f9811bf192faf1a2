#include "objstore/digest.h"

#include <openssl/evp.h>

#include "common/bytes.h"
#include "common/endian.h"

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
  return base64_encode(digest(EVP_md5(), data));
}

std::string base64_encode(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()), int(data.size()));
  out.resize(size_t(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view s) {
  if (s.size() % 4 != 0) return std::nullopt;
  std::string out(3 * (s.size() / 4), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(s.data()), int(s.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts padding as zero bytes.
  size_t pad = 0;
  if (!s.empty() && s.back() == '=') ++pad;
  if (s.size() >= 2 && s[s.size() - 2] == '=') ++pad;
  out.resize(size_t(n) - pad);
  return out;
}

std::string crc32c_base64(uint32_t crc) {
  char be[4];
  put_be32(u8(be), crc);
  return base64_encode(std::string_view(be, 4));
}

std::optional<uint32_t> crc32c_from_base64(std::string_view s) {
  auto raw = base64_decode(s);
  if (!raw || raw->size() != 4) return std::nullopt;
  return get_be32(u8(raw->data()));
}

}  // namespace strata::objstore
