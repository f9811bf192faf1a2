#include "tier/manifest_retention.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "tier/fragment_iterator.h"
#include "tier_test_util.h"

namespace strata::tier {
namespace {

using test::TreeBuilder;

// Applies a plan and checks it against the builder's fragment list: the
// dropped fragments are exactly [0, n) and every deleted object is either
// one of them or a group that no longer holds anything at or above the new
// first offset.
void check_plan(TreeBuilder& t, const RetentionPlan& plan, size_t already_dropped) {
  size_t n = already_dropped + plan.fragments_removed;
  ASSERT_LT(n, t.fragments.size());
  EXPECT_EQ(plan.edit.first_offset, t.fragments[n].offset);
  uint64_t bytes = 0;
  for (size_t i = already_dropped; i < n; ++i) bytes += t.fragments[i].size;
  EXPECT_EQ(plan.edit.removed_bytes, bytes);
  size_t frags = 0;
  for (const ManifestEntry& e : plan.deleted) {
    if (e.kind == kKindFragment) {
      frags += 1;
      EXPECT_GE(e.offset, t.fragments[already_dropped].offset);
      EXPECT_LT(e.offset, plan.edit.first_offset);
    } else {
      EXPECT_TRUE(t.store.contains(e));
      EXPECT_LT(e.offset, plan.edit.first_offset);
    }
  }
  EXPECT_EQ(frags, plan.fragments_removed);
  ASSERT_TRUE(apply_edit(t.root, plan.edit).ok());
  ASSERT_TRUE(validate_manifest(t.root, "after retention").ok());
  // What remains is exactly the suffix.
  auto rest = all_fragments(t.shared(), t.fetch());
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), t.fragments.size() - n);
  EXPECT_EQ(rest->front().offset, t.fragments[n].offset);
}

}  // namespace

TEST(TierManifestRetention, MaxBytesDropsLeadingFragmentsWhileOverTheLimit) {
  TreeBuilder t(RebalancePolicy{100, 2});
  for (int i = 0; i < 10; ++i) t.append(1, 100, i);
  RetentionSpec spec;
  spec.max_bytes = 450;
  auto plan = plan_retention(t.root, spec, 0, t.fetch());
  ASSERT_TRUE(plan.ok());
  // 1000 > 450: drop while over: 1000, 900, ..., 500 are over -> 6 dropped.
  EXPECT_EQ(plan->fragments_removed, 6u);
  EXPECT_EQ(plan->edit.remove_entries, 6u);
  EXPECT_FALSE(plan->more);
  check_plan(t, *plan, 0);
  EXPECT_EQ(t.root.total_size, 400u);
}

TEST(TierManifestRetention, MaxAgeDropsFragmentsOlderThanTheCutoff) {
  TreeBuilder t(RebalancePolicy{100, 2});
  for (int i = 0; i < 10; ++i) t.append(1, 100, 1000 + i * 100);
  RetentionSpec spec;
  spec.max_age_ms = 500;
  // now 1850: cutoff 1350: fragments with last_ts < 1350 are 1000..1300.
  auto plan = plan_retention(t.root, spec, 1850, t.fetch());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->fragments_removed, 4u);
  // The next fragment (ts 1400) turns old at 1400 + 500 + 1.
  EXPECT_EQ(plan->recheck_at_ms, 1901);
  check_plan(t, *plan, 0);
}

TEST(TierManifestRetention, BothLimitsTakeTheLongerPrefix) {
  TreeBuilder t(RebalancePolicy{100, 2});
  for (int i = 0; i < 10; ++i) t.append(1, 100, 1000 + i * 100);
  RetentionSpec spec;
  spec.max_bytes = 850;   // alone: drop 2
  spec.max_age_ms = 500;  // alone at 1850: drop 4
  auto plan = plan_retention(t.root, spec, 1850, t.fetch());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->fragments_removed, 4u);
  spec.max_bytes = 250;  // now bytes wins: drop 8
  plan = plan_retention(t.root, spec, 1850, t.fetch());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->fragments_removed, 8u);
}

TEST(TierManifestRetention, NeverRemovesTheLastFragment) {
  TreeBuilder t(RebalancePolicy{100, 2});
  for (int i = 0; i < 3; ++i) t.append(1, 100, i);
  RetentionSpec spec;
  spec.max_bytes = 0;
  spec.max_age_ms = 0;
  auto plan = plan_retention(t.root, spec, 1'000'000, t.fetch());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->fragments_removed, 2u);
  EXPECT_FALSE(plan->recheck_at_ms.has_value());  // stopped at the last fragment
  check_plan(t, *plan, 0);
  ASSERT_EQ(t.root.entries.size(), 1u);
  auto again = plan_retention(t.root, spec, 1'000'000, t.fetch());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->removes_anything());
  EXPECT_FALSE(t.root.empty());
}

