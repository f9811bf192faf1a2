#include "tier/uploader_core.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/assert.h"
#include "common/overloaded.h"

namespace strata::tier {

using namespace upload;

namespace {

bool is_append(const ManifestEdit& e) {
  return std::holds_alternative<AppendEdit>(e);
}

}  // namespace

std::string_view upload::event_name(const Event& e) {
  static constexpr std::string_view names[] = {
      "fragment_cut",          "transfer_complete",   "transfer_failed",    "transfer_deadline",
      "group_upload_complete", "group_upload_failed", "persist_complete",   "persist_failed",
      "retention_complete",    "retention_failed",    "operation_deadline", "tick",
      "await_offset",          "retention_requested"};
  return names[e.index()];
}

UploaderCore::UploaderCore(UploaderConfig cfg, ObjectKeys keys)
    : cfg_(std::move(cfg)), keys_(std::move(keys)), rng_(cfg_.random_seed) {}

Result<UploaderCore> UploaderCore::create(UploaderConfig cfg, Manifest persisted, uint64_t revision,
                                          std::string root_key) {
  STRATA_ASSIGN_OR_RETURN(ObjectKeys keys, ObjectKeys::make(cfg.key_prefix, cfg.stream));
  STRATA_TRY(validate_manifest(persisted, "of stream " + cfg.stream));
  if (cfg.persist_threshold == 0 || cfg.max_unpersisted_fragments == 0 ||
      cfg.rebalance.fragment_threshold < 2 || cfg.rebalance.group_threshold < 2) {
    return Error(Errc::invalid_argument,
                 fmt::format("uploader config for stream {}: persist_threshold, "
                             "max_unpersisted_fragments must be >= 1 and rebalance thresholds >= 2",
                             cfg.stream));
  }
  if (revision == 0 && !persisted.empty()) {
    return Error(
        Errc::invalid_argument,
        fmt::format("stream {}: a manifest with entries at catalog revision 0", cfg.stream));
  }
  UploaderCore c(std::move(cfg), std::move(keys));
  c.next_cut_offset_ = persisted.next_offset;
  c.live_ = persisted;
  c.persisted_ = std::make_shared<const Manifest>(std::move(persisted));
  c.revision_ = revision;
  c.root_key_ = std::move(root_key);
  if (!c.root_key_.empty()) {
    auto parsed = c.keys_.parse(c.root_key_);
    if (parsed.ok() && parsed->type == ObjectType::root) c.root_uid_ = parsed->uid;
  }
  c.m_.last_persist_ts_ms = -1;
  return c;
}

uint32_t UploaderCore::new_uid() {
  return uint32_t(rng_.next() >> 32);
}

bool UploaderCore::accepts_cuts() const {
  return state_ == State::running &&
         slots_.size() + appends_pending_ < cfg_.max_unpersisted_fragments;
}

Result<Effects> UploaderCore::on(const Event& e, int64_t now) {
  if (state_ != State::running) {
    return Error(Errc::closed,
                 fmt::format("uploader core of stream {} has {}; event {} refused", cfg_.stream,
                             state_ == State::stopped ? "stopped" : "asked to be reinitialized",
                             event_name(e)));
  }
  Effects out;
  STRATA_TRY(handle(e, now, out));
  schedule(now, out);
  update_timer(out);
  return out;
}

Status UploaderCore::handle(const Event& e, int64_t now, Effects& out) {
  return std::visit(
      Overloaded{
          [&](const FragmentCut& x) { return on_cut(x, out); },
          [&](const TransferComplete& x) {
            return on_transfer_result(x.ref, x.token, nullptr, false, now, out);
          },
          [&](const TransferFailed& x) {
            return on_transfer_result(x.ref, x.token, &x.failure, false, now, out);
          },
          [&](const TransferDeadline& x) {
            TransferFailure f = TransferFailure::deadline("transfer deadline");
            return on_transfer_result(x.ref, x.token, &f, true, now, out);
          },
          [&](const GroupUploadComplete& x) { return on_group_result(x.token, nullptr, now, out); },
          [&](const GroupUploadFailed& x) {
            return on_group_result(x.token, &x.failure, now, out);
          },
          [&](const PersistComplete& x) { return on_persist_complete(x, now, out); },
          [&](const PersistFailed& x) {
            return on_persist_failed(x.token, x.error, x.message, now, out);
          },
          [&](const RetentionComplete& x) {
            return on_retention_result(x.token, &x.plan, nullptr, now, out);
          },
          [&](const RetentionFailed& x) {
            return on_retention_result(x.token, nullptr, &x.message, now, out);
          },
          [&](const OperationDeadline& x) { return on_deadline(x.token, now, out); },
          [&](const Tick&) {
            // The shell's timer fired (or it just tells the time): the armed
            // wake-up is used up.
            if (timer_at_ && now >= *timer_at_) timer_at_.reset();
            return Status::OK();
          },
          [&](const AwaitOffset& x) { return on_await(x, out); },
          [&](const RetentionRequested& x) {
            if (x.spec) {
              cfg_.retention = *x.spec;
              // What was idle under the old limits may not be under these.
              retention_idle_ = false;
              retention_recheck_at_.reset();
            }
            retention_requested_ = true;
            retention_not_before_ = 0;
            return Status::OK();
          },
      },
      e);
}

// ---- fragments ----

Status UploaderCore::on_cut(const FragmentCut& e, Effects& out) {
  const FragmentMeta& f = e.meta;
  if (f.first_offset != next_cut_offset_) {
    return Error(
        Errc::invalid_argument,
        fmt::format("stream {}: fragment cut at offset {} but the next fragment must start "
                    "at {}",
                    cfg_.stream, f.first_offset, next_cut_offset_));
  }
  if (f.next_offset <= f.first_offset || f.size == 0 || f.first_ts > f.last_ts) {
    return Error(
        Errc::invalid_argument,
        fmt::format("stream {}: malformed fragment cut [{}, {}), {} bytes, ts [{}, {}]",
                    cfg_.stream, f.first_offset, f.next_offset, f.size, f.first_ts, f.last_ts));
  }
  if (!accepts_cuts()) {
    return Error(
        Errc::unavailable,
        fmt::format("stream {}: {} fragments cut and not persisted, the bound is {}; "
                    "wait before cutting more",
                    cfg_.stream, slots_.size() + appends_pending_, cfg_.max_unpersisted_fragments));
  }
  Slot s;
  s.meta = f;
  s.token = new_token();
  s.uid = new_uid();
  uint64_t ref = front_ref_ + slots_.size();
  slots_.push_back(s);
  next_cut_offset_ = f.next_offset;
  bytes_in_transfer_ += f.size;
  m_.fragments_cut += 1;
  out.push_back(SubmitTransfer{ref, s.token, f, s.uid,
                               keys_.fragment(f.first_offset, cfg_.epoch, s.uid), 1, 0,
                               cfg_.transfer_deadline_ms});
  return Status::OK();
}

Status UploaderCore::on_transfer_result(uint64_t ref, uint64_t token,
                                        const TransferFailure* failure, bool deadline, int64_t now,
                                        Effects& out) {
  uint64_t end_ref = front_ref_ + slots_.size();
  if (ref == 0 || ref >= end_ref) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: unknown transfer reference {} (references issued: 1..{})",
                             cfg_.stream, ref, end_ref - 1));
  }
  if (token == 0 || token >= next_token_) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: transfer reference {} with unknown token {}", cfg_.stream,
                             ref, token));
  }
  if (ref < front_ref_) {
    m_.stale_results_ignored += 1;  // already applied: a duplicate or late result
    return Status::OK();
  }
  Slot& s = slots_[ref - front_ref_];
  if (s.complete || s.token != token) {
    m_.stale_results_ignored += 1;  // superseded by a retry, or a duplicate
    return Status::OK();
  }
  if (failure == nullptr) {
    s.complete = true;
    if (s.stalled) stalled_slots_ -= 1;
    s.stalled = false;
    bytes_in_transfer_ -= s.meta.size;
    m_.transfers_completed += 1;
    m_.bytes_transferred += s.meta.size;
    if (ref == front_ref_) drain(now);
    return Status::OK();
  }
  m_.transfers_failed += 1;
  if (deadline) m_.transfer_deadlines += 1;
  int64_t delay;
  bool transient = is_transient(*failure);
  if (transient) {
    s.transient_failures += 1;
    delay = backoff_ms(cfg_.transient_backoff, s.transient_failures, rng_);
    m_.transfer_retries += 1;
    if (s.stalled) stalled_slots_ -= 1;
    s.stalled = false;
  } else {
    s.fatal_failures += 1;
    delay = backoff_ms(cfg_.fatal_backoff, s.fatal_failures, rng_);
    m_.nontransient_transfer_retries += 1;
    if (!s.stalled) stalled_slots_ += 1;
    s.stalled = true;
  }
  s.token = new_token();
  s.uid = new_uid();
  uint32_t attempt = s.transient_failures + s.fatal_failures + 1;
  out.push_back(SubmitTransfer{ref, s.token, s.meta, s.uid,
                               keys_.fragment(s.meta.first_offset, cfg_.epoch, s.uid), attempt,
                               delay, cfg_.transfer_deadline_ms});
  return Status::OK();
}

