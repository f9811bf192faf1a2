#include "log/chunk.h"

#include <gtest/gtest.h>

namespace strata::log {

TEST(Chunk, BuildDecodeParseRoundTrip) {
  std::vector<BytesView> recs = {"alpha", "", std::string_view("b\0c", 3)};
  Bytes c = build_chunk(recs, 100, 7, 1234567, ChunkType::user, "TR");
  auto h = decode_chunk_header(c, "test");
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->first_offset, 100u);
  EXPECT_EQ(h->next_offset(), 103u);
  EXPECT_EQ(h->epoch, 7u);
  EXPECT_EQ(h->timestamp_ms, 1234567);
  EXPECT_EQ(h->num_entries, 3);
  EXPECT_EQ(h->trailer_len, 2u);
  EXPECT_EQ(h->total_size(), c.size());
  BytesView body = BytesView(c).substr(kChunkHeaderSize);
  ASSERT_TRUE(verify_chunk_body(*h, body, "test").ok());
  auto r = parse_records(*h, body.substr(0, h->data_len), "test");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], "alpha");
  EXPECT_EQ((*r)[1], "");
  EXPECT_EQ((*r)[2], std::string_view("b\0c", 3));
}

TEST(Chunk, EveryHeaderByteFlipIsDetected) {
  Bytes c = build_chunk({"x"}, 0, 1, 1);
  for (size_t i = 0; i < kChunkHeaderSize; ++i) {
    Bytes d = c;
    d[i] ^= 0x10;
    EXPECT_FALSE(decode_chunk_header(d, "t").ok()) << "byte " << i;
  }
}

TEST(Chunk, BodyFlipAndShortBodyAreDetected) {
  Bytes c = build_chunk({"hello", "world"}, 5, 1, 1);
  auto h = *decode_chunk_header(c, "seg position 0");
  Bytes body = c.substr(kChunkHeaderSize);
  body[3] ^= 1;
  Status s = verify_chunk_body(h, body, "seg position 0");
  EXPECT_EQ(s.code(), Errc::corrupt);
  EXPECT_NE(s.error().message.find("seg position 0"), std::string::npos);
  EXPECT_EQ(verify_chunk_body(h, BytesView(c).substr(kChunkHeaderSize, 3), "t").code(),
            Errc::corrupt);
}

TEST(Chunk, TruncatedHeaderNamesPlace) {
  Bytes c = build_chunk({"x"}, 0, 1, 1);
  auto h = decode_chunk_header(BytesView(c).substr(0, 20), "f.segment position 8");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("f.segment position 8"), std::string::npos);
  EXPECT_NE(h.error().message.find("truncated"), std::string::npos);
}

}  // namespace strata::log
