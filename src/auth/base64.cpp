#include "auth/base64.h"

#include <openssl/evp.h>

namespace strata::auth {

std::string base64_encode(const uint8_t* data, size_t size) {
  std::string out(4 * ((size + 2) / 3), '\0');
  // EVP_EncodeBlock writes a terminating NUL after the text: one byte more.
  std::string buf(out.size() + 1, '\0');
  int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(buf.data()), data, static_cast<int>(size));
  buf.resize(static_cast<size_t>(n));
  return buf;
}

namespace {
bool in_alphabet(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}
}  // namespace

Result<std::vector<uint8_t>> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return Error(Errc::invalid_argument,
                 "base64 length " + std::to_string(text.size()) + " is not a multiple of 4");
  }
  // EVP_DecodeBlock skips blanks and counts padding as zero bytes, so the
  // text is checked here and the padding subtracted afterwards.
  size_t pad = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '=') {
      if (i + 2 < text.size() || (i + 1 == text.size() - 1 && text.back() != '=')) {
        return Error(Errc::invalid_argument,
                     "base64 padding '=' at position " + std::to_string(i) + " before the end");
      }
      ++pad;
    } else if (pad > 0 || !in_alphabet(c)) {
      return Error(Errc::invalid_argument,
                   "base64 character at position " + std::to_string(i) + " is not in the alphabet");
    }
  }
  std::vector<uint8_t> out(text.size() / 4 * 3);
  if (text.empty()) return out;
  int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return Error(Errc::invalid_argument, "base64 text does not decode");
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace strata::auth
