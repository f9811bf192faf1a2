// Offset resolution as a pure function over a segment snapshot: every rule
// of offset_resolution.h, without a log or a file.
#include "log/offset_resolution.h"

#include <gtest/gtest.h>

namespace strata::log {
namespace {

using Kind = ResolutionPlan::Kind;
using Lookup = ResolutionPlan::Lookup;

SegmentBounds seg(uint64_t first, uint64_t next, uint64_t chunks, int64_t first_ts,
                  int64_t last_ts) {
  return {first, next, chunks, kFileHeaderSize + chunks * 100, first_ts, last_ts};
}

// [10,20) 2 chunks ts 100..200, [20,30) 2 chunks ts 300..400, [30,30) empty
// (rolled, nothing written yet): committed next 30.
const std::vector<SegmentBounds> kLog = {seg(10, 20, 2, 100, 200), seg(20, 30, 2, 300, 400),
                                         seg(30, 30, 0, -1, -1)};

void expect_at_end(const ResolutionPlan& p, uint64_t committed) {
  ASSERT_EQ(p.kind, Kind::done);
  EXPECT_EQ(p.resolution.segment_first_offset, 30u);
  EXPECT_EQ(p.resolution.position, kFileHeaderSize);
  EXPECT_EQ(p.resolution.chunk_first_offset, committed);
  EXPECT_EQ(p.resolution.start_offset, committed);
}

// Below the local log: its oldest chunk (the remote tier is not the log's
// business, tier/stream_reader.h).
void expect_oldest(const ResolutionPlan& p, uint64_t start) {
  ASSERT_EQ(p.kind, Kind::done);
  EXPECT_EQ(p.resolution.segment_first_offset, 10u);
  EXPECT_EQ(p.resolution.position, kFileHeaderSize);
  EXPECT_EQ(p.resolution.chunk_first_offset, 10u);
  EXPECT_EQ(p.resolution.start_offset, start);
}

void expect_lookup(const ResolutionPlan& p, size_t segment, Lookup how) {
  ASSERT_EQ(p.kind, Kind::lookup);
  EXPECT_EQ(p.segment, segment);
  EXPECT_EQ(p.lookup, how);
  EXPECT_EQ(p.chunks, kLog[segment].chunks);
}

TEST(OffsetResolution, NextIsTheCommittedEnd) {
  expect_at_end(plan_resolution(kLog, 30, OffsetSpec::next()), 30);
}

TEST(OffsetResolution, FirstIsTheOldestChunk) {
  expect_oldest(plan_resolution(kLog, 30, OffsetSpec::first()), 10);
}

TEST(OffsetResolution, LastIsTheLastChunkOfTheNewestNonEmptySegment) {
  expect_lookup(plan_resolution(kLog, 30, OffsetSpec::last()), 1, Lookup::last);
  std::vector<SegmentBounds> empty = {seg(0, 0, 0, -1, -1)};
  auto p = plan_resolution(empty, 0, OffsetSpec::last());
  ASSERT_EQ(p.kind, Kind::done);
  EXPECT_EQ(p.resolution.start_offset, 0u);
}

TEST(OffsetResolution, OffsetsAtTheEndBelowAndInside) {
  expect_at_end(plan_resolution(kLog, 30, OffsetSpec::at_offset(30)), 30);
  expect_at_end(plan_resolution(kLog, 30, OffsetSpec::at_offset(UINT64_MAX)), 30);
  expect_oldest(plan_resolution(kLog, 30, OffsetSpec::at_offset(3)), 10);
  expect_lookup(plan_resolution(kLog, 30, OffsetSpec::at_offset(10)), 0, Lookup::offset);
  expect_lookup(plan_resolution(kLog, 30, OffsetSpec::at_offset(19)), 0, Lookup::offset);
  expect_lookup(plan_resolution(kLog, 30, OffsetSpec::at_offset(20)), 1, Lookup::offset);
  expect_lookup(plan_resolution(kLog, 30, OffsetSpec::at_offset(29)), 1, Lookup::offset);
}

TEST(OffsetResolution, Timestamps) {
  expect_oldest(plan_resolution(kLog, 30, OffsetSpec::at_timestamp(99)), 10);
  expect_lookup(plan_resolution(kLog, 30, OffsetSpec::at_timestamp(100)), 0, Lookup::timestamp);
  expect_lookup(plan_resolution(kLog, 30, OffsetSpec::at_timestamp(200)), 0, Lookup::timestamp);
  expect_lookup(plan_resolution(kLog, 30, OffsetSpec::at_timestamp(201)), 1, Lookup::timestamp);
  expect_at_end(plan_resolution(kLog, 30, OffsetSpec::at_timestamp(401)), 30);
  // An empty log: the end, whatever the timestamp.
  std::vector<SegmentBounds> empty = {seg(7, 7, 0, -1, -1)};
  auto p = plan_resolution(empty, 7, OffsetSpec::at_timestamp(-5));
  ASSERT_EQ(p.kind, Kind::done);
  EXPECT_EQ(p.resolution.start_offset, 7u);
}

TEST(OffsetResolution, LocalRangeTakesTheOldestChunksTimestamp) {
  LocalRange r = local_range_of(kLog, 30);
  EXPECT_EQ(r.first_offset, 10u);
  EXPECT_EQ(r.first_timestamp_ms, 100);
  EXPECT_EQ(r.next_offset, 30u);
  std::vector<SegmentBounds> empty = {seg(7, 7, 0, -1, -1)};
  EXPECT_EQ(local_range_of(empty, 7).first_timestamp_ms, -1);
}

IndexRecord record(uint64_t first, uint32_t n, uint64_t pos) {
  IndexRecord r;
  r.first_offset = first;
  r.num_records = n;
  r.position = pos;
  r.chunk_size = 100;
  return r;
}

TEST(OffsetResolution, TheFoundRecordBecomesTheStart) {
  auto by_offset = plan_resolution(kLog, 30, OffsetSpec::at_offset(23));
  auto r = resolve_at_record(by_offset, kLog[1], OffsetSpec::at_offset(23), record(22, 3, 124),
                             "/s/20.index");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->segment_first_offset, 20u);
  EXPECT_EQ(r->position, 124u);
  EXPECT_EQ(r->chunk_first_offset, 22u);
  EXPECT_EQ(r->start_offset, 23u);  // records 22 skipped

  auto last = plan_resolution(kLog, 30, OffsetSpec::last());
  r = resolve_at_record(last, kLog[1], OffsetSpec::last(), record(25, 5, 124), "/s/20.index");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->start_offset, 25u);  // the whole chunk
}

TEST(OffsetResolution, ARecordThatDoesNotAnswerIsCorruptNamingTheIndex) {
  auto by_offset = plan_resolution(kLog, 30, OffsetSpec::at_offset(23));
  auto r = resolve_at_record(by_offset, kLog[1], OffsetSpec::at_offset(23), record(20, 2, 24),
                             "/s/20.index");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::corrupt);
  EXPECT_NE(r.error().message.find("/s/20.index: index lookup for offset 23 found chunk 20..22"),
            std::string::npos);
  auto by_ts = plan_resolution(kLog, 30, OffsetSpec::at_timestamp(350));
  r = resolve_at_record(by_ts, kLog[1], OffsetSpec::at_timestamp(350), std::nullopt, "/s/20.index");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no index record with timestamp >= 350"), std::string::npos);
}

}  // namespace
}  // namespace strata::log
