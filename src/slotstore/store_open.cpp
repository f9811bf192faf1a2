// Creating a store file and recovering one: records, strings, WAL replay.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>

#include "common/publish_file.h"
#include "slotstore/slot_rules.h"
#include "slotstore/store_impl.h"
#include "slotstore/wal_reader.h"

namespace strata::slotstore {

namespace {
constexpr size_t kChunk = 1 << 20;
}

Status SlotStore::Impl::create(FileSystem& fs, const std::string& path, const Schema& schema,
                               const Options& opt) {
  STRATA_ASSIGN_OR_RETURN(format::Layout l,
                          format::make_layout(schema, opt.slots, opt.strings, opt.wal_bytes));
  const std::string tmp = path + ".creating";
  Status rm = fs.remove(tmp);
  if (!rm.ok() && rm.code() != Errc::not_found) return rm;
  {
    STRATA_ASSIGN_OR_RETURN(auto f, fs.open(tmp, OpenOptions::create_truncate()));
    // Every byte is written now, so the file never grows later: an fsync
    // then flushes data only, and free record slots hold valid "free"
    // copies, so a slot with no valid copy can only mean damage.
    Bytes buf = format::encode_header(l);
    uint64_t off = 0;
    auto write = [&](BytesView b) -> Status {
      STRATA_TRY(f->write_at(off, b));
      off += b.size();
      return Status::OK();
    };
    auto zeros = [&](uint64_t end) -> Status {
      Bytes z(kChunk, '\0');
      while (off < end)
        STRATA_TRY(write(BytesView(z).substr(0, size_t(std::min<uint64_t>(kChunk, end - off)))));
      return Status::OK();
    };
    STRATA_TRY(write(buf));
    STRATA_TRY(zeros(l.records_off));
    format::RecordImage free_rec;
    free_rec.fields.assign(l.fields_size, '\0');
    for (int copy = 0; copy < 2; ++copy) {
      Bytes chunk;
      for (uint32_t s = 0; s < l.slots; ++s) {
        size_t at = chunk.size();
        chunk.resize(at + l.record_size);
        format::encode_record(l, s, copy, free_rec, chunk.data() + at);
        if (chunk.size() >= kChunk) {
          STRATA_TRY(write(chunk));
          chunk.clear();
        }
      }
      STRATA_TRY(write(chunk));
    }
    STRATA_TRY(zeros(l.wal_off));
    char h[format::kHalfHeaderSize];
    format::encode_half_header(0, format::HalfHeader{1, 1, 0}, h);
    STRATA_TRY(write(BytesView(h, sizeof h)));
    STRATA_TRY(zeros(l.file_size));
    return publish_file(fs, std::move(f), path);
  }
}

Result<FileLock> lock_store_file(const std::string& path) {
  return FileLock::acquire(path + ".lock", fmt::format("slotstore {}", path));
}

Result<std::unique_ptr<SlotStore::Impl>> SlotStore::Impl::open(FileSystem& fs,
                                                               const std::string& path,
                                                               const Schema* schema,
                                                               const Options& opt) {
  // Lock before looking at the file, so two writers cannot both create it.
  FileLock lock;
  if (!opt.read_only && opt.lock && &fs == &posix_fs()) {
    STRATA_ASSIGN_OR_RETURN(lock, lock_store_file(path));
  }
  auto st = fs.stat(path);
  if (!st.ok()) {
    if (st.code() != Errc::not_found) return std::move(st).error();
    if (!schema || !opt.create_if_missing || opt.read_only) {
      return Error(Errc::not_found, fmt::format("open slotstore {}: no such file", path));
    }
    STRATA_TRY(create(fs, path, *schema, opt));
  } else if (opt.error_if_exists) {
    return Error(Errc::already_exists, fmt::format("open slotstore {}: file exists", path));
  }
  STRATA_ASSIGN_OR_RETURN(auto file, fs.open(path, opt.read_only ? OpenOptions::read_only()
                                                                 : OpenOptions::read_write()));
  STRATA_ASSIGN_OR_RETURN(uint64_t size, file->size());
  Bytes head(size_t(std::min<uint64_t>(size, 4096)), '\0');
  STRATA_TRY(read_exact(*file, 0, head.data(), head.size()));
  uint64_t need = 0;
  auto layout = format::decode_header(head, path, &need);
  if (!layout.ok() && need > head.size() && need <= size) {
    head.resize(size_t(need));
    STRATA_TRY(read_exact(*file, 0, head.data(), head.size()));
    layout = format::decode_header(head, path, &need);
  }
  if (!layout.ok()) return std::move(layout).error();
  if (schema && !(layout->schema == *schema)) {
    return Error(Errc::schema_mismatch,
                 fmt::format("{}: file schema [{}] differs from the requested schema [{}]; use "
                             "migrate to change it",
                             path, layout->schema.to_string(), schema->to_string()));
  }
  if (size < layout->file_size) {
    return Error(Errc::corrupt, fmt::format("{}: file is {} bytes, its header describes {}", path,
                                            size, layout->file_size));
  }
  if (!opt.read_only) {
    // After a process crash, the page cache may hold writes that are not on
    // disk yet. Recovery trusts what it reads (a newer record copy lets
    // compaction skip entries), so make it durable first.
    STRATA_TRY(file->sync());
  }
  auto impl = std::make_unique<Impl>(fs, path, opt, std::move(layout).value(), std::move(file));
  impl->lock_ = std::move(lock);
  STRATA_TRY(impl->recover());
  STRATA_TRY(impl->start());
  return impl;
}

Status SlotStore::Impl::recover() {
  const format::Layout& l = layout_;
  // Interned strings written by compactions.
  if (l.strings > 0) {
    uint32_t per = uint32_t(std::max<size_t>(1, kChunk / l.string_slot_size));
    Bytes buf;
    uint64_t damaged = 0;
    for (uint32_t first = 0; first < l.strings; first += per) {
      uint32_t n = std::min(per, l.strings - first);
      buf.resize(size_t(n) * l.string_slot_size);
      STRATA_TRY(read_exact(*file_, l.string_offset(first), buf.data(), buf.size()));
      for (uint32_t i = 0; i < n; ++i) {
        Bytes s;
        switch (
            format::decode_string(l, first + i, buf.data() + size_t(i) * l.string_slot_size, &s)) {
          case format::StringSlot::empty:
            break;
          case format::StringSlot::damaged:
            // A compaction torn mid-write; its sealed WAL half still holds
            // the string (or nothing durable refers to it yet).
            ++damaged;
            break;
          case format::StringSlot::valid:
            table_.strings.add(first + i, std::move(s));
            compactor_.strings_on_disk()[first + i] = 1;
            break;
        }
      }
    }
    if (damaged) spdlog::info("{}: {} damaged string table entries ignored", path_, damaged);
  }

  // Record copies: the valid one with the higher lsn is current.
  std::vector<uint64_t> rec_lsn(l.slots, 0);
  uint64_t max_rec_lsn = 0;
  {
    uint32_t per = uint32_t(std::max<size_t>(1, kChunk / l.record_size));
    Bytes c0, c1;
    format::RecordImage r0, r1;
    for (uint32_t first = 0; first < l.slots; first += per) {
      uint32_t n = std::min(per, l.slots - first);
      c0.resize(size_t(n) * l.record_size);
      c1.resize(size_t(n) * l.record_size);
      STRATA_TRY(read_exact(*file_, l.record_offset(first, 0), c0.data(), c0.size()));
      STRATA_TRY(read_exact(*file_, l.record_offset(first, 1), c1.data(), c1.size()));
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t s = first + i;
        bool v0 = format::decode_record(l, s, 0, c0.data() + size_t(i) * l.record_size, &r0);
        bool v1 = format::decode_record(l, s, 1, c1.data() + size_t(i) * l.record_size, &r1);
        int cur = format::pick_current(v0, r0.lsn, v1, r1.lsn);
        if (cur < 0) {
          return Error(Errc::corrupt,
                       fmt::format("{}: slot {}: both record copies fail their CRC (offsets {} "
                                   "and {})",
                                   path_, s, l.record_offset(s, 0), l.record_offset(s, 1)));
        }
        const format::RecordImage& r = cur == 0 ? r0 : r1;
        compactor_.current()[s] = uint8_t(cur);
        table_.load(s, r);
        rec_lsn[s] = r.lsn;
        max_rec_lsn = std::max(max_rec_lsn, r.lsn);
      }
    }
  }