void UploaderCore::drain(int64_t now) {
  // Iterative on purpose: any number of buffered completions behind the
  // front are applied in one pass, with constant stack depth.
  while (!slots_.empty() && slots_.front().complete) {
    const Slot& s = slots_.front();
    ManifestEntry e{s.meta.first_offset, s.meta.first_ts, s.meta.last_ts, s.meta.size,
                    cfg_.epoch,          s.uid,           kKindFragment};
    Status st = apply_local(AppendEdit{e, s.meta.next_offset}, now, {});
    // Cuts are checked to be contiguous from the live manifest's end, and
    // only appends touch the end: an append that does not fit is a bug.
    STRATA_ASSERT(st.ok(), "applying a completed fragment to the live manifest failed");
    slots_.pop_front();
    front_ref_ += 1;
  }
}

Status UploaderCore::apply_local(ManifestEdit edit, int64_t now,
                                 std::vector<ManifestEntry> release) {
  STRATA_TRY(apply_edit(live_, edit));
  if (auto* a = std::get_if<AppendEdit>(&edit)) {
    appends_pending_ += 1;
    bytes_pending_ += a->entry.size;
    tail_fragments_ += 1;
    if (tail_fragments_ >= cfg_.rebalance.fragment_threshold) rebalance_dirty_ = true;
  } else {
    replaces_or_truncates_pending_ += 1;
    rebalance_dirty_ = true;
  }
  pending_.push_back(PendingEdit{std::move(edit), now, std::move(release)});
  return Status::OK();
}

