// RemoteConfirms (server/remote_confirms.h): the order, coalescing and
// deadlines of remote-durable confirms, driven at a virtual time.
#include "server/remote_confirms.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

std::vector<uint64_t> ids(const std::vector<RemoteConfirms::Release>& r) {
  std::vector<uint64_t> out;
  for (const auto& x : r) out.push_back(x.group);
  return out;
}

}  // namespace

TEST(ServerRemoteConfirms, AGroupIsReleasedOnlyOnceAPersistCoversIt) {
  RemoteConfirms rc(1000);
  EXPECT_EQ(rc.add(1, 10, true, 0), std::optional<uint64_t>(10));
  EXPECT_TRUE(rc.take_ready(5).empty());
  EXPECT_EQ(rc.next_deadline(), 1000);
  EXPECT_FALSE(rc.on_wait(10, Status::OK(), 6).has_value());
  auto r = rc.take_ready(6);
  ASSERT_EQ(ids(r), std::vector<uint64_t>{1});
  EXPECT_TRUE(r[0].status.ok());
  EXPECT_EQ(rc.persisted_through(), 10u);
  EXPECT_FALSE(rc.next_deadline().has_value());
}

TEST(ServerRemoteConfirms, WaitsAreCoalescedAndOnePersistReleasesEveryGroupBelowIt) {
  RemoteConfirms rc(1000, /*max_waits=*/2);
  EXPECT_EQ(rc.add(1, 10, true, 0), std::optional<uint64_t>(10));
  EXPECT_EQ(rc.add(2, 20, true, 1), std::optional<uint64_t>(20));
  EXPECT_FALSE(rc.add(3, 30, true, 2).has_value());  // two waits out: the bound
  EXPECT_FALSE(rc.add(4, 40, true, 3).has_value());
  EXPECT_EQ(rc.outstanding_waits(), 2u);
  // The wait for 20 ends first (a later persist): groups 1 and 2 go, and
  // one new wait covers both 3 and 4.
  EXPECT_EQ(rc.on_wait(20, Status::OK(), 4), std::optional<uint64_t>(40));
  EXPECT_EQ(ids(rc.take_ready(4)), (std::vector<uint64_t>{1, 2}));
  // The older wait's answer changes nothing more.
  EXPECT_FALSE(rc.on_wait(10, Status::OK(), 5).has_value());
  EXPECT_TRUE(rc.take_ready(5).empty());
  rc.on_wait(40, Status::OK(), 6);
  EXPECT_EQ(ids(rc.take_ready(6)), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(rc.pending(), 0u);
}

// A persist usually covers more than the wait that reported it: groups
// whose own wait was never started (the bound) go with it, not one persist
// later.
TEST(ServerRemoteConfirms, AWaitReleasesEverythingThePersistedEndCovers) {
  RemoteConfirms rc(1000, /*max_waits=*/1);
  EXPECT_EQ(rc.add(1, 10, true, 0), std::optional<uint64_t>(10));
  EXPECT_FALSE(rc.add(2, 20, true, 1).has_value());
  EXPECT_FALSE(rc.add(3, 30, true, 2).has_value());
  EXPECT_FALSE(rc.add(4, 40, true, 3).has_value());
  // The manifest now ends at 35: groups 1-3 are persisted.
  EXPECT_EQ(rc.on_wait(10, Status::OK(), 4, 35), std::optional<uint64_t>(40));
  EXPECT_EQ(ids(rc.take_ready(4)), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(rc.persisted_through(), 35u);
  // A group at or below it needs no wait at all.
  EXPECT_FALSE(rc.add(5, 33, true, 5).has_value());
  rc.on_wait(40, Status::OK(), 6, 40);
  EXPECT_EQ(ids(rc.take_ready(6)), (std::vector<uint64_t>{4, 5}));
}

TEST(ServerRemoteConfirms, ReleasesStayInAddOrderEvenWhenALaterGroupResolvesFirst) {
  RemoteConfirms rc(1000);
  rc.add(1, 10, true, 0);
  rc.add(2, 10, false, 0);  // nothing appended (every batch failed): no wait of its own
  rc.add(3, 20, true, 0);
  rc.on_wait(20, Status::OK(), 1);  // covers 1 as well
  EXPECT_EQ(ids(rc.take_ready(1)), (std::vector<uint64_t>{1, 2, 3}));
  RemoteConfirms rc2(1000);
  rc2.add(1, 10, true, 0);
  rc2.add(2, 10, false, 0);
  EXPECT_TRUE(rc2.take_ready(1).empty());  // 2 is ready but waits behind 1
}

TEST(ServerRemoteConfirms, AnAlreadyPersistedGroupNeedsNoWait) {
  RemoteConfirms rc(1000);
  rc.add(1, 10, true, 0);
  rc.on_wait(10, Status::OK(), 1);
  rc.take_ready(1);
  EXPECT_FALSE(rc.add(2, 10, true, 2).has_value());  // duplicates of stored messages
  EXPECT_EQ(ids(rc.take_ready(2)), std::vector<uint64_t>{2});
}

TEST(ServerRemoteConfirms, MissedDeadlinesFailInOrderWithATimeoutNamingTheOffsets) {
  RemoteConfirms rc(100);
  rc.add(1, 10, true, 0);
  rc.add(2, 20, true, 50);
  EXPECT_TRUE(rc.take_ready(99).empty());
  auto r = rc.take_ready(100);
  ASSERT_EQ(ids(r), std::vector<uint64_t>{1});
  EXPECT_EQ(r[0].status.code(), Errc::timeout);
  EXPECT_NE(r[0].status.error().message.find("below 10"), std::string::npos);
  EXPECT_NE(r[0].status.error().message.find("100 ms"), std::string::npos);
  EXPECT_EQ(rc.next_deadline(), 150);
  // Its wait ending later (the store came back) confirms nothing twice, and
  // the next group still follows the persist.
  rc.on_wait(10, Status::OK(), 120);
  EXPECT_TRUE(rc.take_ready(120).empty());
  rc.on_wait(20, Status::OK(), 130);
  auto r2 = rc.take_ready(130);
  ASSERT_EQ(ids(r2), std::vector<uint64_t>{2});
  EXPECT_TRUE(r2[0].status.ok());
}

TEST(ServerRemoteConfirms, AFailedWaitFailsWhatItCoveredAndANewWaitStarts) {
  RemoteConfirms rc(1000, 1);
  rc.add(1, 10, true, 0);
  EXPECT_FALSE(rc.add(2, 20, true, 0).has_value());
  Error stopped(Errc::closed, "uploader of stream s stopped (fenced)");
  EXPECT_EQ(rc.on_wait(10, stopped, 1), std::optional<uint64_t>(20));
  auto r = rc.take_ready(1);
  ASSERT_EQ(ids(r), std::vector<uint64_t>{1});
  EXPECT_EQ(r[0].status.code(), Errc::closed);
  EXPECT_EQ(rc.pending(), 1u);
}

TEST(ServerRemoteConfirms, FailAllAnswersEverythingWaiting) {
  RemoteConfirms rc(1000);
  rc.add(1, 10, true, 0);
  rc.add(2, 20, true, 0);
  rc.fail_all(Error(Errc::closed, "stopped"));
  auto r = rc.take_ready(0);
  ASSERT_EQ(ids(r), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(r[1].status.code(), Errc::closed);
  EXPECT_FALSE(rc.next_deadline().has_value());
}

}  // namespace strata::server
