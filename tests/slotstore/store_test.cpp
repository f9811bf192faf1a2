// The SlotStore API: round trips, partial updates, clears, fold, durability
// classes, group commit, read-only opens and open errors.
#include <atomic>
#include <thread>

#include "slotstore_test_util.h"
#include "support/temp_dir.h"

namespace strata::slotstore {
namespace {

using namespace test;

TEST(SlotStore, RoundTripOnDiskAcrossReopen) {
  strata::test::TempDir dir;
  const std::string path = dir.sub("meta.slots");
  {
    auto s = must_open(posix_fs(), path, raft_schema(), small_options());
    ASSERT_TRUE(s);
    ASSERT_OK(s->put("uid-1", {set(kTerm, Value::u64(3)), set(kVote, vote("srv", "n1@host")),
                               set(kApplied, Value::u64(99))}));
    ASSERT_OK(s->put("uid-2", {set(kApplied, Value::u64(7))}));
    ASSERT_OK(s->close());
  }
  auto s = must_open(posix_fs(), path, raft_schema(), small_options());
  ASSERT_TRUE(s);
  auto r1 = s->read("uid-1");
  ASSERT_OK(r1);
  EXPECT_EQ((*r1)[kTerm], Value::u64(3));
  EXPECT_EQ((*r1)[kVote], vote("srv", "n1@host"));
  EXPECT_EQ((*r1)[kApplied], Value::u64(99));
  auto r2 = s->read("uid-2");
  ASSERT_OK(r2);
  EXPECT_FALSE((*r2)[kTerm].has_value());
  EXPECT_FALSE((*r2)[kVote].has_value());
  EXPECT_EQ((*r2)[kApplied], Value::u64(7));
  EXPECT_EQ(s->info().slots_used, 2u);
  EXPECT_EQ(s->info().strings_used, 2u);
}

// Two writers on one file would overwrite each other's records and WAL: the
// second is refused (in this process or another; see common/file_lock.h),
// readers are not, and close lets the next writer in.
// A creation that fails part-way (a full disk) names the file and its size
// and leaves nothing behind — no .creating file to fill the disk for the
// next attempt, which then succeeds.
TEST(SlotStore, AFailedCreationLeavesNothingBehind) {
  FaultFileSystem fs;
  int writes = 0;
  fs.fail_when(
      [&](const FaultOp& op) {
        return op.kind == FaultOp::Kind::write && op.path == "/m.creating" && ++writes > 3;
      },
      Errc::io);
  auto r = SlotStore::open(fs, "/m", raft_schema(), small_options(64, 64, 1 << 20));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("creating slotstore /m ("), std::string::npos)
      << r.error().message;
  EXPECT_FALSE(exists(fs, "/m.creating"));
  EXPECT_FALSE(exists(fs, "/m"));
  fs.fail_when(nullptr);
  auto again = must_open(fs, "/m", raft_schema(), small_options(64, 64, 1 << 20));
  ASSERT_NE(again, nullptr);
  ASSERT_OK(again->put("k", {set(kTerm, Value::u64(7))}));
}

TEST(SlotStore, SecondWriterIsRefusedReadersAreNot) {
  strata::test::TempDir dir;
  const std::string path = dir.sub("meta.slots");
  auto s = must_open(posix_fs(), path, raft_schema(), small_options());
  ASSERT_TRUE(s);
  ASSERT_OK(s->put("uid-1", {set(kTerm, Value::u64(3))}));
  auto second = SlotStore::open(posix_fs(), path, raft_schema(), small_options());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), Errc::conflict);
  EXPECT_NE(second.error().message.find(path), std::string::npos) << second.error().to_string();
  // A migration would replace the file under the writer: refused too.
  EXPECT_EQ(SlotStore::migrate(posix_fs(), path, raft_schema(), small_options()).code(),
            Errc::conflict);
  Options ro = small_options();
  ro.read_only = true;
  auto reader = SlotStore::open_existing(posix_fs(), path, ro);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  ASSERT_OK(s->close());
  auto next = SlotStore::open(posix_fs(), path, raft_schema(), small_options());
  ASSERT_TRUE(next.ok()) << next.error().to_string();
  auto r = (*next)->read("uid-1");
  ASSERT_OK(r);
  EXPECT_EQ((*r)[kTerm], Value::u64(3));
}

