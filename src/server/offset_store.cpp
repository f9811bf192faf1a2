#include "server/offset_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/bytes.h"
#include "common/endian.h"
#include "common/name_component.h"
#include "common/stream_name.h"
#include "server/named_files.h"

namespace strata::server {

namespace {
constexpr uint32_t kTrackingMagic = 0x5354524B;  // "STRK"
// Version 2 holds the stream's name; version 1 (before names were encoded)
// did not, and is still read.
constexpr uint8_t kTrackingVersion = 2;
constexpr uint8_t kTrackingVersionWithoutName = 1;
}  // namespace

Bytes encode_tracking_file(std::string_view stream,
                           const std::map<std::string, uint64_t, std::less<>>& offsets) {
  Bytes out;
  ByteWriter w(&out);
  w.be32(kTrackingMagic);
  w.u8(kTrackingVersion);
  w.u8(uint8_t(stream.size()));
  w.bytes(stream);
  w.be32(uint32_t(offsets.size()));
  for (const auto& [ref, off] : offsets) {
    w.u8(uint8_t(ref.size()));
    w.bytes(ref);
    w.be64(off);
  }
  append_checksum_trailer(&out);
  return out;
}

Result<TrackingFile> decode_tracking_file(BytesView in, const std::string& where) {
  STRATA_ASSIGN_OR_RETURN(BytesView body,
                          checked_body(in, 4 + 1 + 4 + 4, "an offset tracking file", where));
  ByteReader r(body, where);
  uint32_t magic = 0, count = 0;
  TrackingFile f;
  r.be32(&magic, "magic");
  r.u8(&f.version, "version");
  if (r.failed()) return r.error();
  if (magic != kTrackingMagic) {
    return Error(Errc::corrupt,
                 fmt::format("{}: not an offset tracking file (magic {:08x})", where, magic));
  }
  if (f.version != kTrackingVersion && f.version != kTrackingVersionWithoutName) {
    return Error(Errc::unsupported_version,
                 fmt::format("{}: offset tracking file version {} (this build reads {} and {})",
                             where, f.version, kTrackingVersionWithoutName, kTrackingVersion));
  }
  if (f.version == kTrackingVersion) {
    uint8_t len = 0;
    BytesView name;
    if (!r.u8(&len, "name length") || !r.bytes(len, &name, "name")) return r.error();
    f.stream = std::string(name);
    if (Status st = validate_stream_name(f.stream); !st.ok()) {
      return Error(Errc::corrupt, fmt::format("{}: {}", where, st.error().message));
    }
  }
  if (!r.be32(&count, "count")) return r.error();
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t len = 0;
    BytesView ref;
    uint64_t off = 0;
    if (!r.u8(&len, "reference length") || !r.bytes(len, &ref, "reference") ||
        !r.be64(&off, "offset")) {
      return r.error();
    }
    if (len == 0) {
      return Error(Errc::corrupt, fmt::format("{}: entry {} has an empty reference", where, i));
    }
    f.offsets.emplace(std::string(ref), off);
  }
  if (r.remaining() != 0) {
    return Error(Errc::corrupt, fmt::format("{}: {} bytes after the last of {} entries", where,
                                            r.remaining(), count));
  }
  return f;
}

struct OffsetStore::State {
  struct StreamOffsets {
    std::map<std::string, uint64_t, std::less<>> offsets;
    uint64_t version = 0;  // bumped by every store
    uint64_t flushed = 0;  // the version last written
  };
  mutable std::mutex mu;  // streams, removed, closed, stats
  std::map<std::string, StreamOffsets, std::less<>> streams;
  // Removed streams not created again since (store() refuses them). In
  // memory only: after a restart no store of a deleted stream is in flight.
  std::set<std::string, std::less<>> removed;
  bool closed = false;
  bool stopping = false;
  OffsetStoreStats stats;
  std::condition_variable cv;
  // Serializes writers of the files (flush rounds and removals), so a
  // removed stream's file is never written again by a flush in progress.
  std::mutex io_mu;
  std::thread flusher;
};

OffsetStore::OffsetStore(std::string dir, OffsetStoreOptions opts)
    : dir_(std::move(dir)),
      opts_(opts),
      fs_(opts.fs ? *opts.fs : posix_fs()),
      st_(std::make_unique<State>()) {}

OffsetStore::~OffsetStore() {
  if (Status s = close(); !s.ok()) {
    spdlog::warn("offset store {}: final flush failed: {}", dir_, s.error().message);
  }
}

std::string OffsetStore::file_of(std::string_view stream) const {
  return named_file_path(dir_, stream);
}

Result<std::unique_ptr<OffsetStore>> OffsetStore::open(std::string dir, OffsetStoreOptions opts) {
  std::unique_ptr<OffsetStore> s(new OffsetStore(std::move(dir), opts));
  STRATA_TRY(s->load());
  if (opts.flush_interval.count() > 0)
    s->st_->flusher = std::thread([p = s.get()] { p->run_flusher(); });
  return s;
}

