// Recovery and bad input: torn tails are cut, corruption before the tail is
// a precise error, and damaged or missing files get a precise error or a
// safe repair — never a crash (these also run under the sanitizers).
#include "log/recovery.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "common/fault_fs.h"
#include "common/random.h"
#include "log/index_file.h"
#include "log/log_test_util.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

using test::payload_for;

struct LogRecovery : test::StreamDirTest {
  Result<std::shared_ptr<StreamLog>> reopen(LogOptions o) { return StreamLog::open(dir, o); }
  Result<std::shared_ptr<StreamLog>> reopen() { return reopen(opts()); }

  void expect_error(const Result<std::shared_ptr<StreamLog>>& r, Errc code,
                    std::vector<std::string> needles) {
    ASSERT_FALSE(r.ok()) << "open should fail";
    EXPECT_EQ(r.code(), code) << r.error().to_string();
    for (const auto& n : needles) {
      EXPECT_NE(r.error().message.find(n), std::string::npos)
          << "'" << n << "' not in: " << r.error().message;
    }
  }
  void expect_records(StreamLog& log, uint64_t first, uint64_t next) {
    auto rb = test::read_all(log);
    ASSERT_TRUE(rb.status.ok()) << rb.status.to_string();
    ASSERT_EQ(rb.records.size(), next - first);
    for (size_t i = 0; i < rb.records.size(); ++i) {
      ASSERT_EQ(rb.records[i].first, first + i);
      ASSERT_EQ(rb.records[i].second, payload_for(first + i));
    }
  }
};

// ------------------------------------------------------------ torn tails

TEST_F(LogRecovery, TornLastChunkIsCutAndLoggedWithFileAndPosition) {
  build(6);  // [0,12) sealed, [12,18) active with 2 chunks
  auto recs = index_of(12);
  ASSERT_EQ(recs.size(), 2u);
  uint64_t cut_at = recs[1].position;
  truncate(seg(12), cut_at + 30);  // half of the last chunk's header... and body
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  ASSERT_EQ((*log)->repairs().size(), 1u + 1u);  // segment cut + index repaired
  const std::string& what = (*log)->repairs()[0];
  EXPECT_NE(what.find("truncated torn tail of " + seg(12)), std::string::npos) << what;
  EXPECT_NE(what.find("position " + std::to_string(cut_at)), std::string::npos) << what;
  EXPECT_EQ(size_of(seg(12)), cut_at);
  EXPECT_EQ(index_of(12).size(), 1u);
  expect_records(**log, 0, 15);
  // The log goes on from the cut.
  ASSERT_TRUE((*log)->append({payload_for(15)}).ok());
  expect_records(**log, 0, 16);
}

TEST_F(LogRecovery, GarbageAfterTheLastChunkIsCut) {
  build(5);
  uint64_t end = size_of(seg(12));
  Random rng(strata::test::test_seed(7));
  std::string junk(777, '\0');
  for (auto& c : junk) c = char(rng.uniform(256));
  write_at(seg(12), end, junk);
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  EXPECT_EQ(size_of(seg(12)), end);
  expect_records(**log, 0, 15);
}

TEST_F(LogRecovery, ChunkWithBadCrcAtTheTailIsCut) {
  build(6);
  auto recs = index_of(12);
  flip(seg(12), recs[1].position + kChunkHeaderSize + 2);
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  EXPECT_NE((*log)->repairs()[0].find("CRC"), std::string::npos);
  expect_records(**log, 0, 15);
}

// ------------------------------------------------------------ corrupt middle

TEST_F(LogRecovery, CorruptChunkFollowedByIntactOneInActiveSegmentIsAnError) {
  build(7);  // active [12,21): 3 chunks
  auto recs = index_of(12);
  uint64_t bad = recs[1].position + kChunkHeaderSize + 1;
  flip(seg(12), bad);
  uint64_t size_before = size_of(seg(12));
  expect_error(reopen(), Errc::corrupt,
               {seg(12), "position " + std::to_string(recs[1].position), "CRC", "not a torn tail"});
  EXPECT_EQ(size_of(seg(12)), size_before) << "nothing may be cut";
}