TEST(SlotStore, CatalogSchemaBytesFieldsRoundTrip) {
  FaultFileSystem fs;
  auto o = small_options();
  {
    auto s = must_open(fs, "/cat", catalog_schema(), o);
    ASSERT_OK(s->put(std::string(255, 's'), {set(0, Value::u64(1)), set(1, Value::u64(2)),
                                             set(2, Value::str(std::string(200, 'r')))}));
    ASSERT_OK(s->put("empty-root", {set(2, Value::str(""))}));
  }
  fs.crash();
  auto s = must_open(fs, "/cat", catalog_schema(), o);
  auto r = s->read(std::string(255, 's'));
  ASSERT_OK(r);
  EXPECT_EQ((*r)[2], Value::str(std::string(200, 'r')));
  auto e = s->read("empty-root");
  ASSERT_OK(e);
  EXPECT_EQ((*e)[2], Value::str(""));
}

// A batch cleared and built again reuses its earlier ops' memory (raftmeta's
// writer builds one per round): the new ops carry only what they are given.
TEST(SlotStore, AClearedBatchBuiltAgainHoldsOnlyItsNewOps) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), inline_options());
  WriteBatch b;
  b.put("a-key-longer-than-sso", {set(kTerm, Value::u64(1)), set(kApplied, Value::u64(2))});
  b.put("b", {set(kVote, vote("n", "node"))});
  ASSERT_OK(s->write_batch(b));
  b.clear();
  EXPECT_TRUE(b.empty());
  b.erase("b");                                        // from the first op's memory
  b.put("c").push_back(set(kApplied, Value::u64(3)));  // from the second's
  b.put("d");                                          // a new op: no updates
  ASSERT_EQ(b.size(), 3u);
  EXPECT_TRUE(b.ops()[0].erase);
  EXPECT_TRUE(b.ops()[0].updates.empty());
  EXPECT_EQ(b.ops()[1].key, "c");
  EXPECT_FALSE(b.ops()[1].erase);
  ASSERT_EQ(b.ops()[1].updates.size(), 1u);
  EXPECT_EQ(b.ops()[2].key, "d");
  EXPECT_TRUE(b.ops()[2].updates.empty());
  ASSERT_OK(s->write_batch(b));
  EXPECT_EQ(s->read("b").code(), Errc::not_found);
  auto c = s->read("c");
  ASSERT_OK(c);
  EXPECT_EQ((*c)[kApplied], Value::u64(3));
  EXPECT_FALSE((*c)[kTerm].has_value());
  auto d = s->read("d");
  ASSERT_OK(d);
  EXPECT_FALSE((*d)[kTerm].has_value());
  EXPECT_FALSE((*d)[kApplied].has_value());
  auto a = s->read("a-key-longer-than-sso");
  ASSERT_OK(a);
  EXPECT_EQ((*a)[kTerm], Value::u64(1));
}

TEST(SlotStore, UnlistedFieldsKeepTheirValues) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options());
  ASSERT_OK(s->put("k", {set(kTerm, Value::u64(5)), set(kVote, vote("a", "b"))}));
  ASSERT_OK(s->put("k", {set(kApplied, Value::u64(10))}));
  auto r = s->read("k");
  ASSERT_OK(r);
  EXPECT_EQ((*r)[kTerm], Value::u64(5));
  EXPECT_EQ((*r)[kVote], vote("a", "b"));
  EXPECT_EQ((*r)[kApplied], Value::u64(10));
}

// ra#111 and #624's first defect: a term change clears the vote in the same
// atomic write, and the clear persists.
TEST(SlotStore, TermChangeWithVoteClearPersists) {
  FaultFileSystem fs;
  auto o = small_options();
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(1)), set(kVote, vote("a", "b"))}));
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(2)), clear(kVote)}));
  }
  fs.crash();
  auto s = must_open(fs, "/m", raft_schema(), o);
  auto r = s->read("k");
  ASSERT_OK(r);
  EXPECT_EQ((*r)[kTerm], Value::u64(2));
  EXPECT_FALSE((*r)[kVote].has_value());
}

TEST(SlotStore, ReadOfMissingKeyIsNotFound) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options());
  auto r = s->read("nope");
  EXPECT_EQ(r.code(), Errc::not_found);
  EXPECT_NE(r.error().message.find("nope"), std::string::npos);
}

TEST(SlotStore, FoldVisitsLiveKeysInSlotOrderAndCanStop) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options());
  WriteBatch b;
  for (int i = 0; i < 10; ++i) b.put("k" + std::to_string(i), {set(kApplied, Value::u64(i))});
  b.erase("k3");
  ASSERT_OK(s->write_batch(b));
  std::vector<std::string> seen;
  ASSERT_OK(s->fold([&](BytesView k, const Record& r) {
    seen.emplace_back(k);
    EXPECT_TRUE(r[kApplied].has_value());
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<std::string>{"k0", "k1", "k2", "k4", "k5", "k6", "k7", "k8", "k9"}));
  int visits = 0;
  ASSERT_OK(s->fold([&](BytesView, const Record&) { return ++visits < 4; }));
  EXPECT_EQ(visits, 4);
  auto all = s->read_all();
  ASSERT_OK(all);
  EXPECT_EQ(all->size(), 9u);
}

