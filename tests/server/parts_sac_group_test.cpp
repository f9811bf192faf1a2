// Single active consumer groups: the effects RabbitMQ's coordinator would
// produce for plain streams (first registered active, the next on leave)
// and super stream partitions (index % members, step down before handing
// over), plus a seeded simulation checking the invariants under random
// joins, leaves and answers.
#include <gtest/gtest.h>

#include <random>

#include "server/sac_group.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

using K = SacEffect::Kind;
constexpr ConsumerRef A{1, 0}, B{2, 0}, C{3, 5};
// The time of the events whose timing does not matter.
const SacTime T0{};
using std::chrono::milliseconds;

SacEffect update(ConsumerRef c, bool active) {
  return {K::send_update, c, active};
}
SacEffect activate(ConsumerRef c) {
  return {K::activate, c, true};
}
SacEffect deactivate(ConsumerRef c) {
  return {K::deactivate, c, false};
}
SacEffect timed_out(ConsumerRef c) {
  return {K::timed_out, c, false};
}
using E = std::vector<SacEffect>;

TEST(SacGroup, FirstRegisteredIsActiveAndTheNextTakesOver) {
  SacGroup g;
  EXPECT_EQ(g.subscribe(A, T0), E{update(A, true)});
  EXPECT_EQ(g.subscribe(B, T0), E{});
  EXPECT_EQ(g.subscribe(C, T0), E{});
  EXPECT_FALSE(g.active());
  EXPECT_EQ(g.consumer_update_answered(A, T0), E{activate(A)});
  EXPECT_EQ(g.active(), A);
  EXPECT_EQ(g.consumer_update_answered(A, T0), E{});  // stale
  EXPECT_EQ(g.consumer_update_answered(B, T0), E{});  // not asked
  // An inactive consumer leaving changes nothing.
  EXPECT_EQ(g.unsubscribe(C, T0), E{});
  EXPECT_EQ(g.active(), A);
  // The active one leaves: the next in registration order is asked.
  EXPECT_EQ(g.unsubscribe(A, T0), E{update(B, true)});
  EXPECT_EQ(g.consumer_update_answered(B, T0), E{activate(B)});
  EXPECT_EQ(g.unsubscribe(B, T0), E{});
  EXPECT_TRUE(g.empty());
}

TEST(SacGroup, ConnectionGoneWhileActivating) {
  SacGroup g;
  EXPECT_EQ(g.subscribe(A, T0), E{update(A, true)});
  EXPECT_EQ(g.subscribe(B, T0), E{});
  EXPECT_EQ(g.subscribe(ConsumerRef{1, 7}, T0), E{});
  // Connection 1 holds A (activating) and {1,7}: both go, B is asked.
  EXPECT_EQ(g.connection_gone(1, T0), E{update(B, true)});
  EXPECT_EQ(g.members().size(), 1u);
  EXPECT_EQ(g.subscribe(B, T0), E{});  // joining twice is ignored
}

TEST(SacGroup, PartitionStepsDownBeforeHandingOver) {
  // Partition 1 of a super stream: with one consumer it is active; when a
  // second joins, members[1 % 2] = B is designated, A steps down first.
  SacGroup g(1);
  EXPECT_EQ(g.subscribe(A, T0), E{update(A, true)});
  EXPECT_EQ(g.consumer_update_answered(A, T0), E{activate(A)});
  EXPECT_EQ(g.subscribe(B, T0), (E{deactivate(A), update(A, false)}));
  EXPECT_FALSE(g.active());
  // Nothing moves until A answers; a third consumer waits too.
  EXPECT_EQ(g.subscribe(C, T0), E{});
  // Now 1 % 3 = B again.
  EXPECT_EQ(g.consumer_update_answered(A, T0), E{update(B, true)});
  EXPECT_EQ(g.consumer_update_answered(B, T0), E{activate(B)});
  // B leaves: members [A, C], 1 % 2 = C.
  EXPECT_EQ(g.unsubscribe(B, T0), E{update(C, true)});
  // A stepping-down consumer that leaves instead of answering.
  SacGroup h(0);
  EXPECT_EQ(h.subscribe(A, T0), E{update(A, true)});
  EXPECT_EQ(h.consumer_update_answered(A, T0), E{activate(A)});
  EXPECT_EQ(h.subscribe(B, T0), E{});  // 0 % 2 = A: A stays
  EXPECT_EQ(h.unsubscribe(A, T0), E{update(B, true)});
}

