// store_sync durability under simulated power loss (FaultFileSystem): three
// threads drive random stores, syncs and erases on their own servers while
// the "machine" goes down at a random write; after each crash (dropping,
// keeping a prefix of, or tearing unsynced writes) the reopened store must
// hold, for every server, a state the server really went through that is
// no older than the last one acknowledged as durable. So nothing
// acknowledged is lost, a deleted server never resurrects, and no term is
// ever paired with a vote from an earlier term (every state in the history
// has its vote cleared on term change). The WAL is tiny, so compactions
// (background or inline) are cut by the crashes too. Damage, unlike a
// crash, is refused rather than rolled back (RaftMetaCorruption).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "common/fault_fs.h"
#include "common/random.h"
#include "raftmeta/inspect.h"
#include "raftmeta/raft_meta.h"
#include "raftmeta/store_options.h"
#include "raftmeta_test_util.h"
#include "support/temp_dir.h"

namespace strata::raftmeta {
namespace {

using namespace test;

constexpr int kThreads = 3;
constexpr int kServersPerThread = 5;

std::string id_of(int t, int i) {
  return "srv-" + std::to_string(t) + "-" + std::to_string(i);
}

// One thread's random workload on its own servers; stops at the first
// error (the machine went down).
void drive(RaftMeta& m, int t, uint64_t seed, int ops, std::vector<History>* hist) {
  Random rng(seed);
  auto record = [&](int i) {
    State now = m.fetch_all(id_of(t, i));
    History& h = (*hist)[size_t(i)];
    if (!(now == h.states.back())) h.states.push_back(now);
  };
  auto ack_all = [&] {
    for (History& h : *hist) h.acked = h.states.size() - 1;
  };
  for (int n = 0; n < ops; ++n) {
    const int i = int(rng.uniform(kServersPerThread));
    const std::string id = id_of(t, i);
    const State cur = (*hist)[size_t(i)].states.back();
    const uint64_t term = cur && cur->current_term ? *cur->current_term : 0;
    Status s;
    bool sync = false;
    switch (rng.uniform(10)) {
      case 0:
      case 1:  // Ra's election step: new term (async), then the vote (sync)
        s = m.store(id, Field::current_term, term + 1);
        record(i);
        if (!s.ok()) break;
        s = m.store_sync(id, Field::voted_for,
                         rng.chance(1, 3) ? VotedFor::bare("cand" + std::to_string(n))
                                          : VotedFor::server("cand" + std::to_string(n),
                                                             "node" + std::to_string(n % 4)));
        sync = true;
        break;
      case 2:
        s = m.store_sync(id, Field::current_term, term + 1);
        sync = true;
        break;
      case 3:
      case 4:
      case 5:
      case 6:
        s = m.store(id, Field::last_applied, uint64_t(n));
        break;
      case 7:
        s = m.store_sync(id, Field::last_applied, uint64_t(n));
        sync = true;
        break;
      case 8:
        if (rng.chance(1, 2)) {
          s = m.erase_sync(id);
          sync = true;
        } else {
          s = m.erase(id);
        }
        break;
      case 9:
        s = m.sync();
        sync = true;
        break;
    }
    record(i);
    if (!s.ok()) return;
    if (sync) ack_all();
  }
}

TEST(RaftMetaCrash, StoreSyncDurabilityUnderPowerLoss) {
  const uint64_t seed = strata::test::test_seed(2024);
  // Every crash makes the store fail-stop loudly: keep the output readable.
  QuietLogs quiet;
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rng(seed);
  FaultFileSystem fs;
  Options o = small_options(32, 64, 8 * 1024);
  std::vector<std::vector<History>> hist(kThreads, std::vector<History>(kServersPerThread));
  for (auto& th : hist) {
    for (auto& h : th) h.states = {std::nullopt};
  }
  uint64_t crashes_mid_run = 0, compactions = 0;
  const int rounds = strata::test::scaled(40);
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    o.background_compaction = round % 2 == 0;
    auto opened = RaftMeta::open(fs, "/raft", o);
    ASSERT_TRUE(opened.ok()) << opened.error().to_string();
    auto& m = **opened;
    // What survived the last crash: a state each server went through, no
    // older than its last acknowledged one.
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < kServersPerThread; ++i) {
        History& h = hist[size_t(t)][size_t(i)];
        const State got = m.fetch_all(id_of(t, i));
        bool found = false;
        for (size_t k = h.acked; k < h.states.size() && !found; ++k) found = h.states[k] == got;
        if (!found) {
          std::string trace;
          for (size_t k = 0; k < h.states.size(); ++k) {
            trace += (k == h.acked ? "\n  * " : "\n    ") + show(h.states[k]);
          }
          FAIL() << id_of(t, i) << " recovered as [" << show(got)
                 << "], not a state at or after the acknowledged one (*):" << trace;
        }
        h.states = {got};
        h.acked = 0;
      }
    }
    // Run the threads; cut the power at a random upcoming write.
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back(drive, std::ref(m), t, rng.next(), int(rng.range(20, 300)),
                           &hist[size_t(t)]);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng.uniform(3000)));
    fs.crash_after(rng.uniform(40));
    for (auto& th : threads) th.join();
    if (fs.is_down()) ++crashes_mid_run;
    compactions += m.stats().store.compactions;
    opened->reset();  // close: fails if the machine is down, which is fine
    CrashOptions c;
    c.seed = rng.next();
    c.keep_random_prefix = rng.chance(1, 2);
    c.tear = rng.chance(1, 2);
    c.random_dir_entries = rng.chance(1, 2);
    fs.crash(c);
  }
  RecordProperty("crashes_mid_run", int(crashes_mid_run));
  EXPECT_GT(crashes_mid_run, uint64_t(rounds) / 4) << "the crashes rarely hit a running workload";
  EXPECT_GT(compactions, 0u);
}

// Damage is not a crash. A bit flipped in the middle of the live WAL half,
// in front of changes that were fsynced, used to end replay there: the
// servers after it silently went back to older states (an old term, an
// old vote). Now the open for writing and inspect both refuse, naming the
// file and the damaged entry's position, and change nothing.
TEST(RaftMetaCorruption, WalDamageBeforeDurableChangesRefusesToOpen) {
  strata::test::TempDir dir;
  {
    auto m = RaftMeta::open(posix_fs(), dir.path(), small_options());
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    for (uint64_t i = 0; i < 20; ++i) {
      const std::string id = "srv-" + std::to_string(i);
      ASSERT_OK((*m)->store_sync(id, Field::current_term, i + 1));
      ASSERT_OK((*m)->store_sync(id, Field::voted_for, VotedFor::server("cand", "node1")));
    }
  }
  const std::string store = store_path(dir.path());
  const uint64_t at = damage_middle_of_live_wal(posix_fs(), store);
  ASSERT_GT(at, 0u);
  const Bytes damaged = file_bytes(posix_fs(), store);
  const std::string where = store + " position " + std::to_string(at) + ":";
  auto m = RaftMeta::open(posix_fs(), dir.path(), small_options());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.code(), Errc::corrupt);
  EXPECT_NE(m.error().message.find(where), std::string::npos) << m.error().message;
  auto r = inspect(posix_fs(), dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::corrupt);
  EXPECT_NE(r.error().message.find(where), std::string::npos) << r.error().message;
  EXPECT_EQ(file_bytes(posix_fs(), store), damaged);
}

}  // namespace
}  // namespace strata::raftmeta
