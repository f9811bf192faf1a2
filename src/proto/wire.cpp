#include "proto/wire.h"

#include <fmt/format.h>

#include "common/endian.h"

namespace strata::proto {

bool WireReader::need(size_t n, const char* field) {
  if (failed_) return false;
  if (remaining() >= n) return true;
  fail(field, fmt::format("truncated (needs {} bytes, {} left)", n, remaining()));
  return false;
}

void WireReader::fail(const char* field, std::string_view what) {
  if (failed_) return;
  failed_ = true;
  err_ = fmt::format("{} frame: field {} at byte {}: {}", command_, field, base_ + pos_, what);
}

void WireReader::expect_end() {
  if (!failed_ && remaining() != 0) {
    fail("(end)", fmt::format("{} trailing bytes", remaining()));
  }
}

uint8_t WireReader::u8(const char* field) {
  if (!need(1, field)) return 0;
  return uint8_t(in_[pos_++]);
}
uint16_t WireReader::u16(const char* field) {
  if (!need(2, field)) return 0;
  uint16_t v = get_be16(strata::u8(in_.data() + pos_));
  pos_ += 2;
  return v;
}
uint32_t WireReader::u32(const char* field) {
  if (!need(4, field)) return 0;
  uint32_t v = get_be32(strata::u8(in_.data() + pos_));
  pos_ += 4;
  return v;
}
uint64_t WireReader::u64(const char* field) {
  if (!need(8, field)) return 0;
  uint64_t v = get_be64(strata::u8(in_.data() + pos_));
  pos_ += 8;
  return v;
}

BytesView WireReader::raw(size_t n, const char* field) {
  if (!need(n, field)) return {};
  BytesView v = in_.substr(pos_, n);
  pos_ += n;
  return v;
}

std::optional<BytesView> WireReader::nullable_string_view(const char* field) {
  int16_t len = int16_t(u16(field));
  if (failed_) return std::nullopt;
  if (len == -1) return std::nullopt;
  if (len < 0) {
    fail(field, fmt::format("negative string length {}", len));
    return std::nullopt;
  }
  return raw(size_t(len), field);
}

std::string WireReader::string(const char* field) {
  auto v = nullable_string_view(field);
  return v ? std::string(*v) : std::string();
}

std::optional<BytesView> WireReader::bytes(const char* field) {
  int32_t len = int32_t(u32(field));
  if (failed_) return std::nullopt;
  if (len == -1) return std::nullopt;
  if (len < 0) {
    fail(field, fmt::format("negative bytes length {}", len));
    return std::nullopt;
  }
  return raw(size_t(len), field);
}

uint32_t WireReader::count(const char* field, size_t min_element_bytes) {
  int32_t n = int32_t(u32(field));
  if (failed_) return 0;
  if (n < 0) {
    fail(field, fmt::format("negative count {}", n));
    return 0;
  }
  if (min_element_bytes > 0 && uint64_t(n) * min_element_bytes > remaining()) {
    fail(field, fmt::format("count {} cannot fit in the {} bytes left", n, remaining()));
    return 0;
  }
  return uint32_t(n);
}

Properties WireReader::properties(const char* field) {
  Properties p;
  // Each pair holds at least two 2-byte string lengths.
  uint32_t n = count(field, 4);
  p.reserve(n);
  for (uint32_t i = 0; i < n && ok(); ++i) {
    std::string k = string(field);
    std::string v = string(field);
    p.emplace_back(std::move(k), std::move(v));
  }
  return p;
}

std::vector<std::string> WireReader::strings(const char* field) {
  std::vector<std::string> v;
  uint32_t n = count(field, 2);
  v.reserve(n);
  for (uint32_t i = 0; i < n && ok(); ++i) v.push_back(string(field));
  return v;
}

void WireWriter::u16(uint16_t v) {
  uint8_t b[2];
  put_be16(b, v);
  out_->append(reinterpret_cast<const char*>(b), 2);
}
void WireWriter::u32(uint32_t v) {
  uint8_t b[4];
  put_be32(b, v);
  out_->append(reinterpret_cast<const char*>(b), 4);
}
void WireWriter::u64(uint64_t v) {
  uint8_t b[8];
  put_be64(b, v);
  out_->append(reinterpret_cast<const char*>(b), 8);
}

void WireWriter::string(std::string_view s) {
  if (s.size() > 32767) s = s.substr(0, 32767);
  u16(uint16_t(s.size()));
  raw(s);
}

void WireWriter::nullable_string(const std::optional<BytesView>& s) {
  if (s) {
    string(*s);
  } else {
    null_string();
  }
}

void WireWriter::bytes(BytesView b) {
  u32(uint32_t(b.size()));
  raw(b);
}

void WireWriter::properties(const Properties& p) {
  count(p.size());
  for (const auto& [k, v] : p) {
    string(k);
    string(v);
  }
}

void WireWriter::strings(const std::vector<std::string>& v) {
  count(v.size());
  for (const auto& s : v) string(s);
}

size_t begin_frame(Bytes* out, uint16_t key, uint16_t version) {
  size_t start = out->size();
  WireWriter w(out);
  w.u32(0);
  w.u16(key);
  w.u16(version);
  return start;
}

void finish_frame(Bytes* out, size_t start) {
  uint32_t size = uint32_t(out->size() - start - 4);
  put_be32(strata::u8(out->data() + start), size);
}

}  // namespace strata::proto
