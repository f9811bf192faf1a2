// One or more named tests per requirement of issue 5 (Req1..Req10), each
// checked by crashing, damaging or faulting the file layer under the store.
#include <condition_variable>
#include <future>
#include <thread>
#include <utility>

#include "common/endian.h"
#include "common/random.h"
#include "counting_fs.h"
#include "slotstore/format.h"
#include "slotstore/wal_reader.h"
#include "slotstore_test_util.h"
#include "support/temp_dir.h"
#include "wal_chain.h"

namespace strata::slotstore {
namespace {

using namespace test;
using namespace std::chrono_literals;

// A door compaction hooks wait at until the test opens it.
class Gate {
 public:
  void wait() {
    std::unique_lock<std::mutex> l(m_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(l, [&] { return open_; });
  }
  void open() {
    std::lock_guard<std::mutex> l(m_);
    open_ = true;
    cv_.notify_all();
  }
  int waiting() {
    std::lock_guard<std::mutex> l(m_);
    return waiting_;
  }
  bool wait_until_waiting(int n) {
    std::unique_lock<std::mutex> l(m_);
    return cv_.wait_for(l, 10s, [&] { return waiting_ >= n; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
};

template <typename F>
bool eventually(F f) {
  for (int i = 0; i < 2000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return f();
}

// High-frequency writes to `key` until `n` more compactions completed, or
// an error. Returns the last value written.
uint64_t write_until_compactions(SlotStore& s, const std::string& key, uint64_t n,
                                 uint64_t start = 1) {
  uint64_t target = s.info().compactions + n;
  uint64_t v = start;
  for (; v < start + 100000 && s.info().compactions < target; ++v) {
    Status st = s.put(key, {set(kApplied, Value::u64(v))});
    if (!st.ok()) {
      ADD_FAILURE() << st.to_string();
      break;
    }
  }
  return v - 1;
}

// ---------------------------------------------------------------- Req 1

TEST(SlotStoreReq, Req1_DurableWritesSurviveEveryCrashMode) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    SCOPED_TRACE(seed);
    FaultFileSystem fs;
    Random rng(seed);
    Contents durable;
    {
      auto s = must_open(fs, "/m", raft_schema(), small_options(16, 16, 8192));
      for (int i = 0; i < 60; ++i) {
        std::string k = "k" + std::to_string(rng.uniform(10));
        ASSERT_OK(s->put(k, {set(kTerm, Value::u64(i)), set(kApplied, Value::u64(i))}));
        Record& r = durable[k];
        r.fields.resize(3);
        r.fields[kTerm] = Value::u64(i);
        r.fields[kApplied] = Value::u64(i);
      }
      // Unsynced writes that may or may not survive.
      for (int i = 0; i < 20; ++i) ASSERT_OK(s->put("volatile", {set(kApplied, Value::u64(i))}));
      uint64_t mode = seed % 4;
      fs.crash(CrashOptions{seed, mode == 1 || mode == 2, mode >= 2, false});
    }
    auto s = must_open(fs, "/m", raft_schema(), small_options(16, 16, 8192));
    Contents got = contents_of(*s);
    auto v = got.find("volatile");
    if (v != got.end()) {
      // Some prefix of the unsynced writes: a value that was written.
      ASSERT_TRUE(v->second[kApplied].has_value());
      EXPECT_LT(v->second[kApplied]->as_u64(), 20u);
      got.erase(v);
    }
    EXPECT_EQ(got, durable) << describe(got);
  }
}

// A large value written without fsync and torn by the crash at a random
// byte comes back as the old value or the new one, never a mix.
TEST(SlotStoreReq, Req1_TornWalWriteIsNeverReturned) {
  int kept_new = 0, kept_old = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    FaultFileSystem fs;
    const std::string old_root(200, 'o'), new_root(200, 'n');
    {
      auto s = must_open(fs, "/c", catalog_schema(), small_options());
      ASSERT_OK(s->put("stream", {set(0, Value::u64(1)), set(2, Value::str(old_root))}));
      // One WAL write whose fsync fails, so it is still unsynced at the crash.
      fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::sync; });
      Status st = s->put("stream", {set(2, Value::str(new_root))});
      EXPECT_EQ(st.code(), Errc::fail_stopped);
      fs.fail_when(nullptr);
      fs.crash(CrashOptions{seed, true, true, false});  // keep it whole, or tear it
    }
    auto s = must_open(fs, "/c", catalog_schema(), small_options());
    auto r = s->read("stream");
    ASSERT_OK(r);
    const Value& root = *(*r)[2];
    ASSERT_TRUE(root == Value::str(old_root) || root == Value::str(new_root)) << root.to_string();
    (root == Value::str(new_root) ? kept_new : kept_old)++;
  }
  EXPECT_GT(kept_new, 0);
  EXPECT_GT(kept_old, 0);
}

// A crash while compaction writes record copies tears some of them; the
// torn ones are never the current copies, and the sealed WAL half is
// replayed over whichever copies survived.
TEST(SlotStoreReq, Req1_TornCompactionWriteFallsBackToTheOtherCopy) {
  int torn_copies = 0;
  for (uint64_t seed = 0; seed < uint64_t(strata::test::scaled(40)); ++seed) {
    SCOPED_TRACE(seed);
    FaultFileSystem fs;
    std::atomic<bool> armed{false};
    Options o = inline_options(16, 16, 8192);
    o.compaction_hook = [&](CompactionPoint p) {
      if (p == CompactionPoint::before_sync && armed) {
        fs.crash(CrashOptions{seed, true, true, false});
      }
      return Status::OK();
    };
    Contents expected;
    {
      auto s = must_open(fs, "/m", raft_schema(), o);
      Random rng(seed);
      uint64_t v = 0;
      auto durable_put = [&]() -> Status {
        std::string k = "k" + std::to_string(rng.uniform(16));
        ++v;
        Status st = s->put(k, {set(kTerm, Value::u64(v)), set(kApplied, Value::u64(v))});
        if (st.ok()) {
          Record& r = expected[k];
          r.fields.resize(3);
          r.fields[kTerm] = Value::u64(v);
          r.fields[kApplied] = Value::u64(v);
        }
        return st;
      };
      while (s->info().compactions < 2) ASSERT_OK(durable_put());
      armed = true;
      Status st;
      while ((st = durable_put()).ok()) {
      }
      ASSERT_EQ(st.code(), Errc::fail_stopped) << st.to_string();
    }
    format::Layout l = layout_of(fs, "/m");
    Bytes disk = *read_file(fs, "/m");
    for (uint32_t slot = 0; slot < l.slots; ++slot) {
      format::RecordImage r;
      int valid = 0;
      for (int c = 0; c < 2; ++c) {
        valid += format::decode_record(l, slot, c, disk.data() + l.record_offset(slot, c), &r);
      }
      ASSERT_GE(valid, 1) << "slot " << slot;
      torn_copies += valid == 1;
    }
    auto s = must_open(fs, "/m", raft_schema(), inline_options(16, 16, 8192));
    EXPECT_EQ(contents_of(*s), expected);
  }
  EXPECT_GT(torn_copies, 0);  // the crashes did tear record copies
}

TEST(SlotStoreReq, Req1_DamagedHeaderIsAnError) {
  FaultFileSystem fs;
  { auto s = must_open(fs, "/m", raft_schema(), small_options()); }
  ASSERT_OK(patch(fs, "/m", 80, "\xff"));
  auto r = SlotStore::open(fs, "/m", raft_schema(), small_options());
  EXPECT_EQ(r.code(), Errc::corrupt);
  EXPECT_NE(r.error().message.find("header CRC"), std::string::npos) << r.error().message;
}

TEST(SlotStoreReq, Req1_SlotWithBothCopiesDamagedIsCorruptNotEmpty) {
  FaultFileSystem fs;
  {
    auto s = must_open(fs, "/m", raft_schema(), inline_options());
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(1))}));
    write_until_compactions(*s, "k", 1);
  }
  format::Layout l = layout_of(fs, "/m");
  ASSERT_OK(patch(fs, "/m", l.record_offset(0, 0) + 20, "\x01"));
  ASSERT_OK(SlotStore::open(fs, "/m", raft_schema(), inline_options()));  // one copy left
  ASSERT_OK(patch(fs, "/m", l.record_offset(0, 1) + 20, "\x01"));
  auto r = SlotStore::open(fs, "/m", raft_schema(), inline_options());
  EXPECT_EQ(r.code(), Errc::corrupt);
  EXPECT_NE(r.error().message.find("slot 0"), std::string::npos) << r.error().message;
}

