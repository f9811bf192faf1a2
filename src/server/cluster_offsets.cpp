#include "server/cluster_offsets.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "catalog/etcd_catalog.h"
#include "common/assert.h"
#include "common/stream_name.h"
#include "server/offset_store.h"

namespace strata::server {

// Everything behind the header: the values stored and not written yet, and
// the one writer thread that writes them to etcd, key by key.
struct ClusterOffsets::Impl {
  struct Slot {
    uint64_t value = 0;
    uint64_t version = 0;  // bumped by every store
    uint64_t written = 0;  // the version etcd holds (or that was dropped)
    bool in_flight = false;
  };
  using Key = std::pair<std::string, std::string>;  // stream, reference
  // One write the writer is about to make.
  struct Turn {
    Key key;
    uint64_t value = 0;
    uint64_t version = 0;
    std::optional<int64_t> rev;  // the key's revision as last seen
  };

  Impl(std::shared_ptr<etcd::EtcdClient> c, ClusterOffsetsOptions o)
      : client(std::move(c)), opts(std::move(o)) {}

  std::string key_of(const Key& k) const {
    return catalog::etcd_offsets_prefix(opts.ns, k.first) + k.second;
  }
  bool pending_locked() const {
    for (const auto& [k, s] : slots) {
      if (s.version > s.written) return true;
    }
    return false;
  }
  void run();
  std::optional<Turn> next_turn_locked(const Key& cursor);
  Result<etcd::TxnResponse> write(Turn& t);
  // Under mu: what the write's answer means for the key; whether it must
  // be retried after a pause.
  bool record_locked(const Turn& t, const Result<etcd::TxnResponse>& r);

  std::shared_ptr<etcd::EtcdClient> client;
  const ClusterOffsetsOptions opts;
  mutable std::mutex mu;
  std::condition_variable cv;  // a store, a write ended, stopping
  std::map<Key, Slot> slots;
  // Each key's mod_revision as this node last saw it (its own write's, or
  // a conflict's): writes compare it.
  std::map<Key, int64_t> revs;
  bool stopping = false;
  bool closed = false;
  ClusterOffsetsStats stats;
  std::thread writer;
};

std::unique_ptr<ClusterOffsets> ClusterOffsets::start(std::shared_ptr<etcd::EtcdClient> client,
                                                      ClusterOffsetsOptions opts) {
  std::unique_ptr<ClusterOffsets> c(
      new ClusterOffsets(std::make_unique<Impl>(std::move(client), std::move(opts))));
  c->impl_->writer = std::thread([p = c->impl_.get()] { p->run(); });
  return c;
}

ClusterOffsets::ClusterOffsets(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ClusterOffsets::~ClusterOffsets() {
  close();
}

Status ClusterOffsets::store(std::string_view stream, std::string_view reference, uint64_t offset) {
  if (reference.empty() || reference.size() > kMaxReferenceBytes) {
    return Error(Errc::invalid_argument, fmt::format("offset reference of {} bytes (1..{} allowed)",
                                                     reference.size(), kMaxReferenceBytes));
  }
  STRATA_TRY(validate_stream_name(stream));
  Impl& m = *impl_;
  {
    std::lock_guard l(m.mu);
    if (m.stopping) return Error(Errc::closed, "cluster offsets: closed");
    Impl::Slot& s = m.slots[Impl::Key(stream, reference)];
    s.value = offset;
    s.version += 1;
    m.stats.stores += 1;
  }
  m.cv.notify_all();
  return Status::OK();
}

Result<std::optional<uint64_t>> ClusterOffsets::query(std::string_view stream,
                                                      std::string_view reference) {
  STRATA_TRY(validate_stream_name(stream));
  Impl& m = *impl_;
  const Impl::Key k(stream, reference);
  {
    std::lock_guard l(m.mu);
    // Stored here and not written yet: newer than what etcd holds.
    if (auto it = m.slots.find(k); it != m.slots.end() && it->second.version > it->second.written) {
      return std::optional<uint64_t>(it->second.value);
    }
  }
  const std::string key = m.key_of(k);
  STRATA_ASSIGN_OR_RETURN(auto r, m.client->range(key));
  if (r.kvs.empty()) return std::optional<uint64_t>();
  const std::string& v = r.kvs.front().value;
  uint64_t off = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), off);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) {
    return Error(Errc::corrupt, fmt::format("etcd key {}: \"{}\" is not a decimal offset", key,
                                            printable_name(v)));
  }
  return std::optional<uint64_t>(off);
}

Status ClusterOffsets::flush(std::chrono::milliseconds timeout) {
  Impl& m = *impl_;
  std::unique_lock l(m.mu);
  if (!m.cv.wait_for(l, timeout, [&] { return !m.pending_locked() || m.closed; })) {
    return Error(Errc::timeout, fmt::format("cluster offsets: values still not written to etcd "
                                            "after {} ms",
                                            timeout.count()));
  }
  if (m.pending_locked()) {
    return Error(Errc::closed, "cluster offsets: closed with values unwritten");
  }
  return Status::OK();
}

void ClusterOffsets::stream_removed(std::string_view stream) {
  Impl& m = *impl_;
  std::lock_guard l(m.mu);
  for (auto it = m.revs.lower_bound(Impl::Key(stream, ""));
       it != m.revs.end() && it->first.first == stream;) {
    it = m.revs.erase(it);
  }
  for (auto it = m.slots.lower_bound(Impl::Key(stream, ""));
       it != m.slots.end() && it->first.first == stream;) {
    if (it->second.in_flight) {
      // Its write fails the stream's existence compare; nothing to write after.
      it->second.written = it->second.version;
      ++it;
    } else {
      it = m.slots.erase(it);
    }
  }
  m.cv.notify_all();
}

