#include "common/crc32c.h"

#include <array>
#include <cstring>

namespace strata::crc32c {
namespace {

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};
constexpr Tables kTables;

}  // namespace

uint32_t extend_portable(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  const auto& t = kTables.t;
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    // The table walk assumes little-endian loads; strata targets x86-64 and
    // aarch64 Debian, both little-endian.
    lo ^= c;
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

namespace {
const bool kHasSse42 = has_sse42();
const bool kHasAvx512 = has_avx512();
// Below these sizes the set-up of the faster paths costs more than it saves.
constexpr size_t kMinAvx512 = 1024;
constexpr size_t kMin3Way = 768;
}  // namespace

uint32_t extend(uint32_t crc, const void* data, size_t n) {
  if (kHasAvx512 && n >= kMinAvx512) return extend_avx512(crc, data, n);
  if (kHasSse42)
    return n >= kMin3Way ? extend_sse42_3way(crc, data, n) : extend_sse42(crc, data, n);
  return extend_portable(crc, data, n);
}

}  // namespace strata::crc32c
