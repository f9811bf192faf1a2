// Deterministic simulation of the uploader core against a model world: a
// growing log, an object store, a catalog with compare-and-set, a manifest
// cache fed by broadcasts, waiters, and a shell that runs every effect as a
// task which ends in success, failure or deadline, in random order.
//
// Invariants checked after every step:
//  - the catalog's manifest is a contiguous run of fragments (no gap, no
//    overlap), every object it references exists and matches, and each new
//    revision keeps the previous one's fragments (minus a retention prefix)
//    and only adds after them: it is the applied prefix of cut order;
//  - nothing is visible before it is persisted: broadcasts replay to the
//    catalog's manifest at their revision, the local-retention boundary and
//    waiter replies never pass the catalog's next offset;
//  - no object referenced by the catalog's manifest is ever deleted;
//  - the core's own consistency checks hold.
// Then failures stop and the run must reach quiescence with everything cut
// persisted (liveness).
//
// Seeds: each shard runs test::scaled(N) seeds and prints its range; a
// failure prints its seed; STRATA_TEST_SEED=<seed> replays exactly one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "support/temp_dir.h"
#include "tier/fragment_assembly.h"
#include "tier/fragment_iterator.h"
#include "tier/manifest_codec.h"
#include "tier/manifest_retention.h"
#include "tier/uploader_core.h"

namespace strata::tier {
namespace {

using namespace upload;

#define SIM_CHECK(cond, ...)                                             \
  do {                                                                   \
    if (!(cond)) return Error(Errc::internal, fmt::format(__VA_ARGS__)); \
  } while (0)

struct SimStats {
  uint64_t seeds = 0, steps = 0, cuts = 0, persists = 0, conflicts = 0, reinits = 0;
  uint64_t groups = 0, retention_removed = 0, deletes = 0, waiter_replies = 0, stale = 0;
  uint64_t fatal = 0, deadlines = 0;
};

class World {
 public:
  explicit World(uint64_t seed) : seed_(seed), rng_(seed) {
    cfg_.stream = "sim";
    cfg_.key_prefix = "p";
    cfg_.epoch = 1 + rng_.uniform(5);
    cfg_.persist_threshold = uint32_t(1 + rng_.uniform(6));
    cfg_.persist_interval_ms = int64_t(200 + rng_.uniform(3000));
    cfg_.rebalance = RebalancePolicy{uint32_t(2 + rng_.uniform(4)), uint32_t(2 + rng_.uniform(2))};
    switch (rng_.uniform(4)) {
      case 0:
        break;
      case 1:
        cfg_.retention.max_bytes = 500 + rng_.uniform(6000);
        break;
      case 2:
        cfg_.retention.max_age_ms = int64_t(2000 + rng_.uniform(30000));
        break;
      default:
        cfg_.retention.max_bytes = 500 + rng_.uniform(6000);
        cfg_.retention.max_age_ms = int64_t(2000 + rng_.uniform(30000));
    }
    cfg_.retention.max_objects_per_plan = uint32_t(3 + rng_.uniform(40));
    cfg_.retention_interval_ms = int64_t(rng_.uniform(2000));
    cfg_.max_unpersisted_fragments = uint32_t(4 + rng_.uniform(60));
    cfg_.max_waiters = 16;
    assembly_cfg_.target_size = 200 + rng_.uniform(2000);
    assembly_cfg_.max_age_ms = int64_t(rng_.uniform(5000));
    steps_ = int(300 + rng_.uniform(500));
    failure_pct_ = uint32_t(rng_.uniform(25));
    keys_ = *ObjectKeys::make(cfg_.key_prefix, cfg_.stream);
  }

  Status run(SimStats& stats) {
    STRATA_TRY(start_core(Manifest::empty_at(0), 0, ""));
    for (int i = 0; i < steps_; ++i) {
      STRATA_TRY(step());
      stats.steps += 1;
    }
    failures_ = false;
    STRATA_TRY(settle());
    stats.seeds += 1;
    stats.cuts += cuts_;
    stats.persists += persists_;
    stats.conflicts += conflicts_;
    stats.reinits += incarnation_ - 1;
    stats.groups += groups_;
    stats.retention_removed += retention_removed_;
    stats.deletes += deletes_;
    stats.waiter_replies += waiter_replies_;
    stats.stale += stale_;
    stats.fatal += fatal_;
    stats.deadlines += deadlines_;
    return Status::OK();
  }