TEST(TierManifestRetention, NeverEmptiesARootWhoseOnlyEntryIsAGroup) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(8);  // exactly one kind-2 entry
  ASSERT_EQ(t.root.entries.size(), 1u);
  RetentionSpec spec;
  spec.max_bytes = 0;
  auto plan = plan_retention(t.root, spec, 0, t.fetch());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->fragments_removed, 7u);
  EXPECT_EQ(plan->edit.remove_entries, 0u);  // the group stays, partly consumed
  // The first kind-1 group (4 fragments) is wholly dropped and deleted.
  size_t groups = 0;
  for (auto& e : plan->deleted) groups += e.kind != kKindFragment;
  EXPECT_EQ(groups, 1u);
  check_plan(t, *plan, 0);
  EXPECT_EQ(t.root.entries.size(), 1u);
}

TEST(TierManifestRetention, DescendsIntoGroupsAndDeletesWhollyConsumedOnes) {
  TreeBuilder t(RebalancePolicy{4, 3});
  t.grow(21);  // [k2(12), g(4), g(4), f]
  ASSERT_EQ(t.root.entries.size(), 4u);
  RetentionSpec spec;
  // Drop the first 13 fragments: both fragments and groups.
  uint64_t keep = 0;
  for (size_t i = 13; i < t.fragments.size(); ++i) keep += t.fragments[i].size;
  spec.max_bytes = keep + t.fragments[12].size - 1;
  auto plan = plan_retention(t.root, spec, 0, t.fetch());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->fragments_removed, 13u);
  // Deleted groups: the k2 and its three g's; the next g is only partly
  // consumed and stays.
  size_t groups = 0;
  for (auto& e : plan->deleted) groups += e.kind != kKindFragment;
  EXPECT_EQ(groups, 4u);
  EXPECT_EQ(plan->edit.remove_entries, 1u);
  check_plan(t, *plan, 0);
}

TEST(TierManifestRetention, RepeatedPassesAreIdempotentAndNeverDeleteTwice) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(40, 0);
  RetentionSpec spec;
  spec.max_age_ms = 0;
  std::set<std::tuple<uint8_t, uint64_t, uint32_t>> deleted;
  size_t dropped = 0;
  for (int64_t now = 3; now < 45; now += 3) {
    auto plan = plan_retention(t.root, spec, now, t.fetch());
    ASSERT_TRUE(plan.ok());
    auto again = plan_retention(t.root, spec, now, t.fetch());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*plan, *again);  // pure: same input, same plan
    if (!plan->removes_anything()) continue;
    for (auto& e : plan->deleted) {
      EXPECT_TRUE(deleted.insert({e.kind, e.offset, e.uid}).second)
          << "deleted twice: " << e.offset;
    }
    check_plan(t, *plan, dropped);
    dropped += plan->fragments_removed;
  }
  EXPECT_EQ(dropped, t.fragments.size() - 1);
}

TEST(TierManifestRetention, LargePassesStopAtTheObjectLimitAndSayMore) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(50, 0);
  RetentionSpec spec;
  spec.max_bytes = 0;
  spec.max_objects_per_plan = 10;
  size_t dropped = 0;
  int passes = 0;
  while (true) {
    auto plan = plan_retention(t.root, spec, 0, t.fetch());
    ASSERT_TRUE(plan.ok());
    if (!plan->removes_anything()) break;
    EXPECT_LE(plan->deleted.size(), 10u + 8);  // limit + groups closed on the way
    check_plan(t, *plan, dropped);
    dropped += plan->fragments_removed;
    passes += 1;
    if (!plan->more) break;
  }
  EXPECT_EQ(dropped, 49u);
  EXPECT_GE(passes, 5);
}

TEST(TierManifestRetention, CheapPrecheckSkipsGroupReads) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(30, 1000);
  RetentionSpec spec;
  spec.max_bytes = t.root.total_size;
  spec.max_age_ms = 1'000'000;
  EXPECT_FALSE(retention_may_apply(t.root, spec, 2000));
  t.store.fetches = 0;
  auto plan = plan_retention(t.root, spec, 2000, t.fetch());
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->removes_anything());
  EXPECT_EQ(t.store.fetches, 0u);
  EXPECT_EQ(plan->recheck_at_ms, 1000 + 1'000'000 + 1);
  EXPECT_FALSE(retention_may_apply(Manifest::empty_at(3), spec, 1 << 30));
}

TEST(TierManifestRetention, GroupFetchFailureIsAnError) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(9);
  RetentionSpec spec;
  spec.max_bytes = 0;
  GroupFetch broken = [](const ManifestEntry&) -> Result<std::shared_ptr<const ManifestGroup>> {
    return Error(Errc::transient, "timeout");
  };
  auto plan = plan_retention(t.root, spec, 0, broken);
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(is_group_fetch_failure(plan.error()));
}

}  // namespace strata::tier
