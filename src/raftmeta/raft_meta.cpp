// RaftMeta: open/load, the caller-facing calls and close. The writer thread
// is in raft_meta_writer.cpp.
#include "raftmeta/raft_meta.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <unordered_set>

#include "common/assert.h"
#include "common/clock.h"
#include "raftmeta/raft_meta_impl.h"

namespace strata::raftmeta {

// Shared with the slotstore's compaction hook, which may outlive nothing
// but is simplest to reason about when it owns what it reads.
struct RaftMeta::Impl::Gate {
  std::function<Status(slotstore::CompactionPoint)> user_hook;
  // Compaction points reached after this monotonic time fail (abort).
  std::atomic<int64_t> abort_after_ns{INT64_MAX};
};

RaftMeta::Impl::Impl(FileSystem& fs, std::string dir, const Options& options)
    : fs_(fs),
      dir_(std::move(dir)),
      path_(store_path(dir_)),
      opt_(options),
      gate_(std::make_shared<Gate>()),
      periodic_(std::chrono::nanoseconds(options.applied_sync_interval).count()),
      group_commit_(std::chrono::nanoseconds(options.group_commit_window).count()) {
  gate_->user_hook = options.compaction_hook;
}

RaftMeta::RaftMeta(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RaftMeta::~RaftMeta() {
  Status s = impl_->close();
  if (!s.ok()) spdlog::warn("raftmeta {}: close: {}", impl_->path(), s.to_string());
}

int64_t RaftMeta::Impl::now_ns() const {
  return system_clock().monotonic_ns();
}

Result<FileLock> lock_store_dir(FileSystem& fs, const std::string& dir) {
  if (&fs != &posix_fs()) return FileLock();
  return FileLock::acquire(path_join(dir, "LOCK"), fmt::format("raftmeta store {}", dir));
}

Result<std::unique_ptr<RaftMeta>> RaftMeta::open(FileSystem& fs, const std::string& dir,
                                                 const Options& options) {
  auto ctx = [&](Error e) { return std::move(e).with_context("raftmeta open " + dir); };
  if (Status s = validate(options.store.bounds); !s.ok()) return ctx(std::move(s).error());
  if (options.store.capacity == 0) {
    return ctx(Error(Errc::invalid_argument, "capacity must be at least 1"));
  }
  if (options.group_commit_window.count() < 0) {
    return ctx(Error(Errc::invalid_argument, "group_commit_window must not be negative"));
  }
  if (options.applied_sync_interval.count() <= 0) {
    return ctx(Error(Errc::invalid_argument, "applied_sync_interval must be positive"));
  }
  if (Status s = create_dirs(fs, dir); !s.ok()) return ctx(std::move(s).error());
  auto lock = lock_store_dir(fs, dir);
  if (!lock.ok()) return std::move(lock).error();
  MigrationReport rep;
  if (options.migrate_dets) {
    auto r = migrate_dets(fs, dets_path(dir), dir, options.store, options.migration_progress);
    if (!r.ok()) return std::move(r).error();  // names the DETS file already
    rep = std::move(r).value();
  }
  std::unique_ptr<RaftMeta> m(new RaftMeta(std::make_unique<Impl>(fs, dir, options)));
  m->impl_->hold_dir_lock(std::move(lock).value());
  if (Status s = m->impl_->load(rep); !s.ok()) return ctx(std::move(s).error());
  return m;
}

Status RaftMeta::Impl::load(const MigrationReport& migration) {
  migration_ = migration;
  slotstore::Options so;
  so.slots = opt_.store.capacity;
  so.strings = opt_.store.node_names;
  so.wal_bytes = opt_.store.wal_bytes;
  so.compaction_buffer_bytes = opt_.store.compaction_buffer_bytes;
  so.background_compaction = opt_.background_compaction;
  so.create_if_missing = false;
  // dir_lock_ guards every file in the directory; no second lock file.
  so.lock = false;
  std::shared_ptr<Gate> gate = gate_;
  so.compaction_hook = [gate](slotstore::CompactionPoint p) -> Status {
    if (gate->user_hook) STRATA_TRY(gate->user_hook(p));
    if (p != slotstore::CompactionPoint::finished &&
        system_clock().monotonic_ns() >= gate->abort_after_ns.load()) {
      return Error(Errc::cancelled,
                   "compaction abandoned: the store is closing and the shutdown budget passed "
                   "(the WAL half is compacted at the next open)");
    }
    return Status::OK();
  };
  auto opened = slotstore::SlotStore::open_existing(fs_, path_, so);
  if (!opened.ok() && opened.code() == Errc::not_found) {
    so.create_if_missing = true;
    opened = slotstore::SlotStore::open(fs_, path_, make_schema(opt_.store.bounds), so);
  }
  if (!opened.ok()) return std::move(opened).error();
  store_ = std::move(opened).value();
  STRATA_ASSIGN_OR_RETURN(bounds_, bounds_of(store_->schema(), path_));
  const slotstore::Info info = store_->info();

  std::vector<std::pair<Bytes, ServerMeta>> servers;
  servers.reserve(info.slots_used);
  std::unordered_set<std::string> nodes;
  Status bad;
  STRATA_TRY(store_->fold([&](BytesView id, const slotstore::Record& rec) {
    auto m = decode_record(rec, id, path_);
    if (!m.ok()) {
      bad = std::move(m).error();
      return false;
    }
    if (m->voted_for.form == VotedFor::Form::server_id) nodes.insert(m->voted_for.node);
    servers.emplace_back(Bytes(id), std::move(m).value());
    return true;
  }));
  STRATA_TRY(std::move(bad));
  // Strings interned in the file that no server refers to still take room
  // (slotstore never frees strings); only those referenced are known here.
  const uint32_t unreferenced =
      info.strings_used - std::min<uint32_t>(info.strings_used, uint32_t(nodes.size()));
  node_limit_ = info.strings_total - std::min(info.strings_total, unreferenced);
  table_ = std::make_unique<ServerTable>(info.slots_total, bounds_, info.strings_total);
  for (const auto& [id, m] : servers) {
    if (m.voted_for.form == VotedFor::Form::server_id) {
      STRATA_ASSERT(table_->intern_node(m.voted_for.node), "raftmeta load: node table full");
    }
    auto e = table_->insert(id);
    STRATA_ASSERT(e.has_value(), "raftmeta load: more servers than slots");
    table_->set(*e, m);
  }
  dirty_mask_.assign(info.slots_total, 0);
  spdlog::info("raftmeta {}: {} servers (capacity {}), {} node names (limit {})", path_,
               servers.size(), info.slots_total, nodes.size(), node_limit_);
  writer_ = std::thread([this] { writer_main(); });
  return Status::OK();
}

Status RaftMeta::Impl::usable_locked() const {
  if (fatal_) return *fatal_;
  if (stopping_) return Error(Errc::closed, path_ + ": raftmeta is closed");
  return Status::OK();
}

void RaftMeta::Impl::wake_writer() {
  // While holding a synced batch, only enough sync callers end the hold
  // (or its deadline); asynchronous stores join the batch anyway.
  if (writer_idle_ && !holding_) work_cv_.notify_one();
}

void RaftMeta::Impl::mark_dirty(uint32_t e, FieldMask mask) {
  if (dirty_mask_[e] == 0) dirty_.push_back(e);
  dirty_mask_[e] |= mask;
}

void RaftMeta::Impl::request_sync_locked(uint64_t seq, bool new_caller) {
  want_sync_seq_ = std::max(want_sync_seq_, seq);
  if (new_caller) ++sync_arrivals_;
  if (writer_idle_ && (!holding_ || sync_arrivals_ >= group_commit_.expected())) {
    work_cv_.notify_one();
  }
}

void RaftMeta::Impl::answer_later_locked(uint64_t* seq) {
  *seq = seq_;
  // A caller waits for it, elsewhere (the binding's reply thread, which
  // asks once per round for all of its callers): counted here, so that
  // group commit holds a synced batch for as many callers as the last one
  // released, as for callers of store_sync.
  if (durable_seq_ < seq_) request_sync_locked(seq_);
}

Status RaftMeta::Impl::wait_durable(std::unique_lock<std::mutex>& l, uint64_t seq) {
  if (durable_seq_ >= seq) return Status::OK();
  if (fatal_) return *fatal_;
  const uint64_t failures_before = failures_;
  request_sync_locked(seq);
  done_cv_.wait(l, [&] {
    return durable_seq_ >= seq || fatal_ || (failures_ != failures_before && failed_seq_ >= seq);
  });
  if (durable_seq_ >= seq) return Status::OK();
  if (fatal_) return *fatal_;
  return failure_;
}

Status RaftMeta::Impl::change(BytesView id, Field f, const FieldValue& v, bool sync,
                              uint64_t* seq) {
  STRATA_TRY(check_id(bounds_, id));
  STRATA_TRY(check_value(bounds_, id, f, v));
  std::unique_lock<std::mutex> l(mu_);
  STRATA_TRY(usable_locked());
  std::optional<uint32_t> e = table_->find(id);
  if (e && f == Field::last_applied) {
    // The hot path (every applied entry): one counter, nothing else copied.
    const uint64_t applied = std::get<uint64_t>(v);
    if (table_->meta(*e).last_applied != applied) {
      table_->set_last_applied(*e, applied);
      mark_dirty(*e, kAppliedBit);
      ++seq_;
      ++changes_;
      wake_writer();
    }
    if (seq) answer_later_locked(seq);
    if (!sync) return Status::OK();
    return wait_durable(l, seq_);
  }
  const ServerMeta cur = e ? table_->meta(*e) : ServerMeta{};
  ServerMeta next = apply_store(cur, f, v);
  const VotedFor& vote = next.voted_for;
  if (vote.form == VotedFor::Form::server_id && !table_->has_node(vote.node)) {
    if (table_->nodes() >= node_limit_ || !table_->intern_node(vote.node)) {
      ++capacity_errors_;
      Error err(Errc::string_table_full,
                fmt::format("{}: server {}: cannot store vote node '{}': all {} node names are "
                            "in use (node names are never freed; raise node_names and migrate "
                            "the store to grow it)",
                            path_, describe_id(id), vote.node, node_limit_));
      spdlog::warn("raftmeta {}", err.to_string());
      return err;
    }
  }
  uint8_t mask = diff(cur, next);
  if (!e) {
    e = table_->insert(id);
    if (!e) {
      ++capacity_errors_;
      Error err(Errc::store_full,
                fmt::format("{}: cannot add server {}: all {} server slots are in use (raise "
                            "capacity and migrate the store to grow it)",
                            path_, describe_id(id), table_->capacity()));
      spdlog::warn("raftmeta {}", err.to_string());
      return err;
    }
    mask |= kCreate;
  }
  if (mask != 0) {
    table_->set(*e, next);
    mark_dirty(*e, mask);
    ++seq_;
    ++changes_;
    wake_writer();
  }
  if (seq) answer_later_locked(seq);
  if (!sync) return Status::OK();
  return wait_durable(l, seq_);
}

Status RaftMeta::Impl::remove(BytesView id, bool sync, uint64_t* seq) {
  STRATA_TRY(check_id(bounds_, id));
  std::unique_lock<std::mutex> l(mu_);
  STRATA_TRY(usable_locked());
  std::optional<uint32_t> e = table_->find(id);
  if (e) {
    // Bounded: at most `capacity` erases wait for the writer (backpressure).
    if (erased_.size() >= table_->capacity()) {
      wake_writer();
      done_cv_.wait(l, [&] { return erased_.size() < table_->capacity() || fatal_ || stopping_; });
      STRATA_TRY(usable_locked());
      e = table_->find(id);
    }
  }
  if (e) {
    table_->remove(*e);
    dirty_mask_[*e] = 0;  // its entry may stay listed in dirty_; skipped
    erased_.emplace_back(id);
    ++seq_;
    ++changes_;
    wake_writer();
  }
  if (seq) answer_later_locked(seq);
  if (!sync) return Status::OK();
  return wait_durable(l, seq_);
}

Status RaftMeta::Impl::sync() {
  std::unique_lock<std::mutex> l(mu_);
  STRATA_TRY(usable_locked());
  return wait_durable(l, seq_);
}

Status RaftMeta::Impl::await_progress(uint64_t want, DurableProgress* p,
                                      std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(mu_);
  const auto moved = [&] { return durable_seq_ > p->durable_seq || failures_ != p->failures; };
  if (want > p->durable_seq && !moved() && !fatal_ && !stopping_) {
    // Its callers were counted when their changes were stored (with a
    // seq): counting this wait too made a lone caller's batch wait for it
    // (a hold on every call).
    request_sync_locked(want, false);
    const auto done = [&] { return moved() || fatal_ || stopping_; };
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      done_cv_.wait(l, done);
    } else {
      // The writer never holds mu_ across a write or an fsync: this wait
      // ends at the deadline whatever the disk does.
      (void)done_cv_.wait_until(l, deadline, done);
    }
  }
  const bool progressed = moved();
  p->durable_seq = std::max(p->durable_seq, durable_seq_);
  if (failures_ != p->failures) {
    p->failures = failures_;
    p->failed_seq = failed_seq_;
    p->failure = failure_;
  }
  if (fatal_) return *fatal_;
  // Closing meanwhile (the binding stops its waiter before closing): what
  // the writer made durable is reported above, the rest is `closed`.
  if (!progressed && stopping_) return usable_locked();
  return Status::OK();
}

std::optional<FieldValue> RaftMeta::Impl::fetch(BytesView id, Field f) const {
  std::optional<ServerMeta> m = table_->read(id, f == Field::voted_for);
  if (!m) return std::nullopt;
  return m->get(f);
}

std::optional<ServerMeta> RaftMeta::Impl::fetch_all(BytesView id) const {
  return table_->read(id, true);
}

std::vector<std::pair<Bytes, ServerMeta>> RaftMeta::Impl::list() const {
  std::vector<std::pair<Bytes, ServerMeta>> out;
  table_->for_each([&](BytesView id, const ServerMeta& m) { out.emplace_back(Bytes(id), m); });
  return out;
}

Status RaftMeta::Impl::close() {
  std::lock_guard<std::mutex> cl(close_mu_);
  if (closed_) return close_status_;
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    work_cv_.notify_all();
    done_cv_.notify_all();
  }
  if (writer_.joinable()) writer_.join();
  Status st;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (fatal_) st = *fatal_;
  }
  if (store_) {
    // Everything is fsynced now; a compaction still running may finish
    // within the budget, after which it is aborted at its next step.
    gate_->abort_after_ns =
        now_ns() + std::chrono::nanoseconds(opt_.shutdown_compaction_budget).count();
    Status cs = store_->close();
    if (st.ok() && !cs.ok()) st = cs;
  }
  dir_lock_.release();
  closed_ = true;
  close_status_ = st;
  return st;
}

