// Sequential reader of one WAL half: checks the half header, then yields the
// entries that continue the hash chain from it, stopping at the first bytes
// that do not (zeros, a torn write, stale entries of an earlier cycle). It
// reads the file in large windows, so each byte of the half is read about
// once (recovery cost is linear in the WAL size).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/file_window.h"
#include "common/fs.h"
#include "slotstore/format.h"

namespace strata::slotstore {

class WalReader {
 public:
  // Reads half `half` of `file`, considering only its first `limit` bytes.
  WalReader(File& file, const format::Layout& layout, int half, uint64_t limit);

  // Reads the half header; false if it is not a valid header of this half.
  Result<bool> read_header(format::HalfHeader* out);
  // The next entry of the chain (views stay valid until the next call), or
  // EntryStatus::end. Errors: io, or corrupt for a chain-valid entry whose
  // body does not parse.
  Result<format::EntryStatus> next(format::Entry* out);

  // For a half next() has already read whole up to the same limit
  // (compaction's passes after its scan): the next put or erase entry for a
  // slot in [first, last]. The entries before it are skipped by their
  // framing alone (size, stored chain value, lsn), not checksummed or
  // decoded: the scan did that, and a half is not written once sealed. The
  // entry returned is checked as next() checks it, against the chain value
  // stored in the entry before it. `end` at the limit or where the framing
  // stops.
  Result<format::EntryStatus> next_in_slots(uint32_t first, uint32_t last, format::Entry* out);

  // Why the chain stops at position() (after next() returned `end`).
  Result<std::string> why_end();
  // The first `durable` entry in [position(), limit) that stands on its own
  // (format::decode_durable_claim) with a durable lsn above `durable_above`,
  // and its offset in the half; nullopt if none. Reads the rest of the half
  // once.
  struct FoundClaim {
    uint64_t offset = 0;
    format::DurableClaim claim;
  };
  Result<std::optional<FoundClaim>> find_claim_after_end(uint64_t durable_above);

  uint64_t position() const { return pos_; }       // offset in the half after the last entry
  uint32_t chain() const { return chain_; }        // chain CRC after the last entry
  uint64_t last_lsn() const { return last_lsn_; }  // 0 before the first entry
  uint64_t entries() const { return entries_; }
  uint64_t bytes_read() const { return window_.bytes_read(); }

 private:
  // At least min(want, limit - pos) bytes at pos, from the window.
  Result<BytesView> window(uint64_t pos, size_t want);

  const format::Layout& layout_;
  int half_;
  uint64_t limit_;
  uint64_t base_;  // file offset of the half
  FileWindow window_;
  uint64_t pos_ = 0;
  uint32_t chain_ = 0;
  uint64_t first_lsn_ = 0;
  uint64_t last_lsn_ = 0;
  uint64_t entries_ = 0;
};

}  // namespace strata::slotstore
