// RaftMeta's writer thread: merges everything pending into one slotstore
// batch, writes it (fsynced when someone waits, when it holds term/vote
// changes or erases, at close, and periodically for last_applied), and
// reports the outcome to the waiting callers.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "common/assert.h"
#include "raftmeta/raft_meta_impl.h"

namespace strata::raftmeta {

namespace {

// Retry backoff after a write that failed without stopping the store.
constexpr int64_t kFirstBackoffNs = 10'000'000;   // 10 ms
constexpr int64_t kMaxBackoffNs = 1'000'000'000;  // 1 s
// At close, a failing write is retried this many times before giving up.
constexpr uint64_t kCloseAttempts = 3;

// Errors slotstore returns for a batch it refused as a whole. raftmeta
// validates every change before accepting it, so one of these means
// raftmeta and the store disagree: stop rather than retry forever.
bool is_refusal(Errc c) {
  switch (c) {
    case Errc::store_full:
    case Errc::string_table_full:
    case Errc::key_too_long:
    case Errc::invalid_argument:
    case Errc::unknown_field:
    case Errc::not_found:
    case Errc::closed:
    case Errc::internal:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool RaftMeta::Impl::has_work_locked(int64_t now) const {
  if (!dirty_.empty() || !erased_.empty()) return true;
  if (want_sync_seq_ > durable_seq_) return true;
  if (periodic_.due(now)) return true;
  // At close, everything written must be fsynced.
  return stopping_ && durable_seq_ < seq_;
}

void RaftMeta::Impl::take_snapshot_locked(int64_t now, Snapshot& snap) {
  // Callers wait on mu_ meanwhile: copy the least (ids into one buffer,
  // the vote only if it changed) and build the batch after unlocking.
  // `snap` is the previous round's: its buffers are reused (allocating and
  // freeing them per round was about 3 % of the CPU at 10 000 store_sync
  // callers). Its batch is cleared by build_batch, outside mu_.
  snap.erased.clear();
  snap.puts.clear();
  snap.ids.clear();
  snap.fields = 0;
  snap.erases = false;
  snap.seq = seq_;
  snap.periodic = periodic_.due(now) && want_sync_seq_ <= durable_seq_ && !stopping_;
  snap.sync = want_sync_seq_ > durable_seq_ || stopping_ || periodic_.due(now);
  snap.waiters = sync_arrivals_;
  sync_arrivals_ = 0;
  snap.erased.swap(erased_);
  snap.puts.reserve(dirty_.size());
  for (uint32_t e : dirty_) {
    const uint8_t mask = dirty_mask_[e];
    if (mask == 0) continue;  // erased since, or listed twice
    dirty_mask_[e] = 0;
    const FieldMask fields = mask & kAllBits;
    const BytesView id = table_->id(e);
    const ServerMeta& m = table_->meta(e);
    PendingPut p{e,      uint32_t(snap.ids.size()), uint32_t(id.size()),
                 fields, (mask & kCreate) != 0,     ServerMeta{}};
    snap.ids.append(id);
    p.values.current_term = m.current_term;
    p.values.last_applied = m.last_applied;
    if (fields & kVoteBits) p.values.voted_for = m.voted_for;
    snap.puts.push_back(std::move(p));
    snap.fields |= fields;
  }
  dirty_.clear();
}

void RaftMeta::Impl::build_batch(Snapshot& snap) {
  snap.batch.clear();
  // Erases first: they free the slots new servers of this batch may need.
  // An id never written to the store (created and erased before the
  // writer saw it) has nothing to erase.
  for (const Bytes& id : snap.erased) {
    auto rec = store_->read(id);
    if (rec.ok() || rec.code() != Errc::not_found) {
      snap.batch.erase(id);
      snap.erases = true;
    }
  }
  for (const PendingPut& p : snap.puts) {
    append_field_updates(p.values, p.mask, &snap.batch.put(p.id(snap.ids)));
  }
}

void RaftMeta::Impl::requeue_locked(Snapshot& snap) {
  for (Bytes& id : snap.erased) erased_.push_back(std::move(id));
  for (const PendingPut& p : snap.puts) {
    // A server erased since has its erase queued; nothing to put back.
    if (!table_->live(p.entry) || table_->id(p.entry) != p.id(snap.ids)) continue;
    mark_dirty(p.entry, p.mask | (p.create ? kCreate : 0));
  }
}

void RaftMeta::Impl::writer_main() {
  std::unique_lock<std::mutex> l(mu_);
  Snapshot snap;  // one per round, its memory reused
  uint64_t close_failures = 0;
  bool held = false;  // the batch about to be taken was held (counted once)
  for (;;) {
    int64_t now = now_ns();
    if (fatal_) break;
    if (!has_work_locked(now)) {
      if (stopping_) break;
      writer_idle_ = true;
      if (auto d = periodic_.deadline_ns()) {
        work_cv_.wait_for(l, std::chrono::nanoseconds(std::max<int64_t>(0, *d - now)));
      } else {
        work_cv_.wait(l);
      }
      writer_idle_ = false;
      continue;
    }
    if (now < retry_at_ns_ && !stopping_) {
      writer_idle_ = true;
      work_cv_.wait_for(l, std::chrono::nanoseconds(retry_at_ns_ - now));
      writer_idle_ = false;
      continue;
    }

    if (!stopping_ && want_sync_seq_ > durable_seq_) {
      if (auto until = group_commit_.hold_until(now, sync_arrivals_)) {
        if (!held) ++group_commit_holds_;
        held = true;
        holding_ = true;
        writer_idle_ = true;
        work_cv_.wait_for(l, std::chrono::nanoseconds(*until - now));
        writer_idle_ = false;
        holding_ = false;
        continue;
      }
    }
    held = false;

    take_snapshot_locked(now, snap);
    // Room for erase() callers held back by the bound on pending erases.
    done_cv_.notify_all();
    l.unlock();
    const int64_t started = now_ns();
    build_batch(snap);
    Status s = store_->write_batch(snap.batch, slotstore::WriteOptions{snap.sync});
    l.lock();
    now = now_ns();
    ++batches_;
    ops_written_ += snap.batch.size();
    largest_batch_ = std::max<uint64_t>(largest_batch_, snap.batch.size());
    if (s.ok()) {
      backoff_ns_ = 0;
      retry_at_ns_ = 0;
      // slotstore fsyncs a batch that sets or clears a low field or erases,
      // together with everything written before it.
      const bool durable = snap.sync || (snap.fields & kLowBits) || snap.erases;
      if (durable) {
        durable_seq_ = std::max(durable_seq_, snap.seq);
        periodic_.on_sync();
        ++synced_batches_;
        if (snap.periodic) ++periodic_syncs_;
        if (snap.sync) group_commit_.on_synced(now, snap.waiters, sync_arrivals_, now - started);
      } else if (!snap.batch.empty()) {
        periodic_.on_unsynced_write(now);
      }
    } else if (store_->info().fail_stopped || is_refusal(s.code())) {
      const bool refused = !store_->info().fail_stopped;
      fatal_ =
          Error(Errc::fail_stopped,
                fmt::format("{}: raftmeta stopped: {}{}", path_,
                            refused ? "the store refused a batch raftmeta had validated: " : "",
                            s.to_string()));
      spdlog::error("raftmeta {}", fatal_->message);
    } else {
      // The store goes on (e.g. the WAL was full and its compaction
      // failed): tell the waiters, keep the changes, retry later.
      ++failures_;
      failed_seq_ = snap.seq;
      failure_ = s.error();
      requeue_locked(snap);
      backoff_ns_ = backoff_ns_ == 0 ? kFirstBackoffNs : std::min(kMaxBackoffNs, backoff_ns_ * 2);
      retry_at_ns_ = now + backoff_ns_;
      spdlog::warn("raftmeta {}: writing {} changes failed, retrying in {} ms: {}", path_,
                   snap.batch.size(), backoff_ns_ / 1'000'000, s.to_string());
      if (stopping_ && ++close_failures >= kCloseAttempts) {
        fatal_ = Error(s.code(), fmt::format("{}: close could not persist pending changes: {}",
                                             path_, s.error().message));
      }
    }
    done_cv_.notify_all();
  }
  writer_idle_ = false;
  done_cv_.notify_all();
}

}  // namespace strata::raftmeta
