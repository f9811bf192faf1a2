// Deterministic simulation of the uploader *shell* (tier::Uploader: its
// strands, timers, generations, retries, waiters and close), where
// uploader_sim_test.cpp simulates its core alone. The real shell runs over a
// real log in a temp directory; its event loop, blocking pool and clock are
// a SimExecutor (sim_executor.h) and its object store and catalog are
// in-memory fakes that fail on the seed's say (sim_backends.h). From the
// seed, each step is one of: a queued handler runs, a blocking job runs (any
// of the queued ones: completions reorder), a job is held past its deadline
// (a hang), time moves on (timers fire), the writer appends, a waiter
// registers, the uploader is restarted (closed and started again over the
// same log and catalog, with or without the old pool's queued jobs, with or
// without the node's manifest cache), or another uploader takes the stream
// over while the first still runs (split brain: the first must be fenced).
//
// Invariants, checked after every step (and, for the catalog, at every
// change):
//  - the persisted manifest (catalog + store) covers a contiguous range, and
//    every fragment it references reads back with exactly the log's chunk
//    bytes, chunk by chunk;
//  - each persisted manifest keeps the previous one's fragments (less a
//    retention prefix) and only adds after them: completions are applied in
//    cut order;
//  - no object a persisted manifest references is ever deleted, and no key
//    is ever written twice (every write goes to a new key);
//  - the manifest cache and persisted_next() never run ahead of the catalog;
//  - a waiter ends at most once, and "persisted" only for persisted offsets;
//  - a task ends at most once.
// Then faults stop (and the uploader may be restarted once more): everything
// committed must be persisted within a step bound (nothing hangs), and after
// close every task and every waiter has ended exactly once.
//
// Seeds: each shard runs test::scaled(N) seeds and prints its range; a
// failure prints its seed; STRATA_TEST_SEED=<seed> replays exactly one:
//   STRATA_TEST_SEED=123 ctest --test-dir build -R UploaderShellSim.Shard0
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "common/random.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "support/assertions.h"
#include "support/temp_dir.h"
#include "tier/fragment_iterator.h"
#include "tier/fragment_object.h"
#include "tier/governor.h"
#include "tier/manifest_cache.h"
#include "tier/manifest_codec.h"
#include "tier/object_keys.h"
#include "tier/sim_backends.h"
#include "tier/sim_executor.h"
#include "tier/tiering_hooks.h"
#include "tier/uploader.h"

namespace strata::tier::test {
namespace {

constexpr const char* kStream = "sim";
constexpr const char* kPrefix = "p";

struct ShellSimStats {
  uint64_t seeds = 0, steps = 0, appends = 0, restarts = 0, takeovers = 0, fenced = 0;
  uint64_t tasks = 0, holds = 0, deadlines = 0, cancelled = 0, threw = 0, faults = 0;
  uint64_t revisions = 0, fragments_verified = 0, deletes = 0, waiters = 0, waiters_ok = 0;
  uint64_t settle_steps = 0, settle_reacquired = 0;
  uint64_t reinits = 0, catchups = 0, overflows = 0, local_deleted = 0;
};

Status where(Status s, std::string_view at) {
  if (s.ok()) return s;
  return Error(s.error()).with_context(at);
}

// The log's directory, removed afterwards: on a tmpfs where there is one
// (/dev/shm). The simulation checks the uploader, not the disk, and on a
// disk a seed spends most of its time in the fsyncs of segment seals and of
// the log's close.
class LogDir {
 public:
  LogDir() {
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec)) {
      std::string tmpl = "/dev/shm/strata-sim-XXXXXX";
      if (::mkdtemp(tmpl.data())) path_ = tmpl;
    }
    if (path_.empty()) {
      fallback_.emplace();
      path_ = fallback_->path();
    }
  }
  ~LogDir() {
    std::error_code ec;
    if (!fallback_) std::filesystem::remove_all(path_, ec);
  }
  LogDir(const LogDir&) = delete;
  LogDir& operator=(const LogDir&) = delete;
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  std::optional<strata::test::TempDir> fallback_;
};

// A fragment of a persisted manifest, by its object key.
struct PersistedFragment {
  uint64_t offset = 0, next_offset = 0;
  std::string key;
};

