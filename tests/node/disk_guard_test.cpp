// DiskGuard, the pure core of the disk alarm and of the restarts of
// fail-stopped writers: samples and outcomes in, effects out.
#include "node/disk_guard.h"

#include <gtest/gtest.h>

namespace strata::node {
namespace {

DiskSample sample(int64_t now, std::optional<uint64_t> free,
                  std::vector<std::string> stopped = {}) {
  return DiskSample{now, free, std::move(stopped)};
}

TEST(DiskGuard, TheAlarmFollowsTheFreeSpaceAcrossTheLimit) {
  DiskGuard g(DiskGuardOptions{1000, 100, 1000});
  EXPECT_EQ(g.on(sample(0, 5000)).alarm, AlarmChange::none);
  EXPECT_EQ(g.on(sample(1, 999)).alarm, AlarmChange::raised);
  EXPECT_TRUE(g.alarm());
  EXPECT_EQ(g.on(sample(2, 10)).alarm, AlarmChange::none) << "raised once, not every sample";
  // Unknown free space (statvfs failed, the sample hung): the state stays.
  EXPECT_EQ(g.on(sample(3, std::nullopt)).alarm, AlarmChange::none);
  EXPECT_TRUE(g.alarm());
  EXPECT_EQ(g.on(sample(4, 1000)).alarm, AlarmChange::cleared) << "at the limit is enough";
  EXPECT_FALSE(g.alarm());
  EXPECT_EQ(g.on(sample(5, 0)).alarm, AlarmChange::raised);
  EXPECT_EQ(g.alarms_raised(), 2u);
}

TEST(DiskGuard, ALimitOfZeroNeverRaisesTheAlarm) {
  DiskGuard g(DiskGuardOptions{0, 100, 1000});
  EXPECT_EQ(g.on(sample(0, 0)).alarm, AlarmChange::none);
  EXPECT_FALSE(g.alarm());
  // The writers are still restarted.
  EXPECT_TRUE(g.on(sample(1, 0, {"s"})).restart.empty());
  EXPECT_EQ(g.on(sample(101, 0, {"s"})).restart, std::vector<std::string>{"s"});
}

TEST(DiskGuard, AStoppedWriterIsRestartedAfterADelayThatDoublesWhileRestartsFail) {
  DiskGuard g(DiskGuardOptions{0, 100, 350});
  EXPECT_TRUE(g.on(sample(0, 1, {"s"})).restart.empty()) << "seen stopped: first_retry_ms first";
  EXPECT_EQ(g.on(sample(100, 1, {"s"})).restart, std::vector<std::string>{"s"});
  // In flight: not asked again.
  EXPECT_TRUE(g.on(sample(110, 1, {"s"})).restart.empty());
  g.on_restart("s", "No space left on device", 120);
  EXPECT_TRUE(g.on(sample(219, 1, {"s"})).restart.empty());
  EXPECT_EQ(g.on(sample(220, 1, {"s"})).restart.size(), 1u);  // 120 + 100
  g.on_restart("s", "again", 230);
  EXPECT_TRUE(g.on(sample(429, 1, {"s"})).restart.empty());
  EXPECT_EQ(g.on(sample(430, 1, {"s"})).restart.size(), 1u);  // 230 + 200
  g.on_restart("s", "again", 500);
  EXPECT_TRUE(g.on(sample(849, 1, {"s"})).restart.empty());
  EXPECT_EQ(g.on(sample(850, 1, {"s"})).restart.size(), 1u);  // 500 + 350 (the cap)
  ASSERT_EQ(g.stopped().size(), 1u);
  EXPECT_EQ(g.stopped()[0].failed_restarts, 3u);
  EXPECT_EQ(g.stopped()[0].last_error, "again");
  EXPECT_TRUE(g.stopped()[0].restarting);
  g.on_restart("s", "", 860);
  EXPECT_TRUE(g.stopped().empty()) << "up again";
}

// A restart that works but does not last (a disk still full with the alarm
// off: the restart needs no space, the next append does) counts as a
// failure: one restart per doubling delay, not one per check.
TEST(DiskGuard, AWriterThatStopsAgainSoonAfterARestartBacksOff) {
  DiskGuard g(DiskGuardOptions{0, 100, 1000});
  g.on(sample(0, 1, {"s"}));
  ASSERT_EQ(g.on(sample(100, 1, {"s"})).restart.size(), 1u);
  g.on_restart("s", "", 110);
  EXPECT_TRUE(g.on(sample(150, 1, {})).restart.empty());  // up
  // Stopped again 90 ms after the restart.
  EXPECT_TRUE(g.on(sample(200, 1, {"s"})).restart.empty());
  ASSERT_EQ(g.stopped().size(), 1u);
  EXPECT_EQ(g.stopped()[0].failed_restarts, 1u);
  EXPECT_EQ(g.stopped()[0].last_error, "stopped again after a restart");
  EXPECT_TRUE(g.on(sample(299, 1, {"s"})).restart.empty());
  EXPECT_EQ(g.on(sample(300, 1, {"s"})).restart.size(), 1u);  // 200 + 100
  g.on_restart("s", "", 310);
  // Up for max_retry_ms: forgotten; a later stop starts afresh.
  g.on(sample(1309, 1, {}));
  g.on(sample(1310, 1, {}));
  EXPECT_TRUE(g.stopped().empty());
  g.on(sample(2000, 1, {"s"}));
  ASSERT_EQ(g.stopped().size(), 1u);
  EXPECT_EQ(g.stopped()[0].failed_restarts, 0u);
}

TEST(DiskGuard, NoRestartWhileTheAlarmIsRaised) {
  DiskGuard g(DiskGuardOptions{1000, 100, 1000});
  auto e = g.on(sample(0, 10, {"a", "b"}));
  EXPECT_EQ(e.alarm, AlarmChange::raised);
  EXPECT_TRUE(e.restart.empty());
  EXPECT_EQ(g.stopped().size(), 2u) << "known, waiting for space";
  e = g.on(sample(500, 5000, {"a", "b"}));
  EXPECT_EQ(e.alarm, AlarmChange::cleared);
  EXPECT_EQ(e.restart, (std::vector<std::string>{"a", "b"}));
}

TEST(DiskGuard, AWriterNoLongerStoppedIsForgottenUnlessARestartIsInFlight) {
  DiskGuard g(DiskGuardOptions{0, 100, 1000});
  g.on(sample(0, 1, {"a", "b"}));
  g.on(sample(100, 1, {"a", "b"}));  // both restarting
  g.on_restart("a", "failed", 105);
  // "a" was closed (released, deleted); "b"'s restart is still running.
  g.on(sample(110, 1, {}));
  ASSERT_EQ(g.stopped().size(), 1u);
  EXPECT_EQ(g.stopped()[0].stream, "b");
  // An outcome for a forgotten stream changes nothing.
  g.on_restart("a", "late", 120);
  EXPECT_EQ(g.stopped().size(), 1u);
  // Stopped again later: a fresh start.
  g.on(sample(130, 1, {"a", "b"}));
  EXPECT_EQ(g.on(sample(230, 1, {"a", "b"})).restart, std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace strata::node
