// What an uploader reads of the log, on the real file system: the chunk walk
// (headers only, the rule the Reader uses too) and mapped committed spans
// (zero-copy views of the segment files).
#include "log/chunk_walk.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/fault_fs.h"
#include "log/log_test_util.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

struct LogReadContract : ::testing::Test {
  strata::test::TempDir tmp;
  std::string dir = tmp.sub("s");
  std::shared_ptr<StreamLog> log;

  void SetUp() override {
    LogOptions o;
    o.create_if_missing = true;
    o.fsync = FsyncPolicy::never;
    o.max_segment_bytes = 16 << 10;
    // Retention deletes every sealed segment, when a test runs it.
    o.retention.max_bytes = 1;
    o.retention_on_roll = false;
    auto l = StreamLog::open(dir, o);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    log = std::move(l).value();
  }
  // `batches` batches of 10 records of ~200 bytes (~2 KiB chunks); returns
  // the next offset.
  uint64_t append(int batches) {
    for (int b = 0; b < batches; ++b) {
      std::vector<std::string> recs;
      for (int i = 0; i < 10; ++i) {
        recs.push_back(test::payload_for(log->committed_next() + i, 0, 150, 250));
      }
      EXPECT_TRUE(log->append(test::views(recs)).ok());
    }
    return log->committed_next();
  }
  // Every chunk as the log's own reader sees it.
  std::vector<ChunkView> chunks_read(std::vector<Bytes>* bytes) {
    std::vector<ChunkView> out;
    auto r = log->open_reader(OffsetSpec::first());
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return out;
    for (;;) {
      auto c = (*r)->next_chunk();
      EXPECT_TRUE(c.ok()) << c.error().to_string();
      if (!c.ok() || !*c) break;
      out.push_back(**c);
      bytes->push_back(Bytes((*c)->bytes));
    }
    return out;
  }
  // Overwrites bytes of a segment file behind the log's back.
  void write_at(uint64_t segment, uint64_t position, BytesView b) {
    const std::string path = dir + "/" + segment_file_name(segment);
    int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(::pwrite(fd, b.data(), b.size(), off_t(position)), ssize_t(b.size()));
    ::close(fd);
  }
};

TEST_F(LogReadContract, WalkSeesEveryChunkAcrossSegmentsAsTheReaderDoes) {
  const uint64_t next = append(60);
  ASSERT_GE(log->segments().size(), 3u);
  std::vector<Bytes> bytes;
  const std::vector<ChunkView> want = chunks_read(&bytes);
  // In small steps that end inside segments and at their ends.
  auto w = log->walk_chunks(0);
  ASSERT_OK(w);
  std::vector<CommittedChunk> got;
  for (int i = 0; i < 1000; ++i) {
    auto run = (*w)->next(5000);
    ASSERT_OK(run);
    got.insert(got.end(), run->chunks.begin(), run->chunks.end());
    if (run->at_end) break;
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].header, want[i].header) << i;
    EXPECT_EQ(got[i].segment_first_offset, want[i].segment_first_offset) << i;
    EXPECT_EQ(got[i].position, want[i].position) << i;
    EXPECT_EQ(got[i].size, want[i].bytes.size()) << i;
  }
  EXPECT_EQ((*w)->next_offset(), next);
  // What is committed after the end is found by the next call.
  const uint64_t more = append(2);
  auto run = (*w)->next(1 << 20);
  ASSERT_OK(run);
  EXPECT_TRUE(run->at_end);
  ASSERT_EQ(run->chunks.size(), 2u);
  EXPECT_EQ((*w)->next_offset(), more);
}