  // WAL: the newer half always; the older one too if its chain runs into
  // the newer half's seed (it may still be uncompacted). The switch to a new
  // half fsyncs the old one before the new header is written, so an
  // uncompacted older half is always complete on disk; one that does not
  // connect has been compacted and partly reused.
  format::HalfHeader h[2];
  bool valid[2];
  for (int i = 0; i < 2; ++i) {
    WalReader r(*file_, l, i, format::kHalfHeaderSize);
    STRATA_ASSIGN_OR_RETURN(valid[i], r.read_header(&h[i]));
  }
  if (!valid[0] && !valid[1]) {
    return Error(Errc::corrupt, fmt::format("{}: neither WAL half has a valid header", path_));
  }
  int a = !valid[1] ? 0 : !valid[0] ? 1 : (h[1].seq > h[0].seq ? 1 : 0);
  int b = 1 - a;
  uint64_t last_lsn = 0;
  if (valid[b] && h[b].seq + 1 == h[a].seq) {
    WalReader rb(*file_, l, b, l.half_size);
    uint64_t applied = 0;
    STRATA_TRY(replay_half(b, rec_lsn, &h[b], &rb, &applied));
    bool connected = rb.chain() == h[a].chain_seed && rb.last_lsn() < h[a].first_lsn;
    if (connected) {
      job_ = CompactionJob{b, h[b].seq, h[b].chain_seed, rb.position(), rb.chain(), rb.last_lsn()};
      sealed_used_ = rb.position();
      last_lsn = rb.last_lsn();
    } else if (applied > 0) {
      return Error(Errc::corrupt,
                   fmt::format("{}: WAL half {} (seq {}) does not connect to half {} (seq {}) but "
                               "holds {} entries missing from the records",
                               path_, b, h[b].seq, a, h[a].seq, applied));
    }
  }
  WalReader ra(*file_, l, a, l.half_size);
  uint64_t applied_a = 0;
  STRATA_TRY(replay_half(a, rec_lsn, &h[a], &ra, &applied_a));
  wal_.active = a;
  wal_.seq = h[a].seq;
  wal_.seed = h[a].chain_seed;
  wal_.written = ra.position();
  wal_.chain = ra.chain();
  wal_.half_last_lsn = ra.last_lsn();
  last_lsn = std::max({last_lsn, ra.last_lsn(), h[a].first_lsn - 1, max_rec_lsn});
  wal_.next_lsn = last_lsn + 1;
  last_lsn_ = last_lsn;
  active_used_ = wal_.written;