TEST_F(LogRecovery, CorruptSealedSegmentFailsTheReaderNamingFileAndPosition) {
  build(6);
  auto recs = index_of(0);
  flip(seg(0), recs[2].position + kChunkHeaderSize + 3);
  // The index of a sealed segment is trusted at open (no full read)...
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  // ...and the reader verifies every chunk it returns.
  auto rb = test::read_all(**log);
  ASSERT_FALSE(rb.status.ok());
  EXPECT_EQ(rb.status.code(), Errc::corrupt);
  EXPECT_NE(
      rb.status.error().message.find(seg(0) + " position " + std::to_string(recs[2].position)),
      std::string::npos)
      << rb.status.to_string();
  EXPECT_EQ(rb.records.size(), 6u) << "everything before the damage was delivered";
  ASSERT_TRUE((*log)->close().ok());
  // A full verification at open refuses it.
  LogOptions o = opts();
  o.verify_sealed_on_open = true;
  expect_error(reopen(o), Errc::corrupt, {"sealed segment", seg(0), "CRC"});
}

TEST_F(LogRecovery, TruncatedSealedSegmentIsAnError) {
  build(6);
  truncate(seg(0), size_of(seg(0)) - 10);
  expect_error(reopen(), Errc::corrupt, {"sealed segment", seg(0), "runs past the end"});
}

TEST_F(LogRecovery, MissingMiddleSegmentIsAGap) {
  build(10);  // [0,12) [12,24) [24,30)
  ASSERT_TRUE(fs.remove(seg(12)).ok());
  // The orphan index 12 is removed, then the gap is reported.
  expect_error(reopen(), Errc::corrupt, {"not contiguous", segment_file_name(24), "offset 12"});
}

// ------------------------------------------------------------ bad files

TEST_F(LogRecovery, ZeroLengthNewestSegmentIsReinitialised) {
  build(5);  // [0,12) [12,15)
  // A roll that crashed before the header reached the disk.
  truncate(seg(12), 0);
  ASSERT_TRUE(fs.remove(idx(12)).ok());
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  EXPECT_NE((*log)->repairs()[0].find("re-initialised " + seg(12)), std::string::npos);
  EXPECT_EQ((*log)->committed_next(), 12u);
  expect_records(**log, 0, 12);
  ASSERT_TRUE((*log)->append({payload_for(12)}).ok());
}

TEST_F(LogRecovery, ZeroLengthSealedSegmentIsAnError) {
  build(10);
  truncate(seg(12), 0);
  expect_error(reopen(), Errc::corrupt, {seg(12), "sealed segment has no valid header"});
}

TEST_F(LogRecovery, ZeroedHeaderWithIntactChunksAfterItIsAnError) {
  build(5);
  write_at(seg(12), 0, std::string(kFileHeaderSize, '\0'));
  expect_error(reopen(), Errc::corrupt, {seg(12), "header is missing or zero", "intact chunk"});
}

TEST_F(LogRecovery, GarbageSegmentFileIsAnErrorNamingIt) {
  build(2);
  Random rng(strata::test::test_seed(11));
  std::string junk(5000, '\0');
  for (auto& c : junk) c = char(rng.uniform(255) + 1);
  write_at(seg(6), 0, junk);  // where the next segment would be
  expect_error(reopen(), Errc::corrupt, {seg(6), "wrong magic"});
}

TEST_F(LogRecovery, WrongMagicIsAnError) {
  build(2);
  // An index file where a segment should be.
  Bytes hdr = encode_file_header(LogFileKind::index, 0);
  write_at(seg(0), 0, hdr);
  expect_error(reopen(), Errc::corrupt, {seg(0), "wrong magic", "strata segment file"});
}

TEST_F(LogRecovery, RenamedSegmentIsAnError) {
  build(2);
  ASSERT_TRUE(fs.rename(seg(0), seg(5)).ok());
  ASSERT_TRUE(fs.rename(idx(0), idx(5)).ok());
  expect_error(reopen(), Errc::corrupt, {seg(5), "header says first offset 0"});
}

