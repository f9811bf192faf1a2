// ReplicaCore (src/server/replica_core.h): where a replica subscription
// reads from, what it forwards from the owner after a lost link, and which
// chunks reach the consumer.
#include "server/replica_core.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

using proto::OffsetSpec;
using proto::OffsetType;
using Kind = ReplicaStep::Kind;
using Accept = ReplicaCore::Accept;
using namespace std::chrono_literals;

constexpr auto kLimit = 10s;
const ReplicaCore::Time t0{};

OffsetSpec spec(OffsetType t, int64_t v = 0) {
  return OffsetSpec{t, v};
}

TEST(ReplicaCoreTest, FirstReadsTheRemoteTierFromItsFirstOffset) {
  ReplicaCore c(spec(OffsetType::first), kLimit);
  ReplicaStep s = c.start(RemoteRange{100, 500});
  ASSERT_EQ(s.kind, Kind::read_remote);
  EXPECT_EQ(s.remote.kind, tier::RemoteStart::Kind::offset);
  EXPECT_EQ(s.remote.offset, 100u);
  EXPECT_EQ(c.phase(), ReplicaCore::Phase::remote);
}

// Lag: what is known committed beyond the next offset — the manifest's end
// while reading the remote tier, then the owner's chunks as they come.
TEST(ReplicaCoreTest, LagIsWhatIsKnownCommittedBeyondTheNextOffset) {
  ReplicaCore c(spec(OffsetType::first), kLimit);
  EXPECT_EQ(c.lag(), std::nullopt);
  (void)c.start(RemoteRange{100, 500});
  EXPECT_EQ(c.lag(), std::nullopt);  // nothing delivered yet
  ASSERT_EQ(c.accept(100, 150), Accept::deliver);
  EXPECT_EQ(c.lag(), 350u);
  ASSERT_EQ(c.accept(150, 500), Accept::deliver);
  EXPECT_EQ(c.lag(), 0u);
  // The owner names a newer committed chunk: at least one message in it.
  c.known_up_to(801);
  EXPECT_EQ(c.lag(), 301u);
  // A repeat or an older manifest changes nothing.
  EXPECT_EQ(c.accept(100, 150), Accept::repeat);
  (void)c.remote_done(500, RemoteRange{100, 600});
  EXPECT_EQ(c.lag(), 301u);
  ASSERT_EQ(c.accept(500, 900), Accept::deliver);
  EXPECT_EQ(c.lag(), 0u);
}

TEST(ReplicaCoreTest, WithoutRemoteDataEverySpecGoesToTheOwnerAsAsked) {
  for (auto t : {OffsetType::first, OffsetType::last, OffsetType::next, OffsetType::offset,
                 OffsetType::timestamp}) {
    ReplicaCore c(spec(t, 7), kLimit);
    ReplicaStep s = c.start(std::nullopt);
    ASSERT_EQ(s.kind, Kind::forward);
    EXPECT_EQ(s.spec, spec(t, 7));
    ReplicaCore e(spec(t, 7), kLimit);
    EXPECT_EQ(e.start(RemoteRange{5, 5}).kind, Kind::forward) << "an empty manifest";
  }
}

TEST(ReplicaCoreTest, LastAndNextAreTheOwners) {
  for (auto t : {OffsetType::last, OffsetType::next}) {
    ReplicaCore c(spec(t), kLimit);
    ReplicaStep s = c.start(RemoteRange{0, 1000});
    ASSERT_EQ(s.kind, Kind::forward);
    EXPECT_EQ(s.spec.type, t);
  }
}

TEST(ReplicaCoreTest, OffsetResolvesAgainstTheRemoteRange) {
  ReplicaCore below(spec(OffsetType::offset, 3), kLimit);
  ReplicaStep s = below.start(RemoteRange{100, 500});
  ASSERT_EQ(s.kind, Kind::read_remote);
  EXPECT_EQ(s.remote.offset, 100u) << "below the oldest: the oldest available";

  ReplicaCore inside(spec(OffsetType::offset, 250), kLimit);
  s = inside.start(RemoteRange{100, 500});
  ASSERT_EQ(s.kind, Kind::read_remote);
  EXPECT_EQ(s.remote.offset, 250u);

  ReplicaCore above(spec(OffsetType::offset, 500), kLimit);
  s = above.start(RemoteRange{100, 500});
  ASSERT_EQ(s.kind, Kind::forward);
  EXPECT_EQ(s.spec, spec(OffsetType::offset, 500));
}

