// The extension points the remote tier uses, exercised with fake hooks.
#include "log/hooks.h"

#include <gtest/gtest.h>

#include "common/fault_fs.h"
#include "log/log_test_util.h"

namespace strata::log {
namespace {

struct FakeTier : LogHooks {
  std::vector<SegmentInfo> asked;
  std::optional<uint64_t> keep_from;  // veto deleting segments at/after this first offset

  bool may_delete_segment(const SegmentInfo& s) override {
    asked.push_back(s);
    return !keep_from || s.first_offset < *keep_from;
  }
};

struct LogHookPoints : ::testing::Test {
  FaultFileSystem fs;
  std::shared_ptr<FakeTier> tier = std::make_shared<FakeTier>();
  LogOptions opts() {
    LogOptions o;
    o.fs = &fs;
    o.create_if_missing = true;
    o.hooks = tier;
    o.max_segment_chunks = 3;
    o.retention_on_roll = false;
    return o;
  }
};

// Each commit is told once, in offset order, to every listener for as long
// as it is subscribed, locating the chunk where the reader finds it (an
// uploader maps those bytes later: chunk_walk_test.cpp).
TEST_F(LogHookPoints, CommitNotificationsLocateEveryChunkInOffsetOrder) {
  auto log = *StreamLog::open("/s", opts());
  std::vector<CommittedChunk> committed, via_listener, early;
  log->subscribe([&](const CommittedChunk& c) { committed.push_back(c); });
  log->subscribe([&](const CommittedChunk& c) { via_listener.push_back(c); });
  const uint64_t gone = log->subscribe([&](const CommittedChunk& c) { early.push_back(c); });
  for (int i = 0; i < 8; ++i) {
    std::vector<std::string> recs = {test::payload_for(log->committed_next()),
                                     test::payload_for(log->committed_next() + 1)};
    ASSERT_TRUE(log->append(test::views(recs)).ok());
    if (i == 1) log->unsubscribe(gone);
  }
  ASSERT_EQ(committed.size(), 8u);
  ASSERT_EQ(via_listener.size(), 8u);
  EXPECT_EQ(early.size(), 2u) << "an unsubscribed listener hears of no later commit";
  auto reader = *log->open_reader(OffsetSpec::first());
  uint64_t expect_offset = 0;
  for (size_t i = 0; i < committed.size(); ++i) {
    const CommittedChunk& c = committed[i];
    EXPECT_EQ(c.header.first_offset, expect_offset) << "notifications are in offset order";
    expect_offset = c.header.next_offset();
    EXPECT_EQ(c.size, c.header.total_size());
    EXPECT_EQ(via_listener[i].position, c.position);
    EXPECT_EQ(via_listener[i].segment_first_offset, c.segment_first_offset);
    auto view = reader->next_chunk();
    ASSERT_TRUE(view.ok() && *view);
    EXPECT_EQ((*view)->header, c.header);
    EXPECT_EQ((*view)->bytes.size(), c.size);
    EXPECT_EQ((*view)->position, c.position);
    EXPECT_EQ((*view)->segment_first_offset, c.segment_first_offset);
  }
  // max_segment_chunks 3: the notifications name the segments the chunks
  // were written to.
  EXPECT_EQ(committed[2].segment_first_offset, 0u);
  EXPECT_EQ(committed[3].segment_first_offset, committed[3].header.first_offset);
}

TEST_F(LogHookPoints, RetentionVetoKeepsSegmentAndEverythingNewer) {
  LogOptions o = opts();
  o.retention.max_bytes = 1;
  auto log = *StreamLog::open("/s", o);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(log->append({"v"}).ok());  // [0,3) [3,6) [6,9) [9,10)
  tier->keep_from = 3;  // not yet persisted remotely from offset 3 on
  auto out = log->apply_retention();
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->vetoed);
  ASSERT_EQ(out->deleted.size(), 1u);
  EXPECT_EQ(out->deleted[0].first_offset, 0u);
  EXPECT_EQ(log->first_offset(), 3u);
  ASSERT_EQ(tier->asked.size(), 2u);  // asked for [0,3) (yes) and [3,6) (no); stopped there
  EXPECT_EQ(tier->asked[1].first_offset, 3u);
  tier->keep_from.reset();
  out = log->apply_retention();
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->vetoed);
  EXPECT_EQ(log->first_offset(), 9u);
}

// Below the local log the log knows nothing older than its oldest chunk
// (the reader across tiers decides what lies below, tier/stream_reader.h):
// `first`, offsets and timestamps below it start at the oldest chunk.
TEST_F(LogHookPoints, SpecsBelowTheLocalLogStartAtItsOldestChunk) {
  LogOptions o = opts();
  o.retention.max_bytes = 1;
  auto log = *StreamLog::open("/s", o);
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(log->append({"v"}).ok());
  ASSERT_TRUE(log->apply_retention().ok());
  ASSERT_EQ(log->first_offset(), 6u);
  for (const OffsetSpec& spec :
       {OffsetSpec::at_offset(2), OffsetSpec::first(), OffsetSpec::at_timestamp(0)}) {
    SCOPED_TRACE(to_string(spec));
    auto r = log->resolve(spec);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->segment_first_offset, 6u);
    EXPECT_EQ(r->chunk_first_offset, 6u);
    EXPECT_EQ(r->start_offset, 6u);
    auto reader = log->open_reader(spec);
    ASSERT_TRUE(reader.ok()) << reader.error().to_string();
    EXPECT_EQ((*reader)->next_offset(), 6u);
    auto c = (*reader)->next_chunk();
    ASSERT_TRUE(c.ok() && *c);
    EXPECT_EQ((*c)->header.first_offset, 6u);
  }
}

}  // namespace
}  // namespace strata::log
