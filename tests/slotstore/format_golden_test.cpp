// slotstore's file format pinned by bytes (docs/formats/slotstore.md):
// header (with the schema encoding), record copy, string table
// entry, WAL half header and the four WAL entry types, each encoded from a
// known value, compared with a vector under tests/slotstore/golden/ and
// decoded back; fields are also read through the vectors' annotations, at
// the document's offsets. Then the WAL a real store writes: its bytes are
// pinned except the marker's random nonce and the chain values that depend
// on it, which are checked by recomputing the chain instead.
#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "slotstore/format.h"
#include "slotstore/slotstore.h"
#include "support/golden.h"
#include "support/temp_dir.h"

namespace strata::slotstore {
namespace {

namespace golden = ::strata::test::golden;

// One field of each element kind and a tuple: a term (u64, low), a vote
// (interned node name and a bytes tag, low) and an applied index (u64, high).
enum : FieldId { kTerm = 0, kVote = 1, kApplied = 2 };
Schema golden_schema() {
  Schema s;
  s.max_key_len = 8;
  s.fields = {
      {"term", FieldType::u64(), Frequency::low},
      {"vote", FieldType::tuple_of({FieldType::interned(8), FieldType::bytes(4)}), Frequency::low},
      {"applied", FieldType::u64(), Frequency::high},
  };
  return s;
}
constexpr uint32_t kSlots = 4, kStrings = 4;
constexpr uint64_t kWalBytes = 8192;

format::Layout golden_layout() {
  auto l = format::make_layout(golden_schema(), kSlots, kStrings, kWalBytes);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  return *l;
}

// Body of a put of `key` (assigning slot 2, generation 5) that sets term 12
// and vote (string 3, "ab") and clears applied; the update encoding of
// docs/formats/slotstore.md "WAL", written out by hand.
Bytes put_body() {
  Bytes b;
  ByteWriter w(&b);
  w.be32(2);         // slot
  w.be32(5);         // gen
  w.u8(1);           // flags: assign
  w.u8(5);           // key_len
  w.bytes("srv-a");  // key
  w.u8(3);           // update count
  w.u8(kTerm), w.u8(1), w.be64(12);
  w.u8(kVote), w.u8(1), w.be32(3), w.be16(2), w.bytes("ab");
  w.u8(kApplied), w.u8(0);
  return b;
}

TEST(SlotStoreFormatGolden, HeaderBytesArePinned) {
  const format::Layout l = golden_layout();
  const Bytes header = format::encode_header(l);
  const golden::Vector v = golden::load("slotstore/golden/header.hex");
  // The vector holds header_len bytes; zero padding follows to 4096.
  ASSERT_EQ(header.size(), 4096u);
  ASSERT_TRUE(golden::matches(v, BytesView(header).substr(0, v.bytes.size())));
  EXPECT_EQ(header.find_first_not_of('\0', v.bytes.size()), Bytes::npos);
  golden::expect_fields(v, "header",
                        {{"magic", 0x53534C54},
                         {"version", 1},
                         {"reserved@6", 0},
                         {"header_len", v.bytes.size()},
                         {"slots", kSlots},
                         {"strings", kStrings},
                         {"record_size", l.record_size},
                         {"string_slot_size", 7 + 8},
                         {"reserved@28", 0},
                         {"strings_off", 4096},
                         {"records_off", 8192},
                         {"wal_off", 12288},
                         {"half_size", 4096},
                         {"schema_len", v.bytes.size() - 72}});
  golden::expect_fields(v, "schema",
                        {{"encoding_version", 1}, {"max_key_len", 8}, {"field_count", 3}});
  golden::expect_fields(v, "schema field 1",
                        {{"name_len", 4},
                         {"frequency", 0},
                         {"tuple", 1},
                         {"element_count", 2},
                         {"kind", 3},
                         {"max_len", 8},
                         {"kind@11", 2},
                         {"max_len@12", 4}});
  EXPECT_EQ(golden::field_bytes(v, "schema field 1", "name"), "vote");

  uint64_t need = 0;
  auto back = format::decode_header(header, "header.hex", &need);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->schema, golden_schema());
  EXPECT_EQ(back->file_size, l.file_size);
}

TEST(SlotStoreFormatGolden, RecordCopyBytesArePinned) {
  const format::Layout l = golden_layout();
  ASSERT_EQ(l.record_size, 18u + 8 + (1 + 8) + (1 + 4 + 2 + 4) + (1 + 8));
  // The fields area through the decoder recovery uses, from a put's updates.
  format::Entry put;
  put.type = format::EntryType::put;
  put.n_updates = 3;
  const Bytes body = put_body();
  put.updates = BytesView(body).substr(4 + 4 + 1 + 1 + 5 + 1);
  Bytes fields(l.fields_size, '\0');
  ASSERT_TRUE(format::apply_updates(l, put, fields.data()).ok());
  format::RecordImage rec{77, 5, true, "srv-a", fields};

  Bytes copy(l.record_size, '\0');
  format::encode_record(l, 2, 1, rec, copy.data());
  const golden::Vector v = golden::load("slotstore/golden/record.hex");
  ASSERT_TRUE(golden::matches(v, copy));
  golden::expect_fields(v, "record copy", {{"lsn", 77}, {"gen", 5}, {"state", 1}, {"key_len", 5}});
  EXPECT_EQ(golden::field_bytes(v, "record copy", "key"), Bytes("srv-a\0\0\0", 8));
  golden::expect_fields(v, "fields",
                        {{"present", 1},
                         {"term", 12},
                         {"present@9", 1},
                         {"string_id", 3},
                         {"length", 2},
                         {"present@20", 0},
                         {"applied", 0}});
  // The CRC covers be32(slot), u8(copy), then bytes [4, R).
  Bytes crc_input = Bytes("\0\0\0\2\1", 5) + v.bytes.substr(4);
  EXPECT_EQ(golden::field(v, "record copy", "crc"), crc32c::value(crc_input));

  format::RecordImage back;
  ASSERT_TRUE(format::decode_record(l, 2, 1, golden::pinned_bytes(v).data(), &back));
  EXPECT_EQ(back.lsn, 77u);
  EXPECT_EQ(back.gen, 5u);
  EXPECT_TRUE(back.live);
  EXPECT_EQ(back.key, "srv-a");
  EXPECT_EQ(back.fields, fields);
  // The slot and copy numbers are in the CRC: elsewhere it is not valid.
  EXPECT_FALSE(format::decode_record(l, 2, 0, v.bytes.data(), &back));
}

TEST(SlotStoreFormatGolden, StringEntryBytesArePinned) {
  const format::Layout l = golden_layout();
  Bytes entry(l.string_slot_size, '\0');
  format::encode_string(l, 3, "node-1", entry.data());
  const golden::Vector v = golden::load("slotstore/golden/string.hex");
  ASSERT_TRUE(golden::matches(v, entry));
  golden::expect_fields(v, "string entry", {{"used", 0xA5}, {"len", 6}});
  EXPECT_EQ(golden::field_bytes(v, "string entry", "string"), "node-1");
  Bytes crc_input = Bytes("\0\0\0\3", 4) + v.bytes.substr(4, 3 + 6);
  EXPECT_EQ(golden::field(v, "string entry", "crc"), crc32c::value(crc_input));
  Bytes back;
  EXPECT_EQ(format::decode_string(l, 3, v.bytes.data(), &back), format::StringSlot::valid);
  EXPECT_EQ(back, "node-1");
}

TEST(SlotStoreFormatGolden, WalHalfHeaderBytesArePinned) {
  char h[format::kHalfHeaderSize];
  format::encode_half_header(1, {3, 100, 0xdeadbeef}, h);
  const golden::Vector v = golden::load("slotstore/golden/half-header.hex");
  ASSERT_TRUE(golden::matches(v, BytesView(h, sizeof h)));
  golden::expect_fields(v, "half header",
                        {{"magic", 0x53535748},
                         {"seq", 3},
                         {"first_lsn", 100},
                         {"chain_seed", 0xdeadbeef},
                         {"zero", 0}});
  Bytes crc_input = Bytes("\1", 1) + v.bytes.substr(4);
  EXPECT_EQ(golden::field(v, "half header", "crc"), crc32c::value(crc_input));
  format::HalfHeader back;
  ASSERT_TRUE(format::decode_half_header(1, v.bytes.data(), &back));
  EXPECT_EQ(back.seq, 3u);
  EXPECT_EQ(back.first_lsn, 100u);
  EXPECT_EQ(back.chain_seed, 0xdeadbeefu);
}

TEST(SlotStoreFormatGolden, WalEntryBytesArePinned) {
  const format::Layout l = golden_layout();
  Bytes wal;
  uint32_t chain = 0xdeadbeef;  // a half's chain_seed
  Bytes marker, intern, erase;
  ByteWriter(&marker).be64(0x0123456789abcdefull);
  ByteWriter iw(&intern);
  iw.be32(3), iw.be16(6), iw.bytes("node-1");
  ByteWriter ew(&erase);
  ew.be32(2), ew.be32(5);
  chain = format::append_entry(&wal, format::EntryType::marker, 100, marker, chain);
  chain = format::append_entry(&wal, format::EntryType::intern, 101, intern, chain);
  chain = format::append_entry(&wal, format::EntryType::put, 102, put_body(), chain);
  chain = format::append_entry(&wal, format::EntryType::erase, 103, erase, chain);
  const golden::Vector v = golden::load("slotstore/golden/wal-entries.hex");
  ASSERT_TRUE(golden::matches(v, wal));
  golden::expect_fields(
      v, "entry 0: marker",
      {{"size", 25}, {"type", 1}, {"lsn", 100}, {"nonce", 0x0123456789abcdefull}});
  golden::expect_fields(v, "entry 1: intern",
                        {{"size", 17 + 12}, {"type", 4}, {"lsn", 101}, {"id", 3}, {"length", 6}});
  golden::expect_fields(v, "entry 2: put", {{"type", 2}, {"slot", 2}, {"gen", 5}, {"flags", 1}});
  golden::expect_fields(v, "entry 3: erase",
                        {{"size", 25}, {"type", 3}, {"lsn", 103}, {"slot", 2}, {"gen", 5}});
  // chain = extend(prev_chain, bytes [4, size)), from the seed.
  const Bytes bytes = golden::pinned_bytes(v);
  EXPECT_EQ(golden::field(v, "entry 0: marker", "chain"),
            crc32c::extend(0xdeadbeef, bytes.data() + 4, 25 - 4));

  uint32_t prev = 0xdeadbeef;
  size_t at = 0;
  std::vector<format::Entry> entries;
  while (at < bytes.size()) {
    format::Entry e;
    auto st = format::decode_entry(l, BytesView(bytes).substr(at), prev, &e);
    ASSERT_TRUE(st.ok()) << st.error().to_string();
    ASSERT_EQ(*st, format::EntryStatus::ok) << "entry at byte " << at;
    entries.push_back(e);
    prev = e.chain;
    at += e.size;
  }
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].nonce, 0x0123456789abcdefull);
  EXPECT_EQ(entries[1].string_id, 3u);
  EXPECT_EQ(entries[1].str, "node-1");
  EXPECT_EQ(entries[2].lsn, 102u);
  EXPECT_TRUE(entries[2].assign);
  EXPECT_EQ(entries[2].key, "srv-a");
  EXPECT_EQ(entries[2].n_updates, 3);
  EXPECT_EQ(entries[3].type, format::EntryType::erase);
  EXPECT_EQ(entries[3].slot, 2u);
  EXPECT_EQ(entries[3].gen, 5u);
  EXPECT_EQ(prev, chain);
}