// ---- operations ----

Result<bool> UploaderCore::check_token(uint64_t token, Op op, const char* what) const {
  if (token == 0 || token >= next_token_) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: {} result with unknown token {} (tokens issued: 1..{})",
                             cfg_.stream, what, token, next_token_ - 1));
  }
  return op_ == op && token == op_token_;
}

Status UploaderCore::on_group_result(uint64_t token, const TransferFailure* failure, int64_t now,
                                     Effects&) {
  STRATA_ASSIGN_OR_RETURN(bool current, check_token(token, Op::rebalance, "group upload"));
  if (!current) {
    m_.stale_results_ignored += 1;
    return Status::OK();
  }
  op_ = Op::none;
  NewGroup g = std::move(*group_);
  group_.reset();
  if (failure == nullptr) {
    // Only appends at the tail happened since the run was chosen (single
    // mutator), so its position still holds.
    Status st = apply_local(g.edit(), now, {});
    STRATA_ASSERT(st.ok(), "applying an uploaded group to the live manifest failed");
    m_.groups_created[std::min<int>(g.entry.kind, 4) - 1] += 1;
    group_transient_failures_ = 0;
    group_fatal_failures_ = 0;
    rebalance_not_before_ = 0;
    return Status::OK();
  }
  // Either way the run is retried later from a fresh detection; meanwhile
  // persists go on (the root is only larger than it should be).
  m_.group_upload_failures += 1;
  int64_t delay;
  if (is_transient(*failure)) {
    delay = backoff_ms(cfg_.transient_backoff, ++group_transient_failures_, rng_);
  } else {
    delay = backoff_ms(cfg_.fatal_backoff, ++group_fatal_failures_, rng_);
  }
  rebalance_not_before_ = now + delay;
  return Status::OK();
}

