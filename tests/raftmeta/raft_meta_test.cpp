// RaftMeta's API and the named cases of issue 6 that need no DETS file:
// each test uses its own directory (or its own FaultFileSystem).
#include "raftmeta/raft_meta.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "common/fault_fs.h"
#include "raftmeta_test_util.h"
#include "support/temp_dir.h"

namespace strata::raftmeta {
namespace {

using namespace test;
using namespace std::chrono_literals;

class RaftMetaTest : public ::testing::Test {
 protected:
  std::unique_ptr<RaftMeta> open(const Options& o, FileSystem* fs = nullptr) {
    auto m = RaftMeta::open(fs ? *fs : posix_fs(), dir_.path(), o);
    EXPECT_TRUE(m.ok()) << m.error().to_string();
    return m.ok() ? std::move(m).value() : nullptr;
  }
  // With a group commit window of 1 s, on a file layer whose every fsync
  // takes `fsync` (a hold lasts at most as long as the last fsync took).
  std::unique_ptr<RaftMeta> open_with_slow_fsyncs(FaultFileSystem* fs,
                                                  std::chrono::milliseconds fsync) {
    Options o = small_options();
    o.group_commit_window = 1s;
    auto m = open(o, fs);
    fs->fail_when([fsync](const FaultOp& op) {
      if (op.kind == FaultOp::Kind::sync) std::this_thread::sleep_for(fsync);
      return false;
    });
    return m;
  }
  strata::test::TempDir dir_;
};

TEST_F(RaftMetaTest, StoresAndFetchesEveryFieldAndVoteForm) {
  auto m = open(small_options());
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->fetch("s1", Field::current_term).has_value());
  EXPECT_EQ(m->fetch("s1", Field::current_term, uint64_t(0)), FieldValue(uint64_t(0)));
  ASSERT_OK(m->store("s1", Field::current_term, uint64_t(3)));
  ASSERT_OK(m->store("s1", Field::last_applied, uint64_t(17)));
  ASSERT_OK(m->store_sync("s1", Field::voted_for, VotedFor::server("ra_1", "rabbit@a")));
  ASSERT_OK(m->store_sync("s2", Field::voted_for, VotedFor::bare("legacy")));
  // A value is visible to fetch as soon as store returns.
  EXPECT_EQ(u64(m->fetch("s1", Field::current_term)), 3u);
  EXPECT_EQ(u64(m->fetch("s1", Field::last_applied)), 17u);
  EXPECT_EQ(vote(m->fetch("s1", Field::voted_for)), VotedFor::server("ra_1", "rabbit@a"));
  EXPECT_EQ(vote(m->fetch("s2", Field::voted_for)), VotedFor::bare("legacy"));
  // s2 never stored a term: absent, and the default when asked with one.
  EXPECT_FALSE(m->fetch("s2", Field::current_term).has_value());
  EXPECT_EQ(m->fetch("s2", Field::last_applied, uint64_t(0)), FieldValue(uint64_t(0)));
  auto all = m->fetch_all("s1");
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->to_string(), "term=3 voted_for={ra_1, rabbit@a} last_applied=17");
  EXPECT_EQ(m->list().size(), 2u);
  EXPECT_EQ(m->stats().servers, 2u);
}

// One process at a time owns a node's Raft metadata: a second open of the
// directory is refused by name until the first closes.
TEST_F(RaftMetaTest, SecondOpenOfTheDirectoryIsRefusedUntilClose) {
  auto m = open(small_options());
  ASSERT_TRUE(m);
  ASSERT_OK(m->store_sync("s1", Field::current_term, uint64_t{7}));
  auto second = RaftMeta::open(posix_fs(), dir_.path(), small_options());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), Errc::conflict);
  EXPECT_NE(second.error().message.find(dir_.path()), std::string::npos)
      << second.error().to_string();
  ASSERT_OK(m->close());
  auto again = open(small_options());
  ASSERT_TRUE(again);
  EXPECT_EQ(u64(again->fetch("s1", Field::current_term)), uint64_t{7});
}

