#include "server/cluster_offsets.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "catalog/etcd_catalog.h"
#include "catalog/stream_name.h"
#include "server/offset_store.h"

namespace strata::server {

std::unique_ptr<ClusterOffsets> ClusterOffsets::start(std::shared_ptr<etcd::EtcdClient> client,
                                                      ClusterOffsetsOptions opts) {
  std::unique_ptr<ClusterOffsets> c(new ClusterOffsets(std::move(client), std::move(opts)));
  c->writer_ = std::thread([p = c.get()] { p->run(); });
  return c;
}

ClusterOffsets::ClusterOffsets(std::shared_ptr<etcd::EtcdClient> client, ClusterOffsetsOptions opts)
    : client_(std::move(client)), opts_(std::move(opts)) {}

ClusterOffsets::~ClusterOffsets() {
  close();
}

std::string ClusterOffsets::key_of(const Key& k) const {
  return catalog::etcd_offsets_prefix(opts_.ns, k.first) + k.second;
}

bool ClusterOffsets::pending_locked() const {
  for (const auto& [k, s] : slots_) {
    if (s.version > s.written) return true;
  }
  return false;
}

Status ClusterOffsets::store(std::string_view stream, std::string_view reference, uint64_t offset) {
  if (reference.empty() || reference.size() > kMaxReferenceBytes) {
    return Error(Errc::invalid_argument, fmt::format("offset reference of {} bytes (1..{} allowed)",
                                                     reference.size(), kMaxReferenceBytes));
  }
  STRATA_TRY(catalog::validate_stream_name(stream));
  {
    std::lock_guard l(mu_);
    if (stopping_) return Error(Errc::closed, "cluster offsets: closed");
    Slot& s = slots_[Key(stream, reference)];
    s.value = offset;
    s.version += 1;
    stats_.stores += 1;
  }
  cv_.notify_all();
  return Status::OK();
}

Result<std::optional<uint64_t>> ClusterOffsets::query(std::string_view stream,
                                                      std::string_view reference) {
  STRATA_TRY(catalog::validate_stream_name(stream));
  const Key k(stream, reference);
  {
    std::lock_guard l(mu_);
    // Stored here and not written yet: newer than what etcd holds.
    if (auto it = slots_.find(k); it != slots_.end() && it->second.version > it->second.written) {
      return std::optional<uint64_t>(it->second.value);
    }
  }
  const std::string key = key_of(k);
  STRATA_ASSIGN_OR_RETURN(auto r, client_->range(key));
  if (r.kvs.empty()) return std::optional<uint64_t>();
  const std::string& v = r.kvs.front().value;
  uint64_t off = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), off);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) {
    return Error(Errc::corrupt, fmt::format("etcd key {}: \"{}\" is not a decimal offset", key,
                                            catalog::printable_name(v)));
  }
  return std::optional<uint64_t>(off);
}

Status ClusterOffsets::flush(std::chrono::milliseconds timeout) {
  std::unique_lock l(mu_);
  if (!cv_.wait_for(l, timeout, [&] { return !pending_locked() || closed_; })) {
    return Error(Errc::timeout, fmt::format("cluster offsets: values still not written to etcd "
                                            "after {} ms",
                                            timeout.count()));
  }
  if (pending_locked()) return Error(Errc::closed, "cluster offsets: closed with values unwritten");
  return Status::OK();
}

void ClusterOffsets::stream_removed(std::string_view stream) {
  std::lock_guard l(mu_);
  for (auto it = revs_.lower_bound(Key(stream, ""));
       it != revs_.end() && it->first.first == stream;) {
    it = revs_.erase(it);
  }
  for (auto it = slots_.lower_bound(Key(stream, ""));
       it != slots_.end() && it->first.first == stream;) {
    if (it->second.in_flight) {
      // Its write fails the stream's existence compare; nothing to write after.
      it->second.written = it->second.version;
      ++it;
    } else {
      it = slots_.erase(it);
    }
  }
  cv_.notify_all();
}