 private:
  struct Object {
    ObjectType type = ObjectType::fragment;
    FragmentMeta meta;
    std::shared_ptr<const ManifestGroup> group;
    Bytes root;
  };
  using Op = std::variant<SubmitTransfer, UploadGroup, StartPersist, EvaluateRetention>;
  struct Task {
    Op op;
    uint64_t incarnation = 0;
    int64_t ready_at = 0;
  };

  // ---- the log ----

  const log::CommittedChunk& chunk(size_t i) {
    while (log_.size() <= i) {
      log::ChunkHeader h;
      h.first_offset = log_.empty() ? 0 : log_.back().header.next_offset();
      h.num_records = uint32_t(1 + rng_.uniform(4));
      h.num_entries = uint16_t(h.num_records);
      h.timestamp_ms = now_;
      h.epoch = cfg_.epoch;
      h.data_len = uint32_t(rng_.uniform(400));
      if (log_.empty() || rng_.chance(1, 8)) {
        segment_ = h.first_offset;
        position_ = 8;
      }
      log_.push_back(log::CommittedChunk{h, segment_, position_, h.total_size()});
      position_ += h.total_size();
    }
    return log_[i];
  }

  // ---- the core ----

  Status start_core(const Manifest& m, uint64_t revision, const std::string& root_key) {
    UploaderConfig c = cfg_;
    c.random_seed = rng_.next();
    auto core = UploaderCore::create(c, m, revision, root_key);
    SIM_CHECK(core.ok(), "create core: {}", core.ok() ? "" : core.error().to_string());
    core_.emplace(std::move(*core));
    incarnation_ += 1;
    assembly_.emplace(assembly_cfg_, m.next_offset);
    held_.reset();
    timer_.reset();
    feed_ = 0;
    while (feed_ < log_.size() && log_[feed_].header.first_offset < m.next_offset) ++feed_;
    SIM_CHECK(feed_ == log_.size() || log_[feed_].header.first_offset == m.next_offset,
              "manifest next offset {} is not a chunk boundary", m.next_offset);
    delivered_.clear();
    return Status::OK();
  }

  Status deliver(const Event& e) {
    auto r = core_->on(e, now_);
    SIM_CHECK(r.ok(), "core refused {}: {}", event_name(e), r.ok() ? "" : r.error().to_string());
    if (core_->running()) {
      Status inv = core_->check_invariants();
      SIM_CHECK(inv.ok(), "core invariants after {}: {}", event_name(e), inv.to_string());
    }
    if (std::holds_alternative<TransferComplete>(e) || std::holds_alternative<TransferFailed>(e) ||
        std::holds_alternative<PersistComplete>(e) ||
        std::holds_alternative<GroupUploadComplete>(e) ||
        std::holds_alternative<OperationDeadline>(e)) {
      if (delivered_.size() < 64) delivered_.push_back(e);
    }
    return execute(std::move(*r));
  }

  Status offer_cut() {
    if (!held_ || !core_->accepts_cuts()) return Status::OK();
    FragmentPlan p = std::move(*held_);
    held_.reset();
    cuts_ += 1;
    return deliver(FragmentCut{p.meta});
  }

  Status feed(int chunks) {
    for (int i = 0; i < chunks && !held_; ++i) {
      auto r = assembly_->add(chunk(feed_), now_);
      SIM_CHECK(r.ok(), "assembly: {}", r.ok() ? "" : r.error().to_string());
      feed_ += 1;
      if (r->has_value()) {
        held_ = std::move(**r);
        STRATA_TRY(offer_cut());
      }
    }
    return Status::OK();
  }

  // ---- effects ----