// Damage inside a sealed WAL half that compaction has not folded in yet is
// reported, not mistaken for a half whose entries are already in the
// records (which recovery may skip).
TEST(SlotStoreReq, Req1_DamagedUncompactedWalHalfIsCorruptNotDropped) {
  FaultFileSystem fs;
  Options o = inline_options();
  o.compaction_hook = [](CompactionPoint) { return Error(Errc::io, "held for the test"); };
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    uint64_t v = 0;
    while (s->info().wal_switches == 0) ASSERT_OK(s->put("k", {set(kTerm, Value::u64(++v))}));
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(++v))}));
  }
  format::Layout l = layout_of(fs, "/m");
  ASSERT_OK(patch(fs, "/m", l.half_offset(0) + l.half_size / 2, "\x5a"));
  auto r = SlotStore::open(fs, "/m", raft_schema(), inline_options());
  ASSERT_EQ(r.code(), Errc::corrupt);
  EXPECT_NE(r.error().message.find("does not connect"), std::string::npos) << r.error().message;
}

// A write of a crashed run that reached the disk although the one before it
// did not (reordered sectors) must never be picked up later, even when the
// next run writes byte-identical bytes in front of it: every entry's CRC
// chains from its predecessor, and each run starts with a random marker.
TEST(SlotStoreReq, Req1_StaleEntryOfACrashedRunNeverResurfaces) {
  FaultFileSystem fs;
  Options o = inline_options();
  { auto s = must_open(fs, "/m", raft_schema(), o); }
  Bytes e2;
  uint64_t e2_off = 0;
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(2))}));     // durable
    ASSERT_OK(s->put("k", {set(kApplied, Value::u64(3))}));  // E1, unsynced
    ASSERT_OK(s->put("k", {set(kApplied, Value::u64(4))}));  // E2, unsynced
    // E2 as the page cache holds it: the active half's third put.
    const Bytes cached = *read_file(fs, "/m");
    const format::Layout l = layout_of(fs, "/m");
    const std::vector<EntryAt> puts = puts_of(chain_of(cached, l, active_half(cached, l)));
    ASSERT_EQ(puts.size(), 3u);
    e2_off = puts[2].offset;
    e2 = cached.substr(e2_off, puts[2].size);
    fs.crash();
  }
  // E2's sectors made it, E1's did not.
  ASSERT_OK(patch(fs, "/m", e2_off, e2));
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    EXPECT_FALSE((*s->read("k"))[kApplied].has_value());
    // The same change as E1, at E2's sequence number (E1's write also
    // carried a `durable` entry; this run's starts with its marker).
    ASSERT_OK(s->put("k", {set(kApplied, Value::u64(3))}, WriteOptions{true}));
    fs.crash();
  }
  auto s = must_open(fs, "/m", raft_schema(), o);
  EXPECT_EQ((*s->read("k"))[kApplied], Value::u64(3));
}

// ---------------------------------------------------------------- Req 2

