#include "slotstore/wal_reader.h"

#include <algorithm>

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

}  // namespace strata::slotstore
