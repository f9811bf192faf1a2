#include "tier/fragment_object.h"

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "support/temp_dir.h"
#include "tier/fragment_assembly.h"
#include "tier_test_util.h"

namespace strata::tier {
namespace {

// A fragment of `n` chunks built through assembly, with its chunk bytes.
struct Sample {
  FragmentPlan plan;
  Bytes body;
};

Sample sample(int n, uint64_t first = 100, uint64_t seed = 1) {
  Random rng(seed);
  FragmentAssembly a({1ull << 40, 0}, first);
  Sample s;
  uint64_t off = first, pos = 8;
  for (int i = 0; i < n; ++i) {
    uint32_t recs = uint32_t(1 + rng.uniform(4));
    Bytes c = test::make_chunk(off, recs, size_t(rng.uniform(200)), 5000 + i);
    EXPECT_TRUE(a.add(test::committed(c, 0, pos), 0).ok());
    s.body += c;
    off += recs;
    pos += c.size();
  }
  s.plan = *a.cut();
  return s;
}

Bytes encode(const Sample& s, uint64_t epoch = 3) {
  auto r = encode_fragment(s.plan.meta, s.plan.index, epoch, s.body);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? *r : Bytes();
}

}  // namespace

TEST(TierFragmentObject, RoundTripKeepsChunksVerbatim) {
  Sample s = sample(5);
  Bytes obj = encode(s);
  EXPECT_EQ(obj.size(), fragment_object_size(s.plan.meta.size, 5));
  auto d = decode_fragment(obj, "data/x.frag");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->header.meta, s.plan.meta);
  EXPECT_EQ(d->header.epoch, 3u);
  EXPECT_EQ(d->index, s.plan.index);
  EXPECT_EQ(d->data, BytesView(s.body));
  EXPECT_EQ(BytesView(obj).substr(kFragmentHeaderSize, s.body.size()), BytesView(s.body));
}

TEST(TierFragmentObject, StreamingInAnyPiecesGivesTheSameObject) {
  Sample s = sample(8, 0, 7);
  Bytes whole = encode(s);
  Random rng(::strata::test::test_seed(99));
  for (int round = 0; round < 50; ++round) {
    auto enc = FragmentEncoder::make(s.plan.meta, s.plan.index, 3);
    ASSERT_TRUE(enc.ok());
    Bytes out = enc->header();
    size_t at = 0;
    while (at < s.body.size()) {
      size_t n = std::min<size_t>(s.body.size() - at, 1 + rng.uniform(90));
      ASSERT_TRUE(enc->add_body(BytesView(s.body).substr(at, n)).ok());
      out.append(s.body, at, n);
      at += n;
    }
    auto tail = enc->finish();
    ASSERT_TRUE(tail.ok());
    out += *tail;
    ASSERT_EQ(out, whole) << "round " << round;
    EXPECT_EQ(enc->object_size(), whole.size());
  }
}

TEST(TierFragmentObject, EncoderRefusesBytesThatAreNotTheIndexedChunks) {
  Sample s = sample(3);
  // A chunk from elsewhere with the right length but another offset.
  Sample other = sample(3, 5000);
  auto enc = FragmentEncoder::make(s.plan.meta, s.plan.index, 1);
  ASSERT_TRUE(enc.ok());
  Status st = enc->add_body(BytesView(other.body).substr(0, 60));
  EXPECT_EQ(st.code(), Errc::corrupt);
  EXPECT_NE(st.error().message.find("chunk 0"), std::string::npos) << st.to_string();
  // After an error the encoder refuses to continue.
  EXPECT_FALSE(enc->finish().ok());
}

TEST(TierFragmentObject, EncoderDetectsRottenChunkData) {
  Sample s = sample(3);
  Bytes body = s.body;
  body[body.size() - 3] ^= 0x40;  // inside the last chunk's data
  auto enc = FragmentEncoder::make(s.plan.meta, s.plan.index, 1);
  ASSERT_TRUE(enc.ok());
  Status st = enc->add_body(body);
  EXPECT_EQ(st.code(), Errc::corrupt);
  EXPECT_NE(st.error().message.find("CRC"), std::string::npos);
}

TEST(TierFragmentObject, EncoderRefusesTooManyOrTooFewBodyBytes) {
  Sample s = sample(2);
  auto enc = FragmentEncoder::make(s.plan.meta, s.plan.index, 1);
  ASSERT_TRUE(enc.ok());
  ASSERT_TRUE(enc->add_body(BytesView(s.body).substr(0, 10)).ok());
  auto early = enc->finish();
  EXPECT_FALSE(early.ok());
  auto enc2 = FragmentEncoder::make(s.plan.meta, s.plan.index, 1);
  Bytes longer = s.body + "x";
  EXPECT_FALSE(enc2->add_body(longer).ok());
}

