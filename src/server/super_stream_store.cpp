// The super stream file's codec (docs/formats/server-state.md, "Super
// stream file") and the two places it is kept (super_stream_store.h).
#include "server/super_stream_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>

#include "common/bytes.h"
#include "common/endian.h"
#include "common/name_component.h"
#include "common/publish_file.h"
#include "common/stream_name.h"
#include "etcd/etcd_client.h"
#include "server/named_files.h"
#include "server/server_limits.h"
#include "server/super_streams.h"

namespace strata::server {

namespace {
constexpr uint32_t kSuperMagic = 0x53535550;  // "SSUP"
// Version 2 has version 1's layout. It only tells the files written since
// names are encoded from the files of before (FileSuperStreamStore::load).
constexpr uint8_t kSuperVersion = 2;
constexpr uint8_t kSuperVersionBeforeEncoding = 1;
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

Result<SuperStream> decode_super_stream_key(std::string_view name, BytesView value,
                                            const std::string& where) {
  STRATA_ASSIGN_OR_RETURN(SuperStream s, decode_super_stream_file(value, where));
  if (s.name != name) {
    return Error(Errc::corrupt,
                 fmt::format("{}: holds super stream {}", where, printable_name(s.name)));
  }
  return s;
}

namespace {

class FileSuperStreamStore final : public SuperStreamStore {
 public:
  FileSuperStreamStore(std::string dir, FileSystem& fs) : dir_(std::move(dir)), fs_(fs) {}

  Result<std::vector<SuperStream>> load() override {
    std::vector<SuperStream> out;
    // A create interrupted before its rename left a temporary file: that
    // super stream never was (load_named_files removes it).
    STRATA_TRY(load_named_files(
        fs_, dir_, "super streams", "a super stream file",
        [&](const NamedEntry& e, Bytes bytes) -> Result<NamedFileUse> {
          const bool maybe_temp = may_be_previous_temp(e.component);
          uint8_t version = 0;
          auto s = decode_super_stream_file(bytes, e.path, &version);
          if (!s.ok()) {
            // Files of this version are published whole, never cut short.
            if (maybe_temp && !has_header(bytes, kSuperMagic, kSuperVersion))
              return NamedFileUse::previous_temp;
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
          out.push_back(std::move(*s));
          return NamedFileUse::loaded;
        }));
    return out;
  }

  Status add(const SuperStream& s) override {
    const std::string path = named_file_path(dir_, s.name);
    if (exists(fs_, path)) {
      return Error(Errc::already_exists,
                   fmt::format("super stream {} exists ({})", printable_name(s.name), path));
    }
    return publish_named_file(fs_, dir_, s.name, encode_super_stream_file(s));
  }

  Status remove(std::string_view name) override {
    const std::string path = named_file_path(dir_, name);
    if (!exists(fs_, path)) {
      return Error(Errc::not_found,
                   fmt::format("super stream {} does not exist", printable_name(name)));
    }
    // A failed sync leaves the file removed but maybe not durably so: the
    // error is returned and the super stream stays listed until removed
    // again (which then finds nothing, and answers not_found).
    STRATA_TRY(fs_.remove(path));
    return fs_.sync_dir(dir_);
  }

  std::string where() const override { return "directory " + dir_; }

 private:
  std::string dir_;
  FileSystem& fs_;
};

class EtcdSuperStreamStore final : public SuperStreamStore {
 public:
  EtcdSuperStreamStore(std::shared_ptr<etcd::EtcdClient> client, const std::string& ns)
      : client_(std::move(client)), prefix_(ns + "/" + std::string(kSuperStreamKeyDir)) {}

  Result<std::vector<SuperStream>> load() override {
    auto r = client_->range(prefix_, etcd::prefix_end(prefix_));
    if (!r.ok()) return std::move(r).error().with_context("super streams, " + where());
    std::vector<SuperStream> out;
    for (const auto& kv : r->kvs) {
      STRATA_ASSIGN_OR_RETURN(
          SuperStream s, decode_super_stream_key(std::string_view(kv.key).substr(prefix_.size()),
                                                 kv.value, "etcd key " + kv.key));
      out.push_back(std::move(s));
    }
    return out;
  }

  Status add(const SuperStream& s) override {
    const std::string key = prefix_ + s.name;
    const Bytes value = encode_super_stream_file(s);
    etcd::TxnRequest t;
    t.compare.push_back(etcd::Compare::revision(key, etcd::CompareTarget::create_revision,
                                                etcd::CompareOp::equal, 0));
    t.success.push_back(etcd::PutOp{key, value, 0});
    auto r = client_->txn(t);
    if (!r.ok()) return std::move(r).error().with_context("super streams, etcd key " + key);
    if (r->succeeded) return Status::OK();
    if (r->maybe_applied) {
      // An attempt that timed out may have been applied: then the key
      // holds exactly these bytes.
      auto now = client_->range(key);
      if (now.ok() && !now->kvs.empty() && now->kvs.front().value == value) return Status::OK();
    }
    return Error(Errc::already_exists,
                 fmt::format("super stream {} exists (etcd key {})", printable_name(s.name), key));
  }

  Status remove(std::string_view name) override {
    const std::string key = prefix_ + std::string(name);
    etcd::TxnRequest t;
    t.compare.push_back(etcd::Compare::revision(key, etcd::CompareTarget::create_revision,
                                                etcd::CompareOp::greater, 0));
    t.success.push_back(etcd::DeleteOp{key, ""});
    auto r = client_->txn(t);
    if (!r.ok()) return std::move(r).error().with_context("super streams, etcd key " + key);
    // A retried attempt that finds the key gone was applied before.
    if (r->succeeded || r->maybe_applied) return Status::OK();
    return Error(Errc::not_found,
                 fmt::format("super stream {} does not exist", printable_name(name)));
  }

  std::string where() const override { return "etcd prefix " + prefix_; }

 private:
  std::shared_ptr<etcd::EtcdClient> client_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<SuperStreamStore> file_super_stream_store(std::string dir, FileSystem& fs) {
  return std::make_unique<FileSuperStreamStore>(std::move(dir), fs);
}

std::unique_ptr<SuperStreamStore> etcd_super_stream_store(std::shared_ptr<etcd::EtcdClient> client,
                                                          const std::string& ns) {
  return std::make_unique<EtcdSuperStreamStore>(std::move(client), ns);
}

}  // namespace strata::server
