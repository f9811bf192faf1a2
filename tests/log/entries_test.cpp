// Osiris entry framing in a chunk's data section (log/entries.h): simple
// entries and sub-batches, what parse_records makes of them, and every way a
// sub-batch can be malformed.
#include "log/entries.h"

#include <gtest/gtest.h>

#include "common/endian.h"
#include "log/chunk.h"
#include "log_entries_util.h"

namespace strata::log {
namespace {

using test::simple_entry;
using test::sub_batch;

TEST(Entries, SimpleAndUncompressedSubBatchesExpandToRecordsInOrder) {
  const Bytes data = simple_entry("a") + sub_batch(0, {"b", "", "cd"}) + simple_entry("e");
  Bytes chunk = build_chunk_of_entries(data, 3, 5, 100, 1, 7);
  auto h = decode_chunk_header(chunk, "t");
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->num_entries, 3);
  EXPECT_EQ(h->num_records, 5u);
  EXPECT_EQ(h->next_offset(), 105u);
  const BytesView d = BytesView(chunk).substr(kChunkHeaderSize, h->data_len);
  auto recs = parse_records(*h, d, "t");
  ASSERT_TRUE(recs.ok()) << recs.error().to_string();
  EXPECT_EQ(*recs, (std::vector<BytesView>{"a", "b", "", "cd", "e"}));

  auto entries = parse_entries(*h, d, "t");
  ASSERT_TRUE(entries.ok()) << entries.error().to_string();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].kind, EntryKind::simple);
  EXPECT_EQ((*entries)[0].body, "a");
  EXPECT_EQ((*entries)[1].kind, EntryKind::sub_batch);
  EXPECT_EQ((*entries)[1].compression, 0);
  EXPECT_EQ((*entries)[1].num_records, 3);
  EXPECT_EQ((*entries)[1].position, kEntryHeaderSize + 1);
  EXPECT_EQ((*entries)[1].size(), kSubBatchHeaderSize + 3 * kEntryHeaderSize + 3);
  EXPECT_EQ((*entries)[2].body, "e");
}

// A compressed sub-batch is stored and returned as an entry; asking for its
// records is `unsupported`, naming the compression and its first offset.
TEST(Entries, CompressedSubBatchIsAnEntryNotRecords) {
  const Bytes data = simple_entry("a") + sub_batch(4, "zstd-bytes", 10, 99);
  Bytes chunk = build_chunk_of_entries(data, 2, 11, 100, 1, 7);
  auto h = *decode_chunk_header(chunk, "t");
  const BytesView d = BytesView(chunk).substr(kChunkHeaderSize, h.data_len);
  auto recs = parse_records(h, d, "seg position 24");
  ASSERT_FALSE(recs.ok());
  EXPECT_EQ(recs.error().code, Errc::unsupported);
  EXPECT_NE(recs.error().message.find("seg position 24"), std::string::npos);
  EXPECT_NE(recs.error().message.find("zstd"), std::string::npos);
  EXPECT_NE(recs.error().message.find("offset 101"), std::string::npos) << recs.error().message;

  auto entries = parse_entries(h, d, "t");
  ASSERT_TRUE(entries.ok()) << entries.error().to_string();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[1].compression, 4);
  EXPECT_EQ((*entries)[1].num_records, 10);
  EXPECT_EQ((*entries)[1].uncompressed_len, 99u);
  EXPECT_EQ((*entries)[1].body, "zstd-bytes");
  for (uint8_t c : {1, 2, 3, 4, 7})
    EXPECT_EQ(compression_name(c).find("unknown"), std::string::npos);
  EXPECT_NE(compression_name(5).find("unknown"), std::string::npos);
}

