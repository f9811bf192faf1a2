#include "tier/fragment_assembly.h"

#include <gtest/gtest.h>

#include "tier_test_util.h"

namespace strata::tier {
namespace {

using test::committed;
using test::make_chunk;

// Feeds chunks of `records` records each into `a`, laid out back to back in
// `segment` from `position`; returns the fragments cut.
struct Feeder {
  explicit Feeder(FragmentAssembly& assembly) : a(assembly) {}
  FragmentAssembly& a;
  uint64_t offset = 0;
  uint64_t segment = 0;
  uint64_t position = 8;
  int64_t ts = 1000;
  std::vector<FragmentPlan> cut;
  std::vector<Bytes> chunks;

  Bytes add(uint32_t records, size_t record_size, int64_t now = 0) {
    Bytes c = make_chunk(offset, records, record_size, ts);
    auto r = a.add(committed(c, segment, position), now);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    if (r.ok() && r->has_value()) cut.push_back(std::move(**r));
    offset += records;
    position += c.size();
    ts += 10;
    chunks.push_back(c);
    return c;
  }
  void new_segment() {
    segment = offset;
    position = 8;
  }
};

}  // namespace

TEST(TierFragmentAssembly, EmptyAssemblyCutsNothing) {
  FragmentAssembly a({1000, 0});
  EXPECT_TRUE(a.empty());
  EXPECT_FALSE(a.cut().has_value());
  EXPECT_FALSE(a.tick(1'000'000).has_value());
  EXPECT_FALSE(a.deadline().has_value());
}

TEST(TierFragmentAssembly, SingleChunkBelowTargetIsNotCut) {
  FragmentAssembly a({1 << 20, 0});
  Feeder f{a};
  Bytes c = f.add(3, 100);
  EXPECT_TRUE(f.cut.empty());
  EXPECT_EQ(a.pending_bytes(), c.size());
  EXPECT_EQ(a.pending_chunks(), 1u);
}

TEST(TierFragmentAssembly, CutsWhenSizeReachesTargetExactly) {
  Bytes probe = make_chunk(0, 1, 100, 0);
  FragmentAssembly a({probe.size() * 3, 0});
  Feeder f{a};
  f.add(1, 100);
  f.add(1, 100);
  EXPECT_TRUE(f.cut.empty());
  f.add(1, 100);
  ASSERT_EQ(f.cut.size(), 1u);
  EXPECT_EQ(f.cut[0].meta.size, probe.size() * 3);
  EXPECT_TRUE(a.empty());
}

TEST(TierFragmentAssembly, ChunkCrossingTheTargetIsIncluded) {
  FragmentAssembly a({1000, 0});
  Feeder f{a};
  f.add(2, 300);  // ~670 bytes
  EXPECT_TRUE(f.cut.empty());
  f.add(2, 300);  // crosses 1000
  ASSERT_EQ(f.cut.size(), 1u);
  EXPECT_EQ(f.cut[0].meta.chunk_count, 2u);
  EXPECT_GT(f.cut[0].meta.size, 1000u);
  // A single chunk bigger than the target is a fragment of its own.
  f.add(1, 5000);
  ASSERT_EQ(f.cut.size(), 2u);
  EXPECT_EQ(f.cut[1].meta.chunk_count, 1u);
}

TEST(TierFragmentAssembly, TracksFirstAndLastTimestamps) {
  FragmentAssembly a({1 << 20, 0});
  Feeder f{a};
  f.ts = 5000;
  f.add(1, 10);
  f.ts = 4000;  // a clock step back: last_ts is the largest seen
  f.add(1, 10);
  f.ts = 7000;
  f.add(1, 10);
  auto p = a.cut();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->meta.first_ts, 5000);
  EXPECT_EQ(p->meta.last_ts, 7000);
}

TEST(TierFragmentAssembly, ChunksOfOneSegmentMergeIntoOneSpan) {
  FragmentAssembly a({1 << 20, 0});
  Feeder f{a};
  f.segment = 100;
  Bytes c1 = f.add(1, 10), c2 = f.add(2, 10), c3 = f.add(3, 10);
  auto p = a.cut();
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->spans.size(), 1u);
  EXPECT_EQ(p->spans[0], (SegmentSpan{100, 8, 8 + c1.size() + c2.size() + c3.size()}));
}

