// The log's formats pinned by bytes (docs/formats/chunk.md and
// docs/formats/log-files.md): each vector under tests/log/golden/ is what the encoder (or
// the writer) must produce for a known value, and decodes back to it. The
// vectors are annotated with the document's field offsets, and the fields
// are read back through those annotations, so the document, the vectors and
// the code must all agree.
#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/crc32.h"
#include "common/crc32c.h"
#include "common/fs.h"
#include "log/chunk.h"
#include "log/inspect.h"
#include "log/log_files.h"
#include "log/log_test_util.h"
#include "log/stream_log.h"
#include "support/golden.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

namespace golden = ::strata::test::golden;

constexpr uint64_t kEpoch = 7;
constexpr int64_t kT0 = 1'700'000'000'000;

TEST(LogFormatGolden, ChunkBytesArePinned) {
  const std::vector<BytesView> records = {"alpha", "", BytesView("b\0c", 3)};
  const Bytes chunk =
      build_chunk(records, 4096, kEpoch, kT0 + 123, ChunkType::tracking_snapshot, "TR");
  const golden::Vector v = golden::load("log/golden/chunk.hex");
  ASSERT_TRUE(golden::matches(v, chunk));

  // The writer's in-place builder (which writes no trailer) encodes the
  // same header and entries.
  Bytes built = "prefix";
  ChunkBuilder b(&built);
  b.begin();
  for (BytesView r : records) b.add(r);
  b.finish(4096, kEpoch, kT0 + 123, ChunkType::tracking_snapshot);
  const Bytes no_trailer =
      build_chunk(records, 4096, kEpoch, kT0 + 123, ChunkType::tracking_snapshot);
  EXPECT_EQ(built.substr(6), no_trailer);

  const uint64_t data_len = 4 + 5 + 4 + 0 + 4 + 3;
  golden::expect_fields(v, "chunk header",
                        {{"magic", 0x5343484B},
                         {"version", 3},
                         {"type", 2},
                         {"num_entries", 3},
                         {"num_records", 3},
                         {"timestamp", uint64_t(kT0 + 123)},
                         {"epoch", kEpoch},
                         {"first_offset", 4096},
                         {"data_len", data_len},
                         {"trailer_len", 2}});
  golden::expect_fields(v, "record entries", {{"length", 5}});
  EXPECT_EQ(golden::field_bytes(v, "trailer", "trailer"), "TR");
  // The CRCs cover the documented ranges.
  EXPECT_EQ(golden::field(v, "chunk header", "header_crc"), crc32c::value(v.bytes.data(), 52));
  EXPECT_EQ(golden::field(v, "chunk header", "data_crc"),
            crc32_zlib(BytesView(v.bytes).substr(kChunkHeaderSize)));
  EXPECT_EQ(golden::field(v, "chunk header", "wire_crc"),
            crc32_zlib(BytesView(v.bytes).substr(kChunkHeaderSize, data_len)));

  // The vector decodes back to the value.
  const Bytes bytes = golden::pinned_bytes(v);
  auto h = decode_chunk_header(bytes, "chunk.hex");
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->type, ChunkType::tracking_snapshot);
  EXPECT_EQ(h->first_offset, 4096u);
  EXPECT_EQ(h->next_offset(), 4099u);
  EXPECT_EQ(h->epoch, kEpoch);
  EXPECT_EQ(h->timestamp_ms, kT0 + 123);
  EXPECT_EQ(h->data_len, data_len);
  EXPECT_EQ(h->total_size(), bytes.size());
  EXPECT_EQ(h->version, 3);
  const BytesView body = BytesView(bytes).substr(kChunkHeaderSize);
  ASSERT_TRUE(verify_chunk_body(*h, body, "chunk.hex").ok());
  ASSERT_TRUE(verify_wire_crc(*h, body, "chunk.hex").ok());
  auto parsed = parse_records(*h, body.substr(0, h->data_len), "chunk.hex");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(*parsed, records);
}

