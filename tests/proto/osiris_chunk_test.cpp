#include "proto/osiris_chunk.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace strata::proto {
namespace {

TEST(OsirisChunk, HeaderRoundTripAndMagic) {
  OsirisChunkHeader h{.chunk_type = 1,
                      .num_entries = 3,
                      .num_records = 300,
                      .timestamp_ms = -5,
                      .epoch = 7,
                      .chunk_id = 1ull << 40,
                      .crc = 0x12345678,
                      .data_len = 1000,
                      .trailer_len = 20,
                      .bloom_size = 16};
  Bytes b;
  encode_osiris_header(h, &b);
  ASSERT_EQ(b.size(), kOsirisChunkHeaderSize);
  EXPECT_EQ(uint8_t(b[0]), 0x50);
  auto d = decode_osiris_header(b);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, h);
  EXPECT_EQ(d->body_len(), 1036u);

  b[0] = 0x51;
  auto bad = decode_osiris_header(b);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), Errc::corrupt);
  EXPECT_NE(bad.error().message.find("magic"), std::string::npos);
  EXPECT_FALSE(decode_osiris_header(BytesView(b).substr(0, 47)).ok());
}

TEST(OsirisChunk, EntriesParseAndTruncationsFail) {
  Bytes data;
  append_simple_entry(&data, "one");
  Bytes sub;
  append_sub_batch_record(&sub, "x");
  append_sub_batch_record(&sub, "yz");
  append_sub_batch_entry(&data, Compression::zstd, 2, 99, sub);
  append_simple_entry(&data, "");

  OsirisEntryReader r(data);
  OsirisEntry e;
  ASSERT_TRUE(r.next(&e));
  EXPECT_FALSE(e.sub_batch);
  EXPECT_EQ(e.body, "one");
  ASSERT_TRUE(r.next(&e));
  EXPECT_TRUE(e.sub_batch);
  EXPECT_EQ(e.compression, Compression::zstd);
  EXPECT_EQ(e.num_records, 2);
  EXPECT_EQ(e.uncompressed_len, 99u);
  EXPECT_EQ(e.body, sub);
  EXPECT_EQ(uint8_t(e.encoded[0]), 0x80 | (4 << 4));
  ASSERT_TRUE(r.next(&e));
  EXPECT_TRUE(e.body.empty());
  EXPECT_FALSE(r.next(&e));
  EXPECT_FALSE(r.failed());

  // Every cut that is not at an entry boundary fails cleanly.
  size_t boundaries[] = {0, 7, 7 + 11 + sub.size(), data.size()};
  for (size_t n = 0; n <= data.size(); ++n) {
    OsirisEntryReader cut(BytesView(data).substr(0, n));
    while (cut.next(&e)) {
    }
    bool boundary =
        std::find(std::begin(boundaries), std::end(boundaries), n) != std::end(boundaries);
    EXPECT_EQ(cut.failed(), !boundary) << "cut at " << n;
    if (cut.failed()) {
      EXPECT_EQ(cut.error().code, Errc::corrupt);
    }
  }
}

}  // namespace
}  // namespace strata::proto