TEST_F(RaftMetaTest, VoteClearedOnTermChangeSurvivesRestart) {
  {
    auto m = open(small_options());
    ASSERT_TRUE(m);
    ASSERT_OK(m->store_sync("s1", Field::current_term, uint64_t(1)));
    ASSERT_OK(m->store_sync("s1", Field::voted_for, VotedFor::server("cand", "n1")));
    ASSERT_OK(m->store_sync("s2", Field::current_term, uint64_t(1)));
    ASSERT_OK(m->store_sync("s2", Field::voted_for, VotedFor::bare("cand")));
    ASSERT_OK(m->store_sync("s1", Field::current_term, uint64_t(2)));
    // Async this time: the clear must persist through close as well.
    ASSERT_OK(m->store("s2", Field::current_term, uint64_t(2)));
    EXPECT_FALSE(m->fetch("s1", Field::voted_for).has_value());
    EXPECT_FALSE(m->fetch("s2", Field::voted_for).has_value());
  }
  auto m = open(small_options());
  ASSERT_TRUE(m);
  for (const char* id : {"s1", "s2"}) {
    EXPECT_EQ(u64(m->fetch(id, Field::current_term)), 2u) << id;
    EXPECT_FALSE(m->fetch(id, Field::voted_for).has_value()) << id << ": a stale vote came back";
  }
}

TEST_F(RaftMetaTest, BareNameVoteRoundTripsAsBareAcrossRestart) {
  {
    auto m = open(small_options());
    ASSERT_TRUE(m);
    ASSERT_OK(m->store_sync("s1", Field::voted_for, VotedFor::bare("ra_server_1")));
    ASSERT_OK(m->store_sync("s2", Field::voted_for, VotedFor::server("ra_server_1", "n")));
  }
  auto m = open(small_options());
  ASSERT_TRUE(m);
  EXPECT_EQ(vote(m->fetch("s1", Field::voted_for)), VotedFor::bare("ra_server_1"));
  EXPECT_EQ(vote(m->fetch("s2", Field::voted_for)), VotedFor::server("ra_server_1", "n"));
}

TEST_F(RaftMetaTest, DeletePersistsAcrossRestartSyncForm) {
  {
    auto m = open(small_options());
    ASSERT_TRUE(m);
    ASSERT_OK(m->store_sync("gone", Field::current_term, uint64_t(9)));
    ASSERT_OK(m->store_sync("gone", Field::voted_for, VotedFor::server("a", "n")));
    ASSERT_OK(m->store_sync("kept", Field::current_term, uint64_t(4)));
    ASSERT_OK(m->erase_sync("gone"));
    EXPECT_FALSE(m->fetch_all("gone").has_value());
    ASSERT_OK(m->erase_sync("never-existed"));  // like Ra's delete: no error
  }
  auto m = open(small_options());
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->fetch_all("gone").has_value()) << "a deleted server resurrected";
  EXPECT_EQ(u64(m->fetch("kept", Field::current_term)), 4u);
  EXPECT_EQ(m->stats().servers, 1u);
}

TEST_F(RaftMetaTest, DeletePersistsAcrossRestartAsyncForm) {
  {
    auto m = open(small_options());
    ASSERT_TRUE(m);
    ASSERT_OK(m->store_sync("gone", Field::current_term, uint64_t(9)));
    ASSERT_OK(m->store("gone", Field::last_applied, uint64_t(5)));
    ASSERT_OK(m->erase("gone"));
    // Created and deleted before the writer ever saw it.
    ASSERT_OK(m->store("brief", Field::current_term, uint64_t(1)));
    ASSERT_OK(m->erase("brief"));
  }
  auto m = open(small_options());
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->fetch_all("gone").has_value()) << "a deleted server resurrected";
  EXPECT_FALSE(m->fetch_all("brief").has_value());
  // The same id again starts from nothing, not from the deleted values.
  ASSERT_OK(m->store_sync("gone", Field::last_applied, uint64_t(1)));
  EXPECT_FALSE(m->fetch("gone", Field::current_term).has_value());
}

TEST_F(RaftMetaTest, DeletedServersSlotIsReusedSafely) {
  Options o = small_options(4);
  {
    auto m = open(o);
    ASSERT_TRUE(m);
    for (const char* id : {"a", "b", "c", "d"}) {
      ASSERT_OK(m->store_sync(id, Field::current_term, uint64_t(7)));
      ASSERT_OK(m->store_sync(id, Field::voted_for, VotedFor::server("x", "n1")));
    }
    EXPECT_EQ(m->store("e", Field::current_term, uint64_t(1)).code(), Errc::store_full);
    ASSERT_OK(m->erase("b"));
    // Takes b's slot; in the same batch as b's erase if the writer is slow.
    ASSERT_OK(m->store_sync("e", Field::last_applied, uint64_t(2)));
    EXPECT_EQ(m->fetch_all("e")->to_string(), "term=- voted_for=none last_applied=2");
  }
  auto m = open(o);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->fetch_all("b").has_value());
  ASSERT_TRUE(m->fetch_all("e").has_value());
  EXPECT_EQ(m->fetch_all("e")->to_string(), "term=- voted_for=none last_applied=2");
  EXPECT_EQ(m->fetch_all("a")->to_string(), "term=7 voted_for={x, n1} last_applied=-");
}