Status UploaderCore::on_persist_complete(const PersistComplete& e, int64_t now, Effects& out) {
  STRATA_ASSIGN_OR_RETURN(bool current, check_token(e.token, Op::persist, "persist"));
  if (!current) {
    m_.stale_results_ignored += 1;
    return Status::OK();
  }
  if (e.revision <= revision_) {
    // The catalog went backwards: nothing we hold can be trusted.
    finish(State::reinitializing, out,
           Reinitialize{fmt::format("stream {}: persist reported revision {} after {}", cfg_.stream,
                                    e.revision, revision_)},
           Error(Errc::unavailable, "uploader reinitializing"));
    return Status::OK();
  }
  EditBatch batch{cfg_.epoch, revision_, e.revision, {}};
  batch.edits.reserve(persist_edits_);
  std::vector<std::string> to_delete;
  if (!root_key_.empty()) to_delete.push_back(root_key_);
  for (size_t i = 0; i < persist_edits_; ++i) {
    PendingEdit& p = pending_.front();
    if (!is_append(p.edit)) replaces_or_truncates_pending_ -= 1;
    for (const ManifestEntry& r : p.release) to_delete.push_back(keys_.for_entry(r));
    batch.edits.push_back(std::move(p.edit));
    pending_.pop_front();
  }
  // New persisted data may put the stream over its retention limits.
  if (persist_appends_ > 0) retention_idle_ = false;
  appends_pending_ -= persist_appends_;
  bytes_pending_ -= persist_bytes_;
  m_.bytes_persisted_total += persist_bytes_;
  persisted_ = std::move(persist_snapshot_);
  revision_ = e.revision;
  root_key_ = std::move(persist_key_);
  root_uid_ = persist_uid_;
  op_ = Op::none;
  persist_edits_ = 0;
  persist_appends_ = 0;
  persist_bytes_ = 0;
  persist_failures_ = 0;
  persist_not_before_ = 0;
  m_.persists_completed += 1;
  m_.last_persist_ts_ms = now;

  // The readers' manifest first, then the local boundary: once the
  // boundary moves, local retention (on any thread) may delete segments
  // below it, and a reader that then finds them gone must find them in the
  // manifest it is given (the other order is a window in which an offset
  // is in neither tier for it).
  out.push_back(Broadcast{std::move(batch)});
  out.push_back(UpdateLocalRetention{persisted_->first_offset, persisted_->next_offset, revision_});
  std::vector<uint64_t> ready;
  auto keep = std::remove_if(waiters_.begin(), waiters_.end(), [&](const Waiter& w) {
    if (w.offset >= persisted_->next_offset) return false;
    ready.push_back(w.id);
    return true;
  });
  waiters_.erase(keep, waiters_.end());
  if (!ready.empty()) out.push_back(ReplyWaiters{std::move(ready), Status::OK()});
  if (!to_delete.empty()) {
    m_.objects_deleted += to_delete.size();
    out.push_back(DeleteObjects{std::move(to_delete), revision_});
  }
  return Status::OK();
}