// Round robin from after the last key written: every key gets its turn.
std::optional<ClusterOffsets::Impl::Turn> ClusterOffsets::Impl::next_turn_locked(
    const Key& cursor) {
  auto dirty = [](const Slot& s) { return s.version > s.written && !s.in_flight; };
  auto next = slots.end();
  for (auto it = slots.upper_bound(cursor); it != slots.end(); ++it) {
    if (dirty(it->second)) {
      next = it;
      break;
    }
  }
  for (auto it = slots.begin(); next == slots.end() && it != slots.end() && it->first <= cursor;
       ++it) {
    if (dirty(it->second)) next = it;
  }
  if (next == slots.end()) return std::nullopt;
  Turn t{next->first, next->second.value, next->second.version, std::nullopt};
  if (auto known = revs.find(t.key); known != revs.end()) t.rev = known->second;
  next->second.in_flight = true;
  return t;
}

// The write applies only over the key's revision as last seen, so an
// attempt etcd applies late (one retried across a leader election can land
// after a later write: etcd_client_test saw it) finds the key moved on and
// changes nothing — an offset never goes back that way. First write of a
// key here: its revision is read first. Without the lock.
Result<etcd::TxnResponse> ClusterOffsets::Impl::write(Turn& t) {
  const std::string key = key_of(t.key);
  const std::string entry = catalog::etcd_entry_key(opts.ns, t.key.first);
  if (!t.rev) {
    STRATA_ASSIGN_OR_RETURN(auto got, client->range(key));
    t.rev = got.kvs.empty() ? 0 : got.kvs[0].mod_revision;
  }
  etcd::TxnRequest txn;
  txn.compare.push_back(etcd::Compare::revision(entry, etcd::CompareTarget::create_revision,
                                                etcd::CompareOp::greater, 0));
  txn.compare.push_back(etcd::Compare::revision(key, etcd::CompareTarget::mod_revision,
                                                etcd::CompareOp::equal, *t.rev));
  txn.success.push_back(etcd::PutOp{key, std::to_string(t.value), 0});
  txn.failure.push_back(etcd::RangeOp{entry, ""});
  txn.failure.push_back(etcd::RangeOp{key, ""});
  return client->txn(txn);
}

bool ClusterOffsets::Impl::record_locked(const Turn& t, const Result<etcd::TxnResponse>& r) {
  const Key& k = t.key;
  bool moved_on = false;
  if (r.ok()) {
    if (r->succeeded) {
      STRATA_ASSERT(r->revision > revs[k], "an offset write's revision went back");
      revs[k] = r->revision;
    } else if (r->ranges.size() == 2 && !r->ranges[0].kvs.empty()) {
      // Written meanwhile (another node, or a late attempt of ours): write
      // over its revision, at once.
      revs[k] = r->ranges[1].kvs.empty() ? 0 : r->ranges[1].kvs[0].mod_revision;
      moved_on = true;
      stats.conflicts += 1;
    } else {
      revs.erase(k);
    }
  } else {
    // What etcd holds now is unknown: read it before the next write.
    revs.erase(k);
  }
  auto it = slots.find(k);
  if (it == slots.end()) return !r.ok();
  Slot& s = it->second;
  s.in_flight = false;
  if (moved_on) return false;
  if (!r.ok()) {
    stats.write_failures += 1;
    spdlog::warn("cluster offsets: writing {}: {}; retrying", key_of(k), r.error().to_string());
    return true;
  }
  if (r->succeeded) {
    stats.writes += 1;
  } else {
    stats.dropped += 1;
    spdlog::info("cluster offsets: stream {} no longer exists; offset {} of {} dropped", k.first,
                 t.value, printable_name(k.second));
  }
  s.written = std::max(s.written, t.version);
  // Clean: etcd answers queries from here on.
  if (s.written >= s.version) slots.erase(it);
  return false;
}

void ClusterOffsets::Impl::run() {
  std::unique_lock l(mu);
  Key cursor;
  for (;;) {
    std::optional<Turn> t = next_turn_locked(cursor);
    if (!t) {
      if (stopping) break;
      cv.wait(l);
      continue;
    }
    if (stopping && closed) {  // close()'s grace is over
      slots[t->key].in_flight = false;
      break;
    }
    cursor = t->key;
    l.unlock();
    Result<etcd::TxnResponse> r = write(*t);
    l.lock();
    const bool retry = record_locked(*t, r);
    cv.notify_all();
    if (retry && !stopping) cv.wait_for(l, opts.retry, [&] { return stopping; });
  }
  cv.notify_all();
}

void ClusterOffsets::close(std::chrono::milliseconds grace) {
  Impl& m = *impl_;
  {
    std::unique_lock l(m.mu);
    if (!m.writer.joinable()) return;
    m.stopping = true;
    m.cv.notify_all();
    // What is pending is written within the grace; after it the writer
    // stops at its next turn.
    m.cv.wait_for(l, grace, [&] { return !m.pending_locked(); });
    m.closed = true;
    m.cv.notify_all();
  }
  m.writer.join();
  std::lock_guard l(m.mu);
  if (m.pending_locked()) {
    spdlog::warn("cluster offsets: closed with values not written to etcd");
  }
}

ClusterOffsetsStats ClusterOffsets::stats() const {
  std::lock_guard l(impl_->mu);
  return impl_->stats;
}

}  // namespace strata::server