  Status execute(Effects fx) {
    bool reinit = false;
    for (Effect& e : fx) {
      if (auto* s = std::get_if<SubmitTransfer>(&e)) {
        tasks_.push_back(Task{*s, incarnation_, now_ + s->delay_ms});
      } else if (auto* g = std::get_if<UploadGroup>(&e)) {
        tasks_.push_back(Task{*g, incarnation_, now_});
      } else if (auto* p = std::get_if<StartPersist>(&e)) {
        SIM_CHECK(p->expected_revision <= cat_rev_, "persist expects future revision {}",
                  p->expected_revision);
        tasks_.push_back(Task{*p, incarnation_, now_});
      } else if (auto* r = std::get_if<EvaluateRetention>(&e)) {
        tasks_.push_back(Task{*r, incarnation_, now_});
      } else if (auto* b = std::get_if<Broadcast>(&e)) {
        STRATA_TRY(on_broadcast(b->batch));
      } else if (auto* d = std::get_if<DeleteObjects>(&e)) {
        for (const std::string& k : d->keys) {
          SIM_CHECK(k != cat_root_key_ && cat_referenced_.count(k) == 0,
                    "deleting {} which the catalog manifest (revision {}) references", k, cat_rev_);
          store_.erase(k);
          deletes_ += 1;
        }
      } else if (auto* u = std::get_if<UpdateLocalRetention>(&e)) {
        SIM_CHECK(u->revision <= cat_rev_ && history_.count(u->revision),
                  "local retention boundary for uncommitted revision {}", u->revision);
        const Manifest& at = *history_[u->revision];
        SIM_CHECK(u->next_offset == at.next_offset && u->first_offset == at.first_offset,
                  "local retention range [{}, {}) is not revision {}'s [{}, {})", u->first_offset,
                  u->next_offset, u->revision, at.first_offset, at.next_offset);
        SIM_CHECK(u->next_offset <= cat_->next_offset, "boundary past the catalog");
        // Local retention may delete below the boundary at once: the
        // readers' manifest must already hold what it deletes.
        SIM_CHECK(cache_valid_ && cache_.next_offset >= u->next_offset,
                  "local retention boundary {} ahead of the readers' manifest (next {})",
                  u->next_offset, cache_valid_ ? cache_.next_offset : 0);
        boundary_ = std::max(boundary_, u->next_offset);
      } else if (auto* w = std::get_if<ReplyWaiters>(&e)) {
        for (uint64_t id : w->waiters) {
          auto it = waiting_.find(id);
          SIM_CHECK(it != waiting_.end(), "reply to unknown waiter {}", id);
          if (w->status.ok()) {
            SIM_CHECK(it->second < cat_->next_offset,
                      "waiter for offset {} released at catalog next {}", it->second,
                      cat_->next_offset);
            waiter_replies_ += 1;
          }
          waiting_.erase(it);
        }
      } else if (auto* t = std::get_if<SetTimer>(&e)) {
        timer_ = t->at_ms;
      } else if (std::holds_alternative<CancelTimer>(e)) {
        timer_.reset();
      } else if (auto* rep = std::get_if<Report>(&e)) {
        return Error(Errc::internal, "core reported: " + rep->error.to_string());
      } else if (std::holds_alternative<Reinitialize>(e)) {
        reinit = true;
      } else if (auto* st = std::get_if<Stop>(&e)) {
        return Error(Errc::internal, "core stopped but the stream exists: " + st->reason);
      }
    }
    if (reinit) {
      conflicts_ += 1;
      // The shell re-reads the catalog; tasks of the old core still run but
      // their results go nowhere. Waiters must ask again.
      waiting_.clear();
      cache_valid_ = false;
      return start_core(*cat_, cat_rev_, cat_root_key_);
    }
    return Status::OK();
  }

  Status on_broadcast(const EditBatch& b) {
    SIM_CHECK(history_.count(b.revision) && b.revision <= cat_rev_,
              "broadcast of uncommitted revision {}", b.revision);
    if (cache_valid_ && b.prev_revision == cache_rev_) {
      for (const ManifestEdit& e : b.edits) {
        Status s = apply_edit(cache_, e);
        SIM_CHECK(s.ok(), "broadcast edit does not apply: {}", s.to_string());
      }
      SIM_CHECK(cache_ == *history_[b.revision],
                "manifest cache after broadcast {} differs from the persisted manifest",
                b.revision);
    } else {
      cache_ = *history_[b.revision];  // a gap: the cache resyncs
    }
    cache_rev_ = b.revision;
    cache_valid_ = true;
    return Status::OK();
  }