// The original lost its interned strings when the process stopped without
// a clean close (the count lived only in a header written at close).
TEST(SlotStoreReq, Req2_InternedStringsSurviveACrashWithoutClose) {
  FaultFileSystem fs;
  Options o = inline_options(16, 16, 8192);
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    ASSERT_OK(s->put("a", {set(kVote, vote("alpha", "beta"))}));
    ASSERT_OK(s->put("b", {set(kVote, vote("gamma", "alpha"))}));
    fs.crash();
  }
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    EXPECT_EQ(s->info().strings_used, 3u);
    EXPECT_EQ((*s->read("a"))[kVote], vote("alpha", "beta"));
    // A new string gets a new id; it must not reuse one in use.
    ASSERT_OK(s->put("c", {set(kVote, vote("delta", "alpha"))}));
    EXPECT_EQ((*s->read("b"))[kVote], vote("gamma", "alpha"));
    write_until_compactions(*s, "c", 2);  // strings now in the string table region
    fs.crash();
  }
  auto s = must_open(fs, "/m", raft_schema(), o);
  EXPECT_EQ(s->info().strings_used, 4u);
  EXPECT_EQ((*s->read("a"))[kVote], vote("alpha", "beta"));
  EXPECT_EQ((*s->read("b"))[kVote], vote("gamma", "alpha"));
  EXPECT_EQ((*s->read("c"))[kVote], vote("delta", "alpha"));
}

// Nothing recovery needs lives in a header rewritten at close: the header
// is written once, at creation.
TEST(SlotStoreReq, Req2_HeaderIsNeverRewrittenAfterCreation) {
  FaultFileSystem fs;
  Options o = inline_options(16, 16, 8192);
  { auto s = must_open(fs, "/m", raft_schema(), o); }
  format::Layout l = layout_of(fs, "/m");
  Bytes header = read_file(fs, "/m")->substr(0, l.header_size);
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    for (int i = 0; i < 10; ++i) {
      ASSERT_OK(s->put("k" + std::to_string(i), {set(kVote, vote("n" + std::to_string(i), "x"))}));
    }
    write_until_compactions(*s, "k0", 3);
    ASSERT_OK(s->erase("k1"));
  }
  EXPECT_EQ(read_file(fs, "/m")->substr(0, l.header_size), header);
}

// ---------------------------------------------------------------- Req 3

TEST(SlotStoreReq, Req3_DeleteIsDurable) {
  FaultFileSystem fs;
  Options o = inline_options();
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(1)), set(kVote, vote("a", "b"))}));
    write_until_compactions(*s, "other", 2);  // k's record is now in a record copy
    ASSERT_OK(s->erase("k"));
    EXPECT_EQ(s->erase("k").code(), Errc::not_found);
    fs.crash();  // nothing unsynced needed: the erase was fsynced
  }
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    EXPECT_EQ(s->read("k").code(), Errc::not_found);
    write_until_compactions(*s, "other", 2, 1000);  // the erase reaches the record copies
    fs.crash();
  }
  auto s = must_open(fs, "/m", raft_schema(), o);
  EXPECT_EQ(s->read("k").code(), Errc::not_found);
  EXPECT_EQ(s->info().slots_used, 1u);
}

TEST(SlotStoreReq, Req3_ReusedSlotStartsEmpty) {
  FaultFileSystem fs;
  Options o = inline_options(1, 8, 8192);
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    ASSERT_OK(s->put("old", {set(kTerm, Value::u64(9)), set(kVote, vote("a", "b")),
                             set(kApplied, Value::u64(9))}));
    write_until_compactions(*s, "old", 1);
    ASSERT_OK(s->erase("old"));
    ASSERT_OK(s->put("new", {set(kApplied, Value::u64(1))}, WriteOptions{true}));
    auto r = s->read("new");
    ASSERT_OK(r);
    EXPECT_FALSE((*r)[kTerm].has_value());
    EXPECT_FALSE((*r)[kVote].has_value());
    fs.crash();
  }
  auto s = must_open(fs, "/m", raft_schema(), o);
  write_until_compactions(*s, "new", 2, 2);
  auto r = s->read("new");
  ASSERT_OK(r);
  EXPECT_FALSE((*r)[kTerm].has_value());
  EXPECT_FALSE((*r)[kVote].has_value());
  EXPECT_EQ(s->read("old").code(), Errc::not_found);
}

// A WAL entry written for the slot's previous key (generation 1) that sits
// after the slot was reassigned (generation 2) is skipped on replay and by
// compaction. The entry is forged with a valid chain CRC.
TEST(SlotStoreReq, Req3_StaleWalEntryForAReusedSlotIsNeverApplied) {
  FaultFileSystem fs;
  Options o = inline_options(1, 8, 8192);
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    ASSERT_OK(s->put("k1", {set(kTerm, Value::u64(5))}));
    ASSERT_OK(s->erase("k1"));
    ASSERT_OK(s->put("k2", {set(kApplied, Value::u64(1))}, WriteOptions{true}));
  }
  format::Layout l = layout_of(fs, "/m");
  {
    auto f = fs.open("/m", OpenOptions::read_only());
    ASSERT_OK(f);
    WalReader r(**f, l, 0, l.half_size);
    format::HalfHeader h;
    ASSERT_TRUE(*r.read_header(&h));
    format::Entry e;
    while (*r.next(&e) == format::EntryStatus::ok) {
    }
    Bytes body, entry;
    ByteWriter w(&body);
    w.be32(0);  // slot
    w.be32(1);  // generation of k1
    w.u8(0);
    w.u8(1);
    w.u8(kTerm);
    w.u8(1);
    w.be64(99);
    format::append_entry(&entry, format::EntryType::put, r.last_lsn() + 1, body, r.chain());
    ASSERT_OK(patch(fs, "/m", l.half_offset(0) + r.position(), entry));
  }
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    EXPECT_EQ(s->info().stale_entries_skipped, 1u);
    EXPECT_FALSE((*s->read("k2"))[kTerm].has_value());
    EXPECT_EQ(s->read("k1").code(), Errc::not_found);
    write_until_compactions(*s, "k2", 1, 2);  // compaction meets the same entry
    EXPECT_EQ(s->info().stale_entries_skipped, 2u);
  }
  auto s = must_open(fs, "/m", raft_schema(), o);
  EXPECT_FALSE((*s->read("k2"))[kTerm].has_value());
}