TEST(TierFragmentAssembly, FragmentSpansAcrossSegments) {
  FragmentAssembly a({1 << 20, 0});
  Feeder f{a};
  Bytes c1 = f.add(2, 10);
  f.new_segment();
  Bytes c2 = f.add(2, 10);
  Bytes c3 = f.add(2, 10);
  f.new_segment();
  Bytes c4 = f.add(1, 10);
  auto p = a.cut();
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->spans.size(), 3u);
  EXPECT_EQ(p->spans[0], (SegmentSpan{0, 8, 8 + c1.size()}));
  EXPECT_EQ(p->spans[1], (SegmentSpan{2, 8, 8 + c2.size() + c3.size()}));
  EXPECT_EQ(p->spans[2], (SegmentSpan{6, 8, 8 + c4.size()}));
  uint64_t total = 0;
  for (auto& s : p->spans) total += s.size();
  EXPECT_EQ(total, p->meta.size);
}

TEST(TierFragmentAssembly, MetadataDescribesTheChunks) {
  FragmentAssembly a({1 << 20, 0}, 50);
  Feeder f{a};
  f.offset = 50;
  f.ts = 123;
  Bytes c1 = f.add(4, 20);
  Bytes c2 = f.add(6, 20);
  auto p = a.cut();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->meta.first_offset, 50u);
  EXPECT_EQ(p->meta.next_offset, 60u);
  EXPECT_EQ(p->meta.chunk_count, 2u);
  EXPECT_EQ(p->meta.size, c1.size() + c2.size());
  EXPECT_EQ(p->meta.first_ts, 123);
  EXPECT_EQ(p->meta.last_ts, 133);
  EXPECT_EQ(a.next_offset(), 60u);
}

TEST(TierFragmentAssembly, IndexRecordsAreRelativeToTheFragmentData) {
  FragmentAssembly a({1 << 20, 0});
  Feeder f{a};
  f.position = 4096;  // absolute file position must not leak into the index
  Bytes c1 = f.add(1, 10), c2 = f.add(2, 10), c3 = f.add(1, 10);
  auto p = a.cut();
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->index.size(), 3u);
  EXPECT_EQ(p->index[0], (ChunkIndexRecord{0, 1000, 0}));
  EXPECT_EQ(p->index[1], (ChunkIndexRecord{1, 1010, c1.size()}));
  EXPECT_EQ(p->index[2], (ChunkIndexRecord{3, 1020, c1.size() + c2.size()}));
}

TEST(TierFragmentAssembly, IndexRecordsRunOnAcrossSegments) {
  FragmentAssembly a({1 << 20, 0});
  Feeder f{a};
  Bytes c1 = f.add(1, 10);
  f.new_segment();
  Bytes c2 = f.add(1, 10);
  auto p = a.cut();
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->index.size(), 2u);
  EXPECT_EQ(p->index[1].position, c1.size());
  EXPECT_EQ(p->spans.size(), 2u);
}