Status UploaderCore::on_persist_failed(uint64_t token, PersistError error,
                                       const std::string& message, int64_t now, Effects& out) {
  STRATA_ASSIGN_OR_RETURN(bool current, check_token(token, Op::persist, "persist"));
  if (!current) {
    m_.stale_results_ignored += 1;
    return Status::OK();
  }
  m_.persists_failed += 1;
  switch (error) {
    case PersistError::conflict:
      m_.persist_conflicts += 1;
      finish(State::reinitializing, out,
             Reinitialize{fmt::format("stream {}: catalog conflict persisting at expected revision "
                                      "{}: {}",
                                      cfg_.stream, revision_, message)},
             Error(Errc::unavailable, "uploader reinitializing after a catalog conflict"));
      return Status::OK();
    case PersistError::not_found:
      if (revision_ == 0) {
        finish(State::reinitializing, out,
               Reinitialize{fmt::format("stream {}: catalog entry not found at revision 0: {}",
                                        cfg_.stream, message)},
               Error(Errc::unavailable, "uploader reinitializing"));
      } else {
        finish(State::stopped, out,
               Stop{fmt::format("stream {}: catalog entry gone at revision {} (stream deleted): {}",
                                cfg_.stream, revision_, message)},
               Error(Errc::not_found, "stream deleted"));
      }
      return Status::OK();
    case PersistError::transient:
      break;
  }
  op_ = Op::none;
  persist_edits_ = 0;
  persist_appends_ = 0;
  persist_bytes_ = 0;
  persist_snapshot_.reset();
  persist_key_.clear();
  persist_failures_ += 1;
  persist_not_before_ = now + backoff_ms(cfg_.transient_backoff, persist_failures_, rng_);
  return Status::OK();
}

Status UploaderCore::on_retention_result(uint64_t token, const RetentionPlan* plan,
                                         const std::string* failure, int64_t now, Effects& out) {
  STRATA_ASSIGN_OR_RETURN(bool current, check_token(token, Op::retention, "retention"));
  if (!current) {
    m_.stale_results_ignored += 1;
    return Status::OK();
  }
  op_ = Op::none;
  auto failed = [&] {
    m_.retention_failures += 1;
    retention_failures_ += 1;
    retention_not_before_ = now + backoff_ms(cfg_.fatal_backoff, retention_failures_, rng_);
  };
  if (failure != nullptr) {
    failed();
    return Status::OK();
  }
  m_.retention_evaluations += 1;
  last_retention_eval_ = now;
  if (plan->removes_anything()) {
    Status st = apply_local(plan->edit, now, plan->deleted);
    if (!st.ok()) {
      out.push_back(
          Report{Error(st.error())
                     .with_context(fmt::format(
                         "stream {}: retention plan rejected, treated as a failed evaluation",
                         cfg_.stream))});
      failed();
      return Status::OK();
    }
    m_.fragments_removed_by_retention += plan->fragments_removed;
  }
  retention_failures_ = 0;
  retention_not_before_ = 0;
  retention_requested_ = plan->more;
  retention_idle_ = !plan->removes_anything();
  retention_recheck_at_ = plan->recheck_at_ms;
  return Status::OK();
}

Status UploaderCore::on_deadline(uint64_t token, int64_t now, Effects& out) {
  if (token == 0 || token >= next_token_) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream {}: deadline for unknown token {} (tokens issued: 1..{})",
                             cfg_.stream, token, next_token_ - 1));
  }
  if (op_ == Op::none || token != op_token_) {
    m_.stale_results_ignored += 1;
    return Status::OK();
  }
  switch (op_) {
    case Op::persist:
      // The compare-and-set may still commit: retrying at the same expected
      // revision then conflicts and we reinitialize from what committed.
      return on_persist_failed(token, PersistError::transient, "persist deadline", now, out);
    case Op::rebalance: {
      TransferFailure f = TransferFailure::deadline("group upload deadline");
      return on_group_result(token, &f, now, out);
    }
    case Op::retention: {
      std::string why = "retention deadline";
      return on_retention_result(token, nullptr, &why, now, out);
    }
    case Op::none:
      break;
  }
  return Status::OK();
}

