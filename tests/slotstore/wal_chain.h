// Reading a store file's WAL the way recovery does, for tests that damage
// chosen entries (slotstore's and raftmeta's corruption tests).
#pragma once

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "slotstore/format.h"

namespace strata::slotstore::test {

// One entry of a WAL half's chain, as it is in the file.
struct EntryAt {
  uint64_t offset = 0;  // in the file
  uint32_t size = 0;
  format::EntryType type = format::EntryType::marker;
  uint64_t lsn = 0;
};

// The chain of half `half` of `file` (undamaged), from its header on.
inline std::vector<EntryAt> chain_of(const Bytes& file, const format::Layout& l, int half) {
  std::vector<EntryAt> out;
  const BytesView h(file.data() + l.half_offset(half), l.half_size);
  format::HalfHeader hh;
  if (!format::decode_half_header(half, h.data(), &hh)) return out;
  uint32_t chain = hh.chain_seed;
  for (uint64_t pos = format::kHalfHeaderSize; pos < h.size();) {
    format::Entry e;
    auto st = format::decode_entry(l, h.substr(pos), chain, &e);
    if (!st.ok() || *st == format::EntryStatus::end) break;
    out.push_back(EntryAt{l.half_offset(half) + pos, e.size, e.type, e.lsn});
    chain = e.chain;
    pos += e.size;
  }
  return out;
}

// The half with the newer valid header: the one being appended to.
inline int active_half(const Bytes& file, const format::Layout& l) {
  format::HalfHeader h[2];
  const bool v0 = format::decode_half_header(0, file.data() + l.half_offset(0), &h[0]);
  const bool v1 = format::decode_half_header(1, file.data() + l.half_offset(1), &h[1]);
  return v1 && (!v0 || h[1].seq > h[0].seq) ? 1 : 0;
}

inline std::vector<EntryAt> puts_of(const std::vector<EntryAt>& chain) {
  std::vector<EntryAt> puts;
  for (const EntryAt& e : chain) {
    if (e.type == format::EntryType::put) puts.push_back(e);
  }
  return puts;
}

}  // namespace strata::slotstore::test