  // ---- the store and catalog ----

  GroupFetch fetch(bool may_fail) {
    return
        [this, may_fail](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
          if (may_fail && failures_ && rng_.chance(failure_pct_, 300)) {
            return Error(Errc::transient, "injected 503");
          }
          auto it = store_.find(keys_.for_entry(e));
          if (it == store_.end() || it->second.type != ObjectType::group) {
            return Error(Errc::not_found, "no group " + keys_.for_entry(e));
          }
          fetched_.insert(it->first);
          return it->second.group;
        };
  }

  // Checks a committed manifest and records what it references.
  Status on_commit(uint64_t revision) {
    auto it = store_.find(cat_root_key_);
    SIM_CHECK(it != store_.end(), "catalog root {} missing", cat_root_key_);
    auto root = decode_root(it->second.root, cat_root_key_);
    SIM_CHECK(root.ok(), "root: {}", root.ok() ? "" : root.error().to_string());
    auto m = std::make_shared<const Manifest>(std::move(root->manifest));
    fetched_.clear();
    auto refs = all_fragments(m, fetch(false));
    SIM_CHECK(refs.ok(), "walking revision {}: {}", revision,
              refs.ok() ? "" : refs.error().to_string());
    std::set<std::string> referenced = fetched_;
    uint64_t expect = m->first_offset, bytes = 0;
    for (const FragmentRef& r : *refs) {
      SIM_CHECK(r.offset == expect, "revision {}: fragment at {} after {} (gap or overlap)",
                revision, r.offset, expect);
      std::string k = keys_.fragment(r.offset, r.epoch, r.uid);
      auto f = store_.find(k);
      SIM_CHECK(f != store_.end() && f->second.type == ObjectType::fragment,
                "revision {} references missing fragment {}", revision, k);
      SIM_CHECK(f->second.meta.next_offset == r.next_offset && f->second.meta.size == r.size,
                "fragment {} does not match its entry", k);
      referenced.insert(k);
      expect = r.next_offset;
      bytes += r.size;
    }
    SIM_CHECK(expect == m->next_offset && bytes == m->total_size,
              "revision {}: fragments end at {} with {} bytes, manifest says {} / {}", revision,
              expect, bytes, m->next_offset, m->total_size);
    // The applied prefix of cut order: the old fragments at or above the new
    // first offset are the new manifest's first fragments, unchanged.
    SIM_CHECK(m->next_offset >= cat_->next_offset && m->first_offset >= cat_->first_offset,
              "revision {} moved backwards", revision);
    size_t j = 0;
    for (const FragmentRef& old : cat_refs_) {
      if (old.offset < m->first_offset) continue;
      SIM_CHECK(j < refs->size() && (*refs)[j] == old,
                "revision {} changed fragment at {} of the previous revision", revision,
                old.offset);
      ++j;
    }
    cat_ = m;
    cat_refs_ = std::move(*refs);
    cat_referenced_ = std::move(referenced);
    history_[revision] = m;
    return Status::OK();
  }

  enum class Outcome { success, transient, fatal, deadline, deadline_after };

  Outcome outcome(bool fatal_possible) {
    if (!failures_) return Outcome::success;
    uint64_t r = rng_.uniform(100);
    if (r < failure_pct_ / 2) return Outcome::transient;
    if (r < failure_pct_ * 3 / 4) return Outcome::deadline;
    if (r < failure_pct_) return fatal_possible ? Outcome::fatal : Outcome::deadline_after;
    return Outcome::success;
  }

