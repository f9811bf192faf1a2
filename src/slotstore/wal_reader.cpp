#include "slotstore/wal_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/endian.h"

namespace strata::slotstore {

namespace {
constexpr size_t kWindow = 256 * 1024;
}

WalReader::WalReader(File& file, const format::Layout& layout, int half, uint64_t limit)
    : layout_(layout),
      half_(half),
      limit_(std::min<uint64_t>(limit, layout.half_size)),
      base_(layout.half_offset(half)),
      // Twice the largest entry, so one read holds at least one whole entry.
      window_(file, base_ + limit_, std::max<size_t>(kWindow, 2 * layout.max_op_bytes)) {}

Result<BytesView> WalReader::window(uint64_t pos, size_t want) {
  return window_.read_up_to(base_ + pos, want);
}

Result<bool> WalReader::read_header(format::HalfHeader* out) {
  STRATA_ASSIGN_OR_RETURN(BytesView h, window(0, format::kHalfHeaderSize));
  if (h.size() < format::kHalfHeaderSize) return false;
  if (!format::decode_half_header(half_, h.data(), out)) return false;
  pos_ = format::kHalfHeaderSize;
  chain_ = out->chain_seed;
  first_lsn_ = out->first_lsn;
  return true;
}

Result<format::EntryStatus> WalReader::next(format::Entry* out) {
  if (pos_ == 0) return format::EntryStatus::end;  // no valid header
  STRATA_ASSIGN_OR_RETURN(BytesView in, window(pos_, layout_.max_op_bytes));
  format::Entry e;
  STRATA_ASSIGN_OR_RETURN(format::EntryStatus st, format::decode_entry(layout_, in, chain_, &e));
  if (st == format::EntryStatus::end) return st;
  // Sequence numbers only grow along the chain; anything else is not a
  // continuation written by this store.
  if (e.lsn < first_lsn_ || (entries_ > 0 && e.lsn <= last_lsn_)) return format::EntryStatus::end;
  pos_ += e.size;
  chain_ = e.chain;
  last_lsn_ = e.lsn;
  ++entries_;
  *out = e;
  return format::EntryStatus::ok;
}

Result<format::EntryStatus> WalReader::next_in_slots(uint32_t first, uint32_t last,
                                                     format::Entry* out) {
  if (pos_ == 0) return format::EntryStatus::end;  // no valid header
  // The header and a put's or erase's slot: chain (4), size (4), type (1),
  // lsn (8), slot (4). Headers are read from one view of many entries (a
  // window() call per skipped entry cost as much as the skipping).
  constexpr size_t kPeek = format::kEntryHeaderSize + 4;
  constexpr size_t kView = 64 * 1024;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(BytesView in, window(pos_, kView));
    size_t at = 0;
    while (in.size() - at >= kPeek || (at == 0 && in.size() >= format::kEntryHeaderSize)) {
      const auto* p = reinterpret_cast<const uint8_t*>(in.data() + at);
      const uint32_t size = get_be32(p + 4);
      if (size < format::kEntryHeaderSize || size > limit_ - pos_) return format::EntryStatus::end;
      const auto type = format::EntryType(p[8]);
      if (type == format::EntryType::put || type == format::EntryType::erase) {
        // Too short for its slot: next() tells why.
        if (size < kPeek || in.size() - at < kPeek) return next(out);
        const uint32_t slot = get_be32(p + format::kEntryHeaderSize);
        if (slot >= first && slot <= last) return next(out);
      }
      chain_ = get_be32(p);
      last_lsn_ = get_be64(p + 9);
      pos_ += size;
      at += size;
      ++entries_;
      if (at > in.size()) break;  // the next header is past the view
    }
    if (at == 0) return format::EntryStatus::end;  // fewer bytes than a header
  }
}

Result<std::string> WalReader::why_end() {
  if (pos_ == 0) return std::string("the half has no valid header");
  STRATA_ASSIGN_OR_RETURN(BytesView in, window(pos_, layout_.max_op_bytes));
  if (auto why = format::why_chain_ends(in, chain_)) return std::move(*why);
  // The framing continues the chain: next() refused the entry's lsn.
  const uint64_t lsn = get_be64(reinterpret_cast<const uint8_t*>(in.data()) + 9);
  return fmt::format("the entry here has lsn {}, which does not follow lsn {}", lsn,
                     entries_ > 0 ? last_lsn_ : first_lsn_ - 1);
}

Result<std::optional<WalReader::FoundClaim>> WalReader::find_claim_after_end(
    uint64_t durable_above) {
  // Look for the last byte of a `durable` entry's size (entry byte 7): rare
  // in zeros and in other entries, unlike the signature's leading zeros.
  constexpr size_t kProbe = 7;
  const char probe = format::durable_entry_signature()[3];
  uint64_t at = pos_;  // where the next candidate entry may start
  while (at + format::kDurableEntrySize <= limit_) {
    // Half a window per step: window() then never grows its buffer past
    // what replay used, and each step after the first is served from it
    // every other time (each byte is still read once).
    STRATA_ASSIGN_OR_RETURN(BytesView w, window(at, kWindow / 2));
    const char* const end = w.data() + w.size();
    for (const char* p = w.data() + kProbe;
         p < end && (p = static_cast<const char*>(std::memchr(p, probe, size_t(end - p)))); ++p) {
      format::DurableClaim c;
      const size_t start = size_t(p - w.data()) - kProbe;
      if (format::decode_durable_claim(w.substr(start), &c) && c.durable_lsn > durable_above) {
        return std::optional<FoundClaim>(FoundClaim{at + start, c});
      }
    }
    // Overlap so an entry spanning two windows is seen whole.
    if (w.size() < format::kDurableEntrySize) break;
    at += w.size() - (format::kDurableEntrySize - 1);
  }
  return std::optional<FoundClaim>();
}

}  // namespace strata::slotstore
