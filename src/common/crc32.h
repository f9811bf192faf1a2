// CRC32 as zlib, gzip and Ethernet compute it (polynomial 0x04C11DB7,
// reflected): the checksum the RabbitMQ stream protocol puts on a chunk's
// data. strata's own formats use CRC32C (common/crc32c.h); this one exists
// only because the wire asks for it. ISA-L computes it (PCLMULQDQ folding,
// picked at run time), so no hand-written table or folding lives here.
#pragma once

#include <cstdint>

#include "common/bytes.h"

namespace strata {

// CRC of `data` continuing from `crc`, the finished CRC of the bytes before
// it (0 for none): crc32_zlib(b, crc32_zlib(a)) == crc32_zlib(a + b), and
// equal to zlib's crc32(crc, data, size).
uint32_t crc32_zlib(BytesView data, uint32_t crc = 0);
uint32_t crc32_zlib(const void* data, size_t n, uint32_t crc = 0);
// The CRC of a + b from crc32_zlib(a), crc32_zlib(b) and b's length, without
// reading either (zlib's crc32_combine: O(log len_b)).
uint32_t crc32_zlib_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

}  // namespace strata
