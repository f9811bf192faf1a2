// ReplicaAcks (server/replica_acks.h): where a replicated confirm stands —
// the needed-th furthest copy, capped by the owner's own log, never below
// what is persisted — and the waits it answers as acks arrive. Over a real
// log (not tiered: nothing is persisted, so the copies alone count).
#include "server/replica_acks.h"

#include <gtest/gtest.h>

#include <vector>

#include "log/stream_log.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

class ReplicaAcksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions lo;
    lo.create_if_missing = true;
    lo.fsync = log::FsyncPolicy::never;
    auto l = log::StreamLog::open(dir_.sub("s"), lo);
    ASSERT_TRUE(l.ok()) << l.error().message;
    log_ = *l;
    stream_ = std::make_shared<node::StreamHandle>("s", node::EffectiveSettings{}, log_, nullptr,
                                                   tier::TierContext{});
  }
  // Appends `n` one-record chunks: the log then ends at committed_next().
  void append(int n) {
    for (int i = 0; i < n; ++i) {
      Bytes v = "m" + std::to_string(i);
      std::vector<BytesView> views{v};
      ASSERT_TRUE(log_->append(views).ok());
    }
  }
  test::TempDir dir_;
  std::shared_ptr<log::StreamLog> log_;
  std::shared_ptr<node::StreamHandle> stream_;
};

TEST(CopiesNeeded, AMajorityOfTheStreamsNodesLessTheOwner) {
  EXPECT_EQ(copies_needed(0, 1), 0u);
  EXPECT_EQ(copies_needed(0, 2), 1u);
  EXPECT_EQ(copies_needed(0, 3), 1u);
  EXPECT_EQ(copies_needed(0, 4), 2u);
  EXPECT_EQ(copies_needed(0, 5), 2u);
  // initial-cluster-size wins over the nodes registered.
  EXPECT_EQ(copies_needed(5, 3), 2u);
  EXPECT_EQ(copies_needed(1, 3), 0u);
}

TEST_F(ReplicaAcksTest, NothingCountsBeforeTheOwnerKnowsWhomToCount) {
  append(10);
  ReplicaAcks acks(stream_);
  acks.ack("b", 10);
  EXPECT_EQ(acks.end(), 0u);
  acks.set_copies({"b", "c"}, 1);
  EXPECT_EQ(acks.end(), 10u);
}

TEST_F(ReplicaAcksTest, TheNeededThFurthestCopyCappedByTheOwnersLog) {
  append(10);
  ReplicaAcks acks(stream_);
  acks.set_copies({"b", "c", "d", "e"}, 2);
  EXPECT_EQ(acks.end(), 0u);
  acks.ack("b", 8);
  EXPECT_EQ(acks.end(), 0u) << "one copy of the two needed";
  acks.ack("c", 3);
  EXPECT_EQ(acks.end(), 3u);
  acks.ack("d", 6);
  EXPECT_EQ(acks.end(), 6u);
  // An older ack never moves it back.
  acks.ack("d", 2);
  EXPECT_EQ(acks.end(), 6u);
  // A copy past the owner's own log (it held more before a restart) counts
  // only to where the log ends.
  acks.ack("e", 40);
  acks.ack("c", 40);
  EXPECT_EQ(acks.end(), 10u);
  append(5);
  EXPECT_EQ(acks.end(), 15u);
  // A node leaves: the acks of the others still count.
  acks.set_copies({"b", "d"}, 1);
  EXPECT_EQ(acks.end(), 8u);
  // None needed (a one-node stream): the owner's log alone.
  acks.set_copies({}, 0);
  EXPECT_EQ(acks.end(), 15u);
  // More needed than registered: nothing more is confirmed.
  acks.set_copies({"b"}, 2);
  EXPECT_EQ(acks.end(), 0u);
}

TEST_F(ReplicaAcksTest, WaitsAreAnsweredInOrderAsCopiesCatchUpAndFailWhenTheStreamGoes) {
  append(10);
  ReplicaAcks acks(stream_);
  acks.set_copies({"b", "c"}, 1);
  std::vector<uint64_t> answered;
  std::vector<std::string> failed;
  for (uint64_t o : {2u, 5u, 8u}) {
    acks.await_beyond(o, [&, o](Status s) {
      if (s.ok()) {
        answered.push_back(o);
      } else {
        failed.push_back(s.error().message);
      }
    });
  }
  EXPECT_TRUE(answered.empty());
  acks.ack("c", 6);
  EXPECT_EQ(answered, (std::vector<uint64_t>{2, 5}));
  acks.fail_all(Error(Errc::unavailable, "the stream is no longer served here"));
  EXPECT_EQ(answered.size(), 2u);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].find("no longer served"), std::string::npos);
  // Once failed, a new wait fails at once.
  bool later_failed = false;
  acks.await_beyond(1, [&](Status s) { later_failed = !s.ok(); });
  EXPECT_TRUE(later_failed);
}

}  // namespace
}  // namespace strata::server
