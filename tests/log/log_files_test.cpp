// File names, file headers, index records, and the chunk builder.
#include "log/log_files.h"

#include <gtest/gtest.h>

#include "log/chunk.h"

namespace strata::log {
namespace {

TEST(LogFiles, NamesRoundTrip) {
  EXPECT_EQ(segment_file_name(42), "00000000000000000042.segment");
  EXPECT_EQ(index_file_name(0), "00000000000000000000.index");
  auto p = parse_log_file_name("18446744073709551615.segment");
  ASSERT_TRUE(p.ok() && *p);
  EXPECT_EQ((*p)->first_offset, UINT64_MAX);
  EXPECT_EQ((*p)->kind, LogFileKind::segment);
  auto i = parse_log_file_name(index_file_name(7));
  ASSERT_TRUE(i.ok() && *i);
  EXPECT_EQ((*i)->kind, LogFileKind::index);
  EXPECT_EQ((*i)->first_offset, 7u);
}

TEST(LogFiles, OtherNamesAreIgnoredMalformedOnesAreErrors) {
  auto lock = parse_log_file_name("LOCK");
  ASSERT_TRUE(lock.ok());
  EXPECT_FALSE(*lock);
  for (const char* bad :
       {"12.segment", "0000000000000000000x.index", "99999999999999999999.segment", ".segment"}) {
    auto r = parse_log_file_name(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.code(), Errc::corrupt);
    EXPECT_NE(r.error().message.find(bad), std::string::npos);
  }
}

TEST(LogFiles, HeaderRoundTripAndEveryByteFlipDetected) {
  Bytes h = encode_file_header(LogFileKind::segment, 1234);
  ASSERT_EQ(h.size(), kFileHeaderSize);
  auto d = decode_file_header(LogFileKind::segment, h, "f");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, 1234u);
  // A segment header is not an index header.
  auto wrong = decode_file_header(LogFileKind::index, h, "f.index");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("wrong magic"), std::string::npos);
  for (size_t i = 0; i < kFileHeaderSize; ++i) {
    Bytes c = h;
    c[i] ^= 0x04;
    EXPECT_FALSE(decode_file_header(LogFileKind::segment, c, "f").ok()) << "byte " << i;
  }
  EXPECT_FALSE(decode_file_header(LogFileKind::segment, BytesView(h).substr(0, 10), "f").ok());
}

TEST(LogFiles, IndexRecordRoundTripAndCorruptionDetected) {
  IndexRecord r{77, -5, 3, 4096, 12, 999, ChunkType::tracking_delta};
  uint8_t buf[kIndexRecordSize];
  encode_index_record(r, buf);
  BytesView v(reinterpret_cast<char*>(buf), sizeof buf);
  auto d = decode_index_record(v, "idx");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(*d, r);
  EXPECT_EQ(d->next_offset(), 89u);
  EXPECT_EQ(d->end_position(), 4096u + 999);
  for (size_t i = 0; i < kIndexRecordSize; ++i) {
    uint8_t c[kIndexRecordSize];
    std::memcpy(c, buf, sizeof c);
    c[i] ^= 0x80;
    EXPECT_FALSE(decode_index_record(BytesView(reinterpret_cast<char*>(c), sizeof c), "idx").ok())
        << "byte " << i;
  }
}

TEST(LogFiles, ChunkBuilderMatchesBuildChunk) {
  std::vector<BytesView> recs = {"one", "", "three"};
  Bytes expect = build_chunk(recs, 10, 2, 777);
  Bytes out = "prefix";
  ChunkBuilder b(&out);
  b.begin();
  for (auto r : recs) b.add(r);
  EXPECT_EQ(b.records(), 3u);
  EXPECT_EQ(b.data_bytes(), 3 * kEntryHeaderSize + 8);
  ChunkHeader h = b.finish(10, 2, 777);
  EXPECT_EQ(out.substr(6), expect);
  EXPECT_EQ(h.total_size(), expect.size());
  EXPECT_EQ(index_record_for(h, 24).chunk_size, expect.size());
}

}  // namespace
}  // namespace strata::log