TEST(SlotStore, FoldCallbackMayWriteToTheStore) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options());
  ASSERT_OK(s->put("a", {set(kApplied, Value::u64(1))}));
  ASSERT_OK(s->put("b", {set(kApplied, Value::u64(2))}));
  ASSERT_OK(s->fold([&](BytesView k, const Record& r) {
    EXPECT_OK(s->put(k, {set(kApplied, Value::u64(r[kApplied]->as_u64() + 10))}));
    return true;
  }));
  EXPECT_EQ((*s->read("a"))[kApplied], Value::u64(11));
  EXPECT_EQ((*s->read("b"))[kApplied], Value::u64(12));
}

TEST(SlotStore, HighFrequencyWritesAreNotFsyncedLowAreAndSyncOptionForces) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options());
  uint64_t f0 = s->info().fsyncs;
  ASSERT_OK(s->put("k", {set(kApplied, Value::u64(1))}));
  ASSERT_OK(s->put("k", {set(kApplied, Value::u64(2))}));
  EXPECT_EQ(s->info().fsyncs, f0);
  EXPECT_GT(s->info().unsynced_bytes, 0u);
  ASSERT_OK(s->put("k", {set(kTerm, Value::u64(1))}));
  EXPECT_EQ(s->info().fsyncs, f0 + 1);
  EXPECT_EQ(s->info().unsynced_bytes, 0u);
  // A clear of a low field is a low-frequency write too.
  ASSERT_OK(s->put("k", {clear(kVote)}));
  EXPECT_EQ(s->info().fsyncs, f0 + 2);
  // #624's fourth defect: a synchronous store of only last_applied.
  ASSERT_OK(s->put("k", {set(kApplied, Value::u64(3))}, WriteOptions{true}));
  EXPECT_EQ(s->info().fsyncs, f0 + 3);
  // Nothing unsynced: sync() has nothing to flush.
  ASSERT_OK(s->sync());
  EXPECT_EQ(s->info().fsyncs, f0 + 3);
  ASSERT_OK(s->put("k", {set(kApplied, Value::u64(4))}));
  ASSERT_OK(s->sync());
  EXPECT_EQ(s->info().fsyncs, f0 + 4);
}

TEST(SlotStore, HighFrequencyWriteMayBeLostOnPowerLossButSyncKeepsIt) {
  FaultFileSystem fs;
  auto o = small_options();
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(1)), set(kApplied, Value::u64(1))}));
    ASSERT_OK(s->put("k", {set(kApplied, Value::u64(2))}));
    fs.crash();  // drops the unsynced write
  }
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    EXPECT_EQ((*s->read("k"))[kApplied], Value::u64(1));
    ASSERT_OK(s->put("k", {set(kApplied, Value::u64(3))}));
    ASSERT_OK(s->sync());
    fs.crash();
  }
  auto s = must_open(fs, "/m", raft_schema(), o);
  EXPECT_EQ((*s->read("k"))[kApplied], Value::u64(3));
}

// Many writers, each waiting for its durable write: the leader commits the
// queued batches with one fsync (group commit). A slow fsync makes the
// queue build up deterministically.
TEST(SlotStore, ConcurrentDurableWritersShareFsyncs) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options(64, 32, 256 * 1024));
  std::atomic<bool> slow{false};
  fs.fail_when([&](const FaultOp& op) {
    if (op.kind == FaultOp::Kind::sync && slow) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  });
  slow = true;
  uint64_t f0 = s->info().fsyncs;
  constexpr int kThreads = 8, kEach = 10;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_OK(s->put("w" + std::to_string(t), {set(kTerm, Value::u64(i))}));
      }
    });
  }
  for (auto& t : ts) t.join();
  uint64_t fsyncs = s->info().fsyncs - f0;
  EXPECT_LE(fsyncs, uint64_t(kThreads * kEach / 2)) << fsyncs << " fsyncs";
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ((*s->read("w" + std::to_string(t)))[kTerm], Value::u64(kEach - 1));
  }
  fs.fail_when(nullptr);
}

TEST(SlotStore, ReadersRunConcurrentlyWithWriters) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options(64, 32, 64 * 1024));
  ASSERT_OK(s->put("k", {set(kApplied, Value::u64(0))}));
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done) {
      auto r = s->read("k");
      ASSERT_OK(r);
      uint64_t v = (*r)[kApplied]->as_u64();
      EXPECT_GE(v, last);  // a reader never sees a value go back
      last = v;
    }
  });
  for (uint64_t i = 1; i <= 3000; ++i) ASSERT_OK(s->put("k", {set(kApplied, Value::u64(i))}));
  done = true;
  reader.join();
  EXPECT_GT(s->info().compactions, 0u);
}

