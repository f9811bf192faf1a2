#include "catalog/etcd_catalog.h"

#include <fmt/format.h>

#include <limits>

#include "catalog/catalog_limits.h"
#include "catalog/embedded_catalog.h"
#include "catalog/entry_rules.h"
#include "catalog/etcd_entry.h"
#include "common/name_component.h"
#include "common/stream_name.h"

namespace strata::catalog {

using etcd::Compare;
using etcd::CompareOp;
using etcd::CompareTarget;
using etcd::DeleteOp;
using etcd::PutOp;
using etcd::RangeOp;
using etcd::TxnRequest;

namespace {

constexpr uint64_t kMaxEpoch = std::numeric_limits<uint64_t>::max();

// What E held (nullopt: absent), decoded, plus the nonce of its last write.
struct Stored {
  std::optional<StreamEntry> entry;
  std::string op;
};

Result<Stored> decode_stored(const etcd::RangeResult& r, std::string_view stream) {
  Stored s;
  if (r.kvs.empty()) return s;
  const auto& kv = r.kvs.front();
  STRATA_ASSIGN_OR_RETURN(EtcdEntryValue v, decode_entry_value(kv.value, kv.key));
  s.entry =
      StreamEntry{std::string(stream), v.epoch, std::move(v.root_key), uint64_t(kv.mod_revision)};
  s.op = std::move(v.op);
  return s;
}

// The else branch of every write reads E: its first range.
Result<Stored> stored_after_failure(const etcd::TxnResponse& t, std::string_view stream) {
  if (t.ranges.empty()) {
    return Error(Errc::corrupt, fmt::format("etcd catalog: stream \"{}\": a failed txn returned "
                                            "no read of the entry",
                                            printable_name(stream)));
  }
  return decode_stored(t.ranges.front(), stream);
}

Error disagree(std::string_view stream, std::string_view call) {
  return Error(Errc::corrupt,
               fmt::format("etcd catalog: {} of stream \"{}\": the txn failed although the entry "
                           "allows it (its epoch key disagrees with the entry)",
                           call, printable_name(stream)));
}

Status check_root_key_length(std::string_view stream, std::string_view root_key) {
  if (root_key.size() > kMaxRootKeyBytes) {
    return Error(Errc::invalid_argument,
                 fmt::format("etcd catalog: put of stream \"{}\": root key is {} bytes; the "
                             "catalog stores at most {} (kMaxRootKeyBytes, as the embedded one)",
                             printable_name(stream), root_key.size(), kMaxRootKeyBytes));
  }
  return Status::OK();
}

}  // namespace

Status validate_namespace(std::string_view ns) {
  auto bad = [&](std::string_view why) {
    return Error(Errc::invalid_argument,
                 fmt::format("catalog.namespace \"{}\": {}", printable_name(ns), why));
  };
  if (ns.empty() || ns.size() > kMaxNamespaceBytes) {
    return bad(fmt::format("must be 1..{} bytes", kMaxNamespaceBytes));
  }
  if (ns.front() == '/' || ns.back() == '/') return bad("must not start or end with '/'");
  for (char c : ns) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '~' || c == '-' || c == '/';
    if (!ok) return bad("may hold only [A-Za-z0-9._~/-]");
  }
  return Status::OK();
}

Result<std::unique_ptr<EtcdCatalog>> EtcdCatalog::open(std::shared_ptr<etcd::EtcdClient> client,
                                                       EtcdCatalogOptions options) {
  STRATA_TRY(validate_namespace(options.ns));
  return std::unique_ptr<EtcdCatalog>(new EtcdCatalog(std::move(client), std::move(options)));
}

EtcdCatalog::EtcdCatalog(std::shared_ptr<etcd::EtcdClient> client, EtcdCatalogOptions options)
    : client_(std::move(client)), options_(std::move(options)) {}

std::string etcd_entry_key(std::string_view ns, std::string_view stream) {
  return fmt::format("{}/streams/{}", ns, stream);
}

std::string etcd_offsets_prefix(std::string_view ns, std::string_view stream) {
  return fmt::format("{}/offsets/{}/", ns, name_component(stream));
}

std::string EtcdCatalog::entry_key(std::string_view stream) const {
  return etcd_entry_key(options_.ns, stream);
}

std::string EtcdCatalog::epoch_key(std::string_view stream) const {
  return options_.ns + "/epochs/" + std::string(stream);
}

std::string EtcdCatalog::settings_key(std::string_view stream) const {
  return options_.ns + "/settings/" + std::string(stream);
}

std::string EtcdCatalog::offsets_prefix(std::string_view stream) const {
  return etcd_offsets_prefix(options_.ns, stream);
}