TEST(TierFragmentAssembly, SlowStreamIsCutByAgeOnTick) {
  FragmentAssembly a({64ull << 20, 10'000});
  Feeder f{a};
  f.add(1, 10, /*now=*/5'000);
  EXPECT_EQ(a.deadline(), 15'000);
  EXPECT_FALSE(a.tick(14'999).has_value());
  auto p = a.tick(15'000);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->meta.chunk_count, 1u);
  EXPECT_TRUE(a.empty());
  EXPECT_FALSE(a.deadline().has_value());
}

TEST(TierFragmentAssembly, AgeCountsFromTheFirstChunkAndAddCanCut) {
  FragmentAssembly a({64ull << 20, 10'000});
  Feeder f{a};
  f.add(1, 10, 0);
  f.add(1, 10, 6'000);
  EXPECT_TRUE(f.cut.empty());
  EXPECT_EQ(a.deadline(), 10'000);  // not pushed back by the second chunk
  f.add(1, 10, 10'001);             // arrives after the deadline: included, then cut
  ASSERT_EQ(f.cut.size(), 1u);
  EXPECT_EQ(f.cut[0].meta.chunk_count, 3u);
}

TEST(TierFragmentAssembly, AgeIsMeasuredFromArrivalNotChunkTimestamp) {
  // A backlog of day-old chunks read quickly still makes one fragment.
  FragmentAssembly a({64ull << 20, 10'000});
  Feeder f{a};
  f.ts = 1;  // ancient writer timestamps
  for (int i = 0; i < 100; ++i) f.add(1, 10, 86'400'000 + i);
  EXPECT_TRUE(f.cut.empty());
  EXPECT_EQ(a.pending_chunks(), 100u);
}

TEST(TierFragmentAssembly, MaxAgeZeroDisablesTheTimeBound) {
  FragmentAssembly a({64ull << 20, 0});
  Feeder f{a};
  f.add(1, 10, 0);
  EXPECT_FALSE(a.tick(1'000'000'000).has_value());
  EXPECT_FALSE(a.deadline().has_value());
}

TEST(TierFragmentAssembly, HurriedAssemblyCutsAfterTheShortBound) {
  // A remote confirm waits: the pending fragment goes after 100 ms, not 10 s.
  FragmentAssembly a({64ull << 20, 10'000, 100});
  Feeder f{a};
  f.add(1, 10, 5'000);
  EXPECT_EQ(a.deadline(), 15'000);
  a.set_hurry(true);
  EXPECT_EQ(a.deadline(), 5'100);  // counted from the first chunk, not from set_hurry
  f.add(1, 10, 5'050);
  EXPECT_TRUE(f.cut.empty());
  EXPECT_FALSE(a.tick(5'099).has_value());
  auto p = a.tick(5'100);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->meta.chunk_count, 2u);
  // Still hurried: the next fragment gets the short bound too, and a chunk
  // arriving after it is included and cut by add().
  f.add(1, 10, 6'000);
  EXPECT_EQ(a.deadline(), 6'100);
  f.add(1, 10, 6'100);
  ASSERT_EQ(f.cut.size(), 1u);
  EXPECT_EQ(f.cut[0].meta.chunk_count, 2u);
}

TEST(TierFragmentAssembly, WithoutHurryNothingChanges) {
  FragmentAssembly a({64ull << 20, 10'000, 100});
  Feeder f{a};
  f.add(1, 10, 0);
  a.set_hurry(true);
  a.set_hurry(false);  // the waiters went away
  EXPECT_EQ(a.deadline(), 10'000);
  EXPECT_FALSE(a.tick(9'999).has_value());
  f.add(1, 10, 500);
  EXPECT_TRUE(f.cut.empty());
}

TEST(TierFragmentAssembly, HurryNeverExtendsTheAgeBoundAndWorksWithoutOne) {
  FragmentAssembly a({64ull << 20, 50, 100});
  Feeder f{a};
  f.add(1, 10, 0);
  a.set_hurry(true);
  EXPECT_EQ(a.deadline(), 50);                // the age bound is sooner
  FragmentAssembly b({64ull << 20, 0, 100});  // no age bound at all
  Feeder g{b};
  g.add(1, 10, 0);
  EXPECT_FALSE(b.deadline().has_value());
  b.set_hurry(true);
  EXPECT_EQ(b.deadline(), 100);
  FragmentAssembly c({64ull << 20, 10'000, 0});  // hurry bound 0: cut at once
  Feeder h{c};
  c.set_hurry(true);
  h.add(1, 10, 7);
  EXPECT_EQ(h.cut.size(), 1u);
}

TEST(TierFragmentAssembly, ForcedCutTakesWhateverIsPending) {
  FragmentAssembly a({64ull << 20, 10'000});
  Feeder f{a};
  f.add(2, 10);
  auto p = a.cut();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->meta.next_offset, 2u);
  EXPECT_FALSE(a.cut().has_value());
}

TEST(TierFragmentAssembly, GapOverlapAndWrongSizeAreRejectedWithoutChange) {
  FragmentAssembly a({64ull << 20, 0}, 10);
  Bytes wrong_start = make_chunk(11, 1, 10, 0);
  auto r = a.add(committed(wrong_start, 0, 8), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("must start at 10"), std::string::npos);
  Bytes ok = make_chunk(10, 2, 10, 0);
  ASSERT_TRUE(a.add(committed(ok, 0, 8), 0).ok());
  Bytes overlap = make_chunk(11, 1, 10, 0);
  EXPECT_FALSE(a.add(committed(overlap, 0, 100), 0).ok());
  Bytes next = make_chunk(12, 1, 10, 0);
  log::CommittedChunk bad = committed(next, 0, 100);
  bad.size += 1;
  auto r2 = a.add(bad, 0);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message.find("bytes on disk"), std::string::npos);
  EXPECT_EQ(a.pending_chunks(), 1u);
  EXPECT_EQ(a.next_offset(), 12u);
}

}  // namespace strata::tier