// The original's race: a key is deleted and its slot reused while a
// compaction that still holds the old key's values runs.
TEST(SlotStoreReq, Req3_InFlightCompactionResultNeverLandsOnANewKey) {
  FaultFileSystem fs;
  Gate gate;
  Options o = small_options(2, 8, 8192);
  o.compaction_hook = [&](CompactionPoint p) {
    if (p == CompactionPoint::before_write) gate.wait();
    return Status::OK();
  };
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    ASSERT_OK(s->put("k1", {set(kTerm, Value::u64(5)), set(kVote, vote("a", "b"))}));
    for (uint64_t v = 1; s->info().wal_switches == 0; ++v) {
      ASSERT_OK(s->put("k1", {set(kApplied, Value::u64(v))}));
    }
    ASSERT_TRUE(gate.wait_until_waiting(1));  // compaction holds k1's record image
    ASSERT_OK(s->erase("k1"));
    ASSERT_OK(s->put("k2", {set(kApplied, Value::u64(1))}, WriteOptions{true}));
    gate.open();
    ASSERT_TRUE(eventually([&] { return s->info().compactions >= 1; }));
    auto r = s->read("k2");
    ASSERT_OK(r);
    EXPECT_FALSE((*r)[kTerm].has_value());
    EXPECT_FALSE((*r)[kVote].has_value());
    fs.crash();
  }
  auto s = must_open(fs, "/m", raft_schema(), small_options(2, 8, 8192));
  EXPECT_EQ(s->read("k1").code(), Errc::not_found);
  auto r = s->read("k2");
  ASSERT_OK(r);
  EXPECT_FALSE((*r)[kTerm].has_value());
  EXPECT_FALSE((*r)[kVote].has_value());
  EXPECT_EQ((*r)[kApplied], Value::u64(1));
}

// ---------------------------------------------------------------- Req 4

TEST(SlotStoreReq, Req4_CompactionRunsOnItsOwnThreadWhileWritesContinue) {
  FaultFileSystem fs;
  Gate gate;
  std::atomic<std::thread::id> compactor_thread;
  Options o = small_options(16, 16, 8192);
  o.compaction_hook = [&](CompactionPoint p) {
    if (p == CompactionPoint::started) {
      compactor_thread = std::this_thread::get_id();
      gate.wait();
    }
    return Status::OK();
  };
  auto s = must_open(fs, "/m", raft_schema(), o);
  uint64_t v = 0;
  while (s->info().wal_switches == 0) ASSERT_OK(s->put("k", {set(kApplied, Value::u64(++v))}));
  ASSERT_TRUE(gate.wait_until_waiting(1));
  EXPECT_NE(compactor_thread.load(), std::this_thread::get_id());
  EXPECT_TRUE(s->info().compacting);
  // While the compaction is held, writes and reads go on (other WAL half).
  for (int i = 0; i < 20; ++i) ASSERT_OK(s->put("k", {set(kApplied, Value::u64(++v))}));
  EXPECT_EQ((*s->read("k"))[kApplied], Value::u64(v));
  gate.open();
  ASSERT_TRUE(eventually([&] { return s->info().compactions >= 1; }));
}

TEST(SlotStoreReq, Req4_FailedCompactionIsAbortedAndTheStoreGoesOn) {
  for (bool background : {false, true}) {
    SCOPED_TRACE(background ? "background" : "inline");
    FaultFileSystem fs;
    std::atomic<int> failures_left{1};
    Options o = small_options(16, 16, 8192);
    o.background_compaction = background;
    o.compaction_hook = [&](CompactionPoint p) -> Status {
      if (p == CompactionPoint::before_sync && failures_left.fetch_sub(1) > 0) {
        return Error(Errc::io, "injected compaction failure");
      }
      return Status::OK();
    };
    uint64_t last = 0;
    {
      auto s = must_open(fs, "/m", raft_schema(), o);
      ASSERT_OK(s->put("t", {set(kTerm, Value::u64(7))}));
      uint64_t v = 0;
      while (s->info().compactions_failed == 0) {
        ASSERT_OK(s->put("k", {set(kApplied, Value::u64(++v))}));
      }
      EXPECT_NE(s->info().last_compaction_error.find("injected"), std::string::npos);
      // The store goes on: reads, writes, and the retried compaction.
      last = write_until_compactions(*s, "k", 2, v + 1);
      EXPECT_EQ((*s->read("t"))[kTerm], Value::u64(7));
      EXPECT_EQ(s->info().compactions_failed, 1u);
      ASSERT_OK(s->sync());
      fs.crash();
    }
    auto s = must_open(fs, "/m", raft_schema(), small_options(16, 16, 8192));
    EXPECT_EQ((*s->read("k"))[kApplied], Value::u64(last));
    EXPECT_EQ((*s->read("t"))[kTerm], Value::u64(7));
  }
}

TEST(SlotStoreReq, Req4_CompactionReadErrorAborts) {
  FaultFileSystem fs;
  std::atomic<bool> fail_reads{false};
  Options o = inline_options();
  o.compaction_hook = [&](CompactionPoint p) {
    if (p == CompactionPoint::started) {
      fs.fail_when([&](const FaultOp& op) { return fail_reads && op.kind == FaultOp::Kind::read; });
    }
    return Status::OK();
  };
  auto s = must_open(fs, "/m", raft_schema(), o);
  fail_reads = true;
  uint64_t v = 0;
  while (s->info().compactions_failed == 0)
    ASSERT_OK(s->put("k", {set(kApplied, Value::u64(++v))}));
  EXPECT_EQ(s->info().compactions, 0u);
  fail_reads = false;
  uint64_t last = write_until_compactions(*s, "k", 1, v + 1);
  EXPECT_EQ((*s->read("k"))[kApplied], Value::u64(last));
  fs.fail_when(nullptr);
}