TEST_F(RaftMetaTest, StoreFullIsAControlledErrorAndTheStoreGoesOn) {
  auto m = open(small_options(3));
  ASSERT_TRUE(m);
  for (const char* id : {"a", "b", "c"}) ASSERT_OK(m->store(id, Field::current_term, uint64_t(1)));
  Status s = m->store_sync("d", Field::current_term, uint64_t(1));
  EXPECT_EQ(s.code(), Errc::store_full);
  EXPECT_NE(s.error().message.find("\"d\""), std::string::npos) << s.to_string();
  EXPECT_FALSE(m->fetch_all("d").has_value());
  EXPECT_EQ(m->stats().capacity_errors, 1u);
  ASSERT_OK(m->store_sync("a", Field::current_term, uint64_t(2)));  // existing servers: fine
}

TEST_F(RaftMetaTest, StringTableFullIsAControlledError) {
  Options o = small_options(16, 3);
  {
    auto m = open(o);
    ASSERT_TRUE(m);
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK(m->store_sync("s" + std::to_string(i), Field::voted_for,
                              VotedFor::server("c", "node" + std::to_string(i))));
    }
    // A known node is fine; a fourth distinct one is refused, with the
    // server named, and nothing about s9 changes.
    ASSERT_OK(m->store_sync("s9", Field::current_term, uint64_t(5)));
    ASSERT_OK(m->store_sync("s9", Field::voted_for, VotedFor::server("c", "node1")));
    Status s = m->store_sync("s9", Field::voted_for, VotedFor::server("c", "node3"));
    EXPECT_EQ(s.code(), Errc::string_table_full);
    EXPECT_NE(s.error().message.find("node3"), std::string::npos) << s.to_string();
    EXPECT_EQ(vote(m->fetch("s9", Field::voted_for)), VotedFor::server("c", "node1"));
    EXPECT_EQ(m->store("new", Field::voted_for, VotedFor::server("c", "node4")).code(),
              Errc::string_table_full);
    EXPECT_FALSE(m->fetch_all("new").has_value());
    // Bare names and other fields need no node name.
    ASSERT_OK(m->store_sync("s9", Field::voted_for, VotedFor::bare("c")));
    EXPECT_EQ(m->stats().capacity_errors, 2u);
  }
  auto m = open(o);
  ASSERT_TRUE(m);
  EXPECT_EQ(vote(m->fetch("s9", Field::voted_for)), VotedFor::bare("c"));
  EXPECT_EQ(vote(m->fetch("s2", Field::voted_for)), VotedFor::server("c", "node2"));
  EXPECT_EQ(m->store("x", Field::voted_for, VotedFor::server("c", "node5")).code(),
            Errc::string_table_full);
}

TEST_F(RaftMetaTest, InvalidInputIsRefusedAndChangesNothing) {
  Options o = small_options();
  o.store.bounds = Bounds{8, 6, 4};
  auto m = open(o);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->store("", Field::current_term, uint64_t(1)).code(), Errc::invalid_argument);
  EXPECT_EQ(m->store("123456789", Field::current_term, uint64_t(1)).code(), Errc::key_too_long);
  EXPECT_EQ(m->store("a", Field::current_term, VotedFor::bare("x")).code(), Errc::invalid_argument);
  EXPECT_EQ(m->store("a", Field::voted_for, VotedFor::bare("1234567")).code(),
            Errc::invalid_argument);
  EXPECT_EQ(m->store("a", Field::voted_for, VotedFor::server("n", "12345")).code(),
            Errc::invalid_argument);
  EXPECT_EQ(m->list().size(), 0u);
}

