// Creating a store file and opening one: the header, then recovery of the
// string table and the record copies (the WAL replay is in wal_replay.cpp).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>

#include "common/publish_file.h"
#include "slotstore/slot_rules.h"
#include "slotstore/store_impl.h"

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
  Status st = write_new(fs, tmp, path, l);
  if (st.ok()) return st;
  // A creation that failed (a full disk, most often) leaves nothing behind
  // to fill the disk for the next attempt.
  if (Status r = fs.remove(tmp); !r.ok() && r.code() != Errc::not_found) {
    spdlog::warn("slotstore {}: removing {} after a failed creation: {}", path, tmp,
                 r.error().to_string());
  }
  return Error(st.code(), fmt::format("creating slotstore {} ({} bytes): {}", path, l.file_size,
                                      st.error().message));
}

Status SlotStore::Impl::write_new(FileSystem& fs, const std::string& tmp, const std::string& path,
                                  const format::Layout& l) {
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

// Recovery state comes only from checksummed data (docs/formats/slotstore.md,
// "Why this is crash-safe" 5): the string table, then the record
// copies, then the WAL replayed over them.
Status SlotStore::Impl::recover() {
  STRATA_TRY(load_strings());
  std::vector<uint64_t> rec_lsn(layout_.slots, 0);
  uint64_t max_rec_lsn = 0;
  STRATA_TRY(load_records(rec_lsn, &max_rec_lsn));
  STRATA_TRY(replay_wal(rec_lsn, max_rec_lsn));
  STRATA_TRY(check_string_references());
  return table_.build_index(path_);
}

// Interned strings written by compactions.
Status SlotStore::Impl::load_strings() {
  const format::Layout& l = layout_;
  if (l.strings == 0) return Status::OK();
  const uint32_t per = uint32_t(std::max<size_t>(1, kChunk / l.string_slot_size));
  Bytes buf;
  uint64_t damaged = 0;
  for (uint32_t first = 0; first < l.strings; first += per) {
    const uint32_t n = std::min(per, l.strings - first);
    buf.resize(size_t(n) * l.string_slot_size);
    STRATA_TRY(read_exact(*file_, l.string_offset(first), buf.data(), buf.size()));
    for (uint32_t i = 0; i < n; ++i) {
      Bytes s;
      const char* at = buf.data() + size_t(i) * l.string_slot_size;
      switch (format::decode_string(l, first + i, at, &s)) {
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
  return Status::OK();
}

// Record copies: the valid one with the higher lsn is current.
Status SlotStore::Impl::load_records(std::vector<uint64_t>& rec_lsn, uint64_t* max_rec_lsn) {
  const format::Layout& l = layout_;
  const uint32_t per = uint32_t(std::max<size_t>(1, kChunk / l.record_size));
  Bytes c0, c1;
  format::RecordImage r0, r1;
  for (uint32_t first = 0; first < l.slots; first += per) {
    const uint32_t n = std::min(per, l.slots - first);
    c0.resize(size_t(n) * l.record_size);
    c1.resize(size_t(n) * l.record_size);
    STRATA_TRY(read_exact(*file_, l.record_offset(first, 0), c0.data(), c0.size()));
    STRATA_TRY(read_exact(*file_, l.record_offset(first, 1), c1.data(), c1.size()));
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t s = first + i;
      bool v0 = format::decode_record(l, s, 0, c0.data() + size_t(i) * l.record_size, &r0);
      bool v1 = format::decode_record(l, s, 1, c1.data() + size_t(i) * l.record_size, &r1);
      const int cur = format::pick_current(v0, r0.lsn, v1, r1.lsn);
      if (cur < 0) {
        return Error(Errc::corrupt,
                     fmt::format("{}: slot {}: both record copies fail their CRC (offsets {} "
                                 "and {})",
                                 path_, s, l.record_offset(s, 0), l.record_offset(s, 1)));
      }
      const format::RecordImage& r = cur == 0 ? r0 : r1;
      if (r.gen > format::kMaxGeneration) {
        return Error(
            Errc::corrupt,
            fmt::format("{}: slot {}: record copy {} (offset {}) has generation {}, above "
                        "the largest a writer assigns ({})",
                        path_, s, cur, l.record_offset(s, cur), r.gen, format::kMaxGeneration));
      }
      compactor_.current()[s] = uint8_t(cur);
      table_.load(s, r);
      rec_lsn[s] = r.lsn;
      *max_rec_lsn = std::max(*max_rec_lsn, r.lsn);
    }
  }
  return Status::OK();
}

// Every interned id a live record refers to must exist.
Status SlotStore::Impl::check_string_references() const {
  const format::Layout& l = layout_;
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
  return Status::OK();
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