class ShellWorld {
 public:
  explicit ShellWorld(uint64_t seed)
      : seed_(seed),
        rng_(seed),
        fault_rng_(seed ^ 0x5eed5eed5eedull),
        faults_(fault_rng_),
        io_(std::make_unique<asio::io_context>()),
        work_(asio::make_work_guard(*io_)),
        exec_(*io_, clock_),
        lifetime_(std::make_shared<IoLifetime>()),
        store_(std::make_shared<SimStore>(faults_)),
        catalog_(std::make_shared<SimCatalog>(faults_)),
        cache_(std::make_shared<ManifestCache>()),
        keys_(ObjectKeys::make(kPrefix, kStream).value()) {
    governor_ = Governor::make(*io_, GovernorConfig{std::nullopt, 0, uint32_t(1 + rng_.uniform(4))},
                               clock_);
    store_->before_remove = [this](const std::string& key) { on_remove(key); };
    store_->before_put = [this](const std::string& key) { on_put(key); };
    catalog_->after_change = [this] { on_catalog_change(); };
    pick_options();
  }
  ~ShellWorld() { shut_down(); }

  Status run(ShellSimStats& stats) {
    STRATA_TRY(open_log());
    start_uploader();
    for (int i = 0; i < steps_; ++i) {
      STRATA_TRY(chaos_step());
      STRATA_TRY(where(check(), fmt::format("after step {}", i)));
    }
    STRATA_TRY(settle(stats));
    STRATA_TRY(drain());
    STRATA_TRY(final_checks());
    stats.seeds += 1;
    stats.steps += uint64_t(steps_);
    stats.appends += appends_;
    stats.restarts += restarts_;
    stats.takeovers += takeovers_;
    stats.fenced += fenced_;
    stats.tasks += exec_.tasks();
    stats.holds += exec_.held();
    stats.deadlines += exec_.ended_as(TaskEnd::deadline);
    stats.cancelled += exec_.ended_as(TaskEnd::cancelled);
    stats.threw += exec_.ended_as(TaskEnd::threw);
    stats.faults += faults_.injected;
    stats.revisions += revisions_;
    stats.fragments_verified += fragments_verified_;
    stats.deletes += store_->removes;
    stats.waiters += waiters_.size();
    for (const Waiter& w : waiters_) stats.waiters_ok += w.status.ok();
    for (const Live& l : live_) {
      UploaderStatus st = l.uploader->status();
      stats.reinits += st.restarts - 1;
      stats.catchups += st.catchup_reads;
      stats.overflows += st.queue_overflows;
      stats.local_deleted += st.local_segments_deleted;
    }
    return Status::OK();
  }

 private:
  struct Waiter {
    uint64_t offset = 0;
    int calls = 0;
    Status status;
  };
  struct Live {
    std::shared_ptr<Uploader> uploader;
    bool stopped = false;  // on_stopped was called
    bool closed = false;   // close() was called
  };

  // ---- set-up ----

  void pick_options() {
    opts_.stream = kStream;
    opts_.key_prefix = kPrefix;
    opts_.assembly.target_size = 1000 + rng_.uniform(6000);
    opts_.assembly.max_age_ms = int64_t(rng_.uniform(3000));
    opts_.assembly.hurry_max_age_ms = int64_t(rng_.uniform(200));
    opts_.persist_threshold = uint32_t(1 + rng_.uniform(6));
    opts_.persist_interval_ms = int64_t(100 + rng_.uniform(3000));
    opts_.rebalance = RebalancePolicy{uint32_t(2 + rng_.uniform(5)), uint32_t(2 + rng_.uniform(3))};
    if (rng_.chance(1, 3)) opts_.retention.max_bytes = 3000 + rng_.uniform(30000);
    if (rng_.chance(1, 4)) opts_.retention.max_age_ms = int64_t(5000 + rng_.uniform(60000));
    opts_.retention.max_objects_per_plan = uint32_t(2 + rng_.uniform(20));
    opts_.request_timeout_ms = int64_t(200 + rng_.uniform(3000));
    opts_.delete_grace_ms = int64_t(rng_.uniform(3000));
    opts_.max_queued_chunks = size_t(2 + rng_.uniform(40));
    opts_.catchup_batch_bytes = 500 + rng_.uniform(20000);
    opts_.max_unpersisted_fragments = uint32_t(2 + rng_.uniform(40));
    opts_.start_backoff = BackoffPolicy{rng_.chance(1, 2), int64_t(10 + rng_.uniform(500)), 5000};
    opts_.on_stopped = nullptr;  // set per uploader

    // A third of the seeds run without faults (schedules alone); a quarter
    // are storms, with five times the faults and hangs (drawn apart, so that
    // the other seeds keep their schedules).
    const uint32_t storm = Random(seed_ ^ 0x570a570a570aull).chance(1, 4) ? 5 : 1;
    if (!rng_.chance(1, 3)) {
      faults_.put_transient = storm * uint32_t(rng_.uniform(120));
      faults_.put_fatal = storm * uint32_t(rng_.uniform(30));
      faults_.put_lost_reply = storm * uint32_t(rng_.uniform(40));
      faults_.put_throw = storm * uint32_t(rng_.uniform(10));
      faults_.read_transient = storm * uint32_t(rng_.uniform(60));
      faults_.remove_transient = storm * uint32_t(rng_.uniform(60));
      faults_.catalog_before = storm * uint32_t(rng_.uniform(60));
      faults_.catalog_after = storm * uint32_t(rng_.uniform(40));
    }
    hold_per_mille_ = storm * uint32_t(rng_.chance(1, 2) ? rng_.uniform(100) : 0);
    restart_per_mille_ = uint32_t(rng_.uniform(8));
    takeover_per_mille_ = uint32_t(rng_.chance(1, 4) ? rng_.uniform(4) : 0);
    steps_ = int(300 + rng_.uniform(700));
  }

