// Retention: the pure plan, then the shell (files deleted, active segment
// kept, ages from the injected clock, durability of the deletion).
#include "log/retention.h"

#include <gtest/gtest.h>

#include "common/fault_fs.h"
#include "log/log_test_util.h"

namespace strata::log {
namespace {

SegmentInfo seg(uint64_t first, uint64_t next, uint64_t bytes, int64_t last_ts) {
  SegmentInfo s;
  s.first_offset = first;
  s.next_offset = next;
  s.size_bytes = bytes;
  s.chunks = next > first ? 1 : 0;
  s.first_timestamp_ms = s.last_timestamp_ms = s.chunks ? last_ts : -1;
  return s;
}

TEST(LogRetentionPlan, NoLimitsNoDeletes) {
  std::vector<SegmentInfo> s = {seg(0, 10, 100, 1), seg(10, 20, 100, 2)};
  EXPECT_EQ(plan_retention(s, {}, 1000).count, 0u);
}

TEST(LogRetentionPlan, MaxBytesDeletesOldestUntilUnderLimit) {
  std::vector<SegmentInfo> s = {seg(0, 10, 100, 1), seg(10, 20, 100, 2), seg(20, 30, 100, 3),
                                seg(30, 35, 50, 4)};
  RetentionOptions o;
  o.max_bytes = 200;
  auto p = plan_retention(s, o, 0);
  EXPECT_EQ(p.count, 2u);  // 350 -> 250 -> 150
  EXPECT_EQ(p.reasons, (std::vector<std::string>{"max_bytes", "max_bytes"}));
  o.max_bytes = 350;
  EXPECT_EQ(plan_retention(s, o, 0).count, 0u);
}

TEST(LogRetentionPlan, NeverTheActiveSegment) {
  std::vector<SegmentInfo> s = {seg(0, 10, 100, 1), seg(10, 20, 1000, 2)};
  RetentionOptions o;
  o.max_bytes = 0;
  o.max_age_ms = 0;
  EXPECT_EQ(plan_retention(s, o, 1'000'000).count, 1u);
  EXPECT_EQ(plan_retention({s[1]}, o, 1'000'000).count, 0u);
}

TEST(LogRetentionPlan, MaxAgeUsesNewestChunkOfEachSegment) {
  std::vector<SegmentInfo> s = {seg(0, 10, 100, 1000), seg(10, 20, 100, 2000),
                                seg(20, 30, 100, 3000), seg(30, 30, 24, -1)};
  RetentionOptions o;
  o.max_age_ms = 1500;
  EXPECT_EQ(plan_retention(s, o, 3400).count, 1u);  // cutoff 1900: only the first is older
  EXPECT_EQ(plan_retention(s, o, 3600).count, 2u);  // cutoff 2100
  // Not the third: while the active segment is empty, the segment before it
  // carries the writer sequences (log/writer_sequences.h).
  EXPECT_EQ(plan_retention(s, o, 99999).count, 2u);
  auto p = plan_retention(s, o, 3600);
  EXPECT_EQ(p.reasons[0], "max_age");
}

TEST(LogRetentionPlan, LongerPrefixOfTheTwoLimitsWins) {
  std::vector<SegmentInfo> s = {seg(0, 10, 100, 1000), seg(10, 20, 100, 2000),
                                seg(20, 30, 100, 3000), seg(30, 40, 100, 4000)};
  RetentionOptions o;
  o.max_bytes = 350;    // deletes 1
  o.max_age_ms = 1500;  // at now=4600 (cutoff 3100) deletes 3
  auto p = plan_retention(s, o, 4600);
  EXPECT_EQ(p.count, 3u);
  EXPECT_EQ(p.reasons, (std::vector<std::string>{"max_bytes", "max_age", "max_age"}));
}

struct LogRetention : ::testing::Test {
  FaultFileSystem fs;
  ManualClock clock{10'000};
  LogOptions opts() {
    LogOptions o;
    o.fs = &fs;
    o.clock = &clock;
    o.create_if_missing = true;
    o.max_segment_chunks = 2;
    o.retention_on_roll = false;
    return o;
  }
  void fill(StreamLog& log, int chunks) {
    for (int i = 0; i < chunks; ++i) {
      std::string v = test::payload_for(log.committed_next());
      ASSERT_TRUE(log.append({v}).ok());
      clock.advance_ms(1000);
    }
  }
};

TEST_F(LogRetention, MaxAgeDeletesFilesDurablyAndKeepsReadersConsistent) {
  LogOptions o = opts();
  o.retention.max_age_ms = 3500;
  auto log = *StreamLog::open("/s", o);
  fill(*log, 9);  // segments: [0,2) [2,4) [4,6) [6,8) [8,9), chunk k at 10'000 + 1000 k
  ASSERT_EQ(log->segments().size(), 5u);
  // now = 19'000, cutoff 15'500: segments whose newest chunk < 15'500 go: [0,2) [2,4) [4,6).
  auto out = log->apply_retention();
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  ASSERT_EQ(out->deleted.size(), 3u);
  EXPECT_EQ(out->first_offset, 6u);
  EXPECT_FALSE(exists(fs, "/s/" + segment_file_name(0)));
  EXPECT_FALSE(exists(fs, "/s/" + index_file_name(2)));
  EXPECT_TRUE(exists(fs, "/s/" + segment_file_name(6)));
  auto rb = test::read_all(*log);
  ASSERT_TRUE(rb.status.ok());
  ASSERT_EQ(rb.records.size(), 3u);
  EXPECT_EQ(rb.records[0].first, 6u);
  // The deletion is durable: a crash right now does not bring the segments back.
  ASSERT_TRUE(log->close().ok());
  fs.crash();
  auto again = *StreamLog::open("/s", o);
  EXPECT_EQ(again->first_offset(), 6u);
}

TEST_F(LogRetention, ActiveSegmentSurvivesEvenWhenEverythingIsOld) {
  LogOptions o = opts();
  o.retention.max_age_ms = 1;
  o.retention.max_bytes = 0;
  auto log = *StreamLog::open("/s", o);
  fill(*log, 5);
  clock.advance_ms(100'000);
  auto out = log->apply_retention();
  ASSERT_TRUE(out.ok());
  auto segs = log->segments();
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_TRUE(segs[0].active);
  EXPECT_EQ(log->committed_next(), 5u);
}

TEST_F(LogRetention, RunsAfterRollWhenConfigured) {
  LogOptions o = opts();
  o.retention_on_roll = true;
  o.retention.max_bytes = 1;
  auto log = *StreamLog::open("/s", o);
  fill(*log, 7);
  // Each roll deleted everything but the active segment.
  EXPECT_EQ(log->segments().size(), 1u);
  EXPECT_EQ(log->first_offset(), 6u);
}

TEST_F(LogRetention, ReaderInsideADeletedSegmentFinishesItThenFailsClearly) {
  LogOptions o = opts();
  o.retention.max_bytes = 1;
  auto log = *StreamLog::open("/s", o);
  fill(*log, 6);  // [0,2) [2,4) [4,6)
  auto r = *log->open_reader(OffsetSpec::first());
  std::vector<Record> recs;
  ASSERT_EQ(*r->next_records(&recs), 1u);  // positioned inside [0,2)
  ASSERT_TRUE(log->apply_retention().ok());
  // Its open handle keeps the deleted segment readable to its end...
  recs.clear();
  ASSERT_EQ(*r->next_records(&recs), 1u);
  EXPECT_EQ(recs[0].offset, 1u);
  // ...but the next segment is gone too: a clear out_of_range.
  auto c = r->next_chunk();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.code(), Errc::out_of_range);
  EXPECT_NE(c.error().message.find("retention"), std::string::npos);
}

}  // namespace
}  // namespace strata::log