// Writes made while compaction runs fill the other WAL half; when that is
// full too, the writer waits for the compaction instead of buffering more.
TEST(SlotStoreReq, Req4_WriterWaitsForCompactionWhenTheOtherHalfIsFull) {
  FaultFileSystem fs;
  Gate gate;
  Options o = small_options(16, 16, 8192);
  o.compaction_hook = [&](CompactionPoint p) {
    if (p == CompactionPoint::started) gate.wait();
    return Status::OK();
  };
  auto s = must_open(fs, "/m", raft_schema(), o);
  std::atomic<uint64_t> written{0};
  std::atomic<bool> gate_opened{false};
  std::atomic<int> waited_puts{0};
  std::thread writer([&] {
    for (uint64_t v = 1; v <= 400; ++v) {
      const uint64_t waits_before = s->info().compaction_waits;
      EXPECT_OK(s->put("k", {set(kApplied, Value::u64(v))}));
      if (s->info().compaction_waits > waits_before) {
        // This put found the other half busy: it may only have returned
        // once the compaction could finish, i.e. after the gate opened.
        // (Buffering instead of waiting would return before.)
        EXPECT_TRUE(gate_opened.load()) << "put " << v << " returned while compaction was held";
        ++waited_puts;
      }
      written = v;
    }
  });
  ASSERT_TRUE(gate.wait_until_waiting(1));
  ASSERT_TRUE(eventually([&] { return s->info().compaction_waits == 1; }));
  // The writer is inside that put now and cannot leave it before the gate
  // opens (checked by the writer itself).
  EXPECT_LT(written.load(), 400u);
  EXPECT_LE(s->info().wal_bytes_used, s->info().wal_bytes_total);
  gate_opened = true;
  gate.open();
  writer.join();
  EXPECT_GE(waited_puts.load(), 1);
  EXPECT_EQ((*s->read("k"))[kApplied], Value::u64(400));
}

TEST(SlotStoreReq, Req4_CompactionMemoryIsBoundedByItsBuffer) {
  FaultFileSystem fs;
  std::atomic<int> writes{0};
  Options o = inline_options(64, 16, 64 * 1024);
  o.compaction_buffer_bytes = 2048;  // about 10 record images
  o.compaction_hook = [&](CompactionPoint p) {
    if (p == CompactionPoint::before_write) ++writes;
    return Status::OK();
  };
  auto s = must_open(fs, "/m", raft_schema(), o);
  uint64_t v = 0;
  while (s->info().compactions == 0) {
    ++v;
    ASSERT_OK(s->put("k" + std::to_string(v % 64), {set(kApplied, Value::u64(v))}));
  }
  EXPECT_GE(writes.load(), 6);  // 64 slots through a ~10-image buffer
  s.reset();
  fs.crash();
  auto s2 = must_open(fs, "/m", raft_schema(), inline_options(64, 16, 64 * 1024));
  EXPECT_EQ(s2->info().slots_used, 64u);
}

// Compaction reads the sealed half once whole (scan) and then once per
// window of record images, decoding only that window's entries. If a later
// pass reads the half differently (here: one entry of the second window
// damaged between the passes, then repaired), it must fail the compaction
// (retried later) rather than apply part of the half: the compacted copies
// are stamped with the half's last lsn, so entries left out would be lost.
TEST(SlotStoreReq, Req4_CompactionFailsIfAWindowPassReadsTheHalfDifferently) {
  FaultFileSystem fs;
  Options o = inline_options(64, 16, 64 * 1024);
  o.compaction_buffer_bytes = 2048;  // about 10 record images a window
  int writes = 0;
  uint64_t victim_byte = 0;
  Bytes original;
  o.compaction_hook = [&](CompactionPoint p) -> Status {
    // The next attempt reads the half repaired.
    if (p == CompactionPoint::started && !original.empty()) {
      return patch(fs, "/m", victim_byte, std::exchange(original, Bytes()));
    }
    if (p != CompactionPoint::before_write || ++writes > 1) return Status::OK();
    // After the first window: damage the second window's first entry.
    const format::Layout l = layout_of(fs, "/m");
    const Bytes file = *read_file(fs, "/m");
    const uint32_t per_window = uint32_t(2048 / (l.record_size + 96));
    // The first compaction: only the sealed half has entries (the next
    // half's header is not written yet).
    std::vector<EntryAt> puts = puts_of(chain_of(file, l, 0));
    for (const EntryAt& at : puts_of(chain_of(file, l, 1))) puts.push_back(at);
    for (const EntryAt& at : puts) {
      // A put's body starts with its slot.
      const uint32_t slot = get_be32(reinterpret_cast<const uint8_t*>(file.data()) + at.offset +
                                     format::kEntryHeaderSize);
      if (slot < per_window || slot >= 2 * per_window) continue;
      victim_byte = at.offset + at.size - 1;
      original = Bytes(1, file[victim_byte]);
      return patch(fs, "/m", victim_byte, Bytes(1, char(file[victim_byte] ^ 0x04)));
    }
    ADD_FAILURE() << "no entry of the second window";
    return Status::OK();
  };
  auto s = must_open(fs, "/m", raft_schema(), o);
  std::map<std::string, uint64_t> last;
  uint64_t v = 0;
  while (s->info().compactions == 0) {
    ++v;
    const std::string key = "k" + std::to_string(v % 64);
    ASSERT_OK(s->put(key, {set(kApplied, Value::u64(v))}));
    last[key] = v;
  }
  EXPECT_NE(victim_byte, 0u);
  EXPECT_TRUE(original.empty()) << "not repaired";
  // The damaged pass failed the first attempt; the retry compacted the
  // repaired half.
  EXPECT_EQ(s->info().compactions_failed, 1u);
  s.reset();
  fs.crash();
  auto s2 = must_open(fs, "/m", raft_schema(), inline_options(64, 16, 64 * 1024));
  ASSERT_EQ(last.size(), 64u);
  for (const auto& [key, value] : last) {
    auto r = s2->read(key);
    ASSERT_OK(r);
    EXPECT_EQ((*r)[kApplied], Value::u64(value)) << key;
  }
}