  // Runs task i to its end and reports its result to the core (if the core
  // that started it is still the current one).
  Status run_task(size_t i) {
    Task t = std::move(tasks_[i]);
    tasks_.erase(tasks_.begin() + i);
    bool current = t.incarnation == incarnation_;
    if (auto* s = std::get_if<SubmitTransfer>(&t.op)) {
      Outcome o = outcome(true);
      if (o == Outcome::success || (o == Outcome::deadline && rng_.chance(1, 2))) {
        store_[s->key] = Object{ObjectType::fragment, s->meta, nullptr, {}};
      }
      if (!current) return Status::OK();
      switch (o) {
        case Outcome::success:
          return deliver(TransferComplete{s->ref, s->token});
        case Outcome::transient:
          return deliver(
              TransferFailed{s->ref, s->token, TransferFailure::http(503, "SlowDown", s->key)});
        case Outcome::fatal:
          fatal_ += 1;
          return deliver(
              TransferFailed{s->ref, s->token, TransferFailure::http(403, "AccessDenied", s->key)});
        default:
          deadlines_ += 1;
          return deliver(TransferDeadline{s->ref, s->token});
      }
    }
    if (auto* g = std::get_if<UploadGroup>(&t.op)) {
      Outcome o = outcome(true);
      if (o == Outcome::success || o == Outcome::deadline) {
        store_[g->key] = Object{ObjectType::group, {}, g->group, {}};
      }
      if (!current) return Status::OK();
      switch (o) {
        case Outcome::success:
          groups_ += 1;
          return deliver(GroupUploadComplete{g->token});
        case Outcome::transient:
          return deliver(
              GroupUploadFailed{g->token, TransferFailure::http(500, "InternalError", g->key)});
        case Outcome::fatal:
          return deliver(GroupUploadFailed{g->token, TransferFailure::http(403, "", g->key)});
        default:
          return deliver(OperationDeadline{g->token});
      }
    }
    if (auto* p = std::get_if<StartPersist>(&t.op)) {
      Outcome o = outcome(false);
      if (o == Outcome::transient) {
        return current ? deliver(PersistFailed{p->token, PersistError::transient, "503"})
                       : Status::OK();
      }
      if (o == Outcome::deadline)
        return current ? deliver(OperationDeadline{p->token}) : Status::OK();
      // PUT the root under its new key, then compare-and-set.
      SIM_CHECK(store_.count(p->root_key) == 0 || p->root_key != cat_root_key_,
                "persist would overwrite the live root {}", p->root_key);
      store_[p->root_key] =
          Object{ObjectType::root, {}, nullptr, encode_root(*p->manifest, p->epoch)};
      if (p->expected_revision != cat_rev_) {
        return current ? deliver(PersistFailed{p->token, PersistError::conflict,
                                               fmt::format("catalog at {}", cat_rev_)})
                       : Status::OK();
      }
      cat_rev_ += 1;
      cat_root_key_ = p->root_key;
      STRATA_TRY(on_commit(cat_rev_));
      persists_ += 1;
      if (!current) return Status::OK();
      if (o == Outcome::deadline_after) return deliver(OperationDeadline{p->token});
      return deliver(PersistComplete{p->token, cat_rev_});
    }
    auto& r = std::get<EvaluateRetention>(t.op);
    Outcome o = outcome(false);
    if (!current) return Status::OK();
    if (o == Outcome::deadline || o == Outcome::deadline_after) {
      return deliver(OperationDeadline{r.token});
    }
    auto plan = plan_retention(*r.manifest, r.spec, r.now_ms, fetch(true));
    if (!plan.ok() || o == Outcome::transient) {
      return deliver(RetentionFailed{r.token, plan.ok() ? "injected" : plan.error().to_string()});
    }
    retention_removed_ += plan->fragments_removed;
    return deliver(RetentionComplete{r.token, *plan});
  }

  std::vector<size_t> ready_tasks() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (tasks_[i].ready_at <= now_) out.push_back(i);
    }
    return out;
  }

  Status advance(int64_t dt) {
    now_ += dt;
    if (auto p = assembly_->tick(now_)) {
      SIM_CHECK(!held_, "assembly cut while a cut is held");
      held_ = std::move(*p);
      STRATA_TRY(offer_cut());
    }
    if (timer_ && *timer_ <= now_) {
      timer_.reset();
      STRATA_TRY(deliver(Tick{}));
    }
    return Status::OK();
  }

