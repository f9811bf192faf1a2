// Builders of osiris entries for tests (docs/formats/chunk.md, "Record entries").
#pragma once

#include <initializer_list>
#include <string>

#include "common/bytes.h"
#include "common/endian.h"
#include "log/entries.h"

namespace strata::log::test {

inline Bytes simple_entry(BytesView record) {
  Bytes out(kEntryHeaderSize, '\0');
  put_be32(u8(out.data()), uint32_t(record.size()));
  out.append(record.data(), record.size());
  return out;
}

// A sub-batch holding `body` as is (compressed bytes, or anything).
inline Bytes sub_batch(uint8_t compression, BytesView body, uint16_t nrec,
                       uint32_t uncompressed_len) {
  Bytes out(kSubBatchHeaderSize, '\0');
  uint8_t* p = u8(out.data());
  p[0] = uint8_t(0x80 | (compression << 4));
  put_be16(p + 1, nrec);
  put_be32(p + 3, uncompressed_len);
  put_be32(p + 7, uint32_t(body.size()));
  out.append(body.data(), body.size());
  return out;
}

// A sub-batch of `records` as simple entries (compression code as given, but
// the body is not compressed; use 0 for a valid uncompressed sub-batch).
inline Bytes sub_batch(uint8_t compression, std::initializer_list<BytesView> records) {
  Bytes body;
  for (BytesView r : records) body += simple_entry(r);
  return sub_batch(compression, body, uint16_t(records.size()), uint32_t(body.size()));
}

}  // namespace strata::log::test
