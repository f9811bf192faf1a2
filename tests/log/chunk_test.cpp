#include "log/chunk.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "common/crc32c.h"
#include "common/endian.h"

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

// add_records packs small records with one resize and large ones with
// per-record appends: both must give exactly the bytes of build_chunk,
// after bytes already in the buffer and in a chunk mixing both.
TEST(Chunk, AddRecordsMatchesBuildChunkForSmallAndLargeRecords) {
  const std::string small(100, 's'), large(4096, 'L'), empty;
  const std::vector<std::vector<BytesView>> cases = {
      {small, small, empty, small},
      {large, large},
      {large, small, empty},
  };
  for (const auto& recs : cases) {
    Bytes want = build_chunk(recs, 42, 3, 777, ChunkType::user, "TR");
    Bytes buf = "prefix";
    ChunkBuilder b(&buf);
    b.begin();
    b.add_records(std::span<const BytesView>(recs).first(1));
    b.add_records(std::span<const BytesView>(recs).subspan(1));
    EXPECT_EQ(b.records(), recs.size());
    b.finish(42, 3, 777, ChunkType::user, "TR");
    EXPECT_EQ(buf.substr(0, 6), "prefix");
    EXPECT_EQ(buf.substr(6), want) << "records: " << recs.size();
  }
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

namespace {
uint32_t zlib_crc(BytesView b) {
  return uint32_t(crc32(0, reinterpret_cast<const Bytef*>(b.data()), uInt(b.size())));
}
}  // namespace

// The zlib CRC32 of the data section (not the trailer) is stored as the
// wire CRC (version 2 on); version 3 stores the same CRC continued over the
// trailer as data_crc. Both builders compute them.
TEST(Chunk, WireCrcIsZlibCrcOfTheDataSection) {
  std::vector<BytesView> recs = {"alpha", "", std::string_view("b\0c", 3)};
  Bytes c = build_chunk(recs, 100, 7, 1234567, ChunkType::user, "TR");
  auto h = decode_chunk_header(c, "test");
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(uint8_t(c[4]), kChunkVersion);
  EXPECT_EQ(h->version, 3);
  EXPECT_TRUE(h->wire_crc_known());
  const BytesView body = BytesView(c).substr(kChunkHeaderSize);
  EXPECT_EQ(h->wire_crc, zlib_crc(body.substr(0, h->data_len)));
  EXPECT_NE(h->wire_crc, zlib_crc(body));  // the trailer is not covered
  EXPECT_EQ(h->data_crc, zlib_crc(body));  // data_crc is: one polynomial
  EXPECT_EQ(get_be32(u8(c.data() + 48)), h->wire_crc);
  EXPECT_TRUE(verify_wire_crc(*h, body, "test").ok());
  EXPECT_EQ(chunk_wire_crc(*h, body.substr(0, h->data_len)), h->wire_crc);

  Bytes built;
  ChunkBuilder b(&built);
  b.begin();
  for (BytesView r : recs) b.add(r);
  ChunkHeader bh = b.finish(100, 7, 1234567);
  EXPECT_TRUE(bh.wire_crc_known());
  EXPECT_EQ(bh.wire_crc, h->wire_crc);
  // Without a trailer the two CRCs are the same number.
  EXPECT_EQ(bh.data_crc, bh.wire_crc);
}

// Version 2: a data byte flipped after the fact with data_crc (CRC32C)
// recomputed, as a writer bug would leave it, fails verify_wire_crc and so
// verify_chunk_body (which scans, inspect and readers use), naming the
// place. Version 3 has one CRC: its body check fails the same chunk, naming
// the wire CRC.
TEST(Chunk, WireCrcMismatchIsReported) {
  Bytes c = build_chunk({"hello", "world"}, 5, 1, 1);
  auto h = *decode_chunk_header(c, "t");
  Bytes body = c.substr(kChunkHeaderSize);
  body[6] ^= 1;
  ChunkHeader v2 = h;
  v2.version = kChunkVersionCrc32c;
  v2.data_crc = crc32c::value(body);
  Status s = verify_wire_crc(v2, body, "seg position 24");
  EXPECT_EQ(s.code(), Errc::corrupt);
  EXPECT_NE(s.error().message.find("seg position 24"), std::string::npos);
  EXPECT_NE(s.error().message.find("wire CRC32"), std::string::npos);
  s = verify_chunk_body(v2, body, "seg position 24");
  EXPECT_EQ(s.code(), Errc::corrupt);
  EXPECT_NE(s.error().message.find("seg position 24"), std::string::npos);
  EXPECT_NE(s.error().message.find("wire CRC32"), std::string::npos);
  EXPECT_EQ(verify_wire_crc(v2, BytesView(body).substr(0, 3), "t").code(), Errc::corrupt);
  // With both CRCs right the version 2 body verifies.
  body[6] ^= 1;
  v2.data_crc = crc32c::value(body);
  EXPECT_TRUE(verify_chunk_body(v2, body, "t").ok());
  body[6] ^= 1;

  h.data_crc = zlib_crc(body);
  s = verify_chunk_body(h, body, "seg position 24");
  EXPECT_EQ(s.code(), Errc::corrupt);
  EXPECT_NE(s.error().message.find("seg position 24"), std::string::npos);
  EXPECT_NE(s.error().message.find("wire CRC32"), std::string::npos);
  EXPECT_EQ(verify_wire_crc(h, body, "t").code(), Errc::corrupt);
}

// Version 2 chunks (data_crc in CRC32C) still decode and verify; the
// version byte alone picks the polynomial, so a version 3 chunk relabelled
// 2 (header CRC fixed up) fails its body check. extend_body_crc over the
// body in pieces gives data_crc in either version.
TEST(Chunk, Version2StillDecodesAndVerifies) {
  Bytes c = build_chunk({"hello", "world", "!"}, 5, 1, 1, ChunkType::user, "TRAILER");
  auto h3 = *decode_chunk_header(c, "t");
  const BytesView body = BytesView(c).substr(kChunkHeaderSize);
  ChunkHeader h2 = h3;
  h2.version = kChunkVersionCrc32c;
  h2.data_crc = crc32c::value(body);
  Bytes v2 = c;
  encode_chunk_header(h2, u8(v2.data()));
  EXPECT_EQ(uint8_t(v2[4]), 2);
  auto d = decode_chunk_header(v2, "t");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(*d, h2);
  EXPECT_TRUE(d->wire_crc_known());
  EXPECT_TRUE(verify_chunk_body(*d, body, "t").ok());
  EXPECT_TRUE(verify_wire_crc(*d, body, "t").ok());
  Bytes rotten(body);
  rotten[rotten.size() - 1] ^= 1;  // in the trailer: CRC32C catches it
  EXPECT_EQ(verify_chunk_body(*d, rotten, "t").code(), Errc::corrupt);
  EXPECT_EQ(verify_chunk_body(h3, rotten, "t").code(), Errc::corrupt);

  ChunkHeader relabelled = h3;
  relabelled.version = kChunkVersionCrc32c;
  EXPECT_EQ(verify_chunk_body(relabelled, body, "t").code(), Errc::corrupt);
  relabelled = h2;
  relabelled.version = kChunkVersion;
  EXPECT_EQ(verify_chunk_body(relabelled, body, "t").code(), Errc::corrupt);

  for (const ChunkHeader& h : {h2, h3}) {
    for (size_t cut : {size_t(0), size_t(1), size_t(h.data_len), body.size() - 1, body.size()}) {
      uint32_t crc = extend_body_crc(h, 0, body.data(), cut);
      crc = extend_body_crc(h, crc, body.data() + cut, body.size() - cut);
      EXPECT_EQ(crc, h.data_crc) << "version " << int(h.version) << " cut " << cut;
    }
  }
}

// Version 1 chunks (offset 48 reserved) still decode, without a wire CRC;
// their reserved bytes must stay zero; a header encodes back byte for byte.
TEST(Chunk, Version1StillDecodes) {
  Bytes c = build_chunk({"hello", "world"}, 5, 1, 1);
  auto h2 = *decode_chunk_header(c, "t");
  ChunkHeader h1 = h2;
  h1.version = kChunkVersionNoWireCrc;
  h1.wire_crc = 0;
  h1.data_crc = crc32c::value(BytesView(c).substr(kChunkHeaderSize));
  Bytes v1 = c;
  encode_chunk_header(h1, u8(v1.data()));
  EXPECT_EQ(uint8_t(v1[4]), 1);
  EXPECT_EQ(get_be32(u8(v1.data() + 48)), 0u);
  auto d = decode_chunk_header(v1, "t");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(*d, h1);
  const BytesView body = BytesView(v1).substr(kChunkHeaderSize);
  EXPECT_TRUE(verify_chunk_body(*d, body, "t").ok());
  EXPECT_TRUE(verify_wire_crc(*d, body, "t").ok());
  EXPECT_EQ(chunk_wire_crc(*d, body.substr(0, d->data_len)), h2.wire_crc);
  auto r = parse_records(*d, body.substr(0, d->data_len), "t");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->size(), 2u);

  // Reserved bytes of a version 1 header that are not zero: corrupt.
  Bytes bad = v1;
  put_be32(u8(bad.data() + 48), 7);
  put_be32(u8(bad.data() + 52), crc32c::value(bad.data(), 52));
  auto e = decode_chunk_header(bad, "f position 24");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, Errc::corrupt);
  EXPECT_NE(e.error().message.find("reserved"), std::string::npos);

  // Re-encoding a decoded header gives the same bytes, either version.
  Bytes again = v1;
  encode_chunk_header(*d, u8(again.data()));
  EXPECT_EQ(again, v1);
  encode_chunk_header(h2, u8(again.data()));
  EXPECT_EQ(again, c);

  // An unknown version is unsupported_version, not corrupt.
  Bytes v4 = c;
  v4[4] = 4;
  put_be32(u8(v4.data() + 52), crc32c::value(v4.data(), 52));
  auto u = decode_chunk_header(v4, "t");
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().code, Errc::unsupported_version);
}

}  // namespace strata::log