// ---------------------------------------------------------------- Req 5

TEST(SlotStoreReq, Req5_BatchLargerThanTheWholeWalCompletes) {
  for (bool background : {false, true}) {
    SCOPED_TRACE(background ? "background" : "inline");
    FaultFileSystem fs;
    Options o = small_options(400, 800, 8192);
    o.background_compaction = background;
    WriteBatch b;
    for (int i = 0; i < 400; ++i) {
      b.put("server-" + std::to_string(i),
            {set(kTerm, Value::u64(i)), set(kVote, vote("name-" + std::to_string(i), "node")),
             set(kApplied, Value::u64(i))});
    }
    {
      auto s = must_open(fs, "/m", raft_schema(), o);
      ASSERT_OK(s->write_batch(b));
      EXPECT_GE(s->info().compactions, 4u);
      EXPECT_EQ(s->info().slots_used, 400u);
      fs.crash();
    }
    auto s = must_open(fs, "/m", raft_schema(), o);
    for (int i = 0; i < 400; i += 37) {
      auto r = s->read("server-" + std::to_string(i));
      ASSERT_OK(r);
      EXPECT_EQ((*r)[kVote], vote("name-" + std::to_string(i), "node"));
    }
    EXPECT_EQ(s->info().slots_used, 400u);
  }
}

// ---------------------------------------------------------------- Req 6

TEST(SlotStoreReq, Req6_CapacityErrorsAreValuesAndApplyNothing) {
  FaultFileSystem fs;
  Options o = small_options(2, 2, 8192);
  auto s = must_open(fs, "/m", raft_schema(), o);
  auto code = [&](const WriteBatch& b) { return s->write_batch(b).code(); };

  WriteBatch three;
  three.put("a", {}).put("b", {}).put("c", {});
  EXPECT_EQ(code(three), Errc::store_full);
  EXPECT_EQ(s->info().slots_used, 0u);  // the whole batch was refused
  ASSERT_OK(s->put("a", {set(kVote, vote("x", "y"))}));
  ASSERT_OK(s->put("b", {set(kTerm, Value::u64(1))}));
  Status full = s->put("c", {});
  EXPECT_EQ(full.code(), Errc::store_full);
  EXPECT_NE(full.error().message.find("'c'"), std::string::npos) << full.error().message;
  WriteBatch reuse;
  reuse.erase("a").put("c", {set(kApplied, Value::u64(3))});
  ASSERT_OK(s->write_batch(reuse));  // a slot freed in the batch is reused in it

  EXPECT_EQ(s->put("b", {set(kVote, vote("x", "z"))}).code(), Errc::string_table_full);
  ASSERT_OK(s->put("b", {set(kVote, vote("y", "x"))}));  // existing strings still fit

  EXPECT_EQ(s->put(std::string(65, 'k'), {}).code(), Errc::key_too_long);
  EXPECT_EQ(s->put("", {}).code(), Errc::invalid_argument);
  EXPECT_EQ(s->put("b", {set(7, Value::u64(1))}).code(), Errc::unknown_field);
  EXPECT_EQ(raft_schema().field_id("nope").code(), Errc::unknown_field);
  EXPECT_EQ(s->put("b", {set(kTerm, Value::str("x"))}).code(), Errc::invalid_argument);
  EXPECT_EQ(s->put("b", {set(kVote, Value::tuple({Scalar("x")}))}).code(), Errc::invalid_argument);
  EXPECT_EQ(s->put("b", {set(kVote, vote(std::string(65, 'x'), "y"))}).code(),
            Errc::invalid_argument);
  EXPECT_EQ(s->put("b", {set(kTerm, Value::u64(1)), clear(kTerm)}).code(), Errc::invalid_argument);
  EXPECT_EQ(s->erase("zz").code(), Errc::not_found);
  WriteBatch half_bad;
  half_bad.put("b", {set(kTerm, Value::u64(100))}).erase("missing");
  EXPECT_EQ(code(half_bad), Errc::not_found);

  Contents expected = contents_of(*s);
  EXPECT_EQ(expected.size(), 2u);
  EXPECT_EQ(expected["b"][kTerm], Value::u64(1));
  EXPECT_EQ(expected["b"][kVote], vote("y", "x"));
  EXPECT_EQ(expected["c"][kApplied], Value::u64(3));
  ASSERT_OK(s->close());
  fs.crash();
  auto s2 = must_open(fs, "/m", raft_schema(), o);
  EXPECT_EQ(contents_of(*s2), expected);
}

// ---------------------------------------------------------------- Req 7

TEST(SlotStoreReq, Req7_FsyncFailureFailStopsTheStore) {
  FaultFileSystem fs;
  Options o = small_options();
  auto s = must_open(fs, "/m", raft_schema(), o);
  ASSERT_OK(s->put("k", {set(kTerm, Value::u64(1))}));
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::sync; });
  Status st = s->put("k", {set(kTerm, Value::u64(2))});
  EXPECT_EQ(st.code(), Errc::fail_stopped);
  EXPECT_NE(st.error().message.find("injected failure"), std::string::npos) << st.to_string();
  fs.fail_when(nullptr);
  // The disk works again; the store still refuses to claim anything.
  EXPECT_EQ(s->put("k", {set(kApplied, Value::u64(3))}).code(), Errc::fail_stopped);
  EXPECT_EQ(s->put("k", {set(kTerm, Value::u64(3))}).code(), Errc::fail_stopped);
  EXPECT_EQ(s->sync().code(), Errc::fail_stopped);
  EXPECT_EQ(s->read("k").code(), Errc::fail_stopped);
  EXPECT_EQ(s->close().code(), Errc::fail_stopped);
  Info i = s->info();
  EXPECT_TRUE(i.fail_stopped);
  EXPECT_NE(i.fail_stop_reason.find("fsync"), std::string::npos);
  s.reset();
  fs.crash();
  auto s2 = must_open(fs, "/m", raft_schema(), o);
  EXPECT_EQ((*s2->read("k"))[kTerm], Value::u64(1));  // the unacknowledged 2 is gone
}

