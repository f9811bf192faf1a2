// The history checker (history_check.h) on hand-made histories: ones that
// hold, and one per rule that must be rejected.
#include "cluster/history_check.h"

#include <gtest/gtest.h>

namespace strata::test {
namespace {

constexpr MessageId m(uint32_t p, uint64_t id) {
  return {p, id};
}

bool mentions(const HistoryReport& r, const std::string& what) {
  for (const auto& v : r.violations) {
    if (v.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(HistoryCheck, BodiesRoundTrip) {
  MessageId out;
  ASSERT_TRUE(parse_body(body_of(m(3, 12345)), &out));
  EXPECT_EQ(out, m(3, 12345));
  for (const char* bad : {"", "p", "p1", "p1-", "p-1", "x1-2", "p1-2x", "p1x-2", "m-7"}) {
    EXPECT_FALSE(parse_body(bad, &out)) << bad;
  }
}

// Two publishers; p1's id 2 is published twice (republished after a
// fault) and stored once; an in-round subscription ended by the fault saw a
// message the takeover discarded (p2-9, never confirmed) at an offset the
// final subscription holds another message at.
History good_history() {
  History h;
  for (uint64_t id = 1; id <= 3; ++id) h.publish(m(1, id));
  h.publish(m(2, 1));
  h.publish(m(2, 9));
  h.confirm(m(1, 1));
  h.deliver(0, 0, m(1, 1));
  h.deliver(0, 1, m(2, 9));
  h.publish(m(1, 2));  // republished
  h.confirm(m(1, 2));
  h.confirm(m(1, 2));  // confirmed again as a duplicate
  h.confirm(m(2, 1));
  h.confirm(m(1, 3));
  h.deliver(1, 0, m(1, 1));
  h.deliver(1, 1, m(1, 2));
  h.deliver(1, 2, m(2, 1));
  h.deliver(1, 5, m(1, 3));  // offsets may skip (chunks of other kinds)
  h.final_subscriptions = {1};
  return h;
}

TEST(HistoryCheck, AcceptsAHistoryThatHolds) {
  auto r = check_history(good_history());
  EXPECT_TRUE(r.ok()) << r.to_string();
  EXPECT_EQ(r.published, 5u);
  EXPECT_EQ(r.confirmed, 4u);
  EXPECT_EQ(r.delivered, 6u);
}

TEST(HistoryCheck, AcceptsAnEmptyHistory) {
  History h;
  h.final_subscriptions = {0};
  EXPECT_TRUE(check_history(h).ok());
}

TEST(HistoryCheck, RejectsAConfirmedMessageTheFinalSubscriptionMisses) {
  History h = good_history();
  h.publish(m(2, 2));
  h.confirm(m(2, 2));
  auto r = check_history(h);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "final subscription 1 misses 1 confirmed messages (first p2-2)"))
      << r.to_string();
}

TEST(HistoryCheck, RejectsAMissingMessageInAnyFinalSubscription) {
  History h = good_history();
  h.deliver(2, 0, m(1, 1));
  h.deliver(2, 1, m(1, 2));
  h.deliver(2, 2, m(2, 1));
  h.final_subscriptions = {1, 2};
  auto r = check_history(h);
  EXPECT_TRUE(mentions(r, "final subscription 2 misses 1")) << r.to_string();
  // A final subscription that got nothing misses everything.
  h.final_subscriptions = {1, 7};
  EXPECT_TRUE(mentions(check_history(h), "final subscription 7 misses 4"));
}

TEST(HistoryCheck, RejectsADuplicateInOneSubscription) {
  History h = good_history();
  h.deliver(1, 6, m(1, 2));
  auto r = check_history(h);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "delivered twice: p1-2 (subscription 1, offset 6)")) << r.to_string();
}

TEST(HistoryCheck, ToleratesOnlyDuplicatesOfRepublishedMessagesWhenAskedTo) {
  History h = good_history();
  h.deliver(1, 6, m(1, 2));  // p1-2 was published twice
  auto r = check_history(h, DuplicatePolicy::republished);
  EXPECT_TRUE(r.ok()) << r.to_string();
  EXPECT_EQ(r.tolerated_duplicates, 1u);
  EXPECT_NE(r.to_string().find("1 duplicates of republished messages"), std::string::npos);
  h.deliver(1, 7, m(2, 1));  // p2-1 was published once
  r = check_history(h, DuplicatePolicy::republished);
  EXPECT_TRUE(mentions(r, "delivered twice: p2-1 (subscription 1, offset 7)")) << r.to_string();
  EXPECT_EQ(r.violations.size(), 1u);
}

TEST(HistoryCheck, AllowsTheSameMessageInDifferentSubscriptions) {
  History h = good_history();
  h.deliver(2, 9, m(1, 2));
  h.deliver(3, 9, m(1, 2));
  EXPECT_TRUE(check_history(h).ok());
}

// good_history's subscription 0 read p2-9 at offset 1, which the final
// subscription holds p1-2 at: allowed unless only committed reads are.
TEST(HistoryCheck, WithCommittedReadsOnlyEveryOffsetHoldsOneMessage) {
  History h = good_history();
  auto r = check_history(h, DuplicatePolicy::none, ReadPolicy::committed_only);
  EXPECT_TRUE(mentions(r, "offset 1 holds p2-9 in subscription 0 but p1-2 in subscription 1"))
      << r.to_string();
  EXPECT_EQ(r.violations.size(), 1u) << r.to_string();
  // Without the discarded read, the same history holds.
  History agreed;
  for (const auto& e : h.events) {
    if (!(e.kind == HistoryEvent::Kind::deliver && e.message == m(2, 9)))
      agreed.events.push_back(e);
  }
  agreed.final_subscriptions = h.final_subscriptions;
  r = check_history(agreed, DuplicatePolicy::none, ReadPolicy::committed_only);
  EXPECT_TRUE(r.ok()) << r.to_string();
}

TEST(HistoryCheck, RejectsOffsetsThatDoNotIncrease) {
  History h = good_history();
  h.publish(m(3, 1));
  h.deliver(1, 5, m(3, 1));  // repeated offset
  auto r = check_history(h);
  EXPECT_TRUE(mentions(r, "offset not increasing: 5 after 5")) << r.to_string();
  History back = good_history();
  back.publish(m(3, 1));
  back.deliver(0, 0, m(3, 1));  // subscription 0 was at offset 1
  EXPECT_TRUE(mentions(check_history(back), "offset not increasing: 0 after 1"));
}

TEST(HistoryCheck, RejectsAConfirmOrDeliveryOfSomethingNeverPublished) {
  History h = good_history();
  h.confirm(m(4, 1));
  h.deliver(0, 8, m(5, 1));
  auto r = check_history(h);
  EXPECT_TRUE(mentions(r, "confirmed but never published: p4-1")) << r.to_string();
  EXPECT_TRUE(mentions(r, "delivered but never published: p5-1 (subscription 0, offset 8)"));
}

TEST(HistoryCheck, DescribesASubscriptionAsRuns) {
  History h = good_history();
  EXPECT_EQ(describe_subscription(h, 1), "0-1: p1-1..2, 2-2: p2-1..1, 5-5: p1-3..3");
  EXPECT_EQ(describe_subscription(h, 9), "");
}

TEST(HistoryCheck, KeepsAtMostTheGivenNumberOfViolations) {
  History h;
  for (uint64_t id = 0; id < 10; ++id) h.confirm(m(1, id));
  auto r = check_history(h, DuplicatePolicy::none, ReadPolicy::uncommitted_allowed, 3);
  EXPECT_EQ(r.violations.size(), 3u);
  EXPECT_EQ(r.more, 7u);
  EXPECT_NE(r.to_string().find("and 7 more"), std::string::npos);
}

}  // namespace
}  // namespace strata::test