  // Every interned id a live record refers to must exist.
  std::vector<uint32_t> ids;
  for (uint32_t s = 0; s < l.slots; ++s) {
    if (!table_.live(s)) continue;
    ids.clear();
    format::referenced_strings(l, table_.fields(s), &ids);
    for (uint32_t id : ids) {
      if (!table_.strings.get(id)) {
        return Error(Errc::corrupt,
                     fmt::format("{}: slot {} (key {}) refers to interned string {}, which is in "
                                 "neither the string table nor the WAL",
                                 path_, s, format::describe_key(table_.key(s)), id));
      }
    }
  }
  return table_.build_index(path_);
}

Status SlotStore::Impl::replay_half(int half, std::vector<uint64_t>& rec_lsn,
                                    format::HalfHeader* header, WalReader* reader,
                                    uint64_t* applied) {
  STRATA_ASSIGN_OR_RETURN(bool valid, reader->read_header(header));
  if (!valid) {
    return Error(Errc::internal, fmt::format("{}: WAL half {} header vanished", path_, half));
  }
  for (;;) {
    format::Entry e;
    auto st = reader->next(&e);
    if (!st.ok()) return std::move(st).error().with_context(path_);
    if (*st == format::EntryStatus::end) return Status::OK();
    Status s = apply_replayed(e, rec_lsn, applied);
    if (!s.ok()) return std::move(s).error().with_context(path_);
  }
}

Status SlotStore::Impl::apply_replayed(const format::Entry& e, std::vector<uint64_t>& rec_lsn,
                                       uint64_t* applied) {
  switch (e.type) {
    case format::EntryType::marker:
      return Status::OK();
    case format::EntryType::intern:
      if (!table_.strings.add(e.string_id, std::string(e.str))) {
        return Error(Errc::corrupt, fmt::format("interned string {} differs between the string "
                                                "table and WAL entry lsn {}",
                                                e.string_id, e.lsn));
      }
      return Status::OK();
    case format::EntryType::put:
    case format::EntryType::erase:
      break;
  }
  uint32_t s = e.slot;
  Verdict v = judge(e, rec_lsn[s], table_.live(s), table_.gen(s));
  if (v == Verdict::stale) ++stale_;
  if (v != Verdict::apply) return Status::OK();
  ++*applied;
  if (e.type == format::EntryType::erase) {
    table_.release_raw(s);
    return Status::OK();
  }
  if (e.assign) table_.assign_raw(s, e.gen, e.key);
  return format::apply_updates(layout_, e, table_.fields(s));
}

Status SlotStore::Impl::start() {
  if (opt_.read_only) return Status::OK();
  if (opt_.background_compaction) {
    try {
      thread_ = std::thread([this] { compaction_main(); });
    } catch (const std::system_error& e) {
      return Error(Errc::io,
                   fmt::format("{}: cannot start the compaction thread: {}", path_, e.what()));
    }
  } else if (job_) {
    std::unique_lock<std::mutex> l(comp_mu_);
    run_compaction(l);
  }
  return Status::OK();
}

}  // namespace strata::slotstore