// The three kinds of write and what each costs in fsyncs.
TEST_F(RaftMetaTest, PureLastAppliedUpdateIsWalOnlyAndSyncCallsFsyncIt) {
  auto m = open(small_options());
  ASSERT_TRUE(m);
  ASSERT_OK(m->store_sync("s1", Field::current_term, uint64_t(1)));
  ASSERT_OK(m->store_sync("s1", Field::voted_for, VotedFor::server("a", "n")));
  const uint64_t fsyncs = m->stats().store.fsyncs;
  const uint64_t ops = m->stats().ops_written;
  for (uint64_t i = 1; i <= 50; ++i) ASSERT_OK(m->store("s1", Field::last_applied, i));
  ASSERT_TRUE(eventually([&] { return m->stats().store.unsynced_bytes > 0; }));
  // Written to the WAL (term and vote not rewritten: they would force an
  // fsync), not fsynced.
  EXPECT_EQ(m->stats().store.fsyncs, fsyncs);
  EXPECT_LE(m->stats().ops_written - ops, 50u);
  // A sync call fsyncs it, whatever the field.
  ASSERT_OK(m->store_sync("s1", Field::last_applied, uint64_t(51)));
  EXPECT_EQ(m->stats().store.fsyncs, fsyncs + 1);
  EXPECT_EQ(m->stats().store.unsynced_bytes, 0u);
  // Storing a value equal to the stored one writes nothing and, being
  // already durable, returns at once.
  const uint64_t batches = m->stats().batches;
  ASSERT_OK(m->store_sync("s1", Field::current_term, uint64_t(1)));
  EXPECT_EQ(m->stats().batches, batches);
}

// On a FaultFileSystem, a crash shows what was really fsynced.
TEST_F(RaftMetaTest, LastAppliedIsDurableOnlyAfterSyncOrThePeriodicFsync) {
  FaultFileSystem fs;
  Options o = small_options();
  o.applied_sync_interval = std::chrono::hours(1);
  {
    auto m = open(o, &fs);
    ASSERT_TRUE(m);
    ASSERT_OK(m->store_sync("s1", Field::current_term, uint64_t(1)));
    ASSERT_OK(m->store("s1", Field::last_applied, uint64_t(5)));
    ASSERT_TRUE(eventually([&] { return m->stats().store.unsynced_bytes > 0; }));
    fs.crash_after(0);  // power off now, with s1's last_applied in the page cache
  }
  fs.crash();
  {
    auto m = open(o, &fs);
    ASSERT_TRUE(m);
    EXPECT_EQ(u64(m->fetch("s1", Field::current_term)), 1u);
    EXPECT_FALSE(m->fetch("s1", Field::last_applied).has_value())
        << "a pure last_applied write was fsynced";
    ASSERT_OK(m->store("s1", Field::last_applied, uint64_t(6)));
    ASSERT_OK(m->sync());
    fs.crash_after(0);
  }
  fs.crash();
  o.applied_sync_interval = std::chrono::milliseconds(50);
  {
    auto m = open(o, &fs);
    ASSERT_TRUE(m);
    EXPECT_EQ(u64(m->fetch("s1", Field::last_applied)), 6u);
    ASSERT_OK(m->store("s1", Field::last_applied, uint64_t(7)));
    ASSERT_TRUE(eventually([&] { return m->stats().periodic_syncs >= 1; }));
    fs.crash_after(0);
  }
  fs.crash();
  auto m = open(o, &fs);
  ASSERT_TRUE(m);
  EXPECT_EQ(u64(m->fetch("s1", Field::last_applied)), 7u) << "the periodic fsync did not happen";
}

// Concurrent store_sync callers share fsyncs, and repeated stores of one
// server are merged into one write.
TEST_F(RaftMetaTest, ConcurrentCallsAreMergedAndShareOneFsync) {
  auto m = open(small_options(256));
  ASSERT_TRUE(m);
  const int threads = 16, rounds = 20;
  const uint64_t fsyncs0 = m->stats().store.fsyncs;
  std::vector<std::thread> ts;
  std::atomic<int> errors{0};
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      const std::string id = "srv" + std::to_string(t);
      for (uint64_t r = 1; r <= rounds; ++r) {
        if (!m->store(id, Field::current_term, r).ok()) ++errors;
        if (!m->store_sync(id, Field::voted_for, VotedFor::server("c" + std::to_string(r), "n"))
                 .ok())
          ++errors;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors.load(), 0);
  const uint64_t fsyncs = m->stats().store.fsyncs - fsyncs0;
  EXPECT_LT(fsyncs, uint64_t(threads * rounds)) << "no group commit";
  // Merging per server: many stores of one id, one sync.
  const uint64_t ops0 = m->stats().ops_written;
  for (uint64_t i = 0; i < 2000; ++i) ASSERT_OK(m->store("hot", Field::last_applied, i));
  ASSERT_OK(m->sync());
  EXPECT_LT(m->stats().ops_written - ops0, 2000u);
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(vote(m->fetch("srv" + std::to_string(t), Field::voted_for)),
              VotedFor::server("c" + std::to_string(rounds), "n"));
  }
}

