#include "server/access_store.h"

#include <fmt/format.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "etcd/etcd_client.h"

namespace strata::server {

using json = nlohmann::json;

namespace {

// The file holds {"version": N, "overlay": {...}}: the version lets a
// reader tell a changed overlay from the one it has.
class FileAccessStore final : public AccessStore {
 public:
  FileAccessStore(FileSystem& fs, std::string data_dir)
      : fs_(fs), dir_(path_join(data_dir, "access")), path_(path_join(dir_, "overlay.json")) {}

  Result<StoredOverlay> load() override {
    std::lock_guard l(mu_);
    return load_locked();
  }

  Result<std::optional<int64_t>> save(const auth::AccessOverlay& o, int64_t expected) override {
    std::lock_guard l(mu_);
    STRATA_ASSIGN_OR_RETURN(StoredOverlay now, load_locked());
    if (now.version != expected) return std::optional<int64_t>();
    STRATA_TRY(create_dirs(fs_, dir_));
    const int64_t next = expected + 1;
    json doc = {{"version", next}, {"overlay", json::parse(auth::encode_overlay(o))}};
    const std::string text = doc.dump(1) + "\n";
    if (auto st = write_file_atomic(fs_, path_, BytesView(text)); !st.ok()) {
      return Error(st.error()).with_context("access overlay " + path_);
    }
    return std::optional<int64_t>(next);
  }

  std::string where() const override { return path_; }

 private:
  Result<StoredOverlay> load_locked() {
    if (!exists(fs_, path_)) return StoredOverlay{};
    auto bytes = read_file(fs_, path_);
    if (!bytes.ok()) return std::move(bytes).error().with_context("access overlay " + path_);
    json doc = json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
    auto v = doc.is_object() ? doc.find("version") : doc.end();
    auto ov = doc.is_object() ? doc.find("overlay") : doc.end();
    if (v == doc.end() || !v->is_number_integer() || ov == doc.end() || !ov->is_object()) {
      return Error(Errc::corrupt,
                   fmt::format("access overlay {}: not a JSON object with an integer "
                               "\"version\" and an object \"overlay\"",
                               path_));
    }
    auto o = auth::decode_overlay(ov->dump(), path_);
    if (!o.ok()) return Error(Errc::corrupt, o.error().message);
    return StoredOverlay{std::move(o).value(), v->get<int64_t>()};
  }

  FileSystem& fs_;
  std::string dir_, path_;
  std::mutex mu_;
};

// The key's mod_revision is the version: it grows with every write, on
// every node alike.
class EtcdAccessStore final : public AccessStore {
 public:
  EtcdAccessStore(std::shared_ptr<etcd::EtcdClient> client, const std::string& ns)
      : client_(std::move(client)), key_(ns + "/access/overlay") {}

  Result<StoredOverlay> load() override {
    auto r = client_->range(key_);
    if (!r.ok()) return std::move(r).error().with_context("access overlay, etcd key " + key_);
    if (r->kvs.empty()) return StoredOverlay{};
    const auto& kv = r->kvs.front();
    auto o = auth::decode_overlay(kv.value, "etcd key " + key_);
    if (!o.ok()) return Error(Errc::corrupt, o.error().message);
    return StoredOverlay{std::move(o).value(), kv.mod_revision};
  }

  Result<std::optional<int64_t>> save(const auth::AccessOverlay& o, int64_t expected) override {
    const std::string text = auth::encode_overlay(o);
    etcd::TxnRequest t;
    t.compare.push_back(etcd::Compare::revision(
        key_,
        expected == 0 ? etcd::CompareTarget::create_revision : etcd::CompareTarget::mod_revision,
        etcd::CompareOp::equal, expected));
    t.success.push_back(etcd::PutOp{key_, text, 0});
    auto r = client_->txn(t);
    if (!r.ok()) return std::move(r).error().with_context("access overlay, etcd key " + key_);
    if (r->succeeded) return std::optional<int64_t>(r->revision);
    if (r->maybe_applied) {
      // An attempt that timed out may have been applied: then the key
      // holds exactly this text.
      auto now = client_->range(key_);
      if (now.ok() && !now->kvs.empty() && now->kvs.front().value == text) {
        return std::optional<int64_t>(now->kvs.front().mod_revision);
      }
    }
    return std::optional<int64_t>();
  }

  std::string where() const override { return "etcd key " + key_; }

 private:
  std::shared_ptr<etcd::EtcdClient> client_;
  std::string key_;
};

}  // namespace

std::unique_ptr<AccessStore> file_access_store(FileSystem& fs, std::string data_dir) {
  return std::make_unique<FileAccessStore>(fs, std::move(data_dir));
}

std::unique_ptr<AccessStore> etcd_access_store(std::shared_ptr<etcd::EtcdClient> client,
                                               const std::string& ns) {
  return std::make_unique<EtcdAccessStore>(std::move(client), ns);
}

}  // namespace strata::server