std::string EtcdCatalog::describe() const {
  return fmt::format("{} namespace {}", client_->describe(), options_.ns);
}

Result<StreamEntry> EtcdCatalog::create(std::string_view stream, uint64_t epoch) {
  return create_entry(stream, epoch, nullptr);
}

Result<StreamEntry> EtcdCatalog::create_with_settings(std::string_view stream, uint64_t epoch,
                                                      std::string_view settings) {
  const std::string s(settings);
  return create_entry(stream, epoch, &s);
}

Result<StreamEntry> EtcdCatalog::create_entry(std::string_view stream, uint64_t epoch,
                                              const std::string* settings) {
  STRATA_TRY(validate_stream_name(stream));
  STRATA_TRY(check_epoch(stream, epoch, "create"));
  const std::string e = entry_key(stream);
  const std::string op = new_op_nonce();
  STRATA_ASSIGN_OR_RETURN(std::string value, encode_entry_value({epoch, "", op}, stream));
  TxnRequest t;
  t.compare.push_back(Compare::revision(e, CompareTarget::create_revision, CompareOp::equal, 0));
  t.success = {PutOp{e, value, 0}, PutOp{epoch_key(stream), padded_epoch(epoch), 0}};
  // A new incarnation has exactly the settings it is created with.
  if (settings) {
    t.success.push_back(PutOp{settings_key(stream), *settings, 0});
  } else {
    t.success.push_back(DeleteOp{settings_key(stream), ""});
  }
  t.failure = {RangeOp{e, ""}};
  STRATA_ASSIGN_OR_RETURN(auto r, client_->txn(t));
  if (r.succeeded) return StreamEntry{std::string(stream), epoch, "", uint64_t(r.revision)};
  STRATA_ASSIGN_OR_RETURN(Stored s, stored_after_failure(r, stream));
  if (r.maybe_applied && s.entry && s.op == op) return *s.entry;
  auto d = decide_create(s.entry, stream, epoch, 0);
  if (d.ok()) return disagree(stream, "create");
  return std::move(d).error();
}

Result<std::optional<std::string>> EtcdCatalog::settings(std::string_view stream) {
  STRATA_TRY(validate_stream_name(stream));
  STRATA_ASSIGN_OR_RETURN(auto r, client_->range(settings_key(stream)));
  if (r.kvs.empty()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(r.kvs.front().value));
}

Status EtcdCatalog::update_settings(std::string_view stream, std::string_view settings) {
  STRATA_TRY(validate_stream_name(stream));
  TxnRequest t;
  // Only while the entry exists: a deleted stream's settings must not
  // come back, and a stream created anew brings its own.
  t.compare.push_back(
      Compare::revision(entry_key(stream), CompareTarget::create_revision, CompareOp::greater, 0));
  t.success = {PutOp{settings_key(stream), std::string(settings), 0}};
  // The compare does not depend on the put, so a retried attempt fails
  // only if the entry is gone.
  STRATA_ASSIGN_OR_RETURN(auto r, client_->txn(t));
  if (r.succeeded) return Status::OK();
  return Error(Errc::not_found,
               fmt::format("etcd catalog: no stream \"{}\" whose settings could change",
                           printable_name(stream)));
}

Result<StreamEntry> EtcdCatalog::get(std::string_view stream) {
  STRATA_TRY(validate_stream_name(stream));
  STRATA_ASSIGN_OR_RETURN(auto r, client_->range(entry_key(stream)));
  STRATA_ASSIGN_OR_RETURN(Stored s, decode_stored(r, stream));
  if (!s.entry) {
    return Error(Errc::not_found,
                 fmt::format("etcd catalog: no stream \"{}\"", printable_name(stream)));
  }
  return *s.entry;
}

Result<std::vector<StreamEntry>> EtcdCatalog::list() {
  const std::string prefix = options_.ns + "/streams/";
  STRATA_ASSIGN_OR_RETURN(auto r, client_->range(prefix, etcd::prefix_end(prefix)));
  std::vector<StreamEntry> out;
  out.reserve(r.kvs.size());
  for (auto& kv : r.kvs) {
    // etcd orders keys bytewise, which is name order for valid names.
    std::string stream = kv.key.substr(prefix.size());
    STRATA_TRY(validate_stream_name(stream));
    STRATA_ASSIGN_OR_RETURN(EtcdEntryValue v, decode_entry_value(kv.value, kv.key));
    out.push_back(
        StreamEntry{std::move(stream), v.epoch, std::move(v.root_key), uint64_t(kv.mod_revision)});
  }
  return out;
}

