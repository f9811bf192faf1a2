// Randomized crash test on the fault-injecting file system (the centre of
// issue 5). A mixed workload — high- and low-frequency puts, multi-field
// atomic puts, deletes with slot reuse, batches, syncs, new interned strings
// until the table is full, compactions of a tiny WAL (inline and on the
// background thread, with a tiny compaction buffer sometimes) — runs until a
// random mutation crashes the "machine"; then the machine restarts with the
// unsynced writes dropped, a random prefix kept, and/or the first lost write
// torn at a random byte, and the store is reopened (sometimes crashing again
// during recovery). After each reopen the contents must equal the state after
// some prefix of the ops issued, and that prefix must include every op
// acknowledged as durable: nothing durable lost, nothing deleted back,
// nothing returned that was never written.
//
// The same workload runs on two crash models: FaultFileSystem (unsynced
// writes persist as an ordered prefix, the first lost one possibly torn) and
// ReorderFs (any subset of the unsynced writes' sectors persists, like a disk
// without barriers) — the second is what the seal fsync at a WAL half switch
// and the per-open chain nonce defend against.
//
// Replay a failure with STRATA_TEST_SEED=<seed printed in the failure>.
#include <chrono>

#include "common/random.h"
#include "reorder_fs.h"
#include "slotstore_test_util.h"
#include "support/temp_dir.h"

namespace strata::slotstore {
namespace {

using namespace test;

constexpr int kKeys = 24;   // more keys than slots: store_full happens
constexpr int kNames = 40;  // more names than strings: string_table_full happens

struct Model {
  Contents durable;                   // state after the last durable acknowledgement
  std::vector<WriteBatch::Op> tail;   // acknowledged-written ops after it
  std::vector<WriteBatch::Op> maybe;  // ops of the batch that failed in the crash
  Contents current;                   // durable + tail (the store's view while up)

  void written(const WriteBatch& b, bool durable_ack) {
    for (const auto& op : b.ops()) {
      tail.push_back(op);
      apply_to(current, op, 3);
    }
    if (durable_ack) synced();
  }
  void synced() {
    durable = current;
    tail.clear();
  }
  // Checks `got` is durable + a prefix of (tail, maybe); adopts it. After
  // a kill of the process alone, the prefix includes all of tail (the page
  // cache kept every acknowledged write).
  ::testing::AssertionResult recovered(const Contents& got, bool process_only) {
    Contents st = durable;
    std::vector<WriteBatch::Op> all = tail;
    all.insert(all.end(), maybe.begin(), maybe.end());
    size_t p = 0;
    if (process_only) {
      while (p < tail.size()) apply_to(st, all[p++], 3);
    }
    while (!(st == got) && p < all.size()) apply_to(st, all[p++], 3);
    if (!(st == got)) {
      return ::testing::AssertionFailure()
             << "recovered contents match no prefix of the history (" << tail.size()
             << " acknowledged ops and " << maybe.size()
             << " in-flight ops after the durable point)\nrecovered:\n"
             << describe(got) << "durable point:\n"
             << describe(durable) << "last acknowledged state:\n"
             << describe(current);
    }
    durable = got;
    current = got;
    tail.clear();
    maybe.clear();
    return ::testing::AssertionSuccess();
  }
};

class Workload {
 public:
  explicit Workload(uint64_t seed) : rng_(seed) {}

  std::string key() { return "server-" + std::to_string(rng_.uniform(kKeys)); }
  std::string name() {
    // Mostly a few popular names (already interned), sometimes a new one.
    uint64_t n = rng_.chance(7, 10) ? rng_.uniform(8) : rng_.uniform(kNames);
    return "node-" + std::to_string(n);
  }