TEST_F(LogRecovery, MalformedFileNameIsAnError) {
  build(2);
  write_at(path_join(dir, "junk.segment"), 0, "x");
  expect_error(reopen(), Errc::corrupt, {"junk.segment"});
}

TEST_F(LogRecovery, EmptyDirectoryIsNotAStream) {
  ASSERT_TRUE(fs.create_dir(dir).ok());
  LogOptions o = opts();
  o.create_if_missing = false;
  expect_error(reopen(o), Errc::not_found, {dir, "no segment files"});
}

TEST_F(LogRecovery, FileInsteadOfDirectoryIsAnError) {
  write_at(dir, 0, "not a dir");
  LogOptions o = opts();
  o.create_if_missing = false;
  auto r = reopen(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(dir), std::string::npos);
}

// ------------------------------------------------------------ indexes

TEST_F(LogRecovery, IndexPointingPastTheEndOfTheActiveSegmentIsCut) {
  build(6);
  auto recs = index_of(12);
  // The segment lost its last chunk but the index kept its record.
  truncate(seg(12), recs[1].position);
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  EXPECT_EQ(index_of(12).size(), 1u);
  EXPECT_EQ(size_of(idx(12)), kFileHeaderSize + kIndexRecordSize);
  expect_records(**log, 0, 15);
}

TEST_F(LogRecovery, IndexPointingPastTheEndOfASealedSegmentIsRebuilt) {
  build(6);
  auto recs = add_index_record_past_the_end(0);
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  ASSERT_FALSE((*log)->repairs().empty());
  EXPECT_NE((*log)->repairs()[0].find("rebuilt index " + idx(0)), std::string::npos);
  EXPECT_EQ(index_of(0), recs);
  expect_records(**log, 0, 18);
}

TEST_F(LogRecovery, MissingTornOrRottenIndexesAreRebuilt) {
  build(10);
  ASSERT_TRUE(fs.remove(idx(0)).ok());      // missing
  truncate(idx(12), size_of(idx(12)) - 7);  // torn record
  flip(idx(24), kFileHeaderSize + 5);       // rotten record (active)
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  EXPECT_EQ((*log)->repairs().size(), 3u);
  EXPECT_EQ(index_of(0).size(), 4u);
  EXPECT_EQ(index_of(12).size(), 4u);
  EXPECT_EQ(index_of(24).size(), 2u);
  expect_records(**log, 0, 30);
  // Seeks use the rebuilt indexes.
  auto r = *(*log)->open_reader(OffsetSpec::at_offset(20));
  std::vector<Record> rs;
  ASSERT_TRUE(r->next_records(&rs).ok());
  EXPECT_EQ(rs.front().offset, 20u);
}

TEST_F(LogRecovery, GarbageIndexFileIsRebuilt) {
  build(6);
  write_at(idx(0), 0, std::string(100, 'G'));
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  EXPECT_EQ(index_of(0).size(), 4u);
}

TEST_F(LogRecovery, OrphanIndexAndLeftoverTempFilesAreRemoved) {
  build(2);
  write_at(idx(500), 0, encode_file_header(LogFileKind::index, 500));
  write_at(path_join(dir, index_file_name(0) + ".tmp"), 0, "half");
  auto log = reopen();
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  EXPECT_FALSE(exists(fs, idx(500)));
  EXPECT_FALSE(exists(fs, path_join(dir, index_file_name(0) + ".tmp")));
}

// ------------------------------------------------------------ read-only

TEST_F(LogRecovery, ReadOnlyOpenChangesNothing) {
  build(6);
  auto recs = index_of(12);
  truncate(seg(12), recs[1].position + 20);
  ASSERT_TRUE(fs.remove(idx(0)).ok());
  uint64_t size = size_of(seg(12));
  LogOptions o;
  o.read_only = true;
  auto log = reopen(o);
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  EXPECT_TRUE((*log)->repairs().empty());
  expect_records(**log, 0, 15);
  EXPECT_EQ(size_of(seg(12)), size);
  EXPECT_FALSE(exists(fs, idx(0)));
  auto r = *(*log)->open_reader(OffsetSpec::at_offset(7));
  std::vector<Record> rs;
  ASSERT_TRUE(r->next_records(&rs).ok());
  EXPECT_EQ(rs.front().offset, 7u);
}