TEST(SlotStoreReq, Req7_WalWriteFailureFailStops) {
  FaultFileSystem fs;
  auto s = must_open(fs, "/m", raft_schema(), small_options());
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::write; });
  EXPECT_EQ(s->put("k", {set(kApplied, Value::u64(1))}).code(), Errc::fail_stopped);
  fs.fail_when(nullptr);
  EXPECT_EQ(s->put("k", {set(kApplied, Value::u64(2))}).code(), Errc::fail_stopped);
}

TEST(SlotStoreReq, Req7_CompactionFsyncFailureFailStops) {
  FaultFileSystem fs;
  std::atomic<bool> fail{false};
  Options o = inline_options();
  o.compaction_hook = [&](CompactionPoint p) {
    if (p == CompactionPoint::before_sync) fail = true;
    return Status::OK();
  };
  fs.fail_when([&](const FaultOp& op) { return fail && op.kind == FaultOp::Kind::sync; });
  auto s = must_open(fs, "/m", raft_schema(), o);
  Status st;
  for (uint64_t v = 1; st.ok() && v < 10000; ++v) st = s->put("k", {set(kApplied, Value::u64(v))});
  EXPECT_EQ(st.code(), Errc::fail_stopped);
  fail = false;
  EXPECT_EQ(s->sync().code(), Errc::fail_stopped);
  EXPECT_TRUE(s->info().fail_stopped);
  fs.fail_when(nullptr);
}

// ---------------------------------------------------------------- Req 8

TEST(SlotStoreReq, Req8_SyncFinishesAnInFlightCompactionFirst) {
  FaultFileSystem fs;
  Gate gate;
  Options o = small_options(16, 16, 8192);
  o.compaction_hook = [&](CompactionPoint p) {
    if (p == CompactionPoint::before_sync) gate.wait();
    return Status::OK();
  };
  auto s = must_open(fs, "/m", raft_schema(), o);
  uint64_t v = 0;
  while (s->info().wal_switches == 0) ASSERT_OK(s->put("k", {set(kApplied, Value::u64(++v))}));
  ASSERT_TRUE(gate.wait_until_waiting(1));
  auto synced = std::async(std::launch::async, [&] { return s->sync(); });
  EXPECT_EQ(synced.wait_for(100ms), std::future_status::timeout);
  EXPECT_EQ(s->info().compactions, 0u);
  gate.open();
  ASSERT_OK(synced.get());
  EXPECT_EQ(s->info().compactions, 1u);  // finished before sync returned
  EXPECT_EQ(s->info().unsynced_bytes, 0u);
  fs.crash();
  auto s2 = must_open(fs, "/m", raft_schema(), small_options(16, 16, 8192));
  EXPECT_EQ((*s2->read("k"))[kApplied], Value::u64(v));
}

// ---------------------------------------------------------------- Req 9

// Recovery reads the header, string table, both record copies and both WAL
// halves sequentially, each about once: its cost is linear in the file
// size, measured here at full capacity (every slot and string used, both
// WAL halves holding entries). bench/slotstore measures the time.
TEST(SlotStoreReq, Req9_RecoveryReadsEachByteOfTheFileAboutOnce) {
  FaultFileSystem base;
  CountingFs fs(base);
  Options o = inline_options(512, 64, 256 * 1024);
  // Keep the sealed half uncompacted, so recovery replays both halves.
  o.compaction_hook = [](CompactionPoint) { return Error(Errc::io, "held for the test"); };
  uint64_t file_size = 0;
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    WriteBatch b;
    for (int i = 0; i < 512; ++i) {
      b.put("server-" + std::to_string(i),
            {set(kTerm, Value::u64(i)),
             set(kVote, vote("n" + std::to_string(i % 32), "m" + std::to_string(i % 32)))});
    }
    ASSERT_OK(s->write_batch(b));
    uint64_t v = 0;
    while (s->info().compactions_failed == 0) {
      ASSERT_OK(s->put("server-" + std::to_string(v % 512), {set(kApplied, Value::u64(v))}));
      ++v;
    }
    for (int i = 0; i < 500; ++i) ASSERT_OK(s->put("server-1", {set(kApplied, Value::u64(i))}));
    Info info = s->info();
    EXPECT_EQ(info.slots_used, info.slots_total);
    EXPECT_EQ(info.strings_used, info.strings_total);
    file_size = info.file_size;
  }
  Options ro;
  ro.read_only = true;
  fs.bytes_read = 0;
  fs.reads = 0;
  auto s = SlotStore::open_existing(fs, "/m", ro);
  ASSERT_OK(s);
  EXPECT_EQ((*s)->info().slots_used, 512u);
  std::printf("file %llu bytes, recovery read %llu bytes in %llu reads\n",
              (unsigned long long)file_size, (unsigned long long)fs.bytes_read.load(),
              (unsigned long long)fs.reads.load());
  EXPECT_LE(fs.bytes_read.load(), file_size + file_size / 50);
  EXPECT_GE(fs.bytes_read.load(), file_size - 8192);  // it did read the WAL
  EXPECT_LE(fs.reads.load(), 40u);
}

// ---------------------------------------------------------------- Req 10