TEST_F(LogReadContract, WalkOpensOnlyAtAChunkStartInsideTheLog) {
  const uint64_t next = append(20);
  // Inside a chunk (chunks hold 10 records), or beyond the committed end.
  EXPECT_EQ(log->walk_chunks(5).code(), Errc::corrupt);
  EXPECT_EQ(log->walk_chunks(next + 1).code(), Errc::out_of_range);
  // At the committed end: nothing yet, and at the end.
  auto at_end = log->walk_chunks(next);
  ASSERT_OK(at_end);
  auto empty = (*at_end)->next(1 << 20);
  ASSERT_OK(empty);
  EXPECT_TRUE(empty->at_end);
  EXPECT_TRUE(empty->chunks.empty());
  // Below the local log once retention removed the oldest segments.
  ASSERT_OK(log->apply_retention());
  ASSERT_GT(log->first_offset(), 0u);
  auto below = log->walk_chunks(0);
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.code(), Errc::out_of_range);
  EXPECT_OK(log->walk_chunks(log->first_offset()));
}

TEST_F(LogReadContract, WalkReportsASegmentRetentionRemovedUnderIt) {
  append(30);
  ASSERT_GE(log->segments().size(), 3u);
  auto w = log->walk_chunks(0);
  ASSERT_OK(w);
  auto first = (*w)->next(1);  // the first chunk only: the walk stands in the first segment
  ASSERT_OK(first);
  ASSERT_EQ(first->chunks.size(), 1u);
  ASSERT_OK(log->apply_retention());
  ASSERT_GT(log->first_offset(), 0u);
  auto gone = (*w)->next(1 << 20);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.code(), Errc::not_found) << gone.error().to_string();
  // A walk from the new first offset reads on to the end.
  auto again = log->walk_chunks(log->first_offset());
  ASSERT_OK(again);
  auto rest = (*again)->next(1 << 20);
  ASSERT_OK(rest);
  EXPECT_TRUE(rest->at_end);
  EXPECT_FALSE(rest->chunks.empty());
}

// The header rule is one: a damaged header is reported by the walk exactly
// as by the reader, naming the segment file and the position.
TEST_F(LogReadContract, WalkAndReaderReportADamagedHeaderAlike) {
  append(4);
  std::vector<Bytes> bytes;
  const std::vector<ChunkView> chunks = chunks_read(&bytes);
  ASSERT_EQ(chunks.size(), 4u);
  const ChunkView& victim = chunks[2];
  // The first offset field (bytes 24..31 of the header): the header CRC no
  // longer holds.
  ASSERT_NO_FATAL_FAILURE(write_at(victim.segment_first_offset, victim.position + 30, "\x7f"));
  auto r = log->open_reader(OffsetSpec::first());
  ASSERT_OK(r);
  Status from_reader;
  for (int i = 0; i < 5 && from_reader.ok(); ++i) {
    auto c = (*r)->next_chunk_location();
    if (!c.ok()) from_reader = c.error();
  }
  auto w = log->walk_chunks(0);
  ASSERT_OK(w);
  auto from_walk = (*w)->next(1 << 20);
  ASSERT_FALSE(from_reader.ok());
  ASSERT_FALSE(from_walk.ok());
  EXPECT_EQ(from_walk.code(), Errc::corrupt);
  EXPECT_EQ(from_walk.error().message, from_reader.error().message);
  EXPECT_NE(from_walk.error().message.find(
                fmt::format("{} position {}", dir + "/" + segment_file_name(0), victim.position)),
            std::string::npos)
      << from_walk.error().message;
}

