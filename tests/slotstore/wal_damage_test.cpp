// Damage in the WAL: a torn tail is cut silently, damage followed by proof
// that the damaged entries were durable is corruption (docs/formats/slotstore.md,
// "WAL", "Torn tail or damage"). Each test writes a store, damages
// one byte of the file the way a disk would, and opens it again.
#include "slotstore/format.h"
#include "slotstore_test_util.h"
#include "wal_chain.h"

namespace strata::slotstore {
namespace {

using namespace test;

// Flips one bit of the byte at `off`, durably.
void flip(FileSystem& fs, const std::string& path, uint64_t off) {
  Bytes b = *read_file(fs, path);
  ASSERT_OK(patch(fs, path, off, Bytes(1, char(b[off] ^ 0x04))));
}

// Opening read-only and for writing both fail with `corrupt` naming the
// file and `position`, and change nothing.
void expect_corrupt_at(FileSystem& fs, const std::string& path, uint64_t position,
                       const std::string& also) {
  const Bytes before = *read_file(fs, path);
  Options ro;
  ro.read_only = true;
  for (const Options& o : {ro, inline_options()}) {
    auto r = SlotStore::open_existing(fs, path, o);
    ASSERT_FALSE(r.ok()) << (o.read_only ? "read-only" : "writer") << " open succeeded";
    EXPECT_EQ(r.code(), Errc::corrupt) << r.error().to_string();
    const std::string& m = r.error().message;
    EXPECT_NE(m.find(path + " position " + std::to_string(position) + ":"), std::string::npos) << m;
    EXPECT_NE(m.find("not a torn tail"), std::string::npos) << m;
    EXPECT_NE(m.find(also), std::string::npos) << m;
  }
  EXPECT_EQ(*read_file(fs, path), before) << "a refused open changed the file";
}

// The case on a bare store: every record still only in the WAL,
// one bit flipped in the middle of the live half. Before, open stopped the
// chain there and silently dropped every later key.
TEST(SlotStoreWalDamage, DamageBeforeDurableEntriesIsCorruptNotATornTail) {
  FaultFileSystem fs;
  {
    auto s = must_open(fs, "/m", raft_schema(), inline_options(64, 16, 64 * 1024));
    for (int i = 0; i < 40; ++i) {
      ASSERT_OK(s->put("k" + std::to_string(i), {set(kTerm, Value::u64(i))}));  // durable
    }
  }
  const format::Layout l = layout_of(fs, "/m");
  const Bytes file = *read_file(fs, "/m");
  const std::vector<EntryAt> puts = puts_of(chain_of(file, l, active_half(file, l)));
  ASSERT_EQ(puts.size(), 40u);
  const EntryAt victim = puts[20];
  flip(fs, "/m", victim.offset + victim.size - 3);
  expect_corrupt_at(fs, "/m", victim.offset, "a durable entry of the same cycle");
}

// A clean close records that everything written is durable, so even the
// last entries (high-frequency writes, never fsynced before the close) are
// protected.
TEST(SlotStoreWalDamage, LastEntriesBeforeACleanCloseAreProtectedToo) {
  FaultFileSystem fs;
  {
    auto s = must_open(fs, "/m", raft_schema(), inline_options(64, 16, 64 * 1024));
    for (int i = 0; i < 10; ++i) ASSERT_OK(s->put("k", {set(kApplied, Value::u64(i))}));
  }
  const format::Layout l = layout_of(fs, "/m");
  const Bytes file = *read_file(fs, "/m");
  const std::vector<EntryAt> chain = chain_of(file, l, active_half(file, l));
  ASSERT_EQ(chain.back().type, format::EntryType::durable);
  const EntryAt last_put = puts_of(chain).back();
  flip(fs, "/m", last_put.offset + last_put.size - 1);
  expect_corrupt_at(fs, "/m", last_put.offset, "up to lsn " + std::to_string(last_put.lsn));
}

// The record a clean close writes is found again by the next open, so an
// open and close that change nothing write nothing (no record per open).
TEST(SlotStoreWalDamage, IdleOpenOfACleanlyClosedStoreWritesNothing) {
  FaultFileSystem fs;
  {
    auto s = must_open(fs, "/m", raft_schema(), inline_options(64, 16, 64 * 1024));
    ASSERT_OK(s->put("k", {set(kApplied, Value::u64(1))}));
  }
  const Bytes closed = *read_file(fs, "/m");
  { ASSERT_NE(must_open(fs, "/m", raft_schema(), inline_options(64, 16, 64 * 1024)), nullptr); }
  EXPECT_EQ(*read_file(fs, "/m"), closed);
}

// Entries written after the last fsync may reach the disk in any order: a
// damaged unsynced entry followed by intact unsynced ones is a torn tail,
// not corruption. Everything from the damage on is dropped, the durable
// part kept.
TEST(SlotStoreWalDamage, IntactUnsyncedEntriesAfterTheDamageAreStillATornTail) {
  FaultFileSystem fs;
  Bytes cached;
  {
    auto s = must_open(fs, "/m", raft_schema(), inline_options(64, 16, 64 * 1024));
    ASSERT_OK(s->put("a", {set(kTerm, Value::u64(1))}));     // durable
    ASSERT_OK(s->put("b", {set(kApplied, Value::u64(2))}));  // unsynced
    ASSERT_OK(s->put("c", {set(kApplied, Value::u64(3))}));  // unsynced
    cached = *read_file(fs, "/m");                           // what the page cache holds
    fs.crash_after(0);  // the machine dies before close writes anything
  }
  fs.clear_crash_after();
  fs.crash();
  // The power loss kept every unsynced byte but damaged "b".
  const format::Layout l = layout_of(fs, "/m");
  const int a = active_half(cached, l);
  const std::vector<EntryAt> puts = puts_of(chain_of(cached, l, a));
  ASSERT_EQ(puts.size(), 3u);
  const uint64_t from = puts[0].offset + puts[0].size;
  const uint64_t to = puts[2].offset + puts[2].size;
  Bytes region = cached.substr(from, to - from);
  region[puts[1].offset + puts[1].size - 1 - from] ^= 0x04;
  ASSERT_OK(patch(fs, "/m", from, region));

  auto s = must_open(fs, "/m", raft_schema(), inline_options(64, 16, 64 * 1024));
  ASSERT_NE(s, nullptr);
  Contents got = contents_of(*s);
  EXPECT_EQ(got.size(), 1u) << describe(got);
  EXPECT_EQ((*s->read("a"))[kTerm], Value::u64(1));
}

// The older half of the WAL is replayed first while it is not compacted.
// Damaged at its very first entry, it used to look like a half compacted
// and reused since, and every entry in it was silently dropped. It cannot
// have been reused while the active half still has room: corruption.
TEST(SlotStoreWalDamage, UncompactedOlderHalfDamagedAtItsFirstEntryIsCorrupt) {
  FaultFileSystem fs;
  Options o = inline_options();
  o.compaction_hook = [](CompactionPoint) { return Error(Errc::io, "held for the test"); };
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    uint64_t v = 0;
    while (s->info().wal_switches == 0) {
      ASSERT_OK(s->put("k" + std::to_string(v % 8), {set(kTerm, Value::u64(++v))}));
    }
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(++v))}));
  }
  const format::Layout l = layout_of(fs, "/m");
  const Bytes file = *read_file(fs, "/m");
  const int b = 1 - active_half(file, l);
  const std::vector<EntryAt> older = chain_of(file, l, b);
  ASSERT_FALSE(older.empty());
  flip(fs, "/m", older[0].offset + older[0].size - 1);
  expect_corrupt_at(fs, "/m", older[0].offset, "the header of the next cycle");
}