  // One random op that is valid against `current` (a new key may still hit
  // store_full and a new name string_table_full: the store must refuse
  // those cleanly).
  void add_op(WriteBatch& b, const Contents& current) {
    uint64_t r = rng_.uniform(100);
    if (r < 12 && !current.empty()) {
      auto it = current.begin();
      std::advance(it, rng_.uniform(current.size()));
      // An erase of a key already erased earlier in this batch is skipped.
      for (const auto& op : b.ops()) {
        if (op.key == it->first && op.erase) return;
      }
      b.erase(it->first);
      return;
    }
    std::string k = key();
    ++counter_;
    if (r < 60) {
      b.put(k, {set(kApplied, Value::u64(counter_))});
    } else if (r < 75) {
      b.put(k, {set(kTerm, Value::u64(counter_)), clear(kVote)});
    } else if (r < 88) {
      b.put(k, {set(kVote, vote(name(), name()))});
    } else {
      b.put(k, {set(kTerm, Value::u64(counter_)), set(kVote, vote(name(), name())),
                set(kApplied, Value::u64(counter_))});
    }
  }

  Random& rng() { return rng_; }

 private:
  Random rng_;
  uint64_t counter_ = 0;
};

bool validation_error(Errc c) {
  return c == Errc::store_full || c == Errc::string_table_full || c == Errc::not_found;
}

bool crash_error(Errc c) {
  return c == Errc::simulated_crash || c == Errc::fail_stopped;
}

// The machine under the store: a file system that can crash.
class Machine {
 public:
  virtual ~Machine() = default;
  virtual FileSystem& fs() = 0;
  virtual void crash_after(uint64_t n) = 0;
  virtual void clear_crash_after() = 0;
  virtual bool is_down() = 0;
  virtual void crash(Random& rng) = 0;
  // kill -9 of the process only; false if this machine cannot model it.
  virtual bool kill_process() { return false; }
};

class OrderedMachine final : public Machine {
 public:
  FileSystem& fs() override { return fs_; }
  void crash_after(uint64_t n) override { fs_.crash_after(n); }
  void clear_crash_after() override { fs_.clear_crash_after(); }
  bool is_down() override { return fs_.is_down(); }
  void crash(Random& rng) override {
    uint64_t mode = rng.uniform(4);  // drop all / keep a prefix / + tear / tear only
    fs_.crash(CrashOptions{rng.next(), mode == 1 || mode == 2, mode >= 2, rng.chance(1, 2)});
  }

 private:
  FaultFileSystem fs_;
};

class ReorderMachine final : public Machine {
 public:
  FileSystem& fs() override { return fs_; }
  void crash_after(uint64_t n) override { fs_.crash_after(n); }
  void clear_crash_after() override { fs_.clear_crash_after(); }
  bool is_down() override { return fs_.is_down(); }
  void crash(Random& rng) override { fs_.crash(rng); }
  bool kill_process() override {
    fs_.revive();
    return true;
  }