TEST_F(LogReadContract, MappedSpansAreWhatTheReaderReads) {
  std::vector<CommittedChunk> committed;
  log->subscribe([&](const CommittedChunk& c) { committed.push_back(c); });
  append(12);
  std::vector<Bytes> bytes;
  const std::vector<ChunkView> chunks = chunks_read(&bytes);
  ASSERT_EQ(committed.size(), chunks.size());
  for (size_t i = 0; i < committed.size(); ++i) {
    const CommittedChunk& c = committed[i];
    EXPECT_EQ(c.size, c.header.total_size());
    auto m = log->map_committed(c.segment_first_offset, c.position, c.size);
    ASSERT_OK(m);
    EXPECT_EQ(m->view(), bytes[i]) << i;
  }
  // A segment's chunks in one span.
  const CommittedChunk& c0 = committed[0];
  size_t last = 0;
  while (last + 1 < committed.size() && committed[last + 1].segment_first_offset == 0) ++last;
  const uint64_t length = committed[last].position + committed[last].size - c0.position;
  auto span = log->map_committed(0, c0.position, length);
  ASSERT_OK(span);
  Bytes joined;
  for (size_t i = 0; i <= last; ++i) joined += bytes[i];
  EXPECT_EQ(span->view(), joined);
  // Past the committed end, or in a segment that is not there.
  const SegmentInfo active = log->segments().back();
  EXPECT_EQ(log->map_committed(active.first_offset, active.size_bytes, 1).code(),
            Errc::out_of_range);
  EXPECT_EQ(log->map_committed(0, 0, 1 << 30).code(), Errc::out_of_range);
  EXPECT_EQ(log->map_committed(999'999, kFileHeaderSize, 1).code(), Errc::not_found);
  auto nothing = log->map_committed(0, c0.position, 0);
  ASSERT_OK(nothing);
  EXPECT_TRUE(nothing->view().empty());
}

// Zero-copy: a mapped span is the page cache's view of the file, so a byte
// that rots after the map was made shows through it (and fails the chunk's
// CRC the uploader checks), where a copy would have hidden it.
TEST_F(LogReadContract, AMappedSpanIsAViewOfTheFileNotACopy) {
  std::vector<CommittedChunk> committed;
  log->subscribe([&](const CommittedChunk& c) { committed.push_back(c); });
  append(1);
  ASSERT_EQ(committed.size(), 1u);
  const CommittedChunk c = committed[0];
  auto m = log->map_committed(c.segment_first_offset, c.position, c.size);
  ASSERT_OK(m);
  const BytesView body = m->view().substr(kChunkHeaderSize);
  ASSERT_OK(verify_chunk_body(c.header, body, "t"));
  const char was = body[6];
  const char rotten = char(was ^ 0x20);
  ASSERT_NO_FATAL_FAILURE(
      write_at(c.segment_first_offset, c.position + kChunkHeaderSize + 6, BytesView(&rotten, 1)));
  EXPECT_EQ(body[6], rotten);
  auto v = verify_chunk_body(c.header, body, "t");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.code(), Errc::corrupt);
}

TEST_F(LogReadContract, AMappedSpanOutlivesItsSegmentAndTheSegmentThenIsNotFound) {
  std::vector<CommittedChunk> committed;
  log->subscribe([&](const CommittedChunk& c) { committed.push_back(c); });
  append(30);
  ASSERT_GE(log->segments().size(), 3u);
  const CommittedChunk c = committed.at(0);
  auto m = log->map_committed(c.segment_first_offset, c.position, c.size);
  ASSERT_OK(m);
  const Bytes before(m->view());
  ASSERT_OK(log->apply_retention());
  ASSERT_GT(log->first_offset(), 0u);
  EXPECT_EQ(m->view(), before);
  EXPECT_EQ(log->map_committed(0, c.position, c.size).code(), Errc::not_found);
}

TEST(LogReadContractFakeFs, NothingToMapOrWalkOnAFileSystemThatIsNotPosix) {
  FaultFileSystem fs;
  LogOptions o;
  o.fs = &fs;
  o.create_if_missing = true;
  auto log = StreamLog::open("/s", o);
  ASSERT_OK(log);
  ASSERT_OK((*log)->append({"v"}));
  EXPECT_EQ((*log)->map_committed(0, kFileHeaderSize, 1).code(), Errc::unsupported);
  EXPECT_EQ((*log)->walk_chunks(0).code(), Errc::unsupported);
}

}  // namespace
}  // namespace strata::log
