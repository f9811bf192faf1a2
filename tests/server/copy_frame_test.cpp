// A copy subscription's chunk (docs/formats/protocol-frames.md, "Copy
// subscriptions") carries the stored chunk whole: the copier rebuilds it
// byte for byte, and what is no copy chunk is refused naming where.
#include "server/copy_frame.h"

#include <gtest/gtest.h>

#include "common/crc32.h"
#include "log/chunk.h"
#include "proto/osiris_chunk.h"
#include "support/assertions.h"

namespace strata::server {
namespace {

// A stored chunk with a trailer, as a copy subscription sends it: an osiris
// header whose trailer is the stored header and trailer.
struct Sent {
  Bytes stored;
  Bytes osiris;
};

Sent copy_chunk_of(uint8_t bloom = 0, int64_t trailer_cut = 0) {
  Sent s;
  s.stored = log::build_chunk({BytesView("alpha"), BytesView("beta")}, 40, 7, 1234,
                              log::ChunkType::user, BytesView("trailer-bytes"));
  auto h = log::decode_chunk_header(s.stored, "test");
  EXPECT_OK(h);
  BytesView data = BytesView(s.stored).substr(log::kChunkHeaderSize, h->data_len);
  BytesView trailer = BytesView(s.stored).substr(log::kChunkHeaderSize + h->data_len);
  proto::OsirisChunkHeader o;
  o.num_entries = h->num_entries;
  o.num_records = h->num_records;
  o.timestamp_ms = h->timestamp_ms;
  o.epoch = h->epoch;
  o.chunk_id = h->first_offset;
  o.crc = crc32_zlib(data);
  o.data_len = h->data_len;
  o.trailer_len = uint32_t(log::kChunkHeaderSize + trailer.size() - trailer_cut);
  o.bloom_size = bloom;
  proto::encode_osiris_header(o, &s.osiris);
  s.osiris.append(data);
  s.osiris.append(BytesView(s.stored).substr(0, log::kChunkHeaderSize));
  s.osiris.append(trailer.substr(0, trailer.size() - trailer_cut));
  return s;
}

TEST(CopyFrame, TheStoredChunkIsRebuiltByteForByte) {
  const Sent s = copy_chunk_of();
  auto back = stored_chunk_of(s.osiris, "copy of s");
  ASSERT_OK(back);
  EXPECT_EQ(*back, s.stored);
}

TEST(CopyFrame, AnOrdinaryChunkOrABrokenOneIsRefusedNamingWhere) {
  // An osiris chunk whose trailer cannot hold a stored header.
  Sent short_trailer = copy_chunk_of(0, 20);
  Bytes cut = short_trailer.osiris;
  auto h = proto::decode_osiris_header(cut);
  ASSERT_OK(h);
  proto::OsirisChunkHeader o = *h;
  o.trailer_len = 10;
  Bytes ordinary;
  proto::encode_osiris_header(o, &ordinary);
  ordinary.append(BytesView(cut).substr(proto::kOsirisChunkHeaderSize, o.data_len + 10));
  auto r = stored_chunk_of(ordinary, "copy of s from node-b");
  EXPECT_EQ(r.code(), Errc::corrupt);
  EXPECT_NE(r.error().message.find("copy of s from node-b"), std::string::npos);
  // Bytes missing at the end.
  Sent s = copy_chunk_of();
  EXPECT_EQ(stored_chunk_of(BytesView(s.osiris).substr(0, s.osiris.size() - 1), "x").code(),
            Errc::corrupt);
  // Not an osiris chunk at all.
  EXPECT_EQ(stored_chunk_of(BytesView("nonsense"), "x").code(), Errc::corrupt);
}

}  // namespace
}  // namespace strata::server
