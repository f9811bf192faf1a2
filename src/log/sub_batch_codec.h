// Decompression of a sub-batch entry's body, for readers that want single
// records (`strata consume`, the tiered reader). The stream protocol names
// the codec (docs/formats/chunk.md "Record entries"); the clients write:
//   1 gzip    an RFC 1952 gzip member (zlib);
//   2 snappy  the Snappy framing format ("sNaPpY" stream identifier, chunks
//             with masked CRC32C; libsnappy for the raw blocks);
//   3 lz4     an LZ4 frame (liblz4);
//   4 zstd    a Zstandard frame (libzstd).
// The stored bytes are never changed: delivery passes sub-batches through as
// they came, and decompression happens only where records are read one by one.
// Pure: bytes in, bytes out.
#pragma once

#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "common/result.h"
#include "log/log_limits.h"

namespace strata::log {

// The body of a sub-batch compressed with `compression` (a code of
// entries.h), which must expand to exactly `uncompressed_len` bytes (at
// most kMaxUncompressedSubBatch, log_limits.h). Errors
// (unsupported: an unknown codec or bytes the codec rejects) say which codec
// and why; the caller adds where.
Result<std::string> decompress_sub_batch(uint8_t compression, BytesView body,
                                         uint32_t uncompressed_len);

}  // namespace strata::log
