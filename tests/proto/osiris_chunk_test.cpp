#include "proto/osiris_chunk.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "proto/commands.h"
#include "proto/dispatch.h"
#include "proto/frame.h"

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

// The one framing rule (log/entries.h reads chunks with it too): each
// problem is named, and what was read says which header it was.
TEST(OsirisChunk, FramingNamesEachProblem) {
  Bytes simple;
  append_simple_entry(&simple, "abc");
  Bytes sub;
  append_sub_batch_record(&sub, "x");
  Bytes batch;
  append_sub_batch_entry(&batch, Compression::none, 1, uint32_t(sub.size()), sub);
  OsirisEntry e;
  ASSERT_EQ(frame_osiris_entry(simple, &e), EntryFraming::ok);
  EXPECT_EQ(e.body, "abc");
  EXPECT_EQ(e.encoded, simple);
  ASSERT_EQ(frame_osiris_entry(batch, &e), EntryFraming::ok);
  EXPECT_TRUE(e.sub_batch);
  EXPECT_EQ(e.body, sub);
  EXPECT_EQ(frame_osiris_entry(BytesView(simple).substr(0, 3), &e), EntryFraming::header_truncated);
  EXPECT_FALSE(e.sub_batch);
  EXPECT_EQ(frame_osiris_entry(BytesView(batch).substr(0, 10), &e), EntryFraming::header_truncated);
  EXPECT_TRUE(e.sub_batch);
  EXPECT_EQ(frame_osiris_entry(BytesView(simple).substr(0, 6), &e), EntryFraming::overrun);
  EXPECT_EQ(e.body_len, 3u);
  EXPECT_EQ(frame_osiris_entry(BytesView(batch).substr(0, batch.size() - 1), &e),
            EntryFraming::overrun);
  EXPECT_EQ(frame_osiris_entry("", &e), EntryFraming::header_truncated);
}

// A sub-batch of 0 records is refused wherever entries are framed: osiris
// would store it as an entry occupying no offset (see frame_osiris_entry),
// the log could never read it back, so a Publish carrying one is a
// malformed frame like any other.
TEST(OsirisChunk, AnEmptySubBatchIsRefused) {
  Bytes empty;
  append_sub_batch_entry(&empty, Compression::none, 0, 0, "");
  Bytes empty_zstd;
  append_sub_batch_entry(&empty_zstd, Compression::zstd, 0, 5, "bytes");
  for (const Bytes& b : {empty, empty_zstd}) {
    OsirisEntry e;
    EXPECT_EQ(frame_osiris_entry(b, &e), EntryFraming::empty_sub_batch);
    auto p = parse_osiris_entry(b);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.code(), Errc::corrupt);
    EXPECT_NE(p.error().message.find("0 records"), std::string::npos) << p.error().message;
    Bytes data;
    append_simple_entry(&data, "ok");
    data += b;
    OsirisEntryReader r(data);
    ASSERT_TRUE(r.next(&e));
    EXPECT_FALSE(r.next(&e));
    EXPECT_TRUE(r.failed());
  }
  // A Publish frame carrying one does not decode.
  Bytes entries;
  append_simple_entry(&entries, "fine");
  const size_t first = entries.size();
  entries += empty;
  PublishRequest pub;
  pub.publisher_id = 1;
  pub.messages = {{1, std::nullopt, BytesView(entries).substr(0, first)},
                  {2, std::nullopt, BytesView(entries).substr(first)}};
  Bytes frame;
  encode(pub, &frame);
  auto d = decode_client_frame(split_frame(frame, 0).body(frame));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("0 records"), std::string::npos) << d.error().message;
}

}  // namespace
}  // namespace strata::proto