// ------------------------------------------------------------ fuzz

// Random damage to random files never crashes open or read: each outcome is
// a clean open whose data is contiguous and byte-identical to what was
// written, or an error. In memory (FaultFileSystem), so it can run often.
TEST(LogRecoveryFuzz, RandomDamageNeverCrashes) {
  auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  struct Restore {
    spdlog::level::level_enum l;
    ~Restore() { spdlog::set_level(l); }
  } restore{level};
  FaultFileSystem fs;
  LogOptions o;
  o.fs = &fs;
  o.create_if_missing = true;
  o.fsync = FsyncPolicy::never;
  o.max_segment_chunks = 4;
  {
    auto log = *StreamLog::open("/s", o);
    for (int c = 0; c < 10; ++c) {
      uint64_t f = log->committed_next();
      std::vector<std::string> recs = {payload_for(f), payload_for(f + 1), payload_for(f + 2)};
      ASSERT_TRUE(log->append(test::views(recs)).ok());
    }
  }
  std::map<std::string, Bytes> pristine;
  std::vector<std::string> files;
  auto listing = *fs.list_dir("/s");
  for (const auto& n : listing) {
    files.push_back("/s/" + n);
    pristine[files.back()] = *read_file(fs, files.back());
  }
  Random rng(strata::test::test_seed(2024));
  int iterations = strata::test::scaled(4000);
  int opened = 0;
  for (int it = 0; it < iterations; ++it) {
    auto now = *fs.list_dir("/s");
    for (const auto& n : now) ASSERT_TRUE(fs.remove("/s/" + n).ok());
    for (const auto& [f, b] : pristine) {
      auto h = *fs.open(f, OpenOptions::create_truncate());
      ASSERT_TRUE(h->append(b).ok());
    }
    int damages = int(rng.range(1, 3));
    for (int d = 0; d < damages; ++d) {
      const std::string& f = files[rng.uniform(files.size())];
      if (!exists(fs, f)) continue;
      auto h = *fs.open(f, OpenOptions::read_write());
      uint64_t size = *h->size();
      switch (rng.uniform(5)) {
        case 0:
          ASSERT_TRUE(h->truncate(rng.uniform(size + 1)).ok());
          break;
        case 1: {
          std::string b(1, char(rng.uniform(256)));
          ASSERT_TRUE(h->write_at(rng.uniform(size + 1), b).ok());
          break;
        }
        case 2: {
          std::string b(size_t(rng.range(1, 200)), char(rng.uniform(256)));
          ASSERT_TRUE(h->write_at(rng.uniform(size + 1), b).ok());
          break;
        }
        case 3:
          ASSERT_TRUE(h->truncate(0).ok());
          break;
        case 4:
          ASSERT_TRUE(fs.remove(f).ok());
          break;
      }
    }
    auto log = StreamLog::open("/s", o);
    if (!log.ok()) {
      EXPECT_FALSE(log.error().message.empty());
      continue;
    }
    ++opened;
    auto rb = test::read_all(**log);
    for (size_t i = 0; i < rb.records.size(); ++i) {
      ASSERT_EQ(rb.records[i].second, payload_for(rb.records[i].first)) << "iteration " << it;
      if (i > 0) {
        ASSERT_EQ(rb.records[i].first, rb.records[i - 1].first + 1);
      }
    }
    // Whatever recovery left must reopen cleanly, with nothing more to repair.
    ASSERT_TRUE((*log)->close().ok());
    if (rb.status.ok()) {
      auto again = StreamLog::open("/s", o);
      ASSERT_TRUE(again.ok()) << "iteration " << it << ": " << again.error().to_string();
      EXPECT_TRUE((*again)->repairs().empty()) << "iteration " << it;
    }
  }
  EXPECT_GT(opened, iterations / 10);
  std::printf(
      "[ fuzz ] %d damaged logs, %d opened (repaired or intact), %d refused with an error\n",
      iterations, opened, iterations - opened);
}

}  // namespace
}  // namespace strata::log