// Version 2 chunks (data_crc in CRC32C, written before version 3) still
// decode and verify: the same chunk, the same wire CRC, the same records.
TEST(LogFormatGolden, Version2ChunkStillDecodes) {
  const golden::Vector v = golden::load("log/golden/chunk-v2.hex");
  ASSERT_TRUE(v.problems.empty());
  golden::expect_fields(v, "chunk header", {{"version", 2}});
  const Bytes bytes = golden::pinned_bytes(v);
  EXPECT_EQ(golden::field(v, "chunk header", "data_crc"),
            crc32c::value(BytesView(bytes).substr(kChunkHeaderSize)));
  auto h = decode_chunk_header(bytes, "chunk-v2.hex");
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->version, 2);
  EXPECT_TRUE(h->wire_crc_known());
  const BytesView body = BytesView(bytes).substr(kChunkHeaderSize);
  ASSERT_TRUE(verify_chunk_body(*h, body, "chunk-v2.hex").ok());
  ASSERT_TRUE(verify_wire_crc(*h, body, "chunk-v2.hex").ok());
  auto parsed = parse_records(*h, body.substr(0, h->data_len), "chunk-v2.hex");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(*parsed, (std::vector<BytesView>{"alpha", "", BytesView("b\0c", 3)}));
  auto v3 = decode_chunk_header(golden::pinned_bytes(golden::load("log/golden/chunk.hex")), "v3");
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(h->wire_crc, v3->wire_crc);
  // Only the version byte, data_crc and the header CRC differ.
  ChunkHeader same = *h;
  same.version = v3->version;
  same.data_crc = v3->data_crc;
  EXPECT_EQ(same, *v3);
}

// Version 1 chunks (written before the wire CRC) still decode: the same
// chunk with offset 48 reserved, no wire CRC known, the same records.
TEST(LogFormatGolden, Version1ChunkStillDecodes) {
  const golden::Vector v = golden::load("log/golden/chunk-v1.hex");
  ASSERT_TRUE(v.problems.empty());
  golden::expect_fields(v, "chunk header", {{"version", 1}, {"reserved", 0}});
  const Bytes bytes = golden::pinned_bytes(v);
  auto h = decode_chunk_header(bytes, "chunk-v1.hex");
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_FALSE(h->wire_crc_known());
  EXPECT_EQ(h->first_offset, 4096u);
  EXPECT_EQ(h->num_records, 3u);
  const BytesView body = BytesView(bytes).substr(kChunkHeaderSize);
  ASSERT_TRUE(verify_chunk_body(*h, body, "chunk-v1.hex").ok());
  auto parsed = parse_records(*h, body.substr(0, h->data_len), "chunk-v1.hex");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(*parsed, (std::vector<BytesView>{"alpha", "", BytesView("b\0c", 3)}));
  // Its wire CRC is computed on demand, and equals the stored one of later
  // versions.
  auto v3 = decode_chunk_header(golden::pinned_bytes(golden::load("log/golden/chunk.hex")), "v3");
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(chunk_wire_crc(*h, body.substr(0, h->data_len)), v3->wire_crc);
}

