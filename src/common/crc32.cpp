#include "common/crc32.h"

#include <isa-l/crc.h>

namespace strata {

uint32_t crc32_zlib(const void* data, size_t n, uint32_t crc) {
  // crc32_gzip_refl inverts on entry and exit like zlib's crc32(), so a
  // finished CRC is also the seed that continues it.
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), n);
}

uint32_t crc32_zlib(BytesView data, uint32_t crc) {
  return crc32_zlib(data.data(), data.size(), crc);
}

}  // namespace strata