TEST(ReplicaCoreTest, TimestampSearchesTheRemoteTierThenAsksTheOwner) {
  ReplicaCore c(spec(OffsetType::timestamp, 1234), kLimit);
  ReplicaStep s = c.start(RemoteRange{0, 10});
  ASSERT_EQ(s.kind, Kind::read_remote);
  EXPECT_EQ(s.remote.kind, tier::RemoteStart::Kind::timestamp);
  EXPECT_EQ(s.remote.timestamp, 1234);
  // No remote chunk was that new: the owner resolves the timestamp.
  s = c.remote_done(10, RemoteRange{0, 10});
  ASSERT_EQ(s.kind, Kind::forward);
  EXPECT_EQ(s.spec, spec(OffsetType::timestamp, 1234));

  ReplicaCore d(spec(OffsetType::timestamp, 1234), kLimit);
  d.start(RemoteRange{0, 10});
  EXPECT_EQ(d.accept(4, 10), Accept::deliver);
  s = d.remote_done(10, RemoteRange{0, 10});
  ASSERT_EQ(s.kind, Kind::forward);
  EXPECT_EQ(s.spec, spec(OffsetType::offset, 10)) << "once delivered: from the next offset";
}

TEST(ReplicaCoreTest, RemoteReadingGoesOnWhileTheManifestGrows) {
  ReplicaCore c(spec(OffsetType::first), kLimit);
  c.start(RemoteRange{0, 100});
  EXPECT_EQ(c.accept(0, 100), Accept::deliver);
  ReplicaStep s = c.remote_done(100, RemoteRange{0, 180});
  ASSERT_EQ(s.kind, Kind::read_remote);
  EXPECT_EQ(s.remote.offset, 100u);
  EXPECT_EQ(c.accept(100, 180), Accept::deliver);
  s = c.remote_done(180, RemoteRange{0, 180});
  ASSERT_EQ(s.kind, Kind::forward);
  EXPECT_EQ(s.spec, spec(OffsetType::offset, 180));
  EXPECT_EQ(c.phase(), ReplicaCore::Phase::forwarding);
}

TEST(ReplicaCoreTest, RepeatsAreDroppedGapsCountedAndDivergenceEnds) {
  ReplicaCore c(spec(OffsetType::first), kLimit);
  c.start(std::nullopt);
  EXPECT_EQ(c.accept(0, 10), Accept::deliver);
  EXPECT_EQ(c.accept(10, 20), Accept::deliver);
  EXPECT_EQ(c.accept(10, 20), Accept::repeat);
  EXPECT_EQ(c.accept(0, 5), Accept::repeat);
  EXPECT_EQ(c.dropped_repeats(), 2u);
  EXPECT_EQ(c.delivered_next(), 20u);
  EXPECT_EQ(c.accept(15, 30), Accept::diverged)
      << "partly new: the chunks no longer line up with those delivered";
  EXPECT_EQ(c.divergences(), 1u);
  EXPECT_EQ(c.delivered_next(), 20u) << "a diverged chunk is not delivered";
  EXPECT_EQ(c.accept(40, 50), Accept::deliver);
  EXPECT_EQ(c.gaps(), 1u);
  EXPECT_EQ(c.delivered_next(), 50u);
}

TEST(ReplicaCoreTest, ALostLinkResumesAfterTheLastDeliveredChunk) {
  ReplicaCore c(spec(OffsetType::next), kLimit);
  c.start(RemoteRange{0, 100});
  c.linked();
  ReplicaStep s = c.link_lost(t0);
  ASSERT_EQ(s.kind, Kind::forward);
  EXPECT_EQ(s.spec, spec(OffsetType::next)) << "nothing delivered: the spec asked before";
  EXPECT_EQ(c.phase(), ReplicaCore::Phase::reconnecting);
  c.linked();
  EXPECT_EQ(c.accept(120, 130), Accept::deliver);
  s = c.link_lost(t0 + 1s);
  ASSERT_EQ(s.kind, Kind::forward);
  EXPECT_EQ(s.spec, spec(OffsetType::offset, 130));
}

TEST(ReplicaCoreTest, ReconnectingGivesUpAtTheLimitCountedFromTheFirstLoss) {
  ReplicaCore c(spec(OffsetType::first), kLimit);
  c.start(std::nullopt);
  EXPECT_EQ(c.link_lost(t0).kind, Kind::forward);
  EXPECT_EQ(c.link_lost(t0 + 5s).kind, Kind::forward);
  EXPECT_EQ(c.link_lost(t0 + 9s).kind, Kind::forward);
  EXPECT_EQ(c.link_lost(t0 + 10s).kind, Kind::give_up);
  EXPECT_EQ(c.phase(), ReplicaCore::Phase::given_up);
  EXPECT_EQ(c.link_lost(t0 + 1s).kind, Kind::give_up) << "given up stays given up";

  // A link that came up resets the clock.
  ReplicaCore d(spec(OffsetType::first), kLimit);
  d.start(std::nullopt);
  d.link_lost(t0);
  d.linked();
  EXPECT_EQ(d.link_lost(t0 + 15s).kind, Kind::forward);
  EXPECT_EQ(d.link_lost(t0 + 24s).kind, Kind::forward);
  EXPECT_EQ(d.link_lost(t0 + 25s).kind, Kind::give_up);
}

}  // namespace
}  // namespace strata::server