Status UploaderCore::on_await(const AwaitOffset& e, Effects& out) {
  if (e.offset < persisted_->next_offset) {
    out.push_back(ReplyWaiters{{e.waiter}, Status::OK()});
    return Status::OK();
  }
  if (waiters_.size() >= cfg_.max_waiters) {
    out.push_back(ReplyWaiters{
        {e.waiter},
        Error(Errc::unavailable, fmt::format("stream {}: {} waiters already (the bound)",
                                             cfg_.stream, waiters_.size()))});
    return Status::OK();
  }
  waiters_.push_back(Waiter{e.offset, e.waiter, e.urgent});
  return Status::OK();
}

// ---- scheduling ----

std::optional<RebalanceRun> UploaderCore::rebalance_run() {
  if (rebalance_dirty_) {
    rebalance_cached_ = detect_rebalance(live_, cfg_.rebalance);
    tail_fragments_ = 0;
    for (auto it = live_.entries.rbegin(); it != live_.entries.rend() && it->kind == kKindFragment;
         ++it) {
      tail_fragments_ += 1;
    }
    rebalance_dirty_ = false;
  }
  return rebalance_cached_;
}

bool UploaderCore::persist_due(int64_t now) const {
  if (pending_.size() <= persist_edits_ || now < persist_not_before_) return false;
  uint64_t appends = appends_pending_ - persist_appends_;
  if (appends >= cfg_.persist_threshold || urgent_waiter_applied()) return true;
  // Rebalance and retention edits go out at once: they exist to shrink the
  // root or free storage, and their deletions wait for this persist.
  uint64_t others = replaces_or_truncates_pending_;
  for (size_t i = 0; i < persist_edits_; ++i) others -= is_append(pending_[i].edit) ? 0 : 1;
  if (others > 0) return true;
  return now >= pending_[persist_edits_].applied_at_ms + cfg_.persist_interval_ms;
}

bool UploaderCore::urgent_waiter_applied() const {
  for (const Waiter& w : waiters_) {
    if (w.urgent && w.offset < live_.next_offset) return true;
  }
  return false;
}

bool UploaderCore::retention_due(int64_t now) const {
  if (!cfg_.retention.any() || now < retention_not_before_) return false;
  if (retention_requested_) return true;
  if (now < last_retention_eval_ + cfg_.retention_interval_ms) return false;
  // Judged on what is persisted: data enters retention's view the way it
  // enters everyone else's, through a persist.
  if (!retention_may_apply(*persisted_, cfg_.retention, now)) return false;
  if (retention_idle_) return retention_recheck_at_ && now >= *retention_recheck_at_;
  return true;
}

bool UploaderCore::rebalance_deferred() const {
  return op_ != Op::none && op_ != Op::rebalance &&
         (rebalance_dirty_ ? detect_rebalance(live_, cfg_.rebalance).has_value()
                           : rebalance_cached_.has_value());
}

bool UploaderCore::retention_deferred() const {
  return op_ != Op::none && op_ != Op::retention &&
         (retention_requested_ ||
          (cfg_.retention.any() && !retention_idle_ &&
           retention_may_apply(*persisted_, cfg_.retention, INT64_MAX / 2)));
}

bool UploaderCore::persist_deferred(int64_t now) const {
  return op_ != Op::none && op_ != Op::persist && persist_due(now);
}

void UploaderCore::schedule(int64_t now, Effects& out) {
  if (state_ != State::running || op_ != Op::none) return;
  // Order: rebalance (keeps the root bounded), then a persist carrying a
  // rebalance or retention edit (its deletions and visibility wait on it),
  // then retention, then an ordinary persist. Retention going before the
  // ordinary persist keeps a busy stream, whose persists are always due,
  // from starving it; it is itself rate-limited by retention_interval_ms.
  if (now >= rebalance_not_before_) {
    if (auto run = rebalance_run()) {
      start_rebalance(*run, now, out);
      if (op_ != Op::none) return;
    }
  }
  bool persist = persist_due(now);
  if (persist && replaces_or_truncates_pending_ > 0) {
    start_persist(now, out);
    return;
  }
  if (retention_due(now)) {
    start_retention(now, out);
    return;
  }
  if (persist) start_persist(now, out);
}