// store/erase with a sequence number and await_progress: what the Erlang
// binding's reply thread waits on instead of one sync() per round.
TEST_F(RaftMetaTest, AwaitProgressReportsDurabilityBySequenceNumber) {
  Options o = small_options();
  o.applied_sync_interval = std::chrono::hours(1);
  auto m = open(o);
  ASSERT_TRUE(m);
  uint64_t s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  ASSERT_OK(m->store("a", Field::current_term, uint64_t(1), &s1));
  ASSERT_OK(m->store("a", Field::last_applied, uint64_t(5), &s2));
  EXPECT_LT(s1, s2);
  // Storing the stored value changes nothing: the latest change's number.
  ASSERT_OK(m->store("a", Field::current_term, uint64_t(1), &s3));
  EXPECT_EQ(s3, s2);
  DurableProgress p;
  // A last_applied change alone is not fsynced by the writer: asking for
  // it (want) is what makes it durable.
  while (p.durable_seq < s2) ASSERT_OK(m->await_progress(s2, &p));
  EXPECT_GE(p.durable_seq, s2);
  EXPECT_EQ(m->stats().store.unsynced_bytes, 0u);
  // Nothing more to wait for: returns at once, nothing changed.
  const DurableProgress before = p;
  ASSERT_OK(m->await_progress(s2, &p));
  EXPECT_EQ(p.durable_seq, before.durable_seq);
  ASSERT_OK(m->erase("a", &s4));
  EXPECT_GT(s4, s2);
  while (p.durable_seq < s4) ASSERT_OK(m->await_progress(s4, &p));
  EXPECT_EQ(p.failures, 0u);
  ASSERT_OK(m->close());
  EXPECT_EQ(m->await_progress(s4 + 1, &p).code(), Errc::closed);
}

// A fail-stop ends the wait with the fatal error, never with the change
// reported durable.
TEST_F(RaftMetaTest, AwaitProgressEndsWithTheFailStop) {
  FaultFileSystem fs;
  auto m = open(small_options(), &fs);
  ASSERT_TRUE(m);
  ASSERT_OK(m->store_sync("s1", Field::current_term, uint64_t(1)));
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::sync; });
  uint64_t seq = 0;
  ASSERT_OK(m->store("s1", Field::current_term, uint64_t(2), &seq));
  DurableProgress p;
  Status s;
  while (s.ok() && p.durable_seq < seq) s = m->await_progress(seq, &p);
  EXPECT_EQ(s.code(), Errc::fail_stopped) << s.to_string();
  EXPECT_LT(p.durable_seq, seq) << "a change was reported durable without its fsync";
}

// The Erlang binding's reply thread times out its callers itself: its wait
// must end at its deadline even while the writer is stuck in an fsync.
TEST_F(RaftMetaTest, AwaitProgressEndsAtItsDeadlineWhileAnFsyncHangs) {
  FaultFileSystem fs;
  auto m = open(small_options(), &fs);
  ASSERT_TRUE(m);
  ASSERT_OK(m->store_sync("s1", Field::current_term, uint64_t(1)));
  std::mutex mu;
  std::condition_variable cv;
  bool hang = true;
  std::atomic<bool> hanging{false};
  fs.fail_when([&](const FaultOp& op) {
    if (op.kind != FaultOp::Kind::sync) return false;
    std::unique_lock<std::mutex> l(mu);
    hanging = true;
    cv.wait(l, [&] { return !hang; });
    return false;
  });
  const auto release = [&] {
    {
      std::lock_guard<std::mutex> l(mu);
      hang = false;
    }
    cv.notify_all();
  };
  // Whatever fails below, the writer is released before the store closes.
  struct Releaser {
    std::function<void()> fn;
    ~Releaser() { fn(); }
  } releaser{release};
  uint64_t seq = 0;
  ASSERT_OK(m->store("s1", Field::current_term, uint64_t(2), &seq));
  // The writer fsyncs the term change as it writes it: there it hangs.
  ASSERT_TRUE(eventually([&] { return hanging.load(); }));
  DurableProgress p;
  ASSERT_OK(m->await_progress(seq, &p));  // what was durable before: at once
  ASSERT_LT(p.durable_seq, seq);
  const DurableProgress before = p;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_OK(m->await_progress(seq, &p, t0 + 100ms));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(p.durable_seq, before.durable_seq);
  EXPECT_EQ(p.failures, before.failures);
  EXPECT_LT(p.durable_seq, seq) << "durable while its fsync hangs";
  release();
  while (p.durable_seq < seq) ASSERT_OK(m->await_progress(seq, &p));
  fs.fail_when(nullptr);
  ASSERT_OK(m->close());
}