Status OffsetStore::load() {
  return load_named_files(
      fs_, dir_, "offset store", "a stream's tracking file",
      [&](const NamedEntry& e, Bytes bytes) -> Result<NamedFileUse> {
        const bool maybe_temp = may_be_previous_temp(e.component);
        auto f = decode_tracking_file(bytes, e.path);
        if (!f.ok()) {
          // A file of this version is published whole, never cut short: one
          // that does not read and is not of this version, under a name the
          // previous version gave its temporary files, is such a file.
          if (maybe_temp && !has_header(bytes, kTrackingMagic, kTrackingVersion))
            return NamedFileUse::previous_temp;
          return f.error();
        }
        std::string stream;
        if (f->version == kTrackingVersion) {
          if (name_component(f->stream) != e.component) {
            return Error(Errc::corrupt, fmt::format("{}: holds the offsets of stream \"{}\"",
                                                    e.path, printable_name(f->stream)));
          }
          stream = f->stream;
        } else {
          // Version 1, written under the stream's name as is. Named like a
          // temporary file, it is the previous version's temporary file, or
          // the file of a stream "x.tmp" which that version removed at every
          // start anyway: it cannot be told apart, and is removed.
          if (maybe_temp) return NamedFileUse::previous_temp;
          auto name = e.previous_name ? e.previous_name : name_of_component(e.component);
          if (!name) {
            return Error(Errc::corrupt,
                         fmt::format("{}: a version 1 file under an encoded name", e.path));
          }
          stream = std::move(*name);
        }
        st_->streams[stream].offsets = std::move(f->offsets);
        return NamedFileUse::loaded;
      });
}

Status OffsetStore::store(std::string_view stream, std::string_view reference, uint64_t offset) {
  if (reference.empty() || reference.size() > kMaxReferenceBytes) {
    return Error(Errc::invalid_argument, fmt::format("offset reference of {} bytes (1..{} allowed)",
                                                     reference.size(), kMaxReferenceBytes));
  }
  STRATA_TRY(validate_stream_name(stream));
  std::lock_guard l(st_->mu);
  if (st_->closed) return Error(Errc::closed, fmt::format("offset store {} is closed", dir_));
  if (st_->removed.count(stream)) {
    return Error(Errc::not_found, fmt::format("offset store {}: stream {} was deleted", dir_,
                                              printable_name(stream)));
  }
  auto it = st_->streams.find(stream);
  if (it == st_->streams.end())
    it = st_->streams.emplace(std::string(stream), State::StreamOffsets{}).first;
  auto ref = it->second.offsets.find(reference);
  if (ref == it->second.offsets.end()) {
    it->second.offsets.emplace(std::string(reference), offset);
  } else {
    ref->second = offset;
  }
  it->second.version += 1;
  st_->stats.stores += 1;
  return Status::OK();
}

std::optional<uint64_t> OffsetStore::query(std::string_view stream,
                                           std::string_view reference) const {
  std::lock_guard l(st_->mu);
  auto it = st_->streams.find(stream);
  if (it == st_->streams.end()) return std::nullopt;
  auto ref = it->second.offsets.find(reference);
  if (ref == it->second.offsets.end()) return std::nullopt;
  return ref->second;
}

Status OffsetStore::flush() {
  std::lock_guard io(st_->io_mu);
  struct Dirty {
    std::string stream;
    Bytes bytes;
    uint64_t version;
  };
  std::vector<Dirty> dirty;
  {
    std::lock_guard l(st_->mu);
    for (auto& [name, s] : st_->streams) {
      if (s.version != s.flushed)
        dirty.push_back({name, encode_tracking_file(name, s.offsets), s.version});
    }
  }
  Status first = Status::OK();
  uint64_t written = 0;
  for (const Dirty& d : dirty) {
    Status s = publish_named_file(fs_, dir_, d.stream, d.bytes);
    std::lock_guard l(st_->mu);
    if (!s.ok()) {
      st_->stats.flush_failures += 1;
      if (first.ok()) first = s;
      continue;
    }
    written += 1;
    auto it = st_->streams.find(d.stream);
    if (it != st_->streams.end()) it->second.flushed = std::max(it->second.flushed, d.version);
  }
  std::lock_guard l(st_->mu);
  st_->stats.files_written += written;
  if (written > 0) st_->stats.flushes += 1;
  return first;
}

Status OffsetStore::remove_stream(std::string_view stream) {
  std::lock_guard io(st_->io_mu);
  {
    std::lock_guard l(st_->mu);
    auto it = st_->streams.find(stream);
    if (it != st_->streams.end()) st_->streams.erase(it);
    st_->removed.emplace(stream);
  }
  const std::string path = file_of(stream);
  if (!exists(fs_, path)) return Status::OK();
  STRATA_TRY(fs_.remove(path));
  return fs_.sync_dir(dir_);
}

void OffsetStore::stream_created(std::string_view stream) {
  std::lock_guard l(st_->mu);
  auto it = st_->removed.find(stream);
  if (it != st_->removed.end()) st_->removed.erase(it);
}

void OffsetStore::run_flusher() {
  std::unique_lock l(st_->mu);
  while (!st_->stopping) {
    st_->cv.wait_for(l, opts_.flush_interval, [&] { return st_->stopping; });
    if (st_->stopping) break;
    l.unlock();
    if (Status s = flush(); !s.ok()) {
      spdlog::warn("offset store {}: flush failed (retried in {} ms): {}", dir_,
                   opts_.flush_interval.count(), s.error().message);
    }
    l.lock();
  }
}

Status OffsetStore::close() {
  {
    std::lock_guard l(st_->mu);
    if (st_->closed) return Status::OK();
    st_->stopping = true;
  }
  st_->cv.notify_all();
  if (st_->flusher.joinable()) st_->flusher.join();
  Status s = flush();
  std::lock_guard l(st_->mu);
  st_->closed = true;
  return s;
}

OffsetStoreStats OffsetStore::stats() const {
  std::lock_guard l(st_->mu);
  return st_->stats;
}

}  // namespace strata::server