void ClusterOffsets::run() {
  std::unique_lock l(mu_);
  Key cursor;
  for (;;) {
    // Round robin from after the last key written: every key gets its turn.
    auto next = slots_.end();
    for (auto it = slots_.upper_bound(cursor); it != slots_.end(); ++it) {
      if (it->second.version > it->second.written && !it->second.in_flight) {
        next = it;
        break;
      }
    }
    if (next == slots_.end()) {
      for (auto it = slots_.begin(); it != slots_.end() && it->first <= cursor; ++it) {
        if (it->second.version > it->second.written && !it->second.in_flight) {
          next = it;
          break;
        }
      }
    }
    if (next == slots_.end()) {
      if (stopping_) break;
      cv_.wait(l);
      continue;
    }
    if (stopping_ && closed_) break;  // close()'s grace is over
    const Key k = next->first;
    const uint64_t value = next->second.value, version = next->second.version;
    next->second.in_flight = true;
    cursor = k;
    std::optional<int64_t> rev;
    if (auto known = revs_.find(k); known != revs_.end()) rev = known->second;
    l.unlock();
    const std::string key = key_of(k);
    const std::string entry = catalog::etcd_entry_key(opts_.ns, k.first);
    // The write applies only over the key's revision as last seen, so an
    // attempt etcd applies late (one retried across a leader election can
    // land after a later write: etcd_client_test saw it) finds the key moved
    // on and changes nothing — an offset never goes back that way. First
    // write of a key here: its revision is read first.
    Result<etcd::TxnResponse> r = Error(Errc::internal, "not sent");
    if (!rev) {
      auto got = client_->range(key);
      if (got.ok()) {
        rev = got->kvs.empty() ? 0 : got->kvs[0].mod_revision;
      } else {
        r = std::move(got).error();
      }
    }
    if (rev) {
      etcd::TxnRequest t;
      t.compare.push_back(etcd::Compare::revision(entry, etcd::CompareTarget::create_revision,
                                                  etcd::CompareOp::greater, 0));
      t.compare.push_back(etcd::Compare::revision(key, etcd::CompareTarget::mod_revision,
                                                  etcd::CompareOp::equal, *rev));
      t.success.push_back(etcd::PutOp{key, std::to_string(value), 0});
      t.failure.push_back(etcd::RangeOp{entry, ""});
      t.failure.push_back(etcd::RangeOp{key, ""});
      r = client_->txn(t);
    }
    l.lock();
    bool moved_on = false;
    if (r.ok()) {
      if (r->succeeded) {
        revs_[k] = r->revision;
      } else if (r->ranges.size() == 2 && !r->ranges[0].kvs.empty()) {
        // Written meanwhile (another node, or a late attempt of ours):
        // write over its revision, at once.
        revs_[k] = r->ranges[1].kvs.empty() ? 0 : r->ranges[1].kvs[0].mod_revision;
        moved_on = true;
        stats_.conflicts += 1;
      } else {
        revs_.erase(k);
      }
    } else {
      // What etcd holds now is unknown: read it before the next write.
      revs_.erase(k);
    }
    auto it = slots_.find(k);
    if (it != slots_.end() && !moved_on) {
      Slot& s = it->second;
      s.in_flight = false;
      if (r.ok()) {
        if (r->succeeded) {
          stats_.writes += 1;
        } else {
          stats_.dropped += 1;
          spdlog::info("cluster offsets: stream {} no longer exists; offset {} of {} dropped",
                       k.first, value, catalog::printable_name(k.second));
        }
        s.written = std::max(s.written, version);
        // Clean: etcd answers queries from here on.
        if (s.written >= s.version) slots_.erase(it);
      } else {
        stats_.write_failures += 1;
        spdlog::warn("cluster offsets: writing {}: {}; retrying", key, r.error().to_string());
      }
    } else if (it != slots_.end()) {
      it->second.in_flight = false;
    }
    cv_.notify_all();
    if (!r.ok() && !stopping_) cv_.wait_for(l, opts_.retry, [&] { return stopping_; });
  }
  cv_.notify_all();
}

void ClusterOffsets::close(std::chrono::milliseconds grace) {
  {
    std::unique_lock l(mu_);
    if (!writer_.joinable()) return;
    stopping_ = true;
    cv_.notify_all();
    // What is pending is written within the grace; after it the writer
    // stops at its next turn.
    cv_.wait_for(l, grace, [&] { return !pending_locked(); });
    closed_ = true;
    cv_.notify_all();
  }
  writer_.join();
  std::lock_guard l(mu_);
  if (pending_locked()) {
    spdlog::warn("cluster offsets: closed with values not written to etcd");
  }
}

ClusterOffsetsStats ClusterOffsets::stats() const {
  std::lock_guard l(mu_);
  return stats_;
}

}  // namespace strata::server