TEST(SacGroup, ConsumerThatNeverAnswersIsFailedAndTheNextAsked) {
  SacGroup g(std::nullopt, milliseconds(100));
  const SacTime t = T0 + milliseconds(5000);
  EXPECT_FALSE(g.next_deadline());
  EXPECT_EQ(g.subscribe(A, t), E{update(A, true)});
  EXPECT_EQ(g.next_deadline(), t + milliseconds(100));
  EXPECT_EQ(g.subscribe(B, t + milliseconds(50)), E{});
  // Not due yet: nothing moves, however often the timer fires.
  EXPECT_EQ(g.expire(t + milliseconds(99)), E{});
  EXPECT_EQ(g.expire(t + milliseconds(99)), E{});
  // Due: A is failed and leaves, B is asked with a deadline of its own.
  EXPECT_EQ(g.expire(t + milliseconds(100)), (E{timed_out(A), update(B, true)}));
  EXPECT_FALSE(g.contains(A));
  EXPECT_EQ(g.next_deadline(), t + milliseconds(200));
  // A's late answer is stale.
  EXPECT_EQ(g.consumer_update_answered(A, t + milliseconds(150)), E{});
  EXPECT_EQ(g.consumer_update_answered(B, t + milliseconds(150)), E{activate(B)});
  EXPECT_FALSE(g.next_deadline());
  // An answered consumer has no deadline: it stays active for good.
  EXPECT_EQ(g.expire(t + milliseconds(1'000'000)), E{});
  EXPECT_EQ(g.active(), B);
  // Alone and not answering: failed, the group is empty.
  EXPECT_EQ(g.unsubscribe(B, t), E{});
  EXPECT_EQ(g.subscribe(C, t), E{update(C, true)});
  EXPECT_EQ(g.expire(t + milliseconds(100)), E{timed_out(C)});
  EXPECT_TRUE(g.empty());
}

TEST(SacGroup, ConsumerThatNeverStepsDownIsFailed) {
  // Partition 1: B joining designates B; A is asked to step down and never
  // answers. Without the deadline the partition would stay without an
  // active consumer.
  SacGroup g(1, milliseconds(100));
  EXPECT_EQ(g.subscribe(A, T0), E{update(A, true)});
  EXPECT_EQ(g.consumer_update_answered(A, T0), E{activate(A)});
  EXPECT_EQ(g.subscribe(B, T0 + milliseconds(10)), (E{deactivate(A), update(A, false)}));
  EXPECT_EQ(g.next_deadline(), T0 + milliseconds(110));
  // A fails; members [B], 1 % 1 = B is asked.
  EXPECT_EQ(g.expire(T0 + milliseconds(110)), (E{timed_out(A), update(B, true)}));
  EXPECT_EQ(g.consumer_update_answered(B, T0 + milliseconds(120)), E{activate(B)});
  EXPECT_EQ(g.active(), B);
}

TEST(SacGroups, ExpireAndNextDeadlineSpanEveryGroup) {
  SacGroups gs(milliseconds(100));
  EXPECT_FALSE(gs.next_deadline());
  EXPECT_EQ(gs.subscribe("s", "app", A, std::nullopt, T0 + milliseconds(30)), E{update(A, true)});
  EXPECT_EQ(gs.subscribe("t", "app", B, std::nullopt, T0 + milliseconds(10)), E{update(B, true)});
  EXPECT_EQ(gs.subscribe("t", "app", C, std::nullopt, T0 + milliseconds(20)), E{});
  EXPECT_EQ(gs.next_deadline(), T0 + milliseconds(110));
  EXPECT_EQ(gs.expire(T0 + milliseconds(110)), (E{timed_out(B), update(C, true)}));
  EXPECT_EQ(gs.next_deadline(), T0 + milliseconds(130));
  // A fails too; its group is dropped with its last consumer.
  EXPECT_EQ(gs.expire(T0 + milliseconds(130)), E{timed_out(A)});
  EXPECT_EQ(gs.group("s", "app"), nullptr);
  EXPECT_EQ(gs.next_deadline(), T0 + milliseconds(210));
}