Stats RaftMeta::Impl::stats() const {
  Stats s;
  {
    std::lock_guard<std::mutex> l(mu_);
    s.servers = table_->size();
    s.capacity = table_->capacity();
    s.node_names = table_->nodes();
    s.node_capacity = node_limit_;
    s.bounds = bounds_;
    s.changes = changes_;
    s.batches = batches_;
    s.ops_written = ops_written_;
    s.largest_batch = largest_batch_;
    s.synced_batches = synced_batches_;
    s.periodic_syncs = periodic_syncs_;
    s.group_commit_holds = group_commit_holds_;
    s.failed_batches = failures_;
    s.capacity_errors = capacity_errors_;
    s.migration = migration_;
  }
  s.store = store_->info();
  return s;
}

// ---- the public face: every call goes to Impl ----

Status RaftMeta::store(BytesView id, Field f, const FieldValue& v) {
  return impl_->store(id, f, v);
}
Status RaftMeta::store_sync(BytesView id, Field f, const FieldValue& v) {
  return impl_->store_sync(id, f, v);
}
Status RaftMeta::erase(BytesView id) {
  return impl_->erase(id);
}
Status RaftMeta::erase_sync(BytesView id) {
  return impl_->erase_sync(id);
}
Status RaftMeta::sync() {
  return impl_->sync();
}
Status RaftMeta::store(BytesView id, Field f, const FieldValue& v, uint64_t* seq) {
  return impl_->store(id, f, v, seq);
}
Status RaftMeta::erase(BytesView id, uint64_t* seq) {
  return impl_->erase(id, seq);
}
Status RaftMeta::await_progress(uint64_t want, DurableProgress* p,
                                std::chrono::steady_clock::time_point deadline) {
  return impl_->await_progress(want, p, deadline);
}
std::optional<FieldValue> RaftMeta::fetch(BytesView id, Field f) const {
  return impl_->fetch(id, f);
}
FieldValue RaftMeta::fetch(BytesView id, Field f, const FieldValue& default_value) const {
  std::optional<FieldValue> v = impl_->fetch(id, f);
  return v ? *v : default_value;
}
std::optional<ServerMeta> RaftMeta::fetch_all(BytesView id) const {
  return impl_->fetch_all(id);
}
std::optional<VoteRead> RaftMeta::fetch_vote(BytesView id, char* name_buf) const {
  return impl_->fetch_vote(id, name_buf);
}
std::string_view RaftMeta::node_name(uint32_t node) const {
  return impl_->node_name(node);
}
std::vector<std::pair<Bytes, ServerMeta>> RaftMeta::list() const {
  return impl_->list();
}
Status RaftMeta::close() {
  return impl_->close();
}
Stats RaftMeta::stats() const {
  return impl_->stats();
}
const std::string& RaftMeta::path() const {
  return impl_->path();
}

}  // namespace strata::raftmeta
