// CRC32C (Castagnoli), the checksum of every strata format. extend() picks
// the fastest implementation the CPU has, once at start-up: AVX-512
// VPCLMULQDQ folding for long buffers, the SSE4.2 crc32 instruction on three
// interleaved streams for medium ones, on one stream for short ones, and a
// portable slicing-by-8 table otherwise. All give identical results (tested).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::crc32c {

// The Castagnoli polynomial, bit-reflected (the form the tables use).
inline constexpr uint32_t kPoly = 0x82F63B78u;

// CRC of data[0..n) continuing from `crc`, the finished CRC of the bytes
// before it (0 for none): extend(extend(0, a), b) == value(a + b).
uint32_t extend(uint32_t crc, const void* data, size_t n);

inline uint32_t value(const void* data, size_t n) {
  return extend(0, data, n);
}
inline uint32_t value(std::string_view s) {
  return extend(0, s.data(), s.size());
}

// The implementations, exposed so tests can check they agree. The hardware
// ones require the matching has_*() (crc32c_x86.cpp).
uint32_t extend_portable(uint32_t crc, const void* data, size_t n);
uint32_t extend_sse42(uint32_t crc, const void* data, size_t n);
uint32_t extend_sse42_3way(uint32_t crc, const void* data, size_t n);
uint32_t extend_avx512(uint32_t crc, const void* data, size_t n);
bool has_sse42();
bool has_avx512();

}  // namespace strata::crc32c