// What StreamLog writes for three batches with two chunks per segment: a
// segment and an index starting at offset 0 (two chunks), then a segment
// and an index starting at offset 4 (one chunk). Pins the writer's path
// (group commit, roll), not only the codecs.
TEST(LogFormatGolden, SegmentAndIndexFilesAreWrittenAsDocumented) {
  ::strata::test::TempDir dir;
  ManualClock clock(kT0);
  LogOptions o;
  o.clock = &clock;
  o.epoch = kEpoch;
  o.create_if_missing = true;
  o.max_segment_chunks = 2;
  {
    auto log = StreamLog::open(dir.sub("s"), o);
    ASSERT_TRUE(log.ok()) << log.error().to_string();
    ASSERT_TRUE((*log)->append({"one", "two", "three"}).ok());
    clock.advance_ms(250);
    ASSERT_TRUE((*log)->append({"four"}).ok());
    clock.advance_ms(250);
    ASSERT_TRUE((*log)->append({"five", "six"}).ok());
    ASSERT_TRUE((*log)->close().ok());
  }
  struct File {
    uint64_t first_offset;
    LogFileKind kind;
    const char* vector;
  };
  for (const File& f : {File{0, LogFileKind::segment, "log/golden/segment-0.hex"},
                        File{0, LogFileKind::index, "log/golden/index-0.hex"},
                        File{4, LogFileKind::segment, "log/golden/segment-4.hex"},
                        File{4, LogFileKind::index, "log/golden/index-4.hex"}}) {
    const std::string name = f.kind == LogFileKind::segment ? segment_file_name(f.first_offset)
                                                            : index_file_name(f.first_offset);
    SCOPED_TRACE(name);
    auto written = read_file(posix_fs(), dir.sub("s/" + name));
    ASSERT_TRUE(written.ok()) << written.error().to_string();
    const golden::Vector v = golden::load(f.vector);
    ASSERT_TRUE(golden::matches(v, *written));
    golden::expect_fields(v, "file header",
                          {{"magic", f.kind == LogFileKind::segment ? 0x53534547u : 0x53494458u},
                           {"version", 1},
                           {"first_offset", f.first_offset},
                           {"reserved", 0}});
    EXPECT_EQ(golden::field(v, "file header", "header_crc"), crc32c::value(v.bytes.data(), 20));
    auto first = decode_file_header(f.kind, v.bytes, f.vector);
    ASSERT_TRUE(first.ok()) << first.error().to_string();
    EXPECT_EQ(*first, f.first_offset);
  }

  // Field by field, at the documented offsets.
  const golden::Vector seg0 = golden::load("log/golden/segment-0.hex");
  golden::expect_fields(seg0, "chunk 0 header",
                        {{"magic", 0x5343484B},
                         {"version", 3},
                         {"type", 0},
                         {"num_records", 3},
                         {"timestamp", uint64_t(kT0)},
                         {"epoch", kEpoch},
                         {"first_offset", 0}});
  golden::expect_fields(
      seg0, "chunk 1 header",
      {{"num_records", 1}, {"timestamp", uint64_t(kT0 + 250)}, {"first_offset", 3}});
  const uint64_t chunk0_size = kChunkHeaderSize + 4 * 3 + 3 + 3 + 5;
  const golden::Vector idx0 = golden::load("log/golden/index-0.hex");
  golden::expect_fields(idx0, "index record 0",
                        {{"first_offset", 0},
                         {"timestamp", uint64_t(kT0)},
                         {"epoch", kEpoch},
                         {"file_position", kFileHeaderSize},
                         {"num_records", 3},
                         {"chunk_size", chunk0_size},
                         {"chunk_type", 0},
                         {"reserved", 0}});
  golden::expect_fields(idx0, "index record 1",
                        {{"first_offset", 3},
                         {"timestamp", uint64_t(kT0 + 250)},
                         {"file_position", kFileHeaderSize + chunk0_size},
                         {"num_records", 1},
                         {"chunk_size", kChunkHeaderSize + 4 + 4}});

  // The index records decode back to what the chunk headers say.
  BytesView chunks = BytesView(seg0.bytes).substr(kFileHeaderSize);
  for (size_t i = 0; i < 2; ++i) {
    const size_t at = kFileHeaderSize + i * kIndexRecordSize;
    EXPECT_EQ(golden::field(idx0, "index record " + std::to_string(i), "record_crc"),
              crc32c::value(idx0.bytes.data() + at, 44));
    auto rec =
        decode_index_record(BytesView(idx0.bytes).substr(at, kIndexRecordSize), "index-0.hex");
    ASSERT_TRUE(rec.ok()) << rec.error().to_string();
    auto h = decode_chunk_header(chunks.substr(rec->position - kFileHeaderSize), "segment-0.hex");
    ASSERT_TRUE(h.ok()) << h.error().to_string();
    EXPECT_EQ(*rec, index_record_for(*h, rec->position));
  }
}

// The same files from the codecs alone, so an encoder change is caught by
// its bytes even when it also stops the writer from reopening its files.
TEST(LogFormatGolden, CodecsEncodeTheWrittenHeadersAndIndexRecords) {
  const golden::Vector seg4 = golden::load("log/golden/segment-4.hex");
  const golden::Vector idx0 = golden::load("log/golden/index-0.hex");
  ASSERT_TRUE(seg4.problems.empty() && idx0.problems.empty());
  EXPECT_EQ(to_hex(encode_file_header(LogFileKind::segment, 4)),
            to_hex(seg4.bytes.substr(0, kFileHeaderSize)));
  EXPECT_EQ(to_hex(encode_file_header(LogFileKind::index, 0)),
            to_hex(idx0.bytes.substr(0, kFileHeaderSize)));
  // Index record 1 of index-0.hex, from the header of chunk 1 of segment 0.
  const golden::Vector seg0 = golden::load("log/golden/segment-0.hex");
  const uint64_t position = golden::field(idx0, "index record 1", "file_position");
  auto h = decode_chunk_header(BytesView(seg0.bytes).substr(position), "segment-0.hex");
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  uint8_t rec[kIndexRecordSize];
  encode_index_record(index_record_for(*h, position), rec);
  EXPECT_EQ(to_hex(BytesView(reinterpret_cast<const char*>(rec), sizeof rec)),
            to_hex(BytesView(idx0.bytes).substr(kFileHeaderSize + kIndexRecordSize)));
}

