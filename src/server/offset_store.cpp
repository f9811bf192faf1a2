#include "server/offset_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <vector>

#include "catalog/stream_name.h"
#include "common/bytes.h"
#include "common/crc32c.h"
#include "common/publish_file.h"

namespace strata::server {

namespace {
constexpr uint32_t kTrackingMagic = 0x5354524B;  // "STRK"
constexpr uint8_t kTrackingVersion = 1;
constexpr std::string_view kTempSuffix = ".tmp";
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
  w.be32(crc32c::value(out));
  return out;
}

Result<std::map<std::string, uint64_t, std::less<>>> decode_tracking_file(
    BytesView in, const std::string& where) {
  if (in.size() < 4 + 1 + 4 + 4) {
    return Error(Errc::corrupt, fmt::format("{}: {} bytes is too short for an offset tracking file",
                                            where, in.size()));
  }
  const uint32_t stored = get_be32(u8(in.data() + in.size() - 4));
  const uint32_t actual = crc32c::value(in.substr(0, in.size() - 4));
  if (stored != actual) {
    return Error(Errc::corrupt,
                 fmt::format("{}: checksum mismatch (stored {:08x}, computed {:08x})", where,
                             stored, actual));
  }
  ByteReader r(in.substr(0, in.size() - 4), where);
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

OffsetStore::OffsetStore(std::string dir, OffsetStoreOptions opts)
    : dir_(std::move(dir)), opts_(opts), fs_(opts.fs ? *opts.fs : posix_fs()) {}

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
    s->flusher_ = std::thread([p = s.get()] { p->run_flusher(); });
  return s;
}

Status OffsetStore::load() {
  STRATA_TRY(create_dirs(fs_, dir_));
  STRATA_ASSIGN_OR_RETURN(auto names, fs_.list_dir(dir_));
  for (const std::string& name : names) {
    const std::string path = path_join(dir_, name);
    if (name.size() > kTempSuffix.size() && name.ends_with(kTempSuffix)) {
      // A flush interrupted before its rename: the final file is intact.
      STRATA_TRY(fs_.remove(path));
      continue;
    }
    if (!catalog::validate_stream_name(name).ok()) {
      spdlog::warn("offset store: ignoring {}: not a stream's tracking file", path);
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(Bytes bytes, read_file(fs_, path));
    STRATA_ASSIGN_OR_RETURN(auto offsets, decode_tracking_file(bytes, path));
    streams_[name].offsets = std::move(offsets);
  }
  return Status::OK();
}

Status OffsetStore::store(std::string_view stream, std::string_view reference, uint64_t offset) {
  if (reference.empty() || reference.size() > kMaxReferenceBytes) {
    return Error(Errc::invalid_argument, fmt::format("offset reference of {} bytes (1..{} allowed)",
                                                     reference.size(), kMaxReferenceBytes));
  }
  STRATA_TRY(catalog::validate_stream_name(stream));
  std::lock_guard l(mu_);
  if (closed_) return Error(Errc::closed, fmt::format("offset store {} is closed", dir_));
  if (removed_.count(stream)) {
    return Error(Errc::not_found,
                 fmt::format("offset store {}: stream {} was deleted", dir_, stream));
  }
  auto it = streams_.find(stream);
  if (it == streams_.end()) it = streams_.emplace(std::string(stream), StreamOffsets{}).first;
  auto ref = it->second.offsets.find(reference);
  if (ref == it->second.offsets.end()) {
    it->second.offsets.emplace(std::string(reference), offset);
  } else {
    ref->second = offset;
  }
  it->second.version += 1;
  stats_.stores += 1;
  return Status::OK();
}

std::optional<uint64_t> OffsetStore::query(std::string_view stream,
                                           std::string_view reference) const {
  std::lock_guard l(mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) return std::nullopt;
  auto ref = it->second.offsets.find(reference);
  if (ref == it->second.offsets.end()) return std::nullopt;
  return ref->second;
}

Status OffsetStore::flush() {
  std::lock_guard io(io_mu_);
  struct Dirty {
    std::string stream;
    Bytes bytes;
    uint64_t version;
  };
  std::vector<Dirty> dirty;
  {
    std::lock_guard l(mu_);
    for (auto& [name, s] : streams_) {
      if (s.version != s.flushed)
        dirty.push_back({name, encode_tracking_file(s.offsets), s.version});
    }
  }
  Status first = Status::OK();
  uint64_t written = 0;
  for (const Dirty& d : dirty) {
    Status s = publish_file(fs_, file_of(d.stream), [&](File& f) { return f.append(d.bytes); });
    std::lock_guard l(mu_);
    if (!s.ok()) {
      stats_.flush_failures += 1;
      if (first.ok()) first = s;
      continue;
    }
    written += 1;
    auto it = streams_.find(d.stream);
    if (it != streams_.end()) it->second.flushed = std::max(it->second.flushed, d.version);
  }
  std::lock_guard l(mu_);
  stats_.files_written += written;
  if (written > 0) stats_.flushes += 1;
  return first;
}

Status OffsetStore::remove_stream(std::string_view stream) {
  std::lock_guard io(io_mu_);
  {
    std::lock_guard l(mu_);
    auto it = streams_.find(stream);
    if (it != streams_.end()) streams_.erase(it);
    removed_.emplace(stream);
  }
  const std::string path = file_of(stream);
  if (!exists(fs_, path)) return Status::OK();
  STRATA_TRY(fs_.remove(path));
  return fs_.sync_dir(dir_);
}

void OffsetStore::stream_created(std::string_view stream) {
  std::lock_guard l(mu_);
  auto it = removed_.find(stream);
  if (it != removed_.end()) removed_.erase(it);
}

void OffsetStore::run_flusher() {
  std::unique_lock l(mu_);
  while (!stopping_) {
    cv_.wait_for(l, opts_.flush_interval, [&] { return stopping_; });
    if (stopping_) break;
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
    std::lock_guard l(mu_);
    if (closed_) return Status::OK();
    stopping_ = true;
  }
  cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  Status s = flush();
  std::lock_guard l(mu_);
  closed_ = true;
  return s;
}

OffsetStoreStats OffsetStore::stats() const {
  std::lock_guard l(mu_);
  return stats_;
}

}  // namespace strata::server