TEST(SlotStoreWalDamage, OlderHalfWithADamagedHeaderIsCorrupt) {
  FaultFileSystem fs;
  Options o = inline_options();
  o.compaction_hook = [](CompactionPoint) { return Error(Errc::io, "held for the test"); };
  {
    auto s = must_open(fs, "/m", raft_schema(), o);
    uint64_t v = 0;
    while (s->info().wal_switches == 0) ASSERT_OK(s->put("k", {set(kTerm, Value::u64(++v))}));
  }
  const format::Layout l = layout_of(fs, "/m");
  const Bytes file = *read_file(fs, "/m");
  const int b = 1 - active_half(file, l);
  flip(fs, "/m", l.half_offset(b) + 9);  // its seq
  expect_corrupt_at(fs, "/m", l.half_offset(b), "no valid header of seq 1");
}

// Once compacted, the older half holds nothing the records lack, and a
// half compacted and not reused yet still connects: only damage makes it
// stop connecting, and while the active half has room that is corruption
// too, though nothing would be lost. (Recovery cannot tell a damaged spent
// half from a damaged unspent one there.)
TEST(SlotStoreWalDamage, CompactedOlderHalfThatStillHasToConnectIsCheckedToo) {
  FaultFileSystem fs;
  {
    auto s = must_open(fs, "/m", raft_schema(), inline_options());
    uint64_t v = 0;
    while (s->info().compactions == 0) ASSERT_OK(s->put("k", {set(kTerm, Value::u64(++v))}));
    ASSERT_OK(s->put("k", {set(kTerm, Value::u64(++v))}));
  }
  const format::Layout l = layout_of(fs, "/m");
  const Bytes file = *read_file(fs, "/m");
  const int b = 1 - active_half(file, l);
  const std::vector<EntryAt> older = chain_of(file, l, b);
  ASSERT_GE(older.size(), 3u);
  // Undamaged, it opens (the spent half is compacted again, harmlessly).
  { ASSERT_NE(must_open(fs, "/m", raft_schema(), inline_options()), nullptr); }
  flip(fs, "/m", older[1].offset + older[1].size - 1);
  expect_corrupt_at(fs, "/m", older[1].offset, "still has room");
}

