// Reading osiris files (import/osiris_segment.h, osiris_tracking.h) from
// segments written here byte by byte as osiris 1.3.1 writes them: every
// chunk type read back, and damage — a flipped data byte, a torn tail, a
// foreign file, counts that disagree — refused naming the file and byte.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/crc32.h"
#include "common/endian.h"
#include "import/osiris_segment.h"
#include "import/osiris_tracking.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::import {
namespace {

std::string be32(uint32_t v) {
  std::string s(4, '\0');
  put_be32(u8(s.data()), v);
  return s;
}

std::string be64(uint64_t v) {
  std::string s(8, '\0');
  put_be64(u8(s.data()), v);
  return s;
}

std::string simple(const std::string& body) {
  return be32(uint32_t(body.size())) + body;
}

// One chunk as osiris writes it: the 48-byte header (magic 5, version 0),
// then data and trailer; the CRC covers the data only.
std::string osiris_chunk(OsirisChunkType type, uint16_t entries, uint32_t records, int64_t ts,
                         uint64_t chunk_id, const std::string& data,
                         const std::string& trailer = "") {
  std::string h;
  h.push_back(char(0x50));
  h.push_back(char(type));
  h.push_back(char(entries >> 8));
  h.push_back(char(entries & 0xFF));
  h += be32(records) + be64(uint64_t(ts)) + be64(1) + be64(chunk_id) + be32(crc32_zlib(data)) +
       be32(uint32_t(data.size())) + be32(uint32_t(trailer.size())) + be32(0);
  return h + data + trailer;
}

std::string sequence_delta(const std::string& ref, uint64_t seq) {
  return std::string(1, '\0') + char(ref.size()) + ref + be64(seq);
}
std::string offset_entry(const std::string& ref, uint64_t off) {
  return std::string(1, '\x01') + char(ref.size()) + ref + be64(off);
}
std::string sequence_snapshot(const std::string& ref, uint64_t chunk_id, uint64_t seq) {
  return std::string(1, '\0') + char(ref.size()) + ref + be64(chunk_id) + be64(seq);
}

struct Files : ::testing::Test {
  strata::test::TempDir tmp;
  std::string path = tmp.sub("00000000000000000000.segment");

  void write(const std::string& body, const std::string& magic = "OSIL") {
    ASSERT_OK(write_file_atomic(posix_fs(), path, magic + be32(1) + body));
  }
  // Every chunk of the file, or the error that stopped reading.
  Result<std::vector<OsirisChunk>> read_all() {
    STRATA_ASSIGN_OR_RETURN(auto seg, OsirisSegment::open(posix_fs(), path));
    std::vector<OsirisChunk> out;
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(auto c, seg->next());
      if (!c) return out;
      out.push_back(*c);
    }
  }
  std::string three_chunks() {
    return osiris_chunk(OsirisChunkType::tracking_snapshot, 1, 1, 100, 0,
                        simple(sequence_snapshot("p", 0, 3) + offset_entry("c", 0))) +
           osiris_chunk(OsirisChunkType::user, 2, 2, 200, 1, simple("hello") + simple("world"),
                        sequence_delta("p", 5)) +
           osiris_chunk(OsirisChunkType::tracking_delta, 1, 1, 300, 3,
                        simple(offset_entry("c", 2)));
  }
};

TEST_F(Files, ReadsEveryChunkTypeWithItsFields) {
  write(three_chunks());
  auto chunks = read_all();
  ASSERT_OK(chunks);
  ASSERT_EQ(chunks->size(), 3u);
  EXPECT_EQ((*chunks)[0].type, OsirisChunkType::tracking_snapshot);
  EXPECT_EQ((*chunks)[0].position, kOsirisFileHeaderSize);
  EXPECT_EQ((*chunks)[1].type, OsirisChunkType::user);
  EXPECT_EQ((*chunks)[1].chunk_id, 1u);
  EXPECT_EQ((*chunks)[1].num_records, 2u);
  EXPECT_EQ((*chunks)[1].timestamp_ms, 200);
  EXPECT_EQ((*chunks)[1].next_offset(), 3u);
  EXPECT_EQ((*chunks)[2].type, OsirisChunkType::tracking_delta);
  EXPECT_EQ((*chunks)[2].timestamp_ms, 300);
}

TEST_F(Files, ADamagedDataByteIsRefusedNamingFileAndPosition) {
  std::string body = three_chunks();
  // The 'w' of "world" in the user chunk's data.
  const size_t at = body.find("world");
  body[at] ^= 0x20;
  write(body);
  auto chunks = read_all();
  ASSERT_FALSE(chunks.ok());
  EXPECT_EQ(chunks.code(), Errc::corrupt);
  // The damaged chunk's header: after the file header and the 82-byte
  // snapshot chunk.
  const std::string pos = std::to_string(kOsirisFileHeaderSize + 82);
  EXPECT_NE(chunks.error().message.find(path + " at byte " + pos), std::string::npos)
      << chunks.error().to_string();
  EXPECT_NE(chunks.error().message.find("CRC32"), std::string::npos);
}

