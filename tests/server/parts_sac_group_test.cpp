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

SacEffect update(ConsumerRef c, bool active) {
  return {K::send_update, c, active};
}
SacEffect activate(ConsumerRef c) {
  return {K::activate, c, true};
}
SacEffect deactivate(ConsumerRef c) {
  return {K::deactivate, c, false};
}
using E = std::vector<SacEffect>;

TEST(SacGroup, FirstRegisteredIsActiveAndTheNextTakesOver) {
  SacGroup g;
  EXPECT_EQ(g.subscribe(A), E{update(A, true)});
  EXPECT_EQ(g.subscribe(B), E{});
  EXPECT_EQ(g.subscribe(C), E{});
  EXPECT_FALSE(g.active());
  EXPECT_EQ(g.consumer_update_answered(A), E{activate(A)});
  EXPECT_EQ(g.active(), A);
  EXPECT_EQ(g.consumer_update_answered(A), E{});  // stale
  EXPECT_EQ(g.consumer_update_answered(B), E{});  // not asked
  // An inactive consumer leaving changes nothing.
  EXPECT_EQ(g.unsubscribe(C), E{});
  EXPECT_EQ(g.active(), A);
  // The active one leaves: the next in registration order is asked.
  EXPECT_EQ(g.unsubscribe(A), E{update(B, true)});
  EXPECT_EQ(g.consumer_update_answered(B), E{activate(B)});
  EXPECT_EQ(g.unsubscribe(B), E{});
  EXPECT_TRUE(g.empty());
}

TEST(SacGroup, ConnectionGoneWhileActivating) {
  SacGroup g;
  EXPECT_EQ(g.subscribe(A), E{update(A, true)});
  EXPECT_EQ(g.subscribe(B), E{});
  EXPECT_EQ(g.subscribe(ConsumerRef{1, 7}), E{});
  // Connection 1 holds A (activating) and {1,7}: both go, B is asked.
  EXPECT_EQ(g.connection_gone(1), E{update(B, true)});
  EXPECT_EQ(g.members().size(), 1u);
  EXPECT_EQ(g.subscribe(B), E{});  // joining twice is ignored
}

TEST(SacGroup, PartitionStepsDownBeforeHandingOver) {
  // Partition 1 of a super stream: with one consumer it is active; when a
  // second joins, members[1 % 2] = B is designated, A steps down first.
  SacGroup g(1);
  EXPECT_EQ(g.subscribe(A), E{update(A, true)});
  EXPECT_EQ(g.consumer_update_answered(A), E{activate(A)});
  EXPECT_EQ(g.subscribe(B), (E{deactivate(A), update(A, false)}));
  EXPECT_FALSE(g.active());
  // Nothing moves until A answers; a third consumer waits too.
  EXPECT_EQ(g.subscribe(C), E{});
  // Now 1 % 3 = B again.
  EXPECT_EQ(g.consumer_update_answered(A), E{update(B, true)});
  EXPECT_EQ(g.consumer_update_answered(B), E{activate(B)});
  // B leaves: members [A, C], 1 % 2 = C.
  EXPECT_EQ(g.unsubscribe(B), E{update(C, true)});
  // A stepping-down consumer that leaves instead of answering.
  SacGroup h(0);
  EXPECT_EQ(h.subscribe(A), E{update(A, true)});
  EXPECT_EQ(h.consumer_update_answered(A), E{activate(A)});
  EXPECT_EQ(h.subscribe(B), E{});  // 0 % 2 = A: A stays
  EXPECT_EQ(h.unsubscribe(A), E{update(B, true)});
}

TEST(SacGroups, GroupsAreKeyedByStreamAndName) {
  SacGroups gs;
  EXPECT_EQ(gs.subscribe("s", "app", A), E{update(A, true)});
  EXPECT_EQ(gs.subscribe("s", "other", B), E{update(B, true)});
  EXPECT_EQ(gs.subscribe("t", "app", ConsumerRef{1, 1}), E{update((ConsumerRef{1, 1}), true)});
  EXPECT_EQ(gs.subscribe("s", "app", C), E{});
  EXPECT_EQ(gs.size(), 3u);
  EXPECT_EQ(gs.consumer_update_answered("s", "app", A), E{activate(A)});
  // Connection 1 goes: "s/app" hands over to C, "t/app" is dropped.
  EXPECT_EQ(gs.connection_gone(1), E{update(C, true)});
  EXPECT_EQ(gs.size(), 2u);
  EXPECT_EQ(gs.group("t", "app"), nullptr);
  EXPECT_EQ(gs.unsubscribe("s", "other", B), E{});
  EXPECT_EQ(gs.size(), 1u);
  EXPECT_EQ(gs.unsubscribe("nope", "x", B), E{});
}

// Random joins, leaves, connection losses and answers: at most one member
// is ever busy (activating, active or stepping down), an activate effect
// goes only to the member that was asked, and a non-empty group whose
// answers all came back has exactly one active member — the designated one
// for a partition.
TEST(SacGroup, SimulationKeepsOneActive) {
  const uint64_t seed = test::test_seed(11);
  std::mt19937_64 rng(seed);
  const int steps = test::scaled(20000);
  for (int part = 0; part < 2; ++part) {
    SacGroup g = part ? SacGroup(2) : SacGroup();
    std::vector<ConsumerRef> pending;  // asked, answer not yet fed back
    for (int i = 0; i < steps; ++i) {
      const ConsumerRef c{rng() % 4, uint8_t(rng() % 2)};
      std::vector<SacEffect> e;
      switch (rng() % 4) {
        case 0:
          e = g.subscribe(c);
          break;
        case 1:
          e = g.unsubscribe(c);
          break;
        case 2:
          e = g.connection_gone(c.connection);
          break;
        default:
          if (!pending.empty()) {
            size_t k = rng() % pending.size();
            e = g.consumer_update_answered(pending[k]);
            pending.erase(pending.begin() + long(k));
          }
      }
      for (const SacEffect& x : e) {
        if (x.kind == K::send_update) pending.push_back(x.consumer);
        if (x.kind != K::deactivate) {
          ASSERT_TRUE(g.contains(x.consumer)) << "seed " << seed;
        }
      }
      int busy = 0;
      for (const auto& m : g.members()) busy += m.state != SacGroup::State::inactive;
      ASSERT_LE(busy, 1) << "seed " << seed;
      if (!g.empty()) {
        ASSERT_EQ(busy, 1) << "seed " << seed << " step " << i;
      }
      // Drop answers of consumers that left (their connection will not answer).
      std::erase_if(pending, [&](ConsumerRef p) { return !g.contains(p); });
    }
    // Drain: answer everything; the designated member ends up active.
    while (!pending.empty()) {
      ConsumerRef p = pending.front();
      pending.erase(pending.begin());
      for (const SacEffect& x : g.consumer_update_answered(p)) {
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
