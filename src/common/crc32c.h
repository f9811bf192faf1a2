// CRC32C (Castagnoli), the checksum of every strata format. Uses the SSE4.2
// crc32 instruction when the CPU has it (checked once at start-up) and a
// portable slicing-by-8 table otherwise; both give identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::crc32c {

// CRC of data[0..n) continuing from `crc`, the finished CRC of the bytes
// before it (0 for none): extend(extend(0, a), b) == value(a + b).
uint32_t extend(uint32_t crc, const void* data, size_t n);

inline uint32_t value(const void* data, size_t n) { return extend(0, data, n); }
inline uint32_t value(std::string_view s) { return extend(0, s.data(), s.size()); }

// The two implementations, exposed so tests can check they agree.
uint32_t extend_portable(uint32_t crc, const void* data, size_t n);
uint32_t extend_hardware(uint32_t crc, const void* data, size_t n);  // requires has_hardware()
bool has_hardware();

}  // namespace strata::crc32c