TEST_F(Files, ATornTailIsRefusedAsSuch) {
  std::string body = three_chunks();
  body.resize(body.size() - 3);
  write(body);
  auto chunks = read_all();
  ASSERT_FALSE(chunks.ok());
  EXPECT_NE(chunks.error().message.find("torn write"), std::string::npos)
      << chunks.error().to_string();
  // Less than a header left.
  write(three_chunks() + std::string(20, '\x50'));
  chunks = read_all();
  ASSERT_FALSE(chunks.ok());
  EXPECT_NE(chunks.error().message.find("less than a chunk header"), std::string::npos)
      << chunks.error().to_string();
}

TEST_F(Files, AForeignFileOrVersionIsRefused) {
  write(three_chunks(), "OSII");
  auto chunks = read_all();
  ASSERT_FALSE(chunks.ok());
  EXPECT_NE(chunks.error().message.find("not an osiris segment file"), std::string::npos);
  ASSERT_OK(write_file_atomic(posix_fs(), path, "OSIL" + be32(2) + three_chunks()));
  chunks = read_all();
  ASSERT_FALSE(chunks.ok());
  EXPECT_NE(chunks.error().message.find("version 2"), std::string::npos);
  // A chunk whose magic is not 5.
  std::string body = three_chunks();
  body[0] = char(0x40);
  write(body);
  chunks = read_all();
  ASSERT_FALSE(chunks.ok());
  EXPECT_NE(chunks.error().message.find("at byte 8: no chunk starts here: osiris chunk header: "
                                        "magic/version byte 0x40"),
            std::string::npos)
      << chunks.error().to_string();
}

TEST_F(Files, CountsThatDisagreeWithTheEntriesAreRefused) {
  write(osiris_chunk(OsirisChunkType::user, 3, 3, 1, 0, simple("a") + simple("b")));
  auto chunks = read_all();
  ASSERT_FALSE(chunks.ok());
  EXPECT_NE(chunks.error().message.find("holds 2 entries / 2 records, its header says 3 / 3"),
            std::string::npos)
      << chunks.error().to_string();
}

TEST_F(Files, AnIndexEndsAtItsFirstRecordOfZeros) {
  const std::string index_path = tmp.sub("00000000000000000000.index");
  std::string rec = be64(7) + be64(123) + be64(1) + be32(8) + std::string(1, '\0');
  ASSERT_OK(write_file_atomic(posix_fs(), index_path,
                              "OSII" + be32(1) + rec + std::string(29 * 3, '\0') + "xx"));
  auto recs = read_osiris_index(posix_fs(), index_path);
  ASSERT_OK(recs);
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].chunk_id, 7u);
  EXPECT_EQ((*recs)[0].timestamp_ms, 123);
  EXPECT_EQ((*recs)[0].position, 8u);
}

TEST(OsirisTracking, DeltasSetAndSnapshotsReplace) {
  auto snap = parse_osiris_tracking(sequence_snapshot("p", 9, 3) + offset_entry("c1", 4),
                                    TrackingForm::snapshot);
  ASSERT_OK(snap);
  EXPECT_EQ(snap->sequences.at("p"), 3u);
  EXPECT_EQ(snap->offsets.at("c1"), 4u);
  OsirisTracking state;
  state.offsets["gone"] = 1;
  apply_osiris_tracking(*snap, TrackingForm::snapshot, &state);
  EXPECT_FALSE(state.offsets.count("gone"));
  auto delta = parse_osiris_tracking(
      sequence_delta("p", 8) + sequence_delta("q", 1) + offset_entry("c1", 10),
      TrackingForm::delta);
  ASSERT_OK(delta);
  apply_osiris_tracking(*delta, TrackingForm::delta, &state);
  EXPECT_EQ(state.sequences.at("p"), 8u);
  EXPECT_EQ(state.sequences.at("q"), 1u);
  EXPECT_EQ(state.offsets.at("c1"), 10u);
}

TEST(OsirisTracking, DamageIsNamedByByte) {
  auto bad_type = parse_osiris_tracking(offset_entry("c", 1) + "\x07\x01x", TrackingForm::delta);
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.error().message.find("byte 11: unknown type 7"), std::string::npos)
      << bad_type.error().to_string();
  auto cut = parse_osiris_tracking(offset_entry("c", 1).substr(0, 6), TrackingForm::delta);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find("runs past the end"), std::string::npos);
}

}  // namespace
}  // namespace strata::import
