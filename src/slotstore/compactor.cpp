#include "slotstore/compactor.h"

#include <fmt/format.h>

#include <algorithm>

#include "slotstore/slot_rules.h"
#include "slotstore/wal_reader.h"

namespace strata::slotstore {

namespace {
// Rough heap cost of one buffered image beyond its record bytes.
constexpr size_t kImageOverhead = 96;
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
      image_at_(layout.slots, -1) {}

Result<Compactor::Image*> Compactor::load(uint32_t slot) {
  if (image_at_[slot] >= 0) return &images_[size_t(image_at_[slot])].second;
  int copy = current_[slot];
  Bytes buf(layout_.record_size, '\0');
  STRATA_TRY(read_exact(file_, layout_.record_offset(slot, copy), buf.data(), buf.size()));
  Image img;
  if (!format::decode_record(layout_, slot, copy, buf.data(), &img.rec)) {
    return Error(Errc::corrupt,
                 fmt::format("{}: slot {} record copy {} (offset {}) fails its CRC during "
                             "compaction",
                             file_.path(), slot, copy, layout_.record_offset(slot, copy)));
  }
  image_at_[slot] = int32_t(images_.size());
  images_.emplace_back(slot, std::move(img));
  buffered_ += layout_.record_size + kImageOverhead;
  return &images_.back().second;
}

Status Compactor::flush(uint64_t lsn, Stats* stats) {
  if (hook_) STRATA_TRY(hook_(CompactionPoint::before_write));
  std::vector<char> buf(layout_.string_slot_size);
  for (const auto& [id, s] : strings_) {
    format::encode_string(layout_, id, s, buf.data());
    STRATA_TRY(file_.write_at(layout_.string_offset(id), BytesView(buf.data(), buf.size())));
  }
  // Write dirty images in slot order, joining neighbouring slots that go to
  // the same copy into one write.
  std::vector<size_t> order;
  for (size_t i = 0; i < images_.size(); ++i) {
    if (images_[i].second.dirty) order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return images_[a].first < images_[b].first; });
  Bytes run;
  uint64_t run_off = 0;
  int run_copy = -1;
  uint32_t run_next = 0;
  auto write_run = [&]() -> Status {
    if (run.empty()) return Status::OK();
    Status s = file_.write_at(run_off, run);
    run.clear();
    return s;
  };
  for (size_t i : order) {
    auto& [slot, img] = images_[i];
    int target = 1 - current_[slot];
    if (run_copy != target || slot != run_next) {
      STRATA_TRY(write_run());
      run_off = layout_.record_offset(slot, target);
      run_copy = target;
    }
    img.rec.lsn = lsn;
    size_t at = run.size();
    run.resize(at + layout_.record_size);
    format::encode_record(layout_, slot, target, img.rec, run.data() + at);
    run_next = slot + 1;
    if (run.size() >= (1u << 20)) {
      STRATA_TRY(write_run());
      run_copy = -1;
    }
  }
  STRATA_TRY(write_run());
  if (hook_) STRATA_TRY(hook_(CompactionPoint::before_sync));
  // Nothing written, nothing to make durable: every image was covered by
  // its current copy, which is durable (made current after an fsync, or
  // read at open, which fsyncs first).
  if (!order.empty() || !strings_.empty()) STRATA_TRY(sync_());
  // Durable now: the written copies become current.
  for (size_t i : order) current_[images_[i].first] ^= 1;
  for (const auto& [id, s] : strings_) strings_on_disk_[id] = 1;
  stats->slots_written += order.size();
  stats->strings_written += strings_.size();
  ++stats->flushes;
  for (const auto& [slot, img] : images_) image_at_[slot] = -1;
  images_.clear();
  strings_.clear();
  buffered_ = 0;
  return Status::OK();
}

Status Compactor::run(const CompactionJob& job, Stats* stats) {
  // Whatever happens, leave no per-run state behind for the next attempt.
  struct Reset {
    Compactor* c;
    ~Reset() {
      for (const auto& [slot, img] : c->images_) c->image_at_[slot] = -1;
      c->images_.clear();
      c->strings_.clear();
      c->buffered_ = 0;
    }
  } reset{this};
  if (hook_) STRATA_TRY(hook_(CompactionPoint::started));
  auto where = [&](const std::string& what) {
    return Error(Errc::corrupt, fmt::format("{}: compaction of WAL half {} (seq {}): {}",
                                            file_.path(), job.half, job.seq, what));
  };
  WalReader reader(file_, layout_, job.half, job.end);
  format::HalfHeader h;
  STRATA_ASSIGN_OR_RETURN(bool valid, reader.read_header(&h));
  if (!valid || h.seq != job.seq || h.chain_seed != job.seed) {
    return where("the sealed half's header changed or is damaged");
  }
  uint64_t last_lsn = 0;
  for (;;) {
    format::Entry e;
    STRATA_ASSIGN_OR_RETURN(format::EntryStatus st, reader.next(&e));
    if (st == format::EntryStatus::end) break;
    ++stats->entries;
    switch (e.type) {
      case format::EntryType::marker:
        break;
      case format::EntryType::intern:
        if (!strings_on_disk_[e.string_id]) {
          buffered_ += e.str.size() + kImageOverhead;
          strings_.emplace_back(e.string_id, Bytes(e.str));
        }
        break;
      case format::EntryType::put:
      case format::EntryType::erase: {
        STRATA_ASSIGN_OR_RETURN(Image * img, load(e.slot));
        format::RecordImage& r = img->rec;
        Verdict v = judge(e, r.lsn, r.live, r.gen);
        if (v == Verdict::stale) ++stats->stale;
        if (v != Verdict::apply) break;
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
        img->dirty = true;
        break;
      }
    }
    last_lsn = e.lsn;
    if (buffered_ >= buffer_bytes_) STRATA_TRY(flush(last_lsn, stats));
  }
  if (reader.position() != job.end || reader.chain() != job.end_chain || last_lsn != job.end_lsn) {
    return where(fmt::format("the chain ends at offset {} (lsn {}), expected {} (lsn {})",
                             reader.position(), last_lsn, job.end, job.end_lsn));
  }
  return flush(last_lsn, stats);
}

}  // namespace strata::slotstore
