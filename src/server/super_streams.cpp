#include "server/super_streams.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>

#include "common/bytes.h"
#include "common/endian.h"
#include "common/name_component.h"
#include "common/publish_file.h"
#include "common/stream_name.h"
#include "server/named_files.h"
#include "server/server_limits.h"

namespace strata::server {

namespace {
constexpr uint32_t kSuperMagic = 0x53535550;  // "SSUP"
// Version 2 has version 1's layout. It only tells the files written since
// names are encoded from the files of before (see load()).
constexpr uint8_t kSuperVersion = 2;
constexpr uint8_t kSuperVersionBeforeEncoding = 1;

// Whether `file` starts like a file of the current version.
bool current_header(BytesView file) {
  return file.size() >= 5 && get_be32(u8(file.data())) == kSuperMagic &&
         uint8_t(file[4]) == kSuperVersion;
}
}  // namespace

Status validate_super_stream(const SuperStream& s) {
  if (Status st = validate_stream_name(s.name); !st.ok()) {
    return Error(Errc::invalid_argument, "super stream name: " + st.error().message);
  }
  const std::string who = "super stream " + printable_name(s.name);
  if (s.partitions.empty() || s.partitions.size() > kMaxPartitions) {
    return Error(Errc::invalid_argument, fmt::format("{}: {} partitions (1..{} allowed)", who,
                                                     s.partitions.size(), kMaxPartitions));
  }
  if (s.binding_keys.size() != s.partitions.size()) {
    return Error(Errc::invalid_argument, fmt::format("{}: {} binding keys for {} partitions", who,
                                                     s.binding_keys.size(), s.partitions.size()));
  }
  std::set<std::string_view> parts, keys;
  for (size_t i = 0; i < s.partitions.size(); ++i) {
    if (Status st = validate_stream_name(s.partitions[i]); !st.ok()) {
      return Error(Errc::invalid_argument,
                   fmt::format("{}: partition {}: {}", who, i, st.error().message));
    }
    if (!parts.insert(s.partitions[i]).second) {
      return Error(Errc::invalid_argument, fmt::format("{}: partition {} is listed twice", who,
                                                       printable_name(s.partitions[i])));
    }
    const std::string& k = s.binding_keys[i];
    if (k.empty() || k.size() > kMaxBindingKeyBytes) {
      return Error(Errc::invalid_argument,
                   fmt::format("{}: binding key {} has {} bytes (1..{} allowed)", who, i, k.size(),
                               kMaxBindingKeyBytes));
    }
    if (!keys.insert(k).second) {
      return Error(Errc::invalid_argument,
                   fmt::format("{}: binding key {} is used twice", who, printable_name(k)));
    }
  }
  return Status::OK();
}

Bytes encode_super_stream_file(const SuperStream& s) {
  Bytes out;
  ByteWriter w(&out);
  w.be32(kSuperMagic);
  w.u8(kSuperVersion);
  w.u8(uint8_t(s.name.size()));
  w.bytes(s.name);
  w.be32(uint32_t(s.partitions.size()));
  for (size_t i = 0; i < s.partitions.size(); ++i) {
    w.u8(uint8_t(s.partitions[i].size()));
    w.bytes(s.partitions[i]);
    w.u8(uint8_t(s.binding_keys[i].size()));
    w.bytes(s.binding_keys[i]);
  }
  append_checksum_trailer(&out);
  return out;
}

Result<SuperStream> decode_super_stream_file(BytesView in, const std::string& where,
                                             uint8_t* version_out) {
  STRATA_ASSIGN_OR_RETURN(BytesView body,
                          checked_body(in, 4 + 1 + 1 + 4 + 4, "a super stream file", where));
  ByteReader r(body, where);
  uint32_t magic = 0, count = 0;
  uint8_t version = 0, len = 0;
  BytesView v;
  r.be32(&magic, "magic");
  r.u8(&version, "version");
  if (r.failed()) return r.error();
  if (magic != kSuperMagic) {
    return Error(Errc::corrupt,
                 fmt::format("{}: not a super stream file (magic {:08x})", where, magic));
  }
  if (version != kSuperVersion && version != kSuperVersionBeforeEncoding) {
    return Error(Errc::unsupported_version,
                 fmt::format("{}: super stream file version {} (this build reads {} and {})", where,
                             version, kSuperVersionBeforeEncoding, kSuperVersion));
  }
  if (version_out) *version_out = version;
  SuperStream s;
  if (!r.u8(&len, "name length") || !r.bytes(len, &v, "name") || !r.be32(&count, "partitions")) {
    return r.error();
  }
  s.name = std::string(v);
  if (count > kMaxPartitions) {
    return Error(Errc::corrupt,
                 fmt::format("{}: {} partitions (at most {})", where, count, kMaxPartitions));
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (!r.u8(&len, "partition length") || !r.bytes(len, &v, "partition")) return r.error();
    s.partitions.emplace_back(v);
    if (!r.u8(&len, "binding key length") || !r.bytes(len, &v, "binding key")) return r.error();
    s.binding_keys.emplace_back(v);
  }
  if (r.remaining() != 0) {
    return Error(Errc::corrupt,
                 fmt::format("{}: {} bytes after the last partition", where, r.remaining()));
  }
  if (Status st = validate_super_stream(s); !st.ok()) {
    return Error(Errc::corrupt, fmt::format("{}: {}", where, st.error().message));
  }
  return s;
}

Result<std::unique_ptr<SuperStreams>> SuperStreams::open(std::string dir, FileSystem* fs) {
  std::unique_ptr<SuperStreams> s(new SuperStreams(std::move(dir), fs ? *fs : posix_fs()));
  STRATA_TRY(s->load());
  return s;
}

Status SuperStreams::load() {
  // A create interrupted before its rename left a temporary file: that
  // super stream never was (load_named_files removes it).
  return load_named_files(
      fs_, dir_, "super streams", "a super stream file",
      [&](const NamedEntry& e, Bytes bytes) -> Result<NamedFileUse> {
        const bool maybe_temp = may_be_previous_temp(e.component);
        uint8_t version = 0;
        auto s = decode_super_stream_file(bytes, e.path, &version);
        if (!s.ok()) {
          // Files of this version are published whole, never cut short.
          if (maybe_temp && !current_header(bytes)) return NamedFileUse::previous_temp;
          return s.error();
        }
        if (name_component(s->name) != e.component) {
          // The previous version wrote super stream "s" through "s.tmp".
          const std::string written = e.previous_name.value_or(e.component);
          if (maybe_temp && version == kSuperVersionBeforeEncoding &&
              s->name + std::string(kPublishTempSuffix) == written) {
            return NamedFileUse::previous_temp;
          }
          return Error(Errc::corrupt,
                       fmt::format("{}: holds super stream {}", e.path, printable_name(s->name)));
        }
        supers_.emplace(s->name, std::move(*s));
        return NamedFileUse::loaded;
      });
}

Status SuperStreams::create(const SuperStream& s, const StreamFn& create_partition,
                            const StreamFn& delete_partition) {
  STRATA_TRY(validate_super_stream(s));
  {
    std::lock_guard l(mu_);
    if (supers_.count(s.name) || busy_.count(s.name)) {
      return Error(Errc::already_exists,
                   fmt::format("super stream {} exists", printable_name(s.name)));
    }
    busy_.insert(s.name);
  }
  std::vector<std::string> created;
  auto undo = [&](Error e) -> Status {
    for (const std::string& p : created) {
      if (Status d = delete_partition(p); !d.ok()) {
        spdlog::warn("super stream {}: could not delete partition {} after a failed create: {}",
                     printable_name(s.name), printable_name(p), d.error().message);
      }
    }
    std::lock_guard l(mu_);
    busy_.erase(s.name);
    return e;
  };
  for (const std::string& p : s.partitions) {
    if (Status st = create_partition(p); !st.ok()) {
      return undo(Error(
          st.code(), fmt::format("super stream {}: creating partition {}: {}",
                                 printable_name(s.name), printable_name(p), st.error().message)));
    }
    created.push_back(p);
  }
  const Bytes bytes = encode_super_stream_file(s);
  Status st = publish_named_file(fs_, dir_, s.name, bytes);
  if (!st.ok()) return undo(st.error());
  std::lock_guard l(mu_);
  busy_.erase(s.name);
  supers_.emplace(s.name, s);
  return Status::OK();
}

Status SuperStreams::remove(std::string_view name, const StreamFn& delete_partition) {
  SuperStream s;
  {
    std::lock_guard l(mu_);
    auto it = supers_.find(name);
    if (it == supers_.end() || busy_.count(name)) {
      return Error(Errc::not_found,
                   fmt::format("super stream {} does not exist", printable_name(name)));
    }
    s = it->second;
    busy_.insert(s.name);
  }
  const std::string path = named_file_path(dir_, s.name);
  Status st = fs_.remove(path);
  if (st.ok()) st = fs_.sync_dir(dir_);
  {
    std::lock_guard l(mu_);
    busy_.erase(s.name);
    // The file's removal failed: the super stream is still there.
    if (!st.ok() && exists(fs_, path)) return st;
    supers_.erase(s.name);
  }
  Status first = st;
  for (const std::string& p : s.partitions) {
    Status d = delete_partition(p);
    if (!d.ok() && d.code() != Errc::not_found && first.ok()) {
      first = Error(d.code(),
                    fmt::format("super stream {} deleted, but its partition {}: {}",
                                printable_name(s.name), printable_name(p), d.error().message));
    }
  }
  return first;
}

Result<std::vector<std::string>> SuperStreams::route(std::string_view super_stream,
                                                     std::string_view routing_key) const {
  std::lock_guard l(mu_);
  auto it = supers_.find(super_stream);
  if (it == supers_.end()) {
    return Error(Errc::not_found,
                 fmt::format("super stream {} does not exist", printable_name(super_stream)));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < it->second.partitions.size(); ++i) {
    if (it->second.binding_keys[i] == routing_key) out.push_back(it->second.partitions[i]);
  }
  return out;
}

Result<std::vector<std::string>> SuperStreams::partitions(std::string_view super_stream) const {
  std::lock_guard l(mu_);
  auto it = supers_.find(super_stream);
  if (it == supers_.end()) {
    return Error(Errc::not_found,
                 fmt::format("super stream {} does not exist", printable_name(super_stream)));
  }
  return it->second.partitions;
}

std::optional<std::string> SuperStreams::super_stream_of(std::string_view stream) const {
  std::lock_guard l(mu_);
  for (const auto& [name, s] : supers_) {
    for (const std::string& p : s.partitions) {
      if (p == stream) return name;
    }
  }
  return std::nullopt;
}

std::vector<std::string> SuperStreams::names() const {
  std::lock_guard l(mu_);
  std::vector<std::string> out;
  for (const auto& [name, s] : supers_) out.push_back(name);
  return out;
}

std::vector<SuperStream> SuperStreams::all() const {
  std::lock_guard l(mu_);
  std::vector<SuperStream> out;
  for (const auto& [name, s] : supers_) out.push_back(s);
  return out;
}

}  // namespace strata::server
