#include "slotstore/compactor.h"

#include <fmt/format.h>

#include <algorithm>

#include "slotstore/slot_rules.h"
#include "slotstore/wal_reader.h"

namespace strata::slotstore {

namespace {
// Heap cost of one buffered image beyond its record bytes (two strings and
// the image struct).
constexpr size_t kImageOverhead = 96;
// Largest single read or write of record copies.
constexpr size_t kMaxIo = 1 << 20;
}  // namespace

Compactor::Compactor(File& file, const format::Layout& layout, size_t buffer_bytes, Hook hook,
                     SyncFn sync)
    : file_(file),
      layout_(layout),
      buffer_bytes_(buffer_bytes),
      hook_(std::move(hook)),
      sync_(std::move(sync)),
      current_(layout.slots, 0),
      strings_on_disk_(layout.strings, 0),
      touched_(layout.slots, 0),
      written_(layout.slots, 0),
      image_at_(layout.slots, -1) {}

size_t Compactor::window_slots() const {
  return std::max<size_t>(1, buffer_bytes_ / (layout_.record_size + kImageOverhead));
}

Status Compactor::scan(const CompactionJob& job, Stats* stats) {
  auto corrupt = [&](const std::string& what) {
    return Error(Errc::corrupt, fmt::format("{}: compaction of WAL half {} (seq {}): {}",
                                            file_.path(), job.half, job.seq, what));
  };
  WalReader reader(file_, layout_, job.half, job.end);
  format::HalfHeader h;
  STRATA_ASSIGN_OR_RETURN(bool valid, reader.read_header(&h));
  if (!valid || h.seq != job.seq || h.chain_seed != job.seed) {
    return corrupt("the sealed half's header changed or is damaged");
  }
  for (;;) {
    format::Entry e;
    STRATA_ASSIGN_OR_RETURN(format::EntryStatus st, reader.next(&e));
    if (st == format::EntryStatus::end) break;
    ++stats->entries;
    if (e.type == format::EntryType::put || e.type == format::EntryType::erase) {
      touched_[e.slot] = 1;
    } else if (e.type == format::EntryType::intern && !strings_on_disk_[e.string_id]) {
      strings_.emplace_back(e.string_id, Bytes(e.str));
    }
  }
  if (reader.position() != job.end || reader.chain() != job.end_chain ||
      reader.last_lsn() != job.end_lsn) {
    return corrupt(fmt::format("the chain ends at offset {} (lsn {}), expected {} (lsn {})",
                               reader.position(), reader.last_lsn(), job.end, job.end_lsn));
  }
  return Status::OK();
}

Status Compactor::load_window() {
  const size_t rs = layout_.record_size;
  size_t i = 0;
  while (i < window_.size()) {
    // A run: neighbouring slots whose current copy is the same.
    const uint32_t first = window_[i].slot;
    const int copy = current_[first];
    size_t j = i + 1;
    while (j < window_.size() && window_[j].slot == window_[j - 1].slot + 1 &&
           current_[window_[j].slot] == copy && (j - i + 1) * rs <= kMaxIo) {
      ++j;
    }
    io_.resize((j - i) * rs);
    STRATA_TRY(read_exact(file_, layout_.record_offset(first, copy), io_.data(), io_.size()));
    for (size_t k = i; k < j; ++k) {
      if (!format::decode_record(layout_, window_[k].slot, copy, io_.data() + (k - i) * rs,
                                 &window_[k].rec)) {
        uint32_t slot = window_[k].slot;
        return Error(Errc::corrupt,
                     fmt::format("{}: slot {} record copy {} (offset {}) fails its CRC during "
                                 "compaction",
                                 file_.path(), slot, copy, layout_.record_offset(slot, copy)));
      }
    }
    i = j;
  }
  return Status::OK();
}

Status Compactor::apply_window(const CompactionJob& job, uint32_t first, uint32_t last,
                               Stats* stats) {
  // The half was checked by scan(); it is sealed, so it reads the same.
  WalReader reader(file_, layout_, job.half, job.end);
  format::HalfHeader h;
  STRATA_ASSIGN_OR_RETURN(bool valid, reader.read_header(&h));
  if (!valid) return Error(Errc::corrupt, file_.path() + ": sealed WAL half header changed");
  // Only the window's entries are decoded: with W windows, decoding every
  // entry in every pass cost W + 1 decodes per entry (most of compaction's
  // time with 10 000 servers, whose images take about 5 windows).
  for (;;) {
    format::Entry e;
    STRATA_ASSIGN_OR_RETURN(format::EntryStatus st, reader.next_in_slots(first, last, &e));
    if (st == format::EntryStatus::end) break;
    Image& img = window_[size_t(image_at_[e.slot])];
    format::RecordImage& r = img.rec;
    Verdict v = judge(e, r.lsn, r.live, r.gen);
    if (v == Verdict::stale) ++stats->stale;
    if (v != Verdict::apply) continue;
    if (e.type == format::EntryType::erase) {
      r.live = false;
      r.key.clear();
      r.fields.assign(layout_.fields_size, '\0');
    } else {
      if (e.assign) {
        r.live = true;
        r.gen = e.gen;
        r.key = Bytes(e.key);
        r.fields.assign(layout_.fields_size, '\0');
      }
      STRATA_TRY(format::apply_updates(layout_, e, r.fields.data()));
    }
    img.dirty = true;
  }
  // The half read the same as in scan() (sealed), to its end: anything else
  // would leave entries of the window unapplied.
  if (reader.position() != job.end || reader.chain() != job.end_chain) {
    return Error(Errc::corrupt,
                 fmt::format("{}: compaction of WAL half {} (seq {}): the half changed since its "
                             "scan (its chain now ends at offset {}, expected {})",
                             file_.path(), job.half, job.seq, reader.position(), job.end));
  }
  return Status::OK();
}

Status Compactor::write_window(uint64_t lsn, Stats* stats) {
  const size_t rs = layout_.record_size;
  size_t i = 0;
  while (i < window_.size()) {
    if (!window_[i].dirty) {
      ++i;
      continue;
    }
    // A run: neighbouring dirty slots whose new copy is the same.
    const uint32_t first = window_[i].slot;
    const int target = 1 - current_[first];
    size_t j = i;
    io_.clear();
    while (j < window_.size() && window_[j].dirty && window_[j].slot == first + uint32_t(j - i) &&
           1 - current_[window_[j].slot] == target && io_.size() + rs <= kMaxIo) {
      window_[j].rec.lsn = lsn;
      io_.resize(io_.size() + rs);
      format::encode_record(layout_, window_[j].slot, target, window_[j].rec,
                            io_.data() + io_.size() - rs);
      written_[window_[j].slot] = 1;
      ++j;
    }
    STRATA_TRY(file_.write_at(layout_.record_offset(first, target), io_));
    stats->slots_written += j - i;
    i = j;
  }
  return Status::OK();
}

Status Compactor::run(const CompactionJob& job, Stats* stats) {
  // Whatever happens, leave no per-run state behind for the next attempt.
  struct Reset {
    Compactor* c;
    ~Reset() {
      for (const Image& img : c->window_) c->image_at_[img.slot] = -1;
      c->window_.clear();
      c->strings_.clear();
      std::fill(c->touched_.begin(), c->touched_.end(), 0);
      std::fill(c->written_.begin(), c->written_.end(), 0);
      Bytes().swap(c->io_);
    }
  } reset{this};
  if (hook_) STRATA_TRY(hook_(CompactionPoint::started));
  STRATA_TRY(scan(job, stats));
  bool wrote = false;
  if (!strings_.empty()) {
    if (hook_) STRATA_TRY(hook_(CompactionPoint::before_write));
    std::vector<char> buf(layout_.string_slot_size);
    for (const auto& [id, s] : strings_) {
      format::encode_string(layout_, id, s, buf.data());
      STRATA_TRY(file_.write_at(layout_.string_offset(id), BytesView(buf.data(), buf.size())));
    }
    stats->strings_written += strings_.size();
    wrote = true;
  }
  const size_t per_window = window_slots();
  uint32_t next = 0;
  while (next < layout_.slots) {
    for (const Image& img : window_) image_at_[img.slot] = -1;
    window_.clear();
    uint32_t s = next;
    for (; s < layout_.slots && window_.size() < per_window; ++s) {
      if (!touched_[s]) continue;
      image_at_[s] = int32_t(window_.size());
      window_.emplace_back();
      window_.back().slot = s;
    }
    next = s;
    if (window_.empty()) break;
    ++stats->windows;
    STRATA_TRY(load_window());
    STRATA_TRY(apply_window(job, window_.front().slot, window_.back().slot, stats));
    if (hook_) STRATA_TRY(hook_(CompactionPoint::before_write));
    uint64_t before = stats->slots_written;
    STRATA_TRY(write_window(job.end_lsn, stats));
    wrote |= stats->slots_written > before;
  }
  if (hook_) STRATA_TRY(hook_(CompactionPoint::before_sync));
  // Nothing written, nothing to make durable: every entry was covered by a
  // current copy, which is durable (made current after an fsync, or read at
  // open, which fsyncs first).
  if (wrote) STRATA_TRY(sync_());
  // Durable now: the written copies become current.
  for (uint32_t s = 0; s < layout_.slots; ++s) current_[s] ^= written_[s];
  for (const auto& [id, str] : strings_) strings_on_disk_[id] = 1;
  return Status::OK();
}

}  // namespace strata::slotstore