TEST(TierFragmentObject, EncoderRefusesAnIndexThatDoesNotFit) {
  Sample s = sample(3);
  auto idx = s.plan.index;
  idx[1].position = idx[2].position;  // not increasing
  EXPECT_FALSE(FragmentEncoder::make(s.plan.meta, idx, 1).ok());
  idx = s.plan.index;
  idx.pop_back();  // count mismatch
  EXPECT_FALSE(FragmentEncoder::make(s.plan.meta, idx, 1).ok());
  idx = s.plan.index;
  idx[0].first_offset += 1;
  EXPECT_FALSE(FragmentEncoder::make(s.plan.meta, idx, 1).ok());
}

TEST(TierFragmentObject, EveryByteFlipIsDetected) {
  Sample s = sample(2);
  Bytes obj = encode(s);
  for (size_t i = 0; i < obj.size(); ++i) {
    Bytes bad = obj;
    bad[i] ^= 0x01;
    EXPECT_FALSE(decode_fragment(bad, "k").ok()) << "byte " << i;
  }
}

TEST(TierFragmentObject, WrongMagicBadVersionAndTruncationHaveClearErrors) {
  Sample s = sample(2);
  Bytes obj = encode(s);
  Bytes bad = obj;
  bad[0] = 'X';
  auto r = decode_fragment(bad, "data/k.frag");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("wrong magic"), std::string::npos);
  EXPECT_NE(r.error().message.find("data/k.frag"), std::string::npos);

  bad = obj;
  put_be16(u8(bad.data()) + 4, 9);
  put_be32(u8(bad.data()) + 60, crc32c::value(bad.data(), 60));
  r = decode_fragment(bad, "k");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::unsupported_version);

  r = decode_fragment(BytesView(obj).substr(0, obj.size() - 1), "k");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("implies"), std::string::npos);
  r = decode_fragment(BytesView(obj).substr(0, 20), "k");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("truncated"), std::string::npos);
}

TEST(TierFragmentObject, AHugeDataSizeInTheHeaderIsRejectedNotWrapped) {
  Sample s = sample(2);
  Bytes obj = encode(s);
  put_be64(u8(obj.data()) + 48, UINT64_MAX - 40);
  put_be32(u8(obj.data()) + 60, crc32c::value(obj.data(), 60));
  auto r = decode_fragment(obj, "k");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::corrupt);
}

TEST(TierFragmentObject, HeaderAloneDecodesFromARangedRead) {
  Sample s = sample(4);
  Bytes obj = encode(s, 9);
  auto h = decode_fragment_header(BytesView(obj).substr(0, kFragmentHeaderSize), "k");
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->meta, s.plan.meta);
  EXPECT_EQ(h->epoch, 9u);
}

TEST(TierFragmentObject, IndexDecodesFromARangedReadOfTheTail) {
  Sample s = sample(6);
  Bytes obj = encode(s);
  FragmentExpectation ex{s.plan.meta.first_offset, s.plan.meta.next_offset, s.plan.meta.size};
  BytesView tail = BytesView(obj).substr(fragment_index_position(s.plan.meta.size));
  auto idx = decode_fragment_index(tail, ex, "k");
  ASSERT_TRUE(idx.ok()) << idx.error().to_string();
  EXPECT_EQ(*idx, s.plan.index);
  // A damaged index record is caught by the index CRC without the rest.
  Bytes bad(tail);
  bad[5] ^= 2;
  EXPECT_FALSE(decode_fragment_index(bad, ex, "k").ok());
  // A truncated entry.
  auto r = decode_fragment_index(tail.substr(3), ex, "k");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("truncated entry"), std::string::npos);
  // The manifest's expectation must match the index.
  FragmentExpectation wrong = ex;
  wrong.first_offset += 1;
  EXPECT_FALSE(decode_fragment_index(tail, wrong, "k").ok());
}

TEST(TierFragmentObject, FindsChunkByOffsetAndTimestamp) {
  std::vector<ChunkIndexRecord> idx = {{10, 100, 0}, {15, 200, 80}, {30, 300, 200}};
  EXPECT_FALSE(find_chunk_by_offset(idx, 9).has_value());
  EXPECT_EQ(find_chunk_by_offset(idx, 10), 0u);
  EXPECT_EQ(find_chunk_by_offset(idx, 14), 0u);
  EXPECT_EQ(find_chunk_by_offset(idx, 15), 1u);
  EXPECT_EQ(find_chunk_by_offset(idx, 1000), 2u);
  EXPECT_EQ(find_chunk_by_timestamp(idx, 0), 0u);
  EXPECT_EQ(find_chunk_by_timestamp(idx, 100), 0u);
  EXPECT_EQ(find_chunk_by_timestamp(idx, 101), 1u);
  EXPECT_EQ(find_chunk_by_timestamp(idx, 300), 2u);
  EXPECT_FALSE(find_chunk_by_timestamp(idx, 301).has_value());
}

}  // namespace strata::tier
