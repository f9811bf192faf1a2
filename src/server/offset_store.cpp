#include "server/offset_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "catalog/stream_name.h"
#include "common/bytes.h"
#include "common/publish_file.h"
#include "server/named_files.h"

namespace strata::server {

namespace {
constexpr uint32_t kTrackingMagic = 0x5354524B;  // "STRK"
constexpr uint8_t kTrackingVersion = 1;
}  // namespace

Bytes encode_tracking_file(const std::map<std::string, uint64_t, std::less<>>& offsets) {
  Bytes out;
  ByteWriter w(&out);
  w.be32(kTrackingMagic);
  w.u8(kTrackingVersion);
  w.be32(uint32_t(offsets.size()));
  for (const auto& [ref, off] : offsets) {
    w.u8(uint8_t(ref.size()));
    w.bytes(ref);
    w.be64(off);
  }
  append_checksum_trailer(&out);
  return out;
}

Result<std::map<std::string, uint64_t, std::less<>>> decode_tracking_file(
    BytesView in, const std::string& where) {
  STRATA_ASSIGN_OR_RETURN(BytesView body, checked_body(in, 4 + 1 + 4 + 4, "an offset tracking file", where));
  ByteReader r(body, where);
  uint32_t magic = 0, count = 0;
  uint8_t version = 0;
  r.be32(&magic, "magic");
  r.u8(&version, "version");
  r.be32(&count, "count");
  if (r.failed()) return r.error();
  if (magic != kTrackingMagic) {
    return Error(Errc::corrupt,
                 fmt::format("{}: not an offset tracking file (magic {:08x})", where, magic));
  }
  if (version != kTrackingVersion) {
    return Error(Errc::unsupported_version,
                 fmt::format("{}: offset tracking file version {} (this build reads {})", where,
                             version, kTrackingVersion));
  }
  std::map<std::string, uint64_t, std::less<>> out;
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
    out.emplace(std::string(ref), off);
  }
  if (r.remaining() != 0) {
    return Error(Errc::corrupt, fmt::format("{}: {} bytes after the last of {} entries", where,
                                            r.remaining(), count));
  }
  return out;
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
  return path_join(dir_, std::string(stream));
}

Result<std::unique_ptr<OffsetStore>> OffsetStore::open(std::string dir, OffsetStoreOptions opts) {
  std::unique_ptr<OffsetStore> s(new OffsetStore(std::move(dir), opts));
  STRATA_TRY(s->load());
  if (opts.flush_interval.count() > 0)
    s->st_->flusher = std::thread([p = s.get()] { p->run_flusher(); });
  return s;
}

Status OffsetStore::load() {
  // A flush interrupted before its rename left a temporary file: the final
  // one is intact.
  return load_named_files(
      fs_, dir_, "offset store", "a stream's tracking file",
      [&](const std::string& name, const std::string& path, Bytes bytes) -> Status {
        STRATA_ASSIGN_OR_RETURN(auto offsets, decode_tracking_file(bytes, path));
        st_->streams[name].offsets = std::move(offsets);
        return Status::OK();
      });
}

Status OffsetStore::store(std::string_view stream, std::string_view reference, uint64_t offset) {
  if (reference.empty() || reference.size() > kMaxReferenceBytes) {
    return Error(Errc::invalid_argument, fmt::format("offset reference of {} bytes (1..{} allowed)",
                                                     reference.size(), kMaxReferenceBytes));
  }
  STRATA_TRY(catalog::validate_stream_name(stream));
  std::lock_guard l(st_->mu);
  if (st_->closed) return Error(Errc::closed, fmt::format("offset store {} is closed", dir_));
  if (st_->removed.count(stream)) {
    return Error(Errc::not_found,
                 fmt::format("offset store {}: stream {} was deleted", dir_, stream));
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
        dirty.push_back({name, encode_tracking_file(s.offsets), s.version});
    }
  }
  Status first = Status::OK();
  uint64_t written = 0;
  for (const Dirty& d : dirty) {
    Status s = publish_file(fs_, file_of(d.stream), [&](File& f) { return f.append(d.bytes); });
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