  Status step() {
    STRATA_TRY(offer_cut());
    uint64_t r = rng_.uniform(100);
    if (r < 30) return feed(int(1 + rng_.uniform(3)));
    if (r < 65) {
      auto ready = ready_tasks();
      if (ready.empty()) return advance(int64_t(rng_.uniform(50)));
      return run_task(ready[rng_.uniform(ready.size())]);
    }
    if (r < 80) return advance(int64_t(rng_.uniform(2500)));
    if (r < 85) {
      if (waiting_.size() >= 16) return Status::OK();
      uint64_t id = next_waiter_++;
      uint64_t off = rng_.uniform(core_->next_cut_offset() + 5);
      waiting_[id] = off;
      return deliver(AwaitOffset{off, id});
    }
    if (r < 88) return deliver(RetentionRequested{});
    if (r < 90) {
      // Someone else touched the catalog entry (same content, new revision):
      // our next persist conflicts.
      if (!failures_ || cat_rev_ == 0 || !rng_.chance(1, 3)) return Status::OK();
      cat_rev_ += 1;
      history_[cat_rev_] = cat_;
      return Status::OK();
    }
    if (r < 95) {
      // A duplicate or late result: must be ignored, never an error.
      if (delivered_.empty()) return Status::OK();
      stale_ += 1;
      return deliver(delivered_[rng_.uniform(delivered_.size())]);
    }
    return deliver(Tick{});
  }

  bool quiet() const {
    return tasks_.empty() && !held_ && feed_ == log_.size() && assembly_->empty() &&
           core_->slots() == 0 && core_->pending_edits() == 0 &&
           core_->in_flight() == UploaderCore::Op::none;
  }

  // Failures have stopped: everything in the log must reach the catalog,
  // with no operation left hanging.
  Status settle() {
    uint64_t target = log_.empty() ? 0 : log_.back().header.next_offset();
    for (int i = 0; i < 200'000 && !quiet(); ++i) {
      STRATA_TRY(offer_cut());
      if (!held_ && feed_ < log_.size()) {
        STRATA_TRY(feed(1));
        continue;
      }
      if (!held_ && feed_ == log_.size() && !assembly_->empty()) {
        held_ = assembly_->cut();
        continue;
      }
      auto ready = ready_tasks();
      if (!ready.empty()) {
        STRATA_TRY(run_task(ready[rng_.uniform(ready.size())]));
        continue;
      }
      // Nothing ready: jump to the next moment something is due.
      std::optional<int64_t> next = timer_;
      for (const Task& t : tasks_) next = next ? std::min(*next, t.ready_at) : t.ready_at;
      SIM_CHECK(next.has_value(),
                "liveness: stuck with no task and no timer (slots {}, edits {}, op {}, held {})",
                core_->slots(), core_->pending_edits(), int(core_->in_flight()), held_.has_value());
      STRATA_TRY(advance(std::max<int64_t>(*next - now_, 0)));
    }
    SIM_CHECK(quiet(), "liveness: did not settle (tasks {}, slots {}, edits {})", tasks_.size(),
              core_->slots(), core_->pending_edits());
    SIM_CHECK(cat_->next_offset == target, "liveness: catalog ends at {}, the log at {}",
              cat_->next_offset, target);
    SIM_CHECK(core_->persisted_manifest()->next_offset == target, "core behind the catalog");
    for (auto& [id, off] : waiting_) {
      SIM_CHECK(off >= target, "waiter {} for persisted offset {} never replied", id, off);
    }
    SIM_CHECK(boundary_ <= target, "local boundary {} past {}", boundary_, target);
    return Status::OK();
  }

  uint64_t seed_;
  Random rng_;
  UploaderConfig cfg_;
  AssemblyConfig assembly_cfg_;
  ObjectKeys keys_ = *ObjectKeys::make("p", "sim");
  int steps_ = 0;
  uint32_t failure_pct_ = 0;
  bool failures_ = true;
  int64_t now_ = 0;

  std::vector<log::CommittedChunk> log_;
  uint64_t segment_ = 0, position_ = 8;
  size_t feed_ = 0;
  std::optional<FragmentAssembly> assembly_;
  std::optional<FragmentPlan> held_;
  std::optional<UploaderCore> core_;
  uint64_t incarnation_ = 0;
  std::optional<int64_t> timer_;
  std::vector<Task> tasks_;
  std::vector<Event> delivered_;