// Each malformed sub-batch is corrupt, naming the chunk and the data byte.
TEST(Entries, MalformedSubBatchesAreCorrupt) {
  struct Case {
    const char* what;
    Bytes data;
    const char* expect;
  };
  Bytes past = sub_batch(0, {"xy"});
  put_be32(u8(past.data() + 7), 100);  // len past the data
  Bytes zero = sub_batch(0, {"xy"});
  put_be16(u8(zero.data() + 1), 0);  // nrec 0
  Bytes more = sub_batch(0, {"xy", "z"});
  put_be16(u8(more.data() + 1), 3);  // says 3 records, holds 2
  Bytes fewer = sub_batch(0, {"xy", "z"});
  put_be16(u8(fewer.data() + 1), 1);
  Bytes inner_overrun = sub_batch(0, {"xy"});
  put_be32(u8(inner_overrun.data() + kSubBatchHeaderSize), 9);
  Bytes nested = sub_batch(0, {"xy"});
  nested[kSubBatchHeaderSize] = char(0x80);
  Bytes ulen = sub_batch(0, {"xy"});
  put_be32(u8(ulen.data() + 3), 7);
  const Bytes shorthead = simple_entry("a") + Bytes("\x80\x00\x01\x00", 4);
  for (const Case& c :
       std::vector<Case>{{"len past data", past, "overruns the chunk"},
                         {"nrec 0", zero, "0 records"},
                         {"nrec too high", more, "holds 2 records, its header says 3"},
                         {"nrec too low", fewer, "holds 2 records, its header says 1"},
                         {"inner overrun", inner_overrun, "overruns the sub-batch"},
                         {"nested", nested, "not a simple entry"},
                         {"uncompressed_len", ulen, "uncompressed length"},
                         {"short header", shorthead, "sub-batch header truncated"}}) {
    SCOPED_TRACE(c.what);
    ChunkHeader h;
    h.first_offset = 0;
    h.num_entries = 1;
    h.num_records = 1;
    h.data_len = uint32_t(c.data.size());
    auto r = parse_records(h, c.data, "f.segment position 24");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::corrupt);
    EXPECT_NE(r.error().message.find("f.segment position 24"), std::string::npos);
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("data byte"), std::string::npos) << r.error().message;
    auto e = parse_entries(h, c.data, "f.segment position 24");
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().code, Errc::corrupt);
  }
}

// What a delivery checks before joining chunks (server/delivery.cpp): simple
// entries framed to the end; a sub-batch anywhere, or framing that runs
// past the end, is not.
TEST(Entries, OnlySimpleEntries) {
  EXPECT_TRUE(only_simple_entries(""));
  EXPECT_TRUE(only_simple_entries(simple_entry("a") + simple_entry("") + simple_entry("bc")));
  EXPECT_FALSE(only_simple_entries(simple_entry("a") + sub_batch(0, {"b"})));
  EXPECT_FALSE(only_simple_entries(sub_batch(0, {"b"}) + simple_entry("a")));
  const Bytes two = simple_entry("a") + simple_entry("bc");
  EXPECT_FALSE(only_simple_entries(two.substr(0, two.size() - 1)));
  EXPECT_FALSE(only_simple_entries(two + "xy"));
}

TEST(Entries, HeaderCountsMustMatch) {
  const Bytes data = simple_entry("a") + sub_batch(0, {"b", "c"});
  ChunkHeader h;
  h.data_len = uint32_t(data.size());
  h.num_entries = 2;
  h.num_records = 2;  // should be 3
  auto r = parse_records(h, data, "t");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("2 entries / 3 records, header says 2 entries / 2 records"),
            std::string::npos)
      << r.error().message;
  h.num_records = 3;
  h.num_entries = 3;
  EXPECT_EQ(parse_entries(h, data, "t").error().code, Errc::corrupt);
  h.num_entries = 2;
  EXPECT_TRUE(parse_records(h, data, "t").ok());
  EntryCounts n;
  EXPECT_FALSE(count_entries(data, &n).has_value());
  EXPECT_EQ(n.entries, 2u);
  EXPECT_EQ(n.records, 3u);
}

}  // namespace
}  // namespace strata::log