Result<PutResult> EtcdCatalog::put(std::string_view stream, std::string_view root_key,
                                   uint64_t epoch, uint64_t expected_revision) {
  STRATA_TRY(check_put_args(stream, root_key, epoch));
  STRATA_TRY(check_root_key_length(stream, root_key));
  const std::string e = entry_key(stream);
  const std::string op = new_op_nonce();
  STRATA_ASSIGN_OR_RETURN(std::string value,
                          encode_entry_value({epoch, std::string(root_key), op}, stream));
  TxnRequest t;
  if (expected_revision == 0) {
    t.compare.push_back(Compare::revision(e, CompareTarget::create_revision, CompareOp::equal, 0));
  } else {
    if (expected_revision > uint64_t(std::numeric_limits<int64_t>::max())) {
      // No etcd revision is that high: the stored one differs.
      expected_revision = uint64_t(std::numeric_limits<int64_t>::max());
    }
    t.compare.push_back(Compare::revision(e, CompareTarget::mod_revision, CompareOp::equal,
                                          int64_t(expected_revision)));
    // Stored epoch <= ours, i.e. P < pad(epoch + 1) bytewise (no epoch is above 2^64 - 1).
    if (epoch != kMaxEpoch) {
      t.compare.push_back(
          Compare::value_is(epoch_key(stream), CompareOp::less, padded_epoch(epoch + 1)));
    }
  }
  t.success = {PutOp{e, value, 0}, PutOp{epoch_key(stream), padded_epoch(epoch), 0}};
  t.failure = {RangeOp{e, ""}};
  STRATA_ASSIGN_OR_RETURN(auto r, client_->txn(t));
  if (r.succeeded) return PutResult{PutOutcome::ok, uint64_t(r.revision), epoch};
  STRATA_ASSIGN_OR_RETURN(Stored s, stored_after_failure(r, stream));
  if (r.maybe_applied && s.entry && s.op == op) {
    return PutResult{PutOutcome::ok, s.entry->revision, s.entry->epoch};
  }
  STRATA_ASSIGN_OR_RETURN(Decision d,
                          decide_put(s.entry, stream, root_key, epoch, expected_revision, 0));
  if (d.write != Write::none) return disagree(stream, "put");
  return d.result;
}

Result<PutResult> EtcdCatalog::bump_epoch(std::string_view stream, uint64_t expected_revision,
                                          uint64_t min_epoch) {
  return bump(stream, expected_revision, min_epoch, nullptr);
}

Result<PutResult> EtcdCatalog::bump_epoch_if_owner(std::string_view stream,
                                                   uint64_t expected_revision, uint64_t min_epoch,
                                                   const OwnerCondition& owner) {
  return bump(stream, expected_revision, min_epoch, &owner);
}

Result<PutResult> EtcdCatalog::bump(std::string_view stream, uint64_t expected_revision,
                                    uint64_t min_epoch, const OwnerCondition* owner) {
  STRATA_TRY(validate_stream_name(stream));
  const std::string e = entry_key(stream);
  // What the else branch of the guarded txn found: the owner key still ours?
  auto owner_holds = [&](const etcd::RangeResult& r) {
    return !r.kvs.empty() && r.kvs.front().value == owner->value &&
           r.kvs.front().lease == owner->lease;
  };
  auto not_owner = [](const StreamEntry& stored) {
    return PutResult{PutOutcome::fenced, stored.revision, stored.epoch};
  };
  STRATA_ASSIGN_OR_RETURN(auto read, client_->range(e));
  STRATA_ASSIGN_OR_RETURN(Stored s, decode_stored(read, stream));
  STRATA_ASSIGN_OR_RETURN(Decision d, decide_bump_epoch(s.entry, expected_revision, min_epoch));
  if (d.write == Write::none) return d.result;
  // The read saw revision == expected; the txn applies only if nothing
  // changed since. (etcd picks the written revision: 0 stands for no floor.)
  assert_write(s.entry, expected_revision, d, 0);
  const std::string op = new_op_nonce();
  STRATA_ASSIGN_OR_RETURN(std::string value,
                          encode_entry_value({d.entry.epoch, d.entry.root_key, op}, stream));
  TxnRequest t;
  t.compare.push_back(Compare::revision(e, CompareTarget::mod_revision, CompareOp::equal,
                                        int64_t(expected_revision)));
  if (owner) {
    // etcd fails a value compare on an absent key, so a deleted owner key
    // (an expired lease) fails the txn too.
    t.compare.push_back(Compare::value_is(owner->key, CompareOp::equal, owner->value));
    t.compare.push_back(
        Compare::revision(owner->key, CompareTarget::lease, CompareOp::equal, owner->lease));
  }
  t.success = {PutOp{e, value, 0}, PutOp{epoch_key(stream), padded_epoch(d.entry.epoch), 0}};
  t.failure = {RangeOp{e, ""}};
  if (owner) t.failure.push_back(RangeOp{owner->key, ""});
  STRATA_ASSIGN_OR_RETURN(auto r, client_->txn(t));
  if (r.succeeded) return PutResult{PutOutcome::ok, uint64_t(r.revision), d.entry.epoch};
  STRATA_ASSIGN_OR_RETURN(Stored now, stored_after_failure(r, stream));
  if (r.maybe_applied && now.entry && now.op == op) {
    return PutResult{PutOutcome::ok, now.entry->revision, now.entry->epoch};
  }
  if (owner && now.entry) {
    if (r.ranges.size() < 2) {
      return Error(Errc::corrupt,
                   fmt::format("etcd catalog: stream \"{}\": a failed guarded txn returned no "
                               "read of the owner key {}",
                               printable_name(stream), owner->key));
    }
    if (!owner_holds(r.ranges[1])) return not_owner(*now.entry);
  }
  STRATA_ASSIGN_OR_RETURN(Decision again,
                          decide_bump_epoch(now.entry, expected_revision, min_epoch));
  if (again.write != Write::none) return disagree(stream, "bump_epoch");
  return again.result;
}