// A stream written before chunk version 3 (segment-*-v2.hex, index-*.hex:
// version 2 chunks) opens, reads with CRC checks, takes version 3 chunks
// after its version 2 ones in the same segment, reopens (recovery scans the
// mixed segment) and inspects clean.
TEST(LogFormatGolden, Version2StreamOpensReadsAndTakesVersion3Chunks) {
  ::strata::test::TempDir dir;
  ASSERT_TRUE(create_dirs(posix_fs(), dir.sub("s")).ok());
  struct Seed {
    const char* vector;
    std::string name;
  };
  for (const Seed& f : {Seed{"log/golden/segment-0-v2.hex", segment_file_name(0)},
                        Seed{"log/golden/index-0.hex", index_file_name(0)},
                        Seed{"log/golden/segment-4-v2.hex", segment_file_name(4)},
                        Seed{"log/golden/index-4.hex", index_file_name(4)}}) {
    const golden::Vector v = golden::load(f.vector);
    ASSERT_TRUE(v.problems.empty()) << f.vector;
    ASSERT_TRUE(
        write_file_atomic(posix_fs(), dir.sub("s/" + f.name), golden::pinned_bytes(v)).ok());
  }
  const std::vector<std::string> old_records = {"one", "two", "three", "four", "five", "six"};
  ManualClock clock(kT0 + 1000);
  LogOptions o;
  o.clock = &clock;
  o.epoch = kEpoch;
  auto expect_records = [&](StreamLog& log, const std::vector<std::string>& want) {
    auto back = test::read_all(log);
    ASSERT_TRUE(back.status.ok()) << back.status.to_string();
    ASSERT_EQ(back.records.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(back.records[i].first, i);
      EXPECT_EQ(back.records[i].second, want[i]);
    }
  };
  std::vector<std::string> all = old_records;
  {
    auto log = StreamLog::open(dir.sub("s"), o);
    ASSERT_TRUE(log.ok()) << log.error().to_string();
    expect_records(**log, old_records);
    ASSERT_TRUE((*log)->append({"seven", "eight"}).ok());
    ASSERT_TRUE((*log)->append({"nine"}).ok());
    ASSERT_TRUE((*log)->close().ok());
  }
  for (const char* r : {"seven", "eight", "nine"}) all.push_back(r);
  // Segment 4 now holds a version 2 chunk, then version 3 ones.
  auto seg4 = read_file(posix_fs(), dir.sub("s/" + segment_file_name(4)));
  ASSERT_TRUE(seg4.ok()) << seg4.error().to_string();
  std::vector<uint8_t> versions;
  for (uint64_t pos = kFileHeaderSize; pos < seg4->size();) {
    auto h = decode_chunk_header(BytesView(*seg4).substr(pos), "segment 4");
    ASSERT_TRUE(h.ok()) << h.error().to_string();
    versions.push_back(h->version);
    pos += h->total_size();
  }
  EXPECT_EQ(versions, (std::vector<uint8_t>{2, 3, 3}));
  {
    auto log = StreamLog::open(dir.sub("s"), o);
    ASSERT_TRUE(log.ok()) << log.error().to_string();
    expect_records(**log, all);
    ASSERT_TRUE((*log)->close().ok());
  }
  auto report = inspect_stream(posix_fs(), dir.sub("s"), InspectOptions{});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_TRUE(report->ok()) << report->problems.front();
  EXPECT_EQ(report->chunks, 5u);
  EXPECT_EQ(report->next_offset, 9u);
}

}  // namespace
}  // namespace strata::log
