#include "common/crc32.h"

#include <isa-l/crc.h>
#include <zlib.h>

namespace strata {

uint32_t crc32_zlib(const void* data, size_t n, uint32_t crc) {
  // crc32_gzip_refl inverts on entry and exit like zlib's crc32(), so a
  // finished CRC is also the seed that continues it.
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), n);
}

uint32_t crc32_zlib(BytesView data, uint32_t crc) {
  return crc32_zlib(data.data(), data.size(), crc);
}

uint32_t crc32_zlib_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return uint32_t(::crc32_combine(crc_a, crc_b, z_off_t(len_b)));
}

}  // namespace strata