TEST(SlotStoreReq, Req10_OtherFormatVersionIsAClearError) {
  FaultFileSystem fs;
  { auto s = must_open(fs, "/m", raft_schema(), small_options()); }
  ASSERT_OK(patch(fs, "/m", 4, std::string("\x00\x02", 2)));
  auto r = SlotStore::open(fs, "/m", raft_schema(), small_options());
  EXPECT_EQ(r.code(), Errc::unsupported_version);
  EXPECT_NE(r.error().message.find("version 2"), std::string::npos) << r.error().message;
}

TEST(SlotStoreReq, Req10_OtherSchemaIsAClearError) {
  FaultFileSystem fs;
  { auto s = must_open(fs, "/m", raft_schema(), small_options()); }
  Schema other = raft_schema();
  other.fields[kApplied].frequency = Frequency::low;
  auto r = SlotStore::open(fs, "/m", other, small_options());
  EXPECT_EQ(r.code(), Errc::schema_mismatch);
  EXPECT_NE(r.error().message.find("last_applied:u64/high"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(SlotStore::open(fs, "/m", catalog_schema(), small_options()).code(),
            Errc::schema_mismatch);
}

Schema migrated_schema() {
  Schema s = raft_schema();
  s.max_key_len = 128;
  s.fields[kVote].type = FieldType::tuple_of({FieldType::interned(200), FieldType::interned(200)});
  s.fields.push_back({"lease", FieldType::u64(), Frequency::low});
  return s;
}

Contents fill_for_migration(FileSystem& fs, const std::string& path, int keys) {
  auto s = must_open(fs, path, raft_schema(), small_options(32, 32, 16 * 1024));
  WriteBatch b;
  for (int i = 0; i < keys; ++i) {
    b.put("server-" + std::to_string(i),
          {set(kTerm, Value::u64(i)), set(kVote, vote("n" + std::to_string(i % 5), "node")),
           set(kApplied, Value::u64(100 + i))});
  }
  EXPECT_OK(s->write_batch(b));
  EXPECT_OK(s->erase("server-3"));
  Contents c = contents_of(*s);
  EXPECT_OK(s->close());
  return c;
}

Contents widen(const Contents& c) {
  Contents out = c;
  for (auto& [k, r] : out) r.fields.resize(4);
  return out;
}

TEST(SlotStoreReq, Req10_MigrateChangesSchemaAndCapacity) {
  FaultFileSystem fs;
  ASSERT_OK(create_dirs(fs, "/d"));
  Contents before = fill_for_migration(fs, "/d/meta", 20);
  Options to = small_options(1000, 500, 64 * 1024);
  ASSERT_OK(SlotStore::migrate(fs, "/d/meta", migrated_schema(), to));
  fs.crash();  // the rename was made durable
  EXPECT_FALSE(exists(fs, "/d/meta.migrating"));
  auto s = must_open(fs, "/d/meta", migrated_schema(), small_options());
  EXPECT_EQ(s->info().slots_total, 1000u);
  EXPECT_EQ(s->info().strings_total, 500u);
  EXPECT_EQ(contents_of(*s), widen(before));
  ASSERT_OK(s->put("server-0", {set(3, Value::u64(5))}));
}

TEST(SlotStoreReq, Req10_FailedMigrateLeavesTheSourceIntact) {
  FaultFileSystem fs;
  ASSERT_OK(create_dirs(fs, "/d"));
  Contents before = fill_for_migration(fs, "/d/meta", 20);
  Bytes bytes = *read_file(fs, "/d/meta");
  Status st =
      SlotStore::migrate(fs, "/d/meta", migrated_schema(), small_options(10, 64, 16 * 1024));
  EXPECT_EQ(st.code(), Errc::store_full) << st.to_string();
  Schema narrowed = raft_schema();
  narrowed.fields[kTerm].type = FieldType::bytes(8);
  EXPECT_EQ(SlotStore::migrate(fs, "/d/meta", narrowed, small_options()).code(),
            Errc::invalid_argument);
  EXPECT_EQ(*read_file(fs, "/d/meta"), bytes);
  EXPECT_FALSE(exists(fs, "/d/meta.migrating"));
  EXPECT_FALSE(exists(fs, "/d/meta.migrating.creating"));
}

// A crash at every mutation of a migration leaves either the old store or
// the new one, complete, at the path.
TEST(SlotStoreReq, Req10_MigrateIsCrashAtomic) {
  uint64_t total = 0;
  {
    FaultFileSystem fs;
    ASSERT_OK(create_dirs(fs, "/d"));
    fill_for_migration(fs, "/d/meta", 12);
    uint64_t m0 = fs.mutation_count();
    ASSERT_OK(SlotStore::migrate(fs, "/d/meta", migrated_schema(), small_options(64, 64, 16384)));
    total = fs.mutation_count() - m0;
  }
  int old_seen = 0, new_seen = 0;
  for (uint64_t k = 0; k <= total; ++k) {
    SCOPED_TRACE("crash after " + std::to_string(k) + " of " + std::to_string(total));
    FaultFileSystem fs;
    ASSERT_OK(create_dirs(fs, "/d"));
    Contents before = fill_for_migration(fs, "/d/meta", 12);
    fs.crash_after(k);
    (void)SlotStore::migrate(fs, "/d/meta", migrated_schema(), small_options(64, 64, 16384));
    fs.crash(CrashOptions{k, k % 2 == 0, k % 3 == 0, k % 4 == 0});
    auto s = SlotStore::open_existing(fs, "/d/meta", small_options());
    ASSERT_OK(s);
    if ((*s)->schema() == raft_schema()) {
      ++old_seen;
      EXPECT_EQ(contents_of(**s), before);
    } else {
      ++new_seen;
      ASSERT_EQ((*s)->schema(), migrated_schema());
      EXPECT_EQ(contents_of(**s), widen(before));
      EXPECT_EQ((*s)->info().slots_total, 64u);
    }
  }
  EXPECT_GT(old_seen, 0);
  EXPECT_GT(new_seen, 0);
}

}  // namespace
}  // namespace strata::slotstore