  Status open_log() {
    log::LogOptions o;
    o.create_if_missing = true;
    o.fsync = log::FsyncPolicy::never;
    o.max_segment_bytes = 4000 + rng_.uniform(30000);
    // Local retention (half the seeds): the uploader runs it after each
    // persist, and the tiering hook's veto keeps what is not persisted.
    if (rng_.chance(1, 2)) o.retention.max_bytes = 1 + rng_.uniform(20000);
    o.retention_on_roll = false;
    o.clock = &clock_;
    o.hooks = hooks_;
    STRATA_ASSIGN_OR_RETURN(log_, log::StreamLog::open(dir_.sub("log"), o));
    // The hooks feed the current uploader, as a node's do; an older one
    // still running (a take-over's loser) is fed here.
    subscription_ = log_->subscribe([this](const log::CommittedChunk& c) {
      for (size_t i = 0; i + 1 < live_.size(); ++i) {
        Uploader& u = *live_[i].uploader;
        if (u.state() != UploaderState::closed) u.on_commit(c);
      }
    });
    STRATA_ASSIGN_OR_RETURN(reader_, log_->open_reader(log::OffsetSpec::first()));
    return Status::OK();
  }

  UploaderEnv env() {
    UploaderEnv e;
    e.io = std::shared_ptr<asio::io_context>(io_.get(), [](asio::io_context*) {});
    e.tasks = TaskContext{nullptr, lifetime_, &exec_};
    e.governor = governor_;
    e.store = store_;
    e.catalog = catalog_;
    e.cache = cache_;
    e.clock = &clock_;
    return e;
  }

  void start_uploader() {
    UploaderOptions o = opts_;
    o.random_seed = rng_.next() | 1;
    size_t index = live_.size();
    o.on_stopped = [this, index](UploaderState s, const std::string& why) {
      trace("uploader #{} stopped ({}): {}", index + 1, uploader_state_name(s), why);
      if (s == UploaderState::fenced) fenced_ += 1;
      live_[index].stopped = true;
    };
    UploaderEnv e = env();
    // A closed uploader never takes the stream over (it would fence the
    // uploader that replaced it).
    e.catalog = std::make_shared<CatalogView>(catalog_, [this, index] {
      if (live_[index].closed)
        fail(fmt::format("uploader #{} took the stream over after it was closed", index + 1));
    });
    auto u = Uploader::start(std::move(e), std::move(o), log_);
    live_.push_back(Live{u.ok() ? std::move(u).value() : nullptr, false, false});
    if (!live_.back().uploader) return fail("Uploader::start refused the options");
    hooks_->attach(live_.back().uploader, log_);
  }

  // Closes the uploaders and starts a new one over the same log and
  // catalog: a node restart (the pool drops what it had queued, a new
  // process may have an empty manifest cache) or, in the same process, a
  // stream acquired again (as a cluster node does when its uploader was
  // fenced): then the old uploaders' queued jobs still run, their outcomes
  // ignored.
  void restart(bool node_restart) {
    restarts_ += 1;
    trace("{}", node_restart ? "node restart" : "stream acquired again");
    close_all();
    if (node_restart) {
      exec_.drop_all_jobs();
      if (rng_.chance(1, 2)) cache_ = std::make_shared<ManifestCache>();
    }
    start_uploader();
  }

  Uploader& current() { return *live_.back().uploader; }
  void close_all() {
    for (Live& l : live_) {
      l.closed = true;
      l.uploader->close();
    }
  }

  // ---- steps ----