// The Erlang binding's store_sync callers are changes stored with a seq,
// all awaited by one thread: they count as sync callers, so a synced batch
// is held (at most the last fsync's duration) for as many of them as the
// last batch released, rather than fsynced for the first one back.
TEST_F(RaftMetaTest, ChangesStoredWithASeqCountAsSyncCallersForGroupCommit) {
  FaultFileSystem fs;
  auto m = open_with_slow_fsyncs(&fs, 50ms);
  ASSERT_TRUE(m);
  DurableProgress p;
  // 20 callers, then 5 of them: the second batch waits for the other 15
  // (who do not come) until the window ends.
  for (int callers : {20, 5}) {
    uint64_t want = 0;
    for (int i = 0; i < callers; ++i) {
      ASSERT_OK(m->store("s" + std::to_string(i), Field::current_term, uint64_t(callers), &want));
    }
    while (p.durable_seq < want) ASSERT_OK(m->await_progress(want, &p));
  }
  EXPECT_GE(m->stats().group_commit_holds, 1u);
  fs.fail_when(nullptr);
  ASSERT_OK(m->close());
}

// ... but the thread's own wait is not one more caller: a lone caller's
// batch is never held for it (it was, on most calls, before).
TEST_F(RaftMetaTest, ALoneCallerStoringWithASeqIsNeverHeld) {
  FaultFileSystem fs;
  auto m = open_with_slow_fsyncs(&fs, 5ms);
  ASSERT_TRUE(m);
  DurableProgress p;
  for (uint64_t term = 1; term <= 20; ++term) {
    uint64_t want = 0;
    ASSERT_OK(m->store("lone", Field::current_term, term, &want));
    // The binding's reply thread asks a moment after the store.
    std::this_thread::sleep_for(2ms);
    while (p.durable_seq < want) ASSERT_OK(m->await_progress(want, &p));
  }
  EXPECT_EQ(m->stats().group_commit_holds, 0u);
  fs.fail_when(nullptr);
  ASSERT_OK(m->close());
}

TEST_F(RaftMetaTest, CompactionCyclesUnderATinyWalKeepValues) {
  Options o = small_options(64, 16, 16 * 1024);
  std::map<std::string, std::pair<uint64_t, uint64_t>> want;  // term, applied
  {
    auto m = open(o);
    ASSERT_TRUE(m);
    for (uint64_t i = 0; i < uint64_t(strata::test::scaled(20000)); ++i) {
      const std::string id = "s" + std::to_string(i % 40);
      ASSERT_OK(m->store(id, Field::last_applied, i));
      want[id].second = i;
      if (i % 97 == 0) {
        ASSERT_OK(m->store_sync(id, Field::current_term, i));
        ASSERT_OK(
            m->store_sync(id, Field::voted_for, VotedFor::server(id, "n" + std::to_string(i % 3))));
        want[id].first = i;
      }
    }
    ASSERT_OK(m->sync());
    EXPECT_GE(m->stats().store.compactions, 3u);
    for (const auto& [id, v] : want) {
      EXPECT_EQ(u64(m->fetch(id, Field::last_applied)), v.second);
    }
  }
  auto m = open(o);
  ASSERT_TRUE(m);
  for (const auto& [id, v] : want) {
    EXPECT_EQ(u64(m->fetch(id, Field::last_applied)), v.second) << id;
    if (v.first) {
      EXPECT_EQ(u64(m->fetch(id, Field::current_term)), v.first) << id;
    }
  }
}