 private:
  test::ReorderFs fs_;
};

struct Stats {
  uint64_t crash_points = 0;
  uint64_t recovery_crashes = 0;
  uint64_t process_kills = 0;
  uint64_t compactions = 0;
  uint64_t ops = 0;
  uint64_t validation_errors = 0;
};

// One store lifetime: crash rounds until `rounds` crashes happened.
void run_iteration(Machine& machine, uint64_t seed, int rounds, bool background, Stats* stats) {
  SCOPED_TRACE("seed " + std::to_string(seed) + (background ? " (background)" : " (inline)"));
  Workload w(seed);
  Random& rng = w.rng();
  Machine& fs = machine;
  Options o = small_options(16, 24, 8192);
  o.background_compaction = background;
  if (rng.chance(1, 3)) o.compaction_buffer_bytes = 600;  // several flushes per compaction
  Model m;
  bool process_killed = false;
  for (int round = 0; round <= rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Sometimes crash again during recovery (its fsync, an inline
    // compaction of a recovered sealed half).
    std::unique_ptr<SlotStore> s;
    if (round > 0 && rng.chance(1, 4)) {
      fs.crash_after(rng.uniform(6));
      auto r = SlotStore::open(fs.fs(), "/meta", raft_schema(), o);
      if (r.ok()) {
        s = std::move(r).value();
        if (fs.is_down()) s.reset();
      } else {
        ASSERT_TRUE(crash_error(r.code())) << r.error().to_string();
      }
      if (!s) {
        ++stats->recovery_crashes;
        fs.crash(rng);
        process_killed = false;  // a power loss after all
      }
      fs.clear_crash_after();
    }
    if (!s) {
      auto r = SlotStore::open(fs.fs(), "/meta", raft_schema(), o);
      ASSERT_TRUE(r.ok()) << r.error().to_string();
      s = std::move(r).value();
    }
    ASSERT_TRUE(m.recovered(contents_of(*s), process_killed));
    process_killed = false;
    ASSERT_EQ(s->info().stale_entries_skipped, 0u);
    if (round == rounds) break;

    fs.crash_after(rng.uniform(120));
    for (int i = 0; i < 400; ++i) {
      ++stats->ops;
      if (rng.chance(1, 25)) {
        Status st = s->sync();
        if (st.ok()) {
          m.synced();
          continue;
        }
        ASSERT_TRUE(crash_error(st.code())) << st.to_string();
        break;
      }
      WriteBatch b;
      int n = rng.chance(1, 8) ? int(rng.range(2, 6)) : 1;
      Contents cur = m.current;
      for (int j = 0; j < n; ++j) {
        size_t before = b.size();
        w.add_op(b, cur);
        if (b.size() > before) apply_to(cur, b.ops().back(), 3);
      }
      if (b.empty()) continue;
      WriteOptions wo{rng.chance(1, 20)};
      bool durable = wo.sync;
      for (const auto& op : b.ops()) {
        if (op.erase) durable = true;
        for (const auto& u : op.updates) durable |= u.field != kApplied;
      }
      Status st = s->write_batch(b, wo);
      if (st.ok()) {
        m.written(b, durable);
        continue;
      }
      if (validation_error(st.code())) {
        ++stats->validation_errors;
        continue;
      }
      ASSERT_TRUE(crash_error(st.code())) << st.to_string();
      m.maybe = b.ops();
      break;
    }
    stats->compactions += s->info().compactions;
    // Down before the store goes away, so its close writes nothing (a kill).
    fs.crash_after(0);
    s.reset();  // joins the compaction thread; errors from a dead machine are expected
    ++stats->crash_points;
    if (rng.chance(1, 3) && fs.kill_process()) {
      ++stats->process_kills;
      process_killed = true;
    } else {
      fs.crash(rng);
    }
  }
}

template <typename M>
void run_model(const char* name, uint64_t seed_base, int iterations) {
  const uint64_t base = strata::test::test_seed(seed_base);
  Stats stats;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    M machine;
    run_iteration(machine, base + uint64_t(i), 4, i % 4 == 3, &stats);
    if (::testing::Test::HasFatalFailure()) return;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%s: %d iterations, %llu crash points (%llu process kills, +%llu during recovery), %llu "
      "ops, %llu compactions, %llu refused for capacity, %.1f s\n",
      name, iterations, (unsigned long long)stats.crash_points,
      (unsigned long long)stats.process_kills, (unsigned long long)stats.recovery_crashes,
      (unsigned long long)stats.ops, (unsigned long long)stats.compactions,
      (unsigned long long)stats.validation_errors, secs);
  // The workload must actually exercise what it claims to.
  EXPECT_GE(stats.crash_points, uint64_t(iterations) * 4);
  EXPECT_GT(stats.compactions, uint64_t(iterations));
  EXPECT_GT(stats.validation_errors, 0u);
}

TEST(SlotStoreCrash, RandomizedCrashPointsKeepEveryAcknowledgedWrite) {
  run_model<OrderedMachine>("ordered crashes", 0x5107, strata::test::scaled(700));
}

TEST(SlotStoreCrash, RandomizedCrashesWithReorderedSectorsKeepEveryAcknowledgedWrite) {
  run_model<ReorderMachine>("reordered crashes", 0x7e0d, strata::test::scaled(500));
}

}  // namespace
}  // namespace strata::slotstore