// ---- generations read from disk (never an assertion) ----

TEST(SlotStoreWalDamage, RecordGenerationAboveTheLargestIsCorrupt) {
  FaultFileSystem fs;
  { auto s = must_open(fs, "/m", raft_schema(), inline_options()); }
  const format::Layout l = layout_of(fs, "/m");
  format::RecordImage rec;
  rec.lsn = 1;
  rec.gen = UINT32_MAX;
  rec.fields.assign(l.fields_size, '\0');
  Bytes copy(l.record_size, '\0');
  format::encode_record(l, 3, 1, rec, copy.data());
  ASSERT_OK(patch(fs, "/m", l.record_offset(3, 1), copy));
  auto r = SlotStore::open(fs, "/m", raft_schema(), inline_options());
  ASSERT_EQ(r.code(), Errc::corrupt);
  EXPECT_NE(r.error().message.find("slot 3: record copy 1"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("generation 4294967295"), std::string::npos)
      << r.error().message;
}

// A slot whose generation is used up can never be assigned again (the slot
// rule needs a newer generation): it is retired, and the store reports
// store_full when no other slot is free, instead of aborting.
TEST(SlotStoreWalDamage, SlotWithItsGenerationUsedUpIsRetired) {
  FaultFileSystem fs;
  { auto s = must_open(fs, "/m", raft_schema(), inline_options(2, 4)); }
  const format::Layout l = layout_of(fs, "/m");
  // Slot 0 free with the largest generation; slot 1 live at it.
  for (uint32_t slot : {0u, 1u}) {
    format::RecordImage rec;
    rec.lsn = 1;
    rec.gen = format::kMaxGeneration;
    rec.live = slot == 1;
    if (rec.live) rec.key = "old";
    rec.fields.assign(l.fields_size, '\0');
    Bytes copy(l.record_size, '\0');
    format::encode_record(l, slot, 1, rec, copy.data());
    ASSERT_OK(patch(fs, "/m", l.record_offset(slot, 1), copy));
  }
  auto s = must_open(fs, "/m", raft_schema(), inline_options(2, 4));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->put("new", {set(kTerm, Value::u64(1))}).code(), Errc::store_full);
  // Erasing the live key frees no slot either, also within one batch.
  WriteBatch b;
  b.erase("old");
  b.put("new", {set(kTerm, Value::u64(1))});
  EXPECT_EQ(s->write_batch(b).code(), Errc::store_full);
  ASSERT_OK(s->erase("old"));
  EXPECT_EQ(s->put("new", {set(kTerm, Value::u64(1))}).code(), Errc::store_full);
  s.reset();
  s = must_open(fs, "/m", raft_schema(), inline_options(2, 4));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->info().slots_used, 0u);
  EXPECT_EQ(s->put("new", {set(kTerm, Value::u64(1))}).code(), Errc::store_full);
}

}  // namespace
}  // namespace strata::slotstore