// A compaction held up makes the writer wait, so the changes made meanwhile
// pile up into one batch far larger than the WAL: it must complete.
TEST_F(RaftMetaTest, OversizedBatchCompletes) {
  Options o = small_options(3000, 16, 32 * 1024);
  std::atomic<bool> hold{true};
  std::atomic<int> held{0};
  o.compaction_hook = [&](slotstore::CompactionPoint p) -> Status {
    if (p == slotstore::CompactionPoint::started && hold) {
      ++held;
      while (hold) std::this_thread::sleep_for(1ms);
    }
    return Status::OK();
  };
  const std::string name(100, 'v');
  {
    auto m = open(o);
    ASSERT_TRUE(m);
    std::thread bulk([&] {
      for (int i = 0; i < 2500; ++i) {
        EXPECT_OK(m->store("server-" + std::to_string(i), Field::voted_for,
                           VotedFor::server(name + std::to_string(i), "n")));
      }
    });
    bulk.join();
    ASSERT_TRUE(eventually([&] { return held.load() > 0; }));
    hold = false;
    ASSERT_OK(m->sync());
    // 2500 puts of ~150 bytes: about ten times the WAL.
    EXPECT_GT(m->stats().largest_batch * 150, o.store.wal_bytes) << m->stats().largest_batch;
    EXPECT_GT(m->stats().store.compactions, 2u);
  }
  auto m = open(o);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->stats().servers, 2500u);
  for (int i = 0; i < 2500; i += 7) {
    EXPECT_EQ(vote(m->fetch("server-" + std::to_string(i), Field::voted_for)),
              VotedFor::server(name + std::to_string(i), "n"));
  }
}

TEST_F(RaftMetaTest, CompactionFailureIsAbortedAndTheStoreContinues) {
  FaultFileSystem fs;
  Options o = small_options(64, 16, 16 * 1024);
  std::atomic<int> failures_left{4};
  o.compaction_hook = [&](slotstore::CompactionPoint p) -> Status {
    if (p == slotstore::CompactionPoint::before_sync && failures_left.fetch_sub(1) > 0) {
      return Error(Errc::io, "injected compaction failure");
    }
    return Status::OK();
  };
  const uint64_t last = 6000;
  int sync_errors = 0;
  {
    auto m = open(o, &fs);
    ASSERT_TRUE(m);
    for (uint64_t i = 1; i <= last; ++i) {
      ASSERT_OK(m->store("s" + std::to_string(i % 20), Field::last_applied, i));
      // May report a failed compaction (the WAL was full); the changes stay
      // pending and are retried.
      if (i % 10 == 0 && !m->sync().ok()) ++sync_errors;
    }
    ASSERT_TRUE(eventually([&] { return m->sync().ok(); }));
    auto st = m->stats();
    EXPECT_GE(st.store.compactions_failed, 1u);
    EXPECT_GE(st.store.compactions, 1u);
    EXPECT_FALSE(st.store.fail_stopped);
    EXPECT_NE(st.store.last_compaction_error.find("injected"), std::string::npos);
    fs.crash_after(0);
  }
  fs.crash();
  auto m = open(o, &fs);
  ASSERT_TRUE(m);
  for (uint64_t i = last - 19; i <= last; ++i) {
    EXPECT_EQ(u64(m->fetch("s" + std::to_string(i % 20), Field::last_applied)), i);
  }
  RecordProperty("sync_errors", sync_errors);
}

TEST_F(RaftMetaTest, BackpressureWhileCompactionIsSlowLosesNothing) {
  FaultFileSystem fs;
  Options o = small_options(64, 16, 16 * 1024);
  o.compaction_hook = [&](slotstore::CompactionPoint p) -> Status {
    if (p == slotstore::CompactionPoint::started) std::this_thread::sleep_for(20ms);
    return Status::OK();
  };
  {
    auto m = open(o, &fs);
    ASSERT_TRUE(m);
    for (uint64_t i = 1; i <= 2000; ++i) {
      ASSERT_OK(m->store("s" + std::to_string(i % 64), Field::last_applied, i));
      if (i % 64 == 0) ASSERT_OK(m->sync());
    }
    ASSERT_OK(m->sync());
    EXPECT_GE(m->stats().store.compaction_waits, 1u);
    fs.crash_after(0);
  }
  fs.crash();
  auto m = open(o, &fs);
  ASSERT_TRUE(m);
  for (uint64_t i = 2000 - 63; i <= 2000; ++i) {
    EXPECT_EQ(u64(m->fetch("s" + std::to_string(i % 64), Field::last_applied)), i);
  }
}