  Status chaos_step() {
    if (rng_.chance(restart_per_mille_, 1000)) {
      restart(rng_.chance(1, 2));
      return Status::OK();
    }
    if (live_.back().stopped && rng_.chance(1, 20)) {
      restart(/*node_restart=*/false);
      return Status::OK();
    }
    if (rng_.chance(takeover_per_mille_, 1000)) {
      // Another uploader takes the stream over while this one still runs.
      takeovers_ += 1;
      trace("another uploader takes over");
      start_uploader();
      return Status::OK();
    }
    uint64_t r = rng_.uniform(100);
    if (r < 40) {
      if (exec_.run_handler()) return Status::OK();
      return run_some_job(/*may_hold=*/true);
    }
    if (r < 68) return run_some_job(/*may_hold=*/true);
    if (r < 78) return append();
    if (r < 86) {
      advance_time();
      return Status::OK();
    }
    if (r < 94) {
      add_waiter();
      return Status::OK();
    }
    if (r < 97) {
      current().force_cut();
    } else {
      current().request_retention();
    }
    return Status::OK();
  }

  Status run_some_job(bool may_hold) {
    std::vector<uint64_t> jobs = exec_.runnable();
    if (jobs.empty()) {
      if (!exec_.run_handler()) advance_time();
      return Status::OK();
    }
    uint64_t task = jobs[rng_.uniform(jobs.size())];
    if (may_hold && rng_.chance(hold_per_mille_, 1000)) {
      // Hung: past the task's deadline more often than not.
      exec_.hold_job(task, clock_.now_ms() + 1 +
                               int64_t(rng_.uniform(uint64_t(12 * opts_.request_timeout_ms))));
      exec_.count_hold();
      return Status::OK();
    }
    exec_.run_job(task);
    return Status::OK();
  }

  void advance_time() {
    std::optional<int64_t> due = exec_.next_due();
    int64_t to = clock_.now_ms() + 1 + int64_t(rng_.uniform(300));
    if (due && rng_.chance(1, 2)) to = std::max(to, *due);
    exec_.advance_to(to);
  }