void UploaderCore::start_rebalance(const RebalanceRun& run, int64_t now, Effects& out) {
  uint32_t uid = new_uid();
  auto g = make_group(live_, run, cfg_.epoch, uid);
  if (!g.ok()) {
    out.push_back(Report{Error(g.error()).with_context(
        fmt::format("stream {}: rebalance not possible, root stays larger", cfg_.stream))});
    rebalance_not_before_ = now + backoff_ms(cfg_.fatal_backoff, ++group_fatal_failures_, rng_);
    return;
  }
  op_ = Op::rebalance;
  op_token_ = new_token();
  std::string key = keys_.group(g->entry.offset, uid, g->entry.kind);
  auto object = std::make_shared<const ManifestGroup>(g->object);
  ManifestEntry entry = g->entry;
  group_ = std::move(*g);
  group_->object = ManifestGroup();  // the effect owns the entries now
  out.push_back(UploadGroup{op_token_, std::move(object), entry, std::move(key),
                            cfg_.group_upload_deadline_ms});
}

void UploaderCore::start_retention(int64_t now, Effects& out) {
  op_ = Op::retention;
  op_token_ = new_token();
  retention_requested_ = false;
  out.push_back(EvaluateRetention{op_token_, std::make_shared<const Manifest>(live_),
                                  cfg_.retention, now, cfg_.retention_deadline_ms});
}

void UploaderCore::start_persist(int64_t, Effects& out) {
  uint32_t uid = new_uid();
  // A new root must never take the current root's key: the old root is
  // deleted after the compare-and-set, which would delete the new one.
  while (!root_key_.empty() && uid == root_uid_) uid = new_uid();
  op_ = Op::persist;
  op_token_ = new_token();
  persist_uid_ = uid;
  persist_key_ = keys_.root(cfg_.epoch, uid);
  persist_snapshot_ = std::make_shared<const Manifest>(live_);
  persist_edits_ = pending_.size();
  persist_appends_ = appends_pending_;
  persist_bytes_ = bytes_pending_;
  std::vector<ManifestEdit> edits;
  edits.reserve(pending_.size());
  for (const PendingEdit& p : pending_) edits.push_back(p.edit);
  out.push_back(StartPersist{op_token_, persist_snapshot_, cfg_.epoch, revision_, std::move(edits),
                             persist_key_, cfg_.persist_deadline_ms});
}

std::optional<int64_t> UploaderCore::next_wakeup() const {
  if (state_ != State::running || op_ != Op::none) return std::nullopt;
  std::optional<int64_t> at;
  auto consider = [&](int64_t t) { at = at ? std::min(*at, t) : t; };
  if (!rebalance_dirty_ && rebalance_cached_) consider(rebalance_not_before_);
  if (!pending_.empty()) {
    bool urgent = appends_pending_ >= cfg_.persist_threshold ||
                  replaces_or_truncates_pending_ > 0 || urgent_waiter_applied();
    consider(urgent ? persist_not_before_
                    : std::max(persist_not_before_,
                               pending_.front().applied_at_ms + cfg_.persist_interval_ms));
  }
  const RetentionSpec& spec = cfg_.retention;
  const Manifest& p = *persisted_;
  if (spec.any()) {
    if (retention_requested_) {
      consider(retention_not_before_);
    } else if (!p.entries.empty() &&
               !(p.entries.size() == 1 && p.entries[0].kind == kKindFragment)) {
      int64_t base =
          std::max(retention_not_before_, last_retention_eval_ + cfg_.retention_interval_ms);
      if (retention_idle_) {
        if (retention_recheck_at_) consider(std::max(base, *retention_recheck_at_));
      } else if (spec.max_bytes && p.total_size > *spec.max_bytes) {
        consider(base);
      } else if (spec.max_age_ms) {
        consider(std::max(base, p.first_ts + *spec.max_age_ms + 1));
      }
    }
  }
  return at;
}

void UploaderCore::update_timer(Effects& out) {
  auto at = next_wakeup();
  if (at == timer_at_) return;
  if (at) {
    out.push_back(SetTimer{*at});
  } else {
    out.push_back(CancelTimer{});
  }
  timer_at_ = at;
}