TEST(SacGroups, GroupsAreKeyedByStreamAndName) {
  SacGroups gs;
  EXPECT_EQ(gs.subscribe("s", "app", A, std::nullopt, T0), E{update(A, true)});
  EXPECT_EQ(gs.subscribe("s", "other", B, std::nullopt, T0), E{update(B, true)});
  EXPECT_EQ(gs.subscribe("t", "app", ConsumerRef{1, 1}, std::nullopt, T0),
            E{update((ConsumerRef{1, 1}), true)});
  EXPECT_EQ(gs.subscribe("s", "app", C, std::nullopt, T0), E{});
  EXPECT_EQ(gs.size(), 3u);
  EXPECT_EQ(gs.consumer_update_answered("s", "app", A, T0), E{activate(A)});
  // Connection 1 goes: "s/app" hands over to C, "t/app" is dropped.
  EXPECT_EQ(gs.connection_gone(1, T0), E{update(C, true)});
  EXPECT_EQ(gs.size(), 2u);
  EXPECT_EQ(gs.group("t", "app"), nullptr);
  EXPECT_EQ(gs.unsubscribe("s", "other", B, T0), E{});
  EXPECT_EQ(gs.size(), 1u);
  EXPECT_EQ(gs.unsubscribe("nope", "x", B, T0), E{});
}

// Random joins, leaves, connection losses, answers and deadlines passing: at most one member
// is ever busy (activating, active or stepping down), an activate effect
// goes only to the member that was asked, and a non-empty group whose
// answers all came back has exactly one active member — the designated one
// for a partition.
TEST(SacGroup, SimulationKeepsOneActive) {
  const uint64_t seed = test::test_seed(11);
  std::mt19937_64 rng(seed);
  const int steps = test::scaled(20000);
  for (int part = 0; part < 2; ++part) {
    SacGroup g = part ? SacGroup(2, milliseconds(100)) : SacGroup(std::nullopt, milliseconds(100));
    std::vector<ConsumerRef> pending;  // asked, answer not yet fed back
    SacTime now = T0;
    for (int i = 0; i < steps; ++i) {
      const ConsumerRef c{rng() % 4, uint8_t(rng() % 2)};
      std::vector<SacEffect> e;
      now += milliseconds(rng() % 20);
      switch (rng() % 5) {
        case 0:
          e = g.subscribe(c, now);
          break;
        case 1:
          e = g.unsubscribe(c, now);
          break;
        case 2:
          e = g.connection_gone(c.connection, now);
          break;
        case 3:
          e = g.expire(now);
          break;
        default:
          if (!pending.empty()) {
            size_t k = rng() % pending.size();
            e = g.consumer_update_answered(pending[k], now);
            pending.erase(pending.begin() + long(k));
          }
      }
      for (const SacEffect& x : e) {
        if (x.kind == K::send_update) pending.push_back(x.consumer);
        if (x.kind == K::timed_out) {
          ASSERT_FALSE(g.contains(x.consumer)) << "seed " << seed;
          continue;
        }
        if (x.kind != K::deactivate) {
          ASSERT_TRUE(g.contains(x.consumer)) << "seed " << seed;
        }
      }
      int busy = 0;
      for (const auto& m : g.members()) busy += m.state != SacGroup::State::inactive;
      ASSERT_LE(busy, 1) << "seed " << seed;
      if (!g.empty()) {
        ASSERT_EQ(busy, 1) << "seed " << seed << " step " << i;
        // The busy member is awaited (with a deadline) or active.
        ASSERT_EQ(g.next_deadline().has_value(), !g.active().has_value()) << "seed " << seed;
      }
      // Drop answers of consumers that left (their connection will not answer).
      std::erase_if(pending, [&](ConsumerRef p) { return !g.contains(p); });
    }
    // Drain: answer everything; the designated member ends up active.
    while (!pending.empty()) {
      ConsumerRef p = pending.front();
      pending.erase(pending.begin());
      for (const SacEffect& x : g.consumer_update_answered(p, now)) {
        if (x.kind == K::send_update) pending.push_back(x.consumer);
      }
    }
    if (!g.empty()) {
      ASSERT_TRUE(g.active()) << "seed " << seed;
      if (part) {
        EXPECT_EQ(*g.active(), g.members()[2 % g.members().size()].ref);
      }
    }
  }
}

}  // namespace
}  // namespace strata::server