  std::map<std::string, Object> store_;
  std::set<std::string> fetched_;
  uint64_t cat_rev_ = 0;
  std::string cat_root_key_;
  std::shared_ptr<const Manifest> cat_ = std::make_shared<Manifest>(Manifest::empty_at(0));
  std::vector<FragmentRef> cat_refs_;
  std::set<std::string> cat_referenced_;
  std::map<uint64_t, std::shared_ptr<const Manifest>> history_ = {{0, cat_}};

  Manifest cache_ = Manifest::empty_at(0);
  uint64_t cache_rev_ = 0;
  bool cache_valid_ = true;
  uint64_t boundary_ = 0;
  std::map<uint64_t, uint64_t> waiting_;
  uint64_t next_waiter_ = 1;

  uint64_t cuts_ = 0, persists_ = 0, conflicts_ = 0, groups_ = 0, retention_removed_ = 0;
  uint64_t deletes_ = 0, waiter_replies_ = 0, stale_ = 0, fatal_ = 0, deadlines_ = 0;
};

void run_shard(int shard, int seeds) {
  const char* pinned = std::getenv("STRATA_TEST_SEED");
  uint64_t base = 1'000'000ull * uint64_t(shard + 1);
  SimStats stats;
  if (pinned) {
    if (shard != 0) GTEST_SKIP() << "STRATA_TEST_SEED runs in shard 0";
    uint64_t seed = ::strata::test::test_seed(0);
    std::cout << "uploader simulation: replaying seed " << seed << "\n";
    Status s = World(seed).run(stats);
    EXPECT_TRUE(s.ok()) << "seed " << seed << ": " << s.to_string();
    return;
  }
  std::cout << "uploader simulation shard " << shard << ": seeds " << base << ".."
            << base + uint64_t(seeds) - 1 << "\n";
  for (int i = 0; i < seeds; ++i) {
    uint64_t seed = base + uint64_t(i);
    Status s = World(seed).run(stats);
    if (!s.ok()) {
      ADD_FAILURE() << "seed " << seed << " failed: " << s.to_string()
                    << "\nreplay: STRATA_TEST_SEED=" << seed
                    << " tier_sim_test --gtest_filter=TierUploaderSim.Shard0";
      return;
    }
  }
  std::cout << fmt::format(
      "  {} seeds, {} steps, {} cuts, {} persists, {} conflicts/reinits, {} groups, {} fragments "
      "dropped by retention, {} deletes, {} waiter replies, {} stale results, {} fatal, {} "
      "deadlines\n",
      stats.seeds, stats.steps, stats.cuts, stats.persists, stats.reinits, stats.groups,
      stats.retention_removed, stats.deletes, stats.waiter_replies, stats.stale, stats.fatal,
      stats.deadlines);
  // The simulation must actually reach the interesting paths.
  if (seeds >= 50) {
    EXPECT_GT(stats.persists, 0u);
    EXPECT_GT(stats.reinits, 0u);
    EXPECT_GT(stats.groups, 0u);
    EXPECT_GT(stats.retention_removed, 0u);
    EXPECT_GT(stats.deletes, 0u);
    EXPECT_GT(stats.waiter_replies, 0u);
    EXPECT_GT(stats.fatal, 0u);
  }
}

}  // namespace

constexpr int kSeedsPerShard = 500;

TEST(TierUploaderSim, Shard0) {
  run_shard(0, ::strata::test::scaled(kSeedsPerShard));
}
TEST(TierUploaderSim, Shard1) {
  run_shard(1, ::strata::test::scaled(kSeedsPerShard));
}
TEST(TierUploaderSim, Shard2) {
  run_shard(2, ::strata::test::scaled(kSeedsPerShard));
}
TEST(TierUploaderSim, Shard3) {
  run_shard(3, ::strata::test::scaled(kSeedsPerShard));
}
TEST(TierUploaderSim, Shard4) {
  run_shard(4, ::strata::test::scaled(kSeedsPerShard));
}
TEST(TierUploaderSim, Shard5) {
  run_shard(5, ::strata::test::scaled(kSeedsPerShard));
}
TEST(TierUploaderSim, Shard6) {
  run_shard(6, ::strata::test::scaled(kSeedsPerShard));
}
TEST(TierUploaderSim, Shard7) {
  run_shard(7, ::strata::test::scaled(kSeedsPerShard));
}

}  // namespace strata::tier