Result<PutResult> EtcdCatalog::remove(std::string_view stream, uint64_t expected_revision) {
  STRATA_TRY(validate_stream_name(stream));
  const std::string e = entry_key(stream);
  if (expected_revision > uint64_t(std::numeric_limits<int64_t>::max())) {
    expected_revision = uint64_t(std::numeric_limits<int64_t>::max());
  }
  TxnRequest t;
  t.compare.push_back(Compare::revision(e, CompareTarget::mod_revision, CompareOp::equal,
                                        int64_t(expected_revision)));
  // The stream's other keys go in the same step: a stream created again
  // inherits neither settings nor consumer offsets.
  const std::string offsets = offsets_prefix(stream);
  // So do cluster ownership's keys of it (cluster/ownership.h): the owner
  // key, so that a stream created again is placed afresh, and a deletion
  // request, now done.
  t.success = {DeleteOp{e, ""},
               DeleteOp{epoch_key(stream), ""},
               DeleteOp{settings_key(stream), ""},
               DeleteOp{offsets, etcd::prefix_end(offsets)},
               DeleteOp{options_.ns + "/owners/" + std::string(stream), ""},
               DeleteOp{options_.ns + "/deletions/" + std::string(stream), ""}};
  t.failure = {RangeOp{e, ""}};
  STRATA_ASSIGN_OR_RETURN(auto r, client_->txn(t));
  if (r.succeeded) return PutResult{PutOutcome::ok, 0, 0};
  STRATA_ASSIGN_OR_RETURN(Stored s, stored_after_failure(r, stream));
  Decision d = decide_remove(s.entry, expected_revision);
  if (d.write != Write::none) return disagree(stream, "remove");
  return d.result;
}

std::unique_ptr<CatalogWatchHandle> EtcdCatalog::watch(
    uint64_t from_revision, std::function<void(const CatalogChange&)> on_change,
    std::function<void(const Error&)> on_error) {
  struct Handle final : CatalogWatchHandle {
    std::unique_ptr<etcd::Watch> w;
  };
  const std::string prefix = options_.ns + "/streams/";
  auto h = std::make_unique<Handle>();
  // After a decode error the watch reports once and delivers nothing more.
  auto failed = std::make_shared<bool>(false);
  h->w = client_->watch(
      {prefix, etcd::prefix_end(prefix), int64_t(from_revision)},
      [prefix, on_change, on_error, failed](const std::vector<etcd::WatchEvent>& evs) {
        for (const auto& ev : evs) {
          if (*failed) return;
          CatalogChange c;
          c.entry.stream = ev.kv.key.substr(prefix.size());
          c.entry.revision = uint64_t(ev.kv.mod_revision);
          if (ev.type == etcd::WatchEvent::Type::remove) {
            c.kind = CatalogChange::Kind::removed;
          } else {
            auto v = decode_entry_value(ev.kv.value, ev.kv.key);
            if (!v.ok()) {
              *failed = true;
              on_error(v.error());
              return;
            }
            c.entry.epoch = v->epoch;
            c.entry.root_key = std::move(v->root_key);
          }
          on_change(c);
        }
      },
      on_error);
  return h;
}

}  // namespace strata::catalog
