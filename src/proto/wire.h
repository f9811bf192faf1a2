// Field-level reading and writing of stream protocol frames: big-endian
// integers, strings (int16 length, -1 = null), bytes (int32 length, -1 =
// null) and arrays (int32 count). The reader never reads past its input and
// never allocates from a count it has not checked against the bytes left;
// the first problem becomes an error naming the command, the field and the
// byte position, and later reads return zeros so decoders stay simple.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"

namespace strata::proto {

// Ordered key/value pairs (peer properties, stream arguments, ...). Kept as a
// list: the wire allows duplicates and order is what the peer sent.
using Properties = std::vector<std::pair<std::string, std::string>>;

class WireReader {
 public:
  // `command` names the frame in errors ("Subscribe").
  // `base` is where `in` starts in the frame body, for error positions.
  WireReader(BytesView in, std::string command, size_t base = 0)
      : in_(in), command_(std::move(command)), base_(base) {}

  uint8_t u8(const char* field);
  uint16_t u16(const char* field);
  uint32_t u32(const char* field);
  uint64_t u64(const char* field);
  int64_t i64(const char* field) { return int64_t(u64(field)); }
  // A string; null (-1) reads as empty.
  std::string string(const char* field);
  // A string that may be null (nullopt), as a view into the input.
  std::optional<BytesView> nullable_string_view(const char* field);
  // bytes: int32 length + content; null reads as nullopt.
  std::optional<BytesView> bytes(const char* field);
  // n raw bytes (no length prefix).
  BytesView raw(size_t n, const char* field);
  // An array count: fails on a negative count or one whose elements, at
  // `min_element_bytes` each, cannot fit in what is left.
  uint32_t count(const char* field, size_t min_element_bytes);
  Properties properties(const char* field);
  std::vector<std::string> strings(const char* field);

  BytesView rest() const { return in_.substr(pos_); }
  size_t remaining() const { return in_.size() - pos_; }
  size_t position() const { return pos_; }
  bool ok() const { return !failed_; }
  // Records a problem found by the decoder itself (a bad value).
  void fail(const char* field, std::string_view what);
  // After the last field: trailing bytes are an error.
  void expect_end();
  Error error() const { return Error(Errc::corrupt, err_); }

 private:
  bool need(size_t n, const char* field);
  BytesView in_;
  std::string command_;
  size_t base_ = 0;
  size_t pos_ = 0;
  bool failed_ = false;
  std::string err_;
};

class WireWriter {
 public:
  explicit WireWriter(Bytes* out) : out_(out) {}
  void u8(uint8_t v) { out_->push_back(char(v)); }
  void u16(uint16_t v);
  void u32(uint32_t v);
  void u64(uint64_t v);
  void i64(int64_t v) { u64(uint64_t(v)); }
  // Strings longer than the int16 length allows are cut at 32767 bytes;
  // callers validate names before they reach the wire.
  void string(std::string_view s);
  void null_string() { u16(0xffff); }
  void nullable_string(const std::optional<BytesView>& s);
  void bytes(BytesView b);
  void raw(BytesView b) { out_->append(b.data(), b.size()); }
  void count(size_t n) { u32(uint32_t(n)); }
  void properties(const Properties& p);
  void strings(const std::vector<std::string>& v);

 private:
  Bytes* out_;
};

// Starts a frame in `out` (size placeholder, key, version) and returns where
// it starts; finish_frame patches the size once the fields are written.
size_t begin_frame(Bytes* out, uint16_t key, uint16_t version);
void finish_frame(Bytes* out, size_t start);

}  // namespace strata::proto
