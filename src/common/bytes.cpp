#include "common/bytes.h"

#include <fmt/format.h>

namespace strata {

bool ByteReader::need(size_t n, const char* field) {
  if (failed_) return false;
  if (remaining() < n) {
    failed_ = true;
    err_ = fmt::format("{}: truncated at byte {} reading {} ({} bytes needed, {} left)", what_,
                       pos_, field, n, remaining());
    return false;
  }
  return true;
}

bool ByteReader::u8(uint8_t* v, const char* field) {
  if (!need(1, field)) return false;
  *v = uint8_t(in_[pos_]);
  pos_ += 1;
  return true;
}
bool ByteReader::be16(uint16_t* v, const char* field) {
  if (!need(2, field)) return false;
  *v = get_be16(strata::u8(in_.data() + pos_));
  pos_ += 2;
  return true;
}
bool ByteReader::be32(uint32_t* v, const char* field) {
  if (!need(4, field)) return false;
  *v = get_be32(strata::u8(in_.data() + pos_));
  pos_ += 4;
  return true;
}
bool ByteReader::be64(uint64_t* v, const char* field) {
  if (!need(8, field)) return false;
  *v = get_be64(strata::u8(in_.data() + pos_));
  pos_ += 8;
  return true;
}
bool ByteReader::bytes(size_t n, BytesView* v, const char* field) {
  if (!need(n, field)) return false;
  *v = in_.substr(pos_, n);
  pos_ += n;
  return true;
}
bool ByteReader::skip(size_t n, const char* field) {
  if (!need(n, field)) return false;
  pos_ += n;
  return true;
}

std::string to_hex(BytesView b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (unsigned char c : b) {
    s.push_back(digits[c >> 4]);
    s.push_back(digits[c & 15]);
  }
  return s;
}

}  // namespace strata