  Status append() {
    uint32_t records = uint32_t(1 + rng_.uniform(8));
    std::vector<std::string> values;
    for (uint32_t i = 0; i < records; ++i) {
      std::string v = fmt::format("{}:{}:", seed_, log_->committed_next() + i);
      v.resize(10 + rng_.uniform(600), char('a' + rng_.uniform(26)));
      values.push_back(std::move(v));
    }
    std::vector<BytesView> views(values.begin(), values.end());
    STRATA_TRY(log_->append(std::span<const BytesView>(views)));
    appends_ += 1;
    // The model: every committed chunk, byte for byte, by first offset.
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(std::optional<log::ChunkView> c, reader_->next_chunk());
      if (!c) break;
      chunks_[c->header.first_offset] = Bytes(c->bytes);
      chunk_next_[c->header.first_offset] = c->header.next_offset();
    }
    return Status::OK();
  }

  void add_waiter() {
    uint64_t committed = log_->committed_next();
    uint64_t offset = rng_.uniform(committed + 20);
    size_t id = waiters_.size();
    waiters_.push_back(Waiter{offset, 0, Status::OK()});
    auto done = [this, id](Status s) { on_waiter(id, std::move(s)); };
    Uploader& u =
        *live_[rng_.chance(1, 8) ? rng_.uniform(live_.size()) : live_.size() - 1].uploader;
    if (rng_.chance(1, 4)) {
      u.await_remote(offset, done);
    } else {
      u.await_persisted(offset, done, rng_.chance(1, 3));
    }
  }

  // ---- liveness ----

  // Faults stop; the uploader may restart once more. Then every committed
  // offset must be persisted within the bound, and a waiter for all of it
  // must be told so. An uploader fenced meanwhile (by a take-over a closed
  // uploader's queued start-up still made) is acquired again, as a cluster
  // node does, a bounded number of times.
  Status settle(ShellSimStats& stats) {
    faults_.on = false;
    if (live_.back().stopped || rng_.chance(1, 2)) restart(rng_.chance(1, 2));
    const uint64_t target = log_->committed_next();
    size_t final_waiter = await_all(target);
    if (rng_.chance(1, 2)) current().force_cut();
    const int bound = 200'000;
    int reacquired = 0;
    for (int i = 0; i < bound; ++i) {
      if (live_.back().stopped) {
        if (++reacquired > 20)
          return Error(Errc::internal, "fenced again and again: " + describe());
        stats.settle_reacquired += 1;
        trace("settling: the uploader was fenced; acquiring the stream again");
        restart(/*node_restart=*/false);
        final_waiter = await_all(target);
        continue;
      }
      const Waiter& w = waiters_[final_waiter];
      if (w.calls > 0 && persisted_next_ == target) {
        stats.settle_steps += uint64_t(i);
        if (!w.status.ok()) {
          return Error(Errc::internal, "the final waiter failed: " + w.status.error().to_string());
        }
        return Status::OK();
      }
      if (!quiet_step()) {
        return Error(Errc::internal,
                     fmt::format("hang: nothing runnable and nothing scheduled, committed {} "
                                 "persisted {}; {}",
                                 target, persisted_next_, describe()));
      }
      STRATA_TRY(where(check(), fmt::format("settling, step {}", i)));
    }
    return Error(Errc::internal, fmt::format("no quiescence within {} steps: committed {}, "
                                             "persisted {}; {}",
                                             bound, target, persisted_next_, describe()));
  }

  // One step with no fault injected: a ready handler, else any runnable
  // job, else the clock on to the next timer. False when nothing is left.
  bool quiet_step() {
    if (exec_.run_handler()) return true;
    std::vector<uint64_t> jobs = exec_.runnable();
    if (!jobs.empty()) {
      exec_.run_job(jobs[rng_.uniform(jobs.size())]);
      return true;
    }
    if (auto due = exec_.next_due()) {
      exec_.advance_to(*due);
      return true;
    }
    return false;
  }

  // A waiter on the current uploader for every offset below `offset`.
  size_t await_all(uint64_t offset) {
    size_t id = waiters_.size();
    waiters_.push_back(Waiter{offset, 0, Status::OK()});
    current().await_persisted(
        offset, [this, id](Status s) { on_waiter(id, std::move(s)); }, rng_.chance(1, 2));
    return id;
  }

  // Closes every uploader and runs what is left until nothing is queued or
  // scheduled.
  Status drain() {
    close_all();
    for (int i = 0; i < 100'000; ++i) {
      if (!quiet_step()) return check();
      STRATA_TRY(where(check(), "draining"));
    }
    return Error(Errc::internal, "draining did not end: " + describe());
  }

  Status final_checks() {
    STRATA_TRY(exec_.ended_once());
    for (size_t i = 0; i < waiters_.size(); ++i) {
      if (waiters_[i].calls != 1) {
        return Error(Errc::internal, fmt::format("waiter {} (offset {}) ended {} times", i,
                                                 waiters_[i].offset, waiters_[i].calls));
      }
    }
    for (size_t i = 0; i < live_.size(); ++i) {
      auto st = live_[i].uploader->status();
      if (st.gaps != 0 || st.remote_ahead != 0) {
        return Error(Errc::internal,
                     fmt::format("uploader #{} saw a gap ({}) or a remote tier ahead ({})", i + 1,
                                 st.gaps, st.remote_ahead));
      }
    }
    return Status::OK();
  }

  std::string describe() {
    auto st = current().status();
    return fmt::format(
        "uploader #{} {}, last error '{}', jobs queued {}, timers {}, catalog revision {}",
        live_.size(), uploader_state_name(st.state), st.last_error, exec_.queued(), exec_.timers(),
        revision_);
  }

  // ---- invariants ----

  void fail(std::string why) {
    if (violation_.empty()) violation_ = std::move(why);
  }

  Status check() {
    if (!exec_.violation().empty()) return Error(Errc::internal, exec_.violation());
    if (!violation_.empty()) return Error(Errc::internal, violation_);
    for (const Live& l : live_) {
      if (l.uploader->persisted_next() > persisted_next_) {
        return Error(Errc::internal, fmt::format("persisted_next() {} is past the catalog's {}",
                                                 l.uploader->persisted_next(), persisted_next_));
      }
    }
    // Local retention deletes only what the remote tier holds.
    if (log_->first_offset() > persisted_next_) {
      return Error(Errc::internal, fmt::format("the local log starts at {}, past the persisted "
                                               "remote next offset {}",
                                               log_->first_offset(), persisted_next_));
    }
    auto cached = cache_->get(kStream);
    if (cached.ok() && cached->manifest && cached->revision > 0) {
      auto it = persisted_.find(cached->revision);
      if (it == persisted_.end()) {
        return Error(Errc::internal, fmt::format("the manifest cache holds revision {}, which "
                                                 "was never persisted",
                                                 cached->revision));
      }
      if (!(*cached->manifest == it->second)) {
        return Error(Errc::internal,
                     fmt::format("the manifest cache's manifest at revision {} is not the one "
                                 "persisted there ([{}, {}) against [{}, {}))",
                                 cached->revision, cached->manifest->first_offset,
                                 cached->manifest->next_offset, it->second.first_offset,
                                 it->second.next_offset));
      }
    }
    return Status::OK();
  }

  void on_waiter(size_t id, Status s) {
    Waiter& w = waiters_[id];
    w.calls += 1;
    if (w.calls > 1) fail(fmt::format("waiter {} (offset {}) ended twice", id, w.offset));
    if (s.ok() && w.offset > persisted_next_) {
      fail(
          fmt::format("waiter {} told offsets below {} are persisted; the catalog's manifest "
                      "ends at {}",
                      id, w.offset, persisted_next_));
    }
    if (!s.ok() && s.error().code != Errc::closed) {
      fail(fmt::format("waiter {} failed with {}", id, s.error().to_string()));
    }
    w.status = std::move(s);
  }

  template <class... A>
  void trace(fmt::format_string<A...> f, A&&... a) {
    if (tracing_) {
      std::cout << fmt::format("[{} ms] ", clock_.now_ms() - kStartMs)
                << fmt::format(f, std::forward<A>(a)...) << "\n";
    }
  }

  void on_put(const std::string& key) {
    trace("put {}", key);
    if (!written_.insert(key).second) fail("key written twice: " + key);
  }

  void on_remove(const std::string& key) {
    trace("remove {}", key);
    if (referenced_.count(key)) {
      fail(fmt::format("deleted {}, referenced by the manifest of catalog revision {}", key,
                       revision_));
    }
  }

  // The catalog changed (a compare-and-set, a take-over, a create): the
  // manifest it now names must be whole, match the log, and extend the
  // previous one in cut order.
  void on_catalog_change() {
    auto e = catalog_->inner().get(kStream);
    if (!e.ok()) return fail("catalog entry vanished: " + e.error().to_string());
    revision_ = e->revision;
    revisions_ += 1;
    trace("catalog revision {} epoch {} root {}", e->revision, e->epoch, e->root_key);
    if (e->root_key == root_key_) {
      persisted_[e->revision] = manifest_;
      return;
    }
    Status s = verify_root(e->root_key);
    if (!s.ok())
      return fail(fmt::format("catalog revision {} (root {}): {}", e->revision, e->root_key,
                              s.error().to_string()));
    persisted_[e->revision] = manifest_;
  }

  Status verify_root(const std::string& root_key) {
    auto body = store_->objects().find(root_key);
    if (body == store_->objects().end()) return Error(Errc::internal, "the root is missing");
    STRATA_ASSIGN_OR_RETURN(DecodedRoot root, decode_root(body->second, root_key));
    STRATA_TRY(validate_manifest(root.manifest, root_key));
    std::set<std::string> referenced{root_key};
    GroupFetch fetch = [&](const ManifestEntry& g) -> Result<std::shared_ptr<const ManifestGroup>> {
      std::string key = keys_.for_entry(g);
      referenced.insert(key);
      auto it = store_->objects().find(key);
      if (it == store_->objects().end()) return Error(Errc::not_found, "missing group " + key);
      STRATA_ASSIGN_OR_RETURN(ManifestGroup grp, decode_group(it->second, key));
      return std::make_shared<const ManifestGroup>(std::move(grp));
    };
    auto m = std::make_shared<const Manifest>(root.manifest);
    STRATA_ASSIGN_OR_RETURN(std::vector<FragmentRef> refs, all_fragments(m, fetch));
    std::vector<PersistedFragment> frags;
    uint64_t at = m->first_offset;
    for (const FragmentRef& f : refs) {
      if (f.offset != at) {
        return Error(Errc::internal,
                     fmt::format("fragments not contiguous at {} (next {})", at, f.offset));
      }
      frags.push_back(PersistedFragment{f.offset, f.next_offset, keys_.for_entry(f.entry())});
      referenced.insert(frags.back().key);
      at = f.next_offset;
    }
    if (at != m->next_offset) {
      return Error(Errc::internal,
                   fmt::format("fragments end at {}, the manifest at {}", at, m->next_offset));
    }
    STRATA_TRY(verify_cut_order(*m, frags));
    for (size_t i = 0; i < frags.size(); ++i) {
      // Fragments already verified under an older root are immutable (no
      // key is written twice).
      if (verified_.count(frags[i].key)) continue;
      STRATA_TRY(verify_fragment(refs[i], frags[i].key));
      verified_.insert(frags[i].key);
      fragments_verified_ += 1;
    }
    root_key_ = root_key;
    manifest_ = root.manifest;
    frags_ = std::move(frags);
    referenced_ = std::move(referenced);
    persisted_next_ = m->next_offset;
    return Status::OK();
  }

  // Against the previous persisted manifest: the range only moves forward,
  // and over the range both cover, the fragments are the same ones.
  Status verify_cut_order(const Manifest& m, const std::vector<PersistedFragment>& frags) {
    if (root_key_.empty()) return Status::OK();
    if (m.next_offset < manifest_.next_offset || m.first_offset < manifest_.first_offset) {
      return Error(
          Errc::internal,
          fmt::format("the persisted range went back: [{}, {}) after [{}, {})", m.first_offset,
                      m.next_offset, manifest_.first_offset, manifest_.next_offset));
    }
    size_t j = 0;
    while (j < frags_.size() && frags_[j].offset < m.first_offset) ++j;
    for (const PersistedFragment& f : frags) {
      if (f.offset >= manifest_.next_offset) break;
      if (j >= frags_.size() || frags_[j].key != f.key || frags_[j].offset != f.offset ||
          frags_[j].next_offset != f.next_offset) {
        return Error(Errc::internal,
                     fmt::format("fragment {} [{}, {}) is not the one persisted before there",
                                 f.key, f.offset, f.next_offset));
      }
      ++j;
    }
    return Status::OK();
  }

  Status verify_fragment(const FragmentRef& ref, const std::string& key) {
    auto body = store_->objects().find(key);
    if (body == store_->objects().end()) return Error(Errc::internal, "missing fragment " + key);
    STRATA_ASSIGN_OR_RETURN(DecodedFragment f, decode_fragment(body->second, key, true));
    if (f.header.meta.first_offset != ref.offset || f.header.meta.next_offset != ref.next_offset ||
        f.header.meta.size != ref.size) {
      return Error(Errc::internal,
                   fmt::format("fragment {} holds [{}, {}) of {} bytes; the "
                               "manifest says [{}, {}) of {}",
                               key, f.header.meta.first_offset, f.header.meta.next_offset,
                               f.header.meta.size, ref.offset, ref.next_offset, ref.size));
    }
    uint64_t expect = ref.offset;
    for (size_t i = 0; i < f.index.size(); ++i) {
      uint64_t start = f.index[i].position;
      uint64_t end = i + 1 < f.index.size() ? f.index[i + 1].position : f.data.size();
      auto c = chunks_.find(expect);
      if (f.index[i].first_offset != expect || c == chunks_.end()) {
        return Error(Errc::internal, fmt::format("fragment {}: chunk {} at offset {}, the log "
                                                 "has its chunk at {}",
                                                 key, i, f.index[i].first_offset, expect));
      }
      if (f.data.substr(start, end - start) != BytesView(c->second)) {
        return Error(Errc::internal, fmt::format("fragment {}: the bytes of chunk {} differ "
                                                 "from the log's",
                                                 key, expect));
      }
      expect = chunk_next_[expect];
    }
    if (expect != ref.next_offset) {
      return Error(Errc::internal, fmt::format("fragment {}: its chunks end at {}, not {}", key,
                                               expect, ref.next_offset));
    }
    return Status::OK();
  }

  void shut_down() {
    if (log_) log_->unsubscribe(subscription_);
    hooks_->detach();
    for (Live& l : live_) l.uploader->close();
    live_.clear();
    lifetime_->end();
    exec_.shut_down();
    governor_.reset();
    work_.reset();
    io_.reset();  // destroys what is still queued (and what it holds)
    if (log_) (void)log_->close();
  }

  static constexpr int64_t kStartMs = 1'700'000'000'000;
  const uint64_t seed_;
  const bool tracing_ = std::getenv("STRATA_SIM_TRACE") != nullptr;
  Random rng_;        // the schedule
  Random fault_rng_;  // the faults
  SimFaults faults_;
  LogDir dir_;
  ManualClock clock_;
  std::unique_ptr<asio::io_context> io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  SimExecutor exec_;
  std::shared_ptr<IoLifetime> lifetime_;
  std::shared_ptr<SimStore> store_;
  std::shared_ptr<SimCatalog> catalog_;
  std::shared_ptr<ManifestCache> cache_;
  std::shared_ptr<Governor> governor_;
  const ObjectKeys keys_;

  UploaderOptions opts_;
  uint32_t hold_per_mille_ = 0, restart_per_mille_ = 0, takeover_per_mille_ = 0;
  int steps_ = 0;

  std::shared_ptr<TieringHooks> hooks_ = std::make_shared<TieringHooks>();
  std::shared_ptr<log::StreamLog> log_;
  uint64_t subscription_ = 0;
  std::unique_ptr<log::Reader> reader_;
  std::map<uint64_t, Bytes> chunks_;         // the log's chunks by first offset
  std::map<uint64_t, uint64_t> chunk_next_;  // first offset -> next offset
  std::deque<Live> live_;                    // every uploader started, the current last
  std::deque<Waiter> waiters_;

  // The persisted state as last verified.
  uint64_t revision_ = 0;
  std::string root_key_;
  Manifest manifest_;
  std::vector<PersistedFragment> frags_;
  std::set<std::string> referenced_;
  uint64_t persisted_next_ = 0;
  std::map<uint64_t, Manifest> persisted_;  // by catalog revision
  std::set<std::string> verified_;
  std::set<std::string> written_;
  std::string violation_;

  uint64_t appends_ = 0, restarts_ = 0, takeovers_ = 0, fenced_ = 0, revisions_ = 0;
  uint64_t fragments_verified_ = 0;
};

