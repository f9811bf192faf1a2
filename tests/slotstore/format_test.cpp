// The pure parts: schema encoding, the file format's codecs (every torn
// prefix of a record, string entry, half header and WAL entry is rejected),
// the WAL hash chain, and the slot rule shared by recovery and compaction.
#include "slotstore/format.h"

#include <map>

#include "common/random.h"
#include "slotstore/slot_rules.h"
#include "slotstore/slot_table.h"
#include "slotstore_test_util.h"

namespace strata::slotstore {
namespace {

using namespace test;

format::Layout raft_layout() {
  auto l = format::make_layout(raft_schema(), 8, 8, 64 * 1024);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  return *l;
}

TEST(SlotStoreFormat, SchemaEncodingRoundTripsAndNamesFields) {
  for (const Schema& s : {raft_schema(), catalog_schema()}) {
    auto d = Schema::decode(s.encode());
    ASSERT_OK(d);
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(raft_schema().to_string(),
            "max_key=64 current_term:u64/low voted_for:(interned(64),interned(64))/low "
            "last_applied:u64/high");
  EXPECT_EQ(*raft_schema().field_id("last_applied"), kApplied);
  Bytes enc = raft_schema().encode();
  EXPECT_EQ(Schema::decode(enc.substr(0, enc.size() - 1)).code(), Errc::corrupt);
  EXPECT_EQ(Schema::decode(enc + "x").code(), Errc::corrupt);
}

TEST(SlotStoreFormat, LayoutIsAlignedAndSizedFromTheSchema) {
  format::Layout l = raft_layout();
  EXPECT_EQ(l.fields_size, 9u + 9 + 9);
  EXPECT_EQ(l.record_size, format::kRecordHeaderSize + 64 + l.fields_size);
  EXPECT_EQ(l.string_slot_size, format::kStringHeaderSize + 64);
  for (uint64_t off : {l.strings_off, l.records_off, l.wal_off, l.half_size}) {
    EXPECT_EQ(off % format::kAlign, 0u) << off;
  }
  EXPECT_GE(l.records_off, l.strings_off + 8 * l.string_slot_size);
  EXPECT_GE(l.wal_off, l.record_offset(7, 1) + l.record_size);
  EXPECT_EQ(l.file_size, l.wal_off + 2 * l.half_size);
  // The header decodes back to the same layout.
  uint64_t need = 0;
  auto back = format::decode_header(format::encode_header(l), "/x", &need);
  ASSERT_OK(back);
  EXPECT_EQ(back->file_size, l.file_size);
  EXPECT_EQ(back->schema, l.schema);
}

TEST(SlotStoreFormat, EveryTornPrefixOfARecordCopyIsRejected) {
  format::Layout l = raft_layout();
  format::RecordImage rec;
  rec.lsn = 42;
  rec.gen = 3;
  rec.live = true;
  rec.key = "server-1";
  rec.fields.assign(l.fields_size, '\0');
  rec.fields[0] = 1;
  rec.fields[8] = 7;
  Bytes old(l.record_size, '\0'), fresh(l.record_size, '\0');
  format::RecordImage prev = rec;
  prev.lsn = 10;
  prev.fields[8] = 6;
  format::encode_record(l, 5, 1, prev, old.data());
  format::encode_record(l, 5, 1, rec, fresh.data());
  format::RecordImage out;
  ASSERT_TRUE(format::decode_record(l, 5, 1, fresh.data(), &out));
  EXPECT_EQ(out.lsn, 42u);
  EXPECT_EQ(out.key, "server-1");
  EXPECT_EQ(out.fields, rec.fields);
  // The same bytes at another slot or copy are not valid there.
  EXPECT_FALSE(format::decode_record(l, 4, 1, fresh.data(), &out));
  EXPECT_FALSE(format::decode_record(l, 5, 0, fresh.data(), &out));
  // New bytes over old ones, cut at every position.
  for (size_t cut = 1; cut < l.record_size; ++cut) {
    Bytes torn = fresh.substr(0, cut) + old.substr(cut);
    if (torn == fresh || torn == old) continue;
    EXPECT_FALSE(format::decode_record(l, 5, 1, torn.data(), &out)) << "cut at " << cut;
  }
}

TEST(SlotStoreFormat, PickCurrentPrefersTheValidCopyWithTheHigherLsn) {
  EXPECT_EQ(format::pick_current(true, 5, true, 9), 1);
  EXPECT_EQ(format::pick_current(true, 9, true, 5), 0);
  EXPECT_EQ(format::pick_current(true, 0, true, 0), 0);
  EXPECT_EQ(format::pick_current(false, 99, true, 5), 1);
  EXPECT_EQ(format::pick_current(true, 5, false, 99), 0);
  EXPECT_EQ(format::pick_current(false, 5, false, 9), -1);
}

TEST(SlotStoreFormat, StringEntriesAreEmptyValidOrDamaged) {
  format::Layout l = raft_layout();
  Bytes slot(l.string_slot_size, '\0');
  Bytes out;
  EXPECT_EQ(format::decode_string(l, 3, slot.data(), &out), format::StringSlot::empty);
  format::encode_string(l, 3, "node-a@host", slot.data());
  EXPECT_EQ(format::decode_string(l, 3, slot.data(), &out), format::StringSlot::valid);
  EXPECT_EQ(out, "node-a@host");
  EXPECT_EQ(format::decode_string(l, 4, slot.data(), &out), format::StringSlot::damaged);
  for (size_t cut = 1; cut < format::kStringHeaderSize + 11; ++cut) {
    Bytes torn = slot.substr(0, cut) + Bytes(l.string_slot_size - cut, '\0');
    EXPECT_NE(format::decode_string(l, 3, torn.data(), &out), format::StringSlot::valid) << cut;
  }
}

TEST(SlotStoreFormat, HalfHeaderChecksItsHalfAndCrc) {
  char h[format::kHalfHeaderSize];
  format::encode_half_header(1, format::HalfHeader{7, 100, 0xdeadbeef}, h);
  format::HalfHeader out;
  ASSERT_TRUE(format::decode_half_header(1, h, &out));
  EXPECT_EQ(out.seq, 7u);
  EXPECT_EQ(out.first_lsn, 100u);
  EXPECT_EQ(out.chain_seed, 0xdeadbeefu);
  EXPECT_FALSE(format::decode_half_header(0, h, &out));  // copied to the other half
  h[12] ^= 1;
  EXPECT_FALSE(format::decode_half_header(1, h, &out));
  char zeros[format::kHalfHeaderSize] = {};
  EXPECT_FALSE(format::decode_half_header(0, zeros, &out));
}

Bytes put_body(uint32_t slot, uint32_t gen, uint64_t applied) {
  Bytes b;
  ByteWriter w(&b);
  w.be32(slot);
  w.be32(gen);
  w.u8(0);
  w.u8(1);
  w.u8(kApplied);
  w.u8(1);
  w.be64(applied);
  return b;
}

TEST(SlotStoreFormat, WalEntriesChainFromTheirPredecessor) {
  format::Layout l = raft_layout();
  Bytes log;
  uint32_t c1 = format::append_entry(&log, format::EntryType::put, 1, put_body(0, 1, 10), 77);
  size_t second = log.size();
  uint32_t c2 = format::append_entry(&log, format::EntryType::put, 2, put_body(0, 1, 11), c1);
  format::Entry e;
  ASSERT_EQ(*format::decode_entry(l, log, 77, &e), format::EntryStatus::ok);
  EXPECT_EQ(e.chain, c1);
  EXPECT_EQ(e.lsn, 1u);
  ASSERT_EQ(*format::decode_entry(l, BytesView(log).substr(second), c1, &e),
            format::EntryStatus::ok);
  EXPECT_EQ(e.chain, c2);
  // A valid entry after any other predecessor ends the chain.
  EXPECT_EQ(*format::decode_entry(l, BytesView(log).substr(second), c1 ^ 1, &e),
            format::EntryStatus::end);
  EXPECT_EQ(*format::decode_entry(l, log, 78, &e), format::EntryStatus::end);
  // Every torn prefix (over zeros) ends the chain too.
  for (size_t cut = 0; cut < second; ++cut) {
    Bytes torn = log.substr(0, cut) + Bytes(second - cut, '\0');
    EXPECT_EQ(*format::decode_entry(l, torn, 77, &e), format::EntryStatus::end) << cut;
  }
  // A chain-valid entry with a bad body is corruption, not a torn write.
  Bytes bad;
  Bytes body = put_body(99, 1, 1);  // slot 99 of 8
  format::append_entry(&bad, format::EntryType::put, 3, body, 5);
  EXPECT_EQ(format::decode_entry(l, bad, 5, &e).code(), Errc::corrupt);
}

// A `durable` entry is an ordinary link of the chain, and can also be
// recognised on its own (recovery searches for it past a broken chain):
// its own check covers its size, type, lsn and durable lsn.
TEST(SlotStoreFormat, DurableEntryChainsAndIsRecognisedOnItsOwn) {
  format::Layout l = raft_layout();
  Bytes log;
  format::append_entry(&log, format::EntryType::durable, 9, format::durable_body(9, 7), 3);
  ASSERT_EQ(log.size(), format::kDurableEntrySize);
  format::Entry e;
  ASSERT_EQ(*format::decode_entry(l, log, 3, &e), format::EntryStatus::ok);
  EXPECT_EQ(e.type, format::EntryType::durable);
  EXPECT_EQ(e.lsn, 9u);
  EXPECT_EQ(e.durable_lsn, 7u);
  format::DurableClaim c;
  ASSERT_TRUE(format::decode_durable_claim(log, &c));
  EXPECT_EQ(c.lsn, 9u);
  EXPECT_EQ(c.durable_lsn, 7u);
  EXPECT_EQ(BytesView(log).substr(4, 5), format::durable_entry_signature());
  // The chain value (bytes 0..3) is not part of its own check; any other
  // changed byte makes it unrecognisable.
  for (size_t i = 4; i < log.size(); ++i) {
    Bytes bad = log;
    bad[i] ^= 0x10;
    EXPECT_FALSE(format::decode_durable_claim(bad, &c)) << i;
  }
  EXPECT_FALSE(format::decode_durable_claim(BytesView(log).substr(0, log.size() - 1), &c));
  // Chain-valid but claiming its own lsn or later, or failing its own
  // check: corruption, not a torn write.
  Bytes self;
  format::append_entry(&self, format::EntryType::durable, 9, format::durable_body(9, 9), 3);
  EXPECT_EQ(format::decode_entry(l, self, 3, &e).code(), Errc::corrupt);
  Bytes mismatched;
  format::append_entry(&mismatched, format::EntryType::durable, 9, format::durable_body(8, 7), 3);
  EXPECT_EQ(format::decode_entry(l, mismatched, 3, &e).code(), Errc::corrupt);
}

// Generations above kMaxGeneration are never written: a chain-valid put or
// erase carrying one is corrupt (it would otherwise reach the writer's
// generation arithmetic).
TEST(SlotStoreFormat, WalGenerationAboveTheLargestIsCorrupt) {
  format::Layout l = raft_layout();
  format::Entry e;
  for (uint32_t gen : {format::kMaxGeneration, format::kMaxGeneration + 1}) {
    Bytes put, erase;
    format::append_entry(&put, format::EntryType::put, 1, put_body(0, gen, 5), 0);
    Bytes eb;
    ByteWriter w(&eb);
    w.be32(0);
    w.be32(gen);
    format::append_entry(&erase, format::EntryType::erase, 1, eb, 0);
    if (gen == format::kMaxGeneration) {
      EXPECT_EQ(*format::decode_entry(l, put, 0, &e), format::EntryStatus::ok);
      EXPECT_EQ(*format::decode_entry(l, erase, 0, &e), format::EntryStatus::ok);
      continue;
    }
    auto p = format::decode_entry(l, put, 0, &e);
    EXPECT_EQ(p.code(), Errc::corrupt);
    EXPECT_NE(p.error().message.find("generation 4294967295"), std::string::npos)
        << p.error().message;
    EXPECT_EQ(format::decode_entry(l, erase, 0, &e).code(), Errc::corrupt);
  }
}

// Why a chain stops, for the messages that name damage.
TEST(SlotStoreFormat, WhyChainEndsNamesTheReason) {
  Bytes log;
  format::append_entry(&log, format::EntryType::put, 1, put_body(0, 1, 10), 77);
  EXPECT_FALSE(format::why_chain_ends(log, 77).has_value());
  EXPECT_NE(format::why_chain_ends(log, 78)->find("does not continue the hash chain"),
            std::string::npos);
  EXPECT_NE(format::why_chain_ends(Bytes(40, '\0'), 77)->find("zero bytes"), std::string::npos);
  EXPECT_NE(format::why_chain_ends(log.substr(0, 10), 77)->find("too few"), std::string::npos);
  EXPECT_NE(format::why_chain_ends(log.substr(0, log.size() - 1), 77)->find("out of range"),
            std::string::npos);
}

TEST(SlotStoreFormat, ApplyUpdatesWritesTheFixedEncoding) {
  format::Layout l = raft_layout();
  Bytes log;
  format::append_entry(&log, format::EntryType::put, 1, put_body(0, 1, 0x0102030405060708), 0);
  format::Entry e;
  ASSERT_EQ(*format::decode_entry(l, log, 0, &e), format::EntryStatus::ok);
  Bytes fields(l.fields_size, '\0');
  ASSERT_OK(format::apply_updates(l, e, fields.data()));
  const format::FieldLayout& f = l.fields[kApplied];
  EXPECT_EQ(fields[f.offset], 1);
  EXPECT_EQ(fields.substr(f.offset + 1, 8), Bytes("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
}

// The slot rule, case by case.
TEST(SlotStoreFormat, SlotRuleAppliesOnlyToTheRightGeneration) {
  format::Entry put;
  put.type = format::EntryType::put;
  put.lsn = 50;
  put.gen = 3;
  format::Entry assign = put;
  assign.assign = true;
  format::Entry erase = put;
  erase.type = format::EntryType::erase;
  // Covered by the record copy.
  EXPECT_EQ(judge(put, 50, true, 3), Verdict::covered);
  EXPECT_EQ(judge(assign, 60, false, 2), Verdict::covered);
  // Right generation.
  EXPECT_EQ(judge(put, 10, true, 3), Verdict::apply);
  EXPECT_EQ(judge(erase, 10, true, 3), Verdict::apply);
  EXPECT_EQ(judge(assign, 10, false, 2), Verdict::apply);
  // A stale entry of the previous key never lands on the new one.
  EXPECT_EQ(judge(put, 10, true, 4), Verdict::stale);
  EXPECT_EQ(judge(erase, 10, true, 4), Verdict::stale);
  EXPECT_EQ(judge(put, 10, false, 3), Verdict::stale);
  // Assign needs a free slot and a newer generation.
  EXPECT_EQ(judge(assign, 10, true, 2), Verdict::stale);
  EXPECT_EQ(judge(assign, 10, false, 3), Verdict::stale);
}

TEST(SlotStoreFormat, StringTableHandsOutHolesAndRefusesConflicts) {
  StringTable t(4);
  EXPECT_EQ(*t.next_free(), 0u);
  ASSERT_TRUE(t.add(2, "c"));  // ids 0 and 1 become holes
  EXPECT_EQ(t.used(), 1u);
  EXPECT_EQ(t.available(), 3u);
  EXPECT_FALSE(t.add(2, "other"));
  EXPECT_TRUE(t.add(2, "c"));
  uint32_t h = *t.next_free();
  EXPECT_LT(h, 2u);
  ASSERT_TRUE(t.add(h, "a"));
  ASSERT_TRUE(t.add(*t.next_free(), "b"));
  ASSERT_TRUE(t.add(*t.next_free(), "d"));
  EXPECT_FALSE(t.next_free().has_value());
  EXPECT_EQ(*t.find("c"), 2u);
  EXPECT_EQ(*t.get(3), "d");
  EXPECT_EQ(t.get(9), nullptr);
}

}  // namespace
}  // namespace strata::slotstore

namespace strata::slotstore {
namespace {

// The open-addressing key index under heavy churn (deletes shift probe runs
// back), checked against std::map.
// Small tables make probe runs wrap around the end all the time.
void churn(uint32_t slots, int ops) {
  SCOPED_TRACE(slots);
  auto l = format::make_layout(test::raft_schema(), slots, 8, 64 * 1024);
  ASSERT_OK(l);
  SlotTable t(*l);
  ASSERT_OK(t.build_index("/t"));
  std::map<std::string, uint32_t> ref;
  Random rng(42 + slots);
  const int check_every = slots < 100 ? 1 : 997;
  for (int i = 0; i < ops; ++i) {
    std::string k = "key-" + std::to_string(rng.uniform(slots * 3 / 2));
    auto it = ref.find(k);
    if (it != ref.end() && rng.chance(1, 2)) {
      t.release(it->second);
      ref.erase(it);
    } else if (it == ref.end() && t.free_count() > 0) {
      uint32_t s = t.pop_free();
      t.assign(s, t.gen(s) + 1, k);
      ref[k] = s;
    }
    if (i % check_every == 0) {
      ASSERT_EQ(t.used(), ref.size());
      for (const auto& [key, slot] : ref) ASSERT_EQ(t.find(key), slot) << key;
      ASSERT_FALSE(t.find("absent").has_value());
    }
  }
  ASSERT_OK(t.build_index("/t"));  // rebuilt from the slots: same answers
  for (const auto& [key, slot] : ref) ASSERT_EQ(t.find(key), slot);
  EXPECT_EQ(t.used() + t.free_count(), slots);
}

TEST(SlotStoreFormat, SlotTableIndexSurvivesChurn) {
  churn(3, 20000);
  churn(8, 50000);
  churn(1000, 200000);
}

}  // namespace
}  // namespace strata::slotstore