// A compaction that would run for seconds is cut at the shutdown budget;
// nothing is lost (the WAL half is compacted at the next open).
TEST_F(RaftMetaTest, ShutdownWaitsForCompactionWithinItsBudget) {
  Options o = small_options(4000, 16, 64 * 1024);
  o.store.compaction_buffer_bytes = 4096;
  o.shutdown_compaction_budget = 300ms;
  std::atomic<bool> slow{false};
  o.compaction_hook = [&](slotstore::CompactionPoint p) -> Status {
    if (slow && p == slotstore::CompactionPoint::before_write) std::this_thread::sleep_for(50ms);
    return Status::OK();
  };
  {
    auto m = open(o);
    ASSERT_TRUE(m);
    slow = true;
    for (int i = 0; i < 3000 && !m->stats().store.compacting; ++i) {
      ASSERT_OK(m->store("s" + std::to_string(i), Field::last_applied, uint64_t(i)));
      if (i % 100 == 99) ASSERT_OK(m->sync());
    }
    ASSERT_TRUE(eventually([&] { return m->stats().store.compacting; }));
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_OK(m->close());
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, 300ms + 1s) << "close waited past its budget";
    EXPECT_EQ(m->store("x", Field::current_term, uint64_t(1)).code(), Errc::closed);
    EXPECT_OK(m->close());  // idempotent
  }
  slow = false;
  auto m = open(o);
  ASSERT_TRUE(m);
  EXPECT_GT(m->stats().servers, 100u);
  for (const auto& [id, meta] : m->list()) {
    EXPECT_EQ(std::to_string(*meta.last_applied), id.substr(1));
  }
}

TEST_F(RaftMetaTest, FsyncFailureIsFatalAndNeverAcknowledged) {
  FaultFileSystem fs;
  auto m = open(small_options(), &fs);
  ASSERT_TRUE(m);
  ASSERT_OK(m->store_sync("s1", Field::current_term, uint64_t(1)));
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::sync; });
  std::vector<std::thread> ts;
  std::atomic<int> ok{0}, stopped{0};
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      Status s = m->store_sync("w" + std::to_string(t), Field::current_term, uint64_t(2));
      (s.ok() ? ok : stopped) += 1;
      EXPECT_TRUE(s.ok() || s.code() == Errc::fail_stopped) << s.to_string();
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), 0) << "a store_sync was acknowledged without an fsync";
  EXPECT_EQ(m->store("s1", Field::last_applied, uint64_t(3)).code(), Errc::fail_stopped);
  EXPECT_EQ(m->sync().code(), Errc::fail_stopped);
  EXPECT_EQ(u64(m->fetch("s1", Field::current_term)), 1u);  // readers still answer
  EXPECT_EQ(m->close().code(), Errc::fail_stopped);
  m.reset();
  fs.fail_when(nullptr);
  fs.crash();
  m = open(small_options(), &fs);
  ASSERT_TRUE(m);
  EXPECT_EQ(u64(m->fetch("s1", Field::current_term)), 1u);
}

TEST_F(RaftMetaTest, ExistingStoreKeepsItsCapacityAndBounds) {
  {
    auto m = open(small_options(8, 4));
    ASSERT_TRUE(m);
    ASSERT_OK(m->store_sync("a", Field::current_term, uint64_t(1)));
  }
  Options bigger = small_options(100, 50);
  bigger.store.bounds = Bounds{200, 200, 200};
  auto m = open(bigger);
  ASSERT_TRUE(m);
  auto st = m->stats();
  EXPECT_EQ(st.capacity, 8u);
  EXPECT_EQ(st.node_capacity, 4u);
  EXPECT_EQ(st.bounds, small_options().store.bounds);
}

TEST_F(RaftMetaTest, AnotherSlotstoreIsNotMistakenForARaftmetaStore) {
  {
    slotstore::Schema s;
    s.fields = {{"epoch", slotstore::FieldType::u64(), slotstore::Frequency::low}};
    auto other = slotstore::SlotStore::open(posix_fs(), store_path(dir_.path()), s);
    ASSERT_TRUE(other.ok()) << other.error().to_string();
  }
  auto m = RaftMeta::open(posix_fs(), dir_.path(), small_options());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.code(), Errc::schema_mismatch);
  EXPECT_NE(m.error().message.find("not a raftmeta store"), std::string::npos);
}

}  // namespace
}  // namespace strata::raftmeta
