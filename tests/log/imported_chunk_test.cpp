// Imported chunks (StreamLog::append_entries with EntryBatch::imported, for
// `strata import rabbitmq`): each is a chunk of its own at exactly the
// offset, time and type it had, tracking chunks keep their offsets but are
// never read as records, and the writers an import names survive a reopen.
#include <gtest/gtest.h>

#include "common/endian.h"
#include "log/log_test_util.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

// Simple entries back to back (u32 length, then the bytes).
std::string imported_entries(const std::vector<std::string>& records) {
  std::string out;
  for (const auto& r : records) {
    char len[4];
    put_be32(u8(len), uint32_t(r.size()));
    out.append(len, 4);
    out += r;
  }
  return out;
}

LogOptions imported_opts(uint64_t first_offset) {
  LogOptions o;
  o.create_if_missing = true;
  o.first_offset = first_offset;
  o.fsync = FsyncPolicy::never;
  o.max_segment_bytes = 4096;
  return o;
}

Result<AppendResult> import_chunk(StreamLog& log, const std::string& entries, uint16_t n,
                                  const ImportedChunk& ic) {
  EntryBatch b;
  b.entries = entries;
  b.num_entries = n;
  b.num_records = n;
  b.imported = &ic;
  return log.append_entries(b);
}

TEST(ImportedChunk, KeepsOffsetTimeAndTypeAndSkipsTrackingChunksWhenReading) {
  strata::test::TempDir tmp;
  const std::string dir = tmp.sub("s");
  {
    auto log = StreamLog::open(dir, imported_opts(565));
    ASSERT_OK(log);
    WriterSequences w1{{"pub-a", 7}};
    // A tracking snapshot (one entry of tracking bytes), then user chunks.
    const std::string tracking =
        imported_entries({std::string("\x01\x02r1\0\0\0\0\0\0\x02\x33", 12)});
    ASSERT_OK(import_chunk(**log, tracking, 1,
                           ImportedChunk{565, 1000, ChunkType::tracking_snapshot, &w1, {}, {}}));
    for (uint64_t i = 0; i < 40; ++i) {
      WriterSequences w{{"pub-a", 8 + i}};
      const uint64_t at = 566 + i * 3;
      auto r = import_chunk(
          **log, imported_entries({"m" + std::to_string(at), "x", std::string(200, 'y')}), 3,
          ImportedChunk{at, int64_t(2000 + i), ChunkType::user, &w, {}, {}});
      ASSERT_OK(r);
      EXPECT_EQ(r->first_offset, at);
    }
    EXPECT_EQ((*log)->committed_next(), 566u + 120);
    EXPECT_GT((*log)->segments().size(), 2u) << "the import crossed segment rolls";
    ASSERT_OK((*log)->close());
  }
  auto log = StreamLog::open(dir, imported_opts(0));
  ASSERT_OK(log);
  EXPECT_EQ((*log)->first_offset(), 565u);
  EXPECT_EQ((*log)->writer_sequence("pub-a"), std::optional<uint64_t>(47));
  // Records: the tracking chunk's offset holds none.
  auto back = test::read_all(**log);
  ASSERT_OK(back.status);
  ASSERT_EQ(back.records.size(), 120u);
  EXPECT_EQ(back.records.front().first, 566u);
  EXPECT_EQ(back.records.front().second, "m566");
  // Chunks: each as imported, the timestamps as given.
  auto r = (*log)->open_reader(OffsetSpec::first());
  ASSERT_OK(r);
  auto c = (*r)->next_chunk();
  ASSERT_OK(c);
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->header.type, ChunkType::tracking_snapshot);
  EXPECT_EQ((*c)->header.first_offset, 565u);
  EXPECT_EQ((*c)->header.timestamp_ms, 1000);
  for (uint64_t i = 0; i < 40; ++i) {
    auto u = (*r)->next_chunk();
    ASSERT_OK(u);
    ASSERT_TRUE(u->has_value());
    EXPECT_EQ((*u)->header.type, ChunkType::user);
    EXPECT_EQ((*u)->header.first_offset, 566 + i * 3);
    EXPECT_EQ((*u)->header.num_records, 3u);
    EXPECT_EQ((*u)->header.timestamp_ms, int64_t(2000 + i));
  }
  // A timestamp spec resolves against the imported times.
  auto at = (*log)->resolve(OffsetSpec::at_timestamp(2010));
  ASSERT_OK(at);
  EXPECT_EQ(at->chunk_first_offset, 566u + 30);
}

TEST(ImportedChunk, MustStartAtTheLogsEndAndNamesNoWriterRef) {
  strata::test::TempDir tmp;
  auto log = StreamLog::open(tmp.sub("s"), imported_opts(10));
  ASSERT_OK(log);
  const std::string e = imported_entries({"a"});
  auto gap = import_chunk(**log, e, 1, ImportedChunk{11, 5, ChunkType::user, nullptr, {}, {}});
  ASSERT_FALSE(gap.ok());
  EXPECT_EQ(gap.code(), Errc::invalid_argument);
  EXPECT_NE(gap.error().message.find("starts at offset 11 but the log ends at 10"),
            std::string::npos)
      << gap.error().to_string();
  ImportedChunk ic{10, 5, ChunkType::user, nullptr, {}, {}};
  EntryBatch b;
  b.entries = e;
  b.num_entries = 1;
  b.num_records = 1;
  b.imported = &ic;
  b.writer_ref = "p";
  b.writer_seq = 1;
  EXPECT_EQ((*log)->append_entries(b).code(), Errc::invalid_argument);
  EXPECT_EQ((*log)->committed_next(), 10u);
  ASSERT_OK(import_chunk(**log, e, 1, ic));
  EXPECT_EQ((*log)->committed_next(), 11u);
  // The log goes on as any other: a live append after the import.
  auto live = (*log)->append({BytesView("b")});
  ASSERT_OK(live);
  EXPECT_EQ(live->first_offset, 11u);
}

}  // namespace
}  // namespace strata::log