TEST(SlotStore, ReadOnlyOpenNeverWrites) {
  FaultFileSystem fs;
  {
    auto s = must_open(fs, "/m", raft_schema(), small_options());
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(1))}));
    ASSERT_OK(s->put("k", {set(kApplied, Value::u64(5))}));
  }
  uint64_t m0 = fs.mutation_count();
  Options ro = small_options();
  ro.read_only = true;
  auto s = SlotStore::open_existing(fs, "/m", ro);
  ASSERT_OK(s);
  EXPECT_EQ((*(*s)->read("k"))[kApplied], Value::u64(5));
  EXPECT_EQ((*s)->schema(), raft_schema());
  EXPECT_EQ((*s)->put("k", {set(kTerm, Value::u64(2))}).code(), Errc::invalid_argument);
  EXPECT_EQ((*s)->sync().code(), Errc::invalid_argument);
  ASSERT_OK((*s)->close());
  EXPECT_EQ(fs.mutation_count(), m0);
}

TEST(SlotStore, OpenErrors) {
  FaultFileSystem fs;
  Options o = small_options();
  o.create_if_missing = false;
  EXPECT_EQ(SlotStore::open(fs, "/m", raft_schema(), o).code(), Errc::not_found);
  EXPECT_EQ(SlotStore::open_existing(fs, "/m").code(), Errc::not_found);
  o.create_if_missing = true;
  ASSERT_OK(SlotStore::open(fs, "/m", raft_schema(), o));
  o.error_if_exists = true;
  EXPECT_EQ(SlotStore::open(fs, "/m", raft_schema(), o).code(), Errc::already_exists);
  // Capacity and schema errors at creation.
  Options bad = small_options(0);
  EXPECT_EQ(SlotStore::open(fs, "/b1", raft_schema(), bad).code(), Errc::invalid_argument);
  bad = small_options(4, 4, 1024);
  auto r = SlotStore::open(fs, "/b2", raft_schema(), bad);
  EXPECT_EQ(r.code(), Errc::invalid_argument);
  EXPECT_NE(r.error().message.find("wal_bytes"), std::string::npos) << r.error().message;
  Schema dup = raft_schema();
  dup.fields.push_back(dup.fields[0]);
  EXPECT_EQ(SlotStore::open(fs, "/b3", dup, small_options()).code(), Errc::invalid_argument);
  Schema nested = raft_schema();
  nested.fields[1].type = FieldType::tuple_of({FieldType::u64(), nested.fields[1].type});
  EXPECT_EQ(SlotStore::open(fs, "/b4", nested, small_options()).code(), Errc::invalid_argument);
  EXPECT_FALSE(exists(fs, "/b2"));
}

TEST(SlotStore, CloseIsIdempotentAndLaterCallsReturnClosed) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options());
  ASSERT_OK(s->put("k", {set(kApplied, Value::u64(1))}));
  ASSERT_OK(s->close());
  ASSERT_OK(s->close());
  EXPECT_EQ(s->put("k", {set(kApplied, Value::u64(2))}).code(), Errc::closed);
  EXPECT_EQ(s->read("k").code(), Errc::closed);
  EXPECT_EQ(s->sync().code(), Errc::closed);
  // Close made the high-frequency write durable.
  fs.crash();
  auto s2 = must_open(fs, "/m", raft_schema(), small_options());
  EXPECT_EQ((*s2->read("k"))[kApplied], Value::u64(1));
}

TEST(SlotStore, InfoReportsCapacityAndUse) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options(10, 5, 64 * 1024));
  ASSERT_OK(s->put("a", {set(kVote, vote("x", "y"))}));
  Info i = s->info();
  EXPECT_EQ(i.slots_total, 10u);
  EXPECT_EQ(i.slots_used, 1u);
  EXPECT_EQ(i.strings_total, 5u);
  EXPECT_EQ(i.strings_used, 2u);
  EXPECT_EQ(i.wal_bytes_total, 64u * 1024);
  EXPECT_GT(i.wal_bytes_used, 0u);
  EXPECT_GT(i.last_lsn, 0u);
  EXPECT_EQ(i.format_version, 1u);
  EXPECT_FALSE(i.fail_stopped);
  EXPECT_EQ(i.record_size, 18u + 64 + 9 + 9 + 9);
}

}  // namespace
}  // namespace strata::slotstore