// The file a store writes: its header region is header.hex, and its WAL
// half 0 after three batches is store-wal.hex, where the marker's nonce
// (random per open) and the chain values it feeds are not pinned ('xx');
// the chain is checked by replaying it from the half header's seed.
TEST(SlotStoreFormatGolden, StoreWritesTheDocumentedWal) {
  ::strata::test::TempDir dir;
  const std::string path = dir.sub("store");
  Options o;
  o.slots = kSlots;
  o.strings = kStrings;
  o.wal_bytes = kWalBytes;
  o.background_compaction = false;
  {
    auto s = SlotStore::open(posix_fs(), path, golden_schema(), o);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    ASSERT_TRUE((*s)->put("srv-a", {set(kTerm, Value::u64(12)),
                                    set(kVote, Value::tuple({Scalar("node-1"), Scalar("ab")}))})
                    .ok());
    ASSERT_TRUE((*s)->put("srv-a", {set(kApplied, Value::u64(99)), clear(kTerm)}).ok());
    ASSERT_TRUE((*s)->erase("srv-a").ok());
    ASSERT_TRUE((*s)->close().ok());
  }
  auto file = read_file(posix_fs(), path);
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  const format::Layout l = golden_layout();
  ASSERT_EQ(file->size(), l.file_size);

  const golden::Vector header = golden::load("slotstore/golden/header.hex");
  EXPECT_TRUE(golden::matches(header, BytesView(*file).substr(0, header.bytes.size())));
  // Creation wrote both copies of every slot as valid free records (lsn 0,
  // gen 0): slot 1 was never used.
  for (int copy : {0, 1}) {
    format::RecordImage rec{1, 1, true, "x", ""};
    ASSERT_TRUE(format::decode_record(l, 1, copy, file->data() + l.record_offset(1, copy), &rec));
    EXPECT_EQ(rec.lsn, 0u);
    EXPECT_EQ(rec.gen, 0u);
    EXPECT_FALSE(rec.live);
    EXPECT_EQ(rec.key, "");
  }

  const BytesView half = BytesView(*file).substr(l.half_offset(0), l.half_size);
  const golden::Vector v = golden::load("slotstore/golden/store-wal.hex");
  ASSERT_TRUE(golden::matches(v, half.substr(0, v.bytes.size())));
  EXPECT_EQ(half.find_first_not_of('\0', v.bytes.size()), BytesView::npos);
  golden::expect_fields(v, "half header", {{"seq", 1}, {"first_lsn", 1}, {"chain_seed", 0}});
  golden::expect_fields(v, "entry 2: put", {{"type", 2}, {"slot", 0}, {"gen", 1}, {"flags", 1}});
  golden::expect_fields(v, "entry 3: durable", {{"type", 5}, {"lsn", 4}, {"durable_lsn", 3}});
  golden::expect_fields(v, "entry 4: put", {{"type", 2}, {"flags", 0}, {"count", 2}});
  golden::expect_fields(v, "entry 5: durable", {{"type", 5}, {"lsn", 6}, {"durable_lsn", 5}});
  golden::expect_fields(v, "entry 6: erase", {{"type", 3}, {"slot", 0}, {"gen", 1}});
  golden::expect_fields(v, "entry 7: durable", {{"type", 5}, {"lsn", 8}, {"durable_lsn", 7}});

  format::HalfHeader hh;
  ASSERT_TRUE(format::decode_half_header(0, half.data(), &hh));
  uint32_t prev = hh.chain_seed;
  size_t at = format::kHalfHeaderSize;
  std::vector<format::EntryType> types;
  while (at < v.bytes.size()) {
    format::Entry e;
    auto st = format::decode_entry(l, half.substr(at), prev, &e);
    ASSERT_TRUE(st.ok()) << st.error().to_string();
    ASSERT_EQ(*st, format::EntryStatus::ok) << "the chain breaks at byte " << at;
    EXPECT_EQ(e.lsn, hh.first_lsn + types.size());
    types.push_back(e.type);
    prev = e.chain;
    at += e.size;
  }
  EXPECT_EQ(at, v.bytes.size());
  EXPECT_EQ(types,
            (std::vector<format::EntryType>{format::EntryType::marker, format::EntryType::intern,
                                            format::EntryType::put, format::EntryType::durable,
                                            format::EntryType::put, format::EntryType::durable,
                                            format::EntryType::erase, format::EntryType::durable}));
}

}  // namespace
}  // namespace strata::slotstore