// One seed's run; an exception out of the shell (a handler calling a
// moved-from callback, say) is a failure of that seed too.
Status run_seed(uint64_t seed, ShellSimStats& stats) {
  try {
    return ShellWorld(seed).run(stats);
  } catch (const std::exception& e) {
    return Error(Errc::internal, std::string("threw: ") + e.what());
  }
}

constexpr int kSeedsPerShard = 250;

void run_shard(int shard, int seeds) {
  ShellSimStats stats;
  auto started = std::chrono::steady_clock::now();
  if (std::getenv("STRATA_TEST_SEED")) {
    // A replay shows the uploader's log lines.
    if (shard != 0) return;
    uint64_t seed = ::strata::test::test_seed(0);
    std::cout << "uploader shell simulation: replaying seed " << seed << "\n";
    Status s = run_seed(seed, stats);
    EXPECT_TRUE(s.ok()) << "seed " << seed << ": " << s.to_string();
    return;
  }
  strata::test::QuietLogs quiet;
  const uint64_t base = 5'000'000 + uint64_t(shard) * 100'000;
  std::cout << "uploader shell simulation shard " << shard << ": seeds " << base << ".."
            << base + uint64_t(seeds) - 1 << "\n";
  for (int i = 0; i < seeds; ++i) {
    uint64_t seed = base + uint64_t(i);
    Status s = run_seed(seed, stats);
    if (!s.ok()) {
      ADD_FAILURE() << "seed " << seed << " failed: " << s.to_string()
                    << "\nreplay: STRATA_TEST_SEED=" << seed
                    << " ctest -R UploaderShellSim.Shard0 --output-on-failure";
      return;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << fmt::format(
      "  {} seeds in {:.1f} s: {} steps (+{} settling, {} fenced then), {} appends, {} restarts, "
      "{} take-overs "
      "({} fenced), {} tasks ({} held, {} deadlines, {} cancelled, {} threw), {} faults, {} "
      "catalog revisions, {} fragments verified, {} deletes, {} waiters ({} told persisted), "
      "{} reinitializations, {} catch-up reads, {} queue overflows, {} local segments "
      "deleted\n",
      stats.seeds, secs, stats.steps, stats.settle_steps, stats.settle_reacquired, stats.appends,
      stats.restarts, stats.takeovers, stats.fenced, stats.tasks, stats.holds, stats.deadlines,
      stats.cancelled, stats.threw, stats.faults, stats.revisions, stats.fragments_verified,
      stats.deletes, stats.waiters, stats.waiters_ok, stats.reinits, stats.catchups,
      stats.overflows, stats.local_deleted);
}

// Seeds that found bugs in the shell, replayed by name; each failed before
// its fix.
void run_seeds(std::initializer_list<uint64_t> seeds) {
  strata::test::QuietLogs quiet;
  ShellSimStats stats;
  for (uint64_t seed : seeds) {
    Status s = run_seed(seed, stats);
    EXPECT_TRUE(s.ok()) << "seed " << seed << ": " << s.to_string();
  }
}

// A core made after a reinitialize (a catalog conflict) was seeded as the
// one before it — the same random_seed, or the clock's same millisecond —
// so it drew the same object-key uids and wrote keys again under the same
// epoch: among them a root whose delete the old core had scheduled, so that
// the delete removed the root the catalog then named (seeds 5000070 and
// 5000112 end so when the double write is let through). Each core
// generation now draws its seed from the uploader's own sequence.
TEST(UploaderShellSim, CoreAfterReinitializeWritesNewKeys) {
  run_seeds({5000001, 5100008, 5200005, 5300000, 5000070, 5000112});
}

// A closed uploader's start-up, still queued on the pool, took the stream
// over when it ran (raised the catalog epoch), fencing the uploader that had
// replaced it (three re-acquisitions in a row: the third uploader was
// fenced by the first two). A job that begins after close() no longer does.
TEST(UploaderShellSim, ClosedUploaderNeverTakesTheStreamOver) {
  run_seeds({5000005, 5100010, 5200003, 5300005});
}

TEST(UploaderShellSim, Shard0) {
  run_shard(0, ::strata::test::scaled(kSeedsPerShard));
}
TEST(UploaderShellSim, Shard1) {
  run_shard(1, ::strata::test::scaled(kSeedsPerShard));
}
TEST(UploaderShellSim, Shard2) {
  run_shard(2, ::strata::test::scaled(kSeedsPerShard));
}
TEST(UploaderShellSim, Shard3) {
  run_shard(3, ::strata::test::scaled(kSeedsPerShard));
}

}  // namespace
}  // namespace strata::tier::test