void UploaderCore::finish(State s, Effects& out, Effect final_effect, Error waiter_error) {
  state_ = s;
  op_ = Op::none;
  out.push_back(std::move(final_effect));
  if (!waiters_.empty()) {
    std::vector<uint64_t> ids;
    for (const Waiter& w : waiters_) ids.push_back(w.id);
    waiters_.clear();
    out.push_back(ReplyWaiters{std::move(ids), std::move(waiter_error)});
  }
}

// ---- introspection ----

UploaderMetrics UploaderCore::metrics() const {
  UploaderMetrics m = m_;
  m.transfers_in_flight = 0;
  for (const Slot& s : slots_) m.transfers_in_flight += s.complete ? 0 : 1;
  m.bytes_in_transfer = bytes_in_transfer_;
  m.fragments_unpersisted = appends_pending_;
  m.bytes_unpersisted = bytes_pending_;
  m.bytes_in_persist = op_ == Op::persist ? persist_bytes_ : 0;
  if (stalled_slots_ > 0) {
    for (const Slot& s : slots_) {
      if (s.stalled) {
        m.upload_stalled_offset = s.meta.first_offset;
        break;
      }
    }
  }
  m.manifest_first_offset = persisted_->first_offset;
  m.manifest_next_offset = persisted_->next_offset;
  m.remote_bytes = persisted_->total_size;
  m.root_entries = live_.entries.size();
  m.waiters = waiters_.size();
  return m;
}

Status UploaderCore::check_invariants() const {
  auto bad = [&](const std::string& why) {
    return Error(Errc::internal, fmt::format("uploader core of stream {}: {}", cfg_.stream, why));
  };
  STRATA_TRY(validate_manifest(live_, "live"));
  uint64_t expect = live_.next_offset;
  uint64_t stalled = 0, in_transfer = 0;
  for (const Slot& s : slots_) {
    if (s.meta.first_offset != expect) {
      return bad(fmt::format("slot at {} does not follow {}", s.meta.first_offset, expect));
    }
    expect = s.meta.next_offset;
    stalled += s.stalled ? 1 : 0;
    in_transfer += s.complete ? 0 : s.meta.size;
  }
  if (expect != next_cut_offset_) {
    return bad(fmt::format("next cut offset {} but slots end at {}", next_cut_offset_, expect));
  }
  if (!slots_.empty() && slots_.front().complete) return bad("completed slot left at the front");
  if (stalled != stalled_slots_ || in_transfer != bytes_in_transfer_) {
    return bad("slot counters out of step");
  }
  uint64_t appends = 0, bytes = 0, others = 0;
  Manifest replay = *persisted_;
  for (const PendingEdit& p : pending_) {
    if (auto* a = std::get_if<AppendEdit>(&p.edit)) {
      appends += 1;
      bytes += a->entry.size;
    } else {
      others += 1;
    }
    STRATA_TRY(apply_edit(replay, p.edit));
  }
  if (appends != appends_pending_ || bytes != bytes_pending_ ||
      others != replaces_or_truncates_pending_) {
    return bad("pending edit counters out of step");
  }
  if (!(replay == live_)) return bad("persisted manifest + pending edits != live manifest");
  if (op_ == Op::persist) {
    if (persist_edits_ > pending_.size() || !persist_snapshot_) return bad("persist state");
  } else if (persist_edits_ != 0 || persist_appends_ != 0) {
    return bad("persist counters set with no persist in flight");
  }
  if ((op_ == Op::rebalance) != group_.has_value()) return bad("rebalance state");
  if (persisted_->next_offset > live_.next_offset) return bad("persisted ahead of live");
  if (waiters_.size() > cfg_.max_waiters) return bad("too many waiters");
  for (const Waiter& w : waiters_) {
    if (w.offset < persisted_->next_offset) return bad("a satisfied waiter is still waiting");
  }
  return Status::OK();
}

}  // namespace strata::tier
