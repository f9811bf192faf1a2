// Byte buffers for binary formats. `std::string` is the owned byte container
// and `std::string_view` the borrowed one (as in LevelDB): both hold arbitrary
// bytes, including NUL. ByteWriter appends big-endian fields; ByteReader reads
// them with bounds checks and reports the first overrun as an error naming
// the field, so decoders never read past their input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/endian.h"
#include "common/result.h"

namespace strata {

using Bytes = std::string;
using BytesView = std::string_view;

inline const uint8_t* u8(const char* p) {
  return reinterpret_cast<const uint8_t*>(p);
}
inline uint8_t* u8(char* p) {
  return reinterpret_cast<uint8_t*>(p);
}

class ByteWriter {
 public:
  explicit ByteWriter(Bytes* out) : out_(out) {}

  void u8(uint8_t v) { out_->push_back(char(v)); }
  void be16(uint16_t v) { put<2>(v, put_be16); }
  void be32(uint32_t v) { put<4>(v, put_be32); }
  void be64(uint64_t v) { put<8>(v, put_be64); }
  void bytes(BytesView b) { out_->append(b.data(), b.size()); }
  void zeros(size_t n) { out_->append(n, '\0'); }
  size_t size() const { return out_->size(); }

 private:
  template <size_t N, typename V, typename F>
  void put(V v, F f) {
    uint8_t tmp[N];
    f(tmp, v);
    out_->append(reinterpret_cast<const char*>(tmp), N);
  }
  Bytes* out_;
};

class ByteReader {
 public:
  // `what` names the input in error messages ("manifest root", a file path).
  explicit ByteReader(BytesView in, std::string what = "input") : in_(in), what_(std::move(what)) {}

  // Each getter returns false (and records an error) if fewer bytes remain
  // than asked for; later getters then also fail.
  bool u8(uint8_t* v, const char* field);
  bool be16(uint16_t* v, const char* field);
  bool be32(uint32_t* v, const char* field);
  bool be64(uint64_t* v, const char* field);
  bool bytes(size_t n, BytesView* v, const char* field);
  bool skip(size_t n, const char* field);

  size_t position() const { return pos_; }
  size_t remaining() const { return in_.size() - pos_; }
  bool failed() const { return failed_; }
  // The first overrun, as Errc::corrupt naming the input, field and position.
  Error error() const { return Error(Errc::corrupt, err_); }

 private:
  bool need(size_t n, const char* field);
  BytesView in_;
  std::string what_;
  size_t pos_ = 0;
  bool failed_ = false;
  std::string err_;
};

// Lowercase hex of bytes, for keys, uids and dumps.
std::string to_hex(BytesView b);

}  // namespace strata
