// walk_tree: the objects a manifest references, one level of groups per
// round, with unusable groups reported and walked around.
#include "tier/scrub_tree.h"

#include <gtest/gtest.h>

#include "tier/fragment_iterator.h"
#include "tier_test_util.h"

namespace strata::tier {
namespace {

using test::TreeBuilder;

ObjectKeys tree_keys() {
  return *ObjectKeys::make("t", "s1");
}

// Walks `t` to the end, reading each group the walk asks for from the
// builder's store. Returns the final walk and the number of rounds.
std::pair<TreeWalk, int> walk_all(const TreeBuilder& t) {
  std::map<std::string, GroupRead> reads;
  for (int rounds = 1;; ++rounds) {
    TreeWalk w = walk_tree(t.root, tree_keys(), reads);
    if (w.complete() || rounds > 20) return {w, rounds};
    for (const auto& g : w.groups) {
      if (reads.count(g.key)) continue;
      auto got = t.fetch()(g.entry);
      EXPECT_TRUE(got.ok()) << got.error().to_string();
      reads[g.key] = GroupRead{ReadState::ok, **got, ""};
    }
  }
}

ManifestEntry fragment(uint64_t offset, uint32_t uid, uint64_t size = 100) {
  return ManifestEntry{offset, 1, 2, size, 3, uid, kKindFragment};
}

}  // namespace

TEST(TierScrubTree, FlatRootGivesEveryFragmentInOneRound) {
  TreeBuilder t(RebalancePolicy{1024, 32});
  t.grow(5);
  auto [w, rounds] = walk_all(t);
  EXPECT_EQ(rounds, 1);
  EXPECT_TRUE(w.exact());
  ASSERT_EQ(w.leaves.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_TRUE(w.leaves[i].known);
    EXPECT_EQ(w.leaves[i].key, tree_keys().for_entry(t.fragments[i]));
    EXPECT_EQ(w.leaves[i].ref.offset, t.fragments[i].offset);
  }
  EXPECT_EQ(w.leaves.back().ref.next_offset, t.root.next_offset);
  EXPECT_TRUE(w.groups.empty());
}

TEST(TierScrubTree, ReadsOneLevelOfGroupsPerRoundAndMatchesTheIterator) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(70);
  auto [w, rounds] = walk_all(t);
  ASSERT_TRUE(w.exact());
  EXPECT_GE(rounds, 3) << "a tree three levels deep needs a round per level";
  auto refs = all_fragments(t.shared(), t.fetch());
  ASSERT_TRUE(refs.ok());
  ASSERT_EQ(w.leaves.size(), refs->size());
  for (size_t i = 0; i < refs->size(); ++i) EXPECT_EQ(w.leaves[i].ref, (*refs)[i]) << i;
  std::set<std::string> group_keys;
  for (const auto& g : w.groups) group_keys.insert(g.key);
  EXPECT_EQ(group_keys.size(), w.groups.size()) << "each group reached once";
  EXPECT_EQ(w.groups.size(), t.store.size());
}

TEST(TierScrubTree, SkipsWhatLiesWhollyBelowTheFirstOffset) {
  ManifestGroup g{1, 0, 12, 1, 2, 300, 3, {fragment(0, 1), fragment(4, 2), fragment(8, 3)}};
  Manifest m;
  m.first_offset = 8;
  m.next_offset = 20;
  m.total_size = 200;
  m.entries = {ManifestEntry{0, 1, 2, 300, 3, 9, 1}, fragment(12, 4)};
  ASSERT_TRUE(validate_manifest(m, "test").ok());
  std::map<std::string, GroupRead> reads;
  reads[tree_keys().for_entry(m.entries[0])] = GroupRead{ReadState::ok, g, ""};
  TreeWalk w = walk_tree(m, tree_keys(), reads);
  ASSERT_TRUE(w.exact());
  ASSERT_EQ(w.leaves.size(), 2u);
  EXPECT_EQ(w.leaves[0].ref.offset, 8u);
  EXPECT_EQ(w.leaves[0].ref.next_offset, 12u);
  EXPECT_EQ(w.leaves[1].ref.offset, 12u);
}

TEST(TierScrubTree, AnUnusableGroupIsAProblemAndAnUnknownLeafAndTheWalkGoesOn) {
  const ManifestEntry g1{0, 1, 2, 200, 3, 10, 1};
  const ManifestEntry g2{10, 1, 2, 200, 3, 11, 1};
  const ManifestEntry g3{20, 1, 2, 200, 3, 12, 1};
  const ManifestEntry g4{30, 1, 2, 200, 3, 13, 1};
  Manifest m;
  m.first_offset = 0;
  m.next_offset = 50;
  m.total_size = 900;
  m.entries = {g1, g2, g3, g4, fragment(40, 20)};
  ASSERT_TRUE(validate_manifest(m, "test").ok());
  std::map<std::string, GroupRead> reads;
  // g1 is missing, g2 does not decode, g3 is not the group its entry names
  // (it ends at 25, the root says 30), g4 cannot be read now.
  reads[tree_keys().for_entry(g1)] = GroupRead{ReadState::missing, {}, "404"};
  reads[tree_keys().for_entry(g2)] = GroupRead{ReadState::corrupt, {}, "bad magic"};
  reads[tree_keys().for_entry(g3)] =
      GroupRead{ReadState::ok, ManifestGroup{1, 20, 25, 1, 2, 200, 3, {fragment(20, 30, 200)}}, ""};
  reads[tree_keys().for_entry(g4)] = GroupRead{ReadState::unreadable, {}, "HTTP 503"};
  TreeWalk w = walk_tree(m, tree_keys(), reads);
  EXPECT_TRUE(w.complete());
  EXPECT_FALSE(w.exact());
  ASSERT_EQ(w.problems.size(), 4u);
  EXPECT_EQ(w.problems[0].kind, FindingKind::missing_object);
  EXPECT_EQ(w.problems[0].key, tree_keys().for_entry(g1));
  EXPECT_EQ(w.problems[0].first_offset, 0u);
  EXPECT_EQ(w.problems[0].next_offset, 10u);
  EXPECT_EQ(w.problems[1].kind, FindingKind::corrupt_group);
  EXPECT_EQ(w.problems[1].detail, "bad magic");
  EXPECT_EQ(w.problems[2].kind, FindingKind::corrupt_group);
  EXPECT_NE(w.problems[2].detail.find("[20, 25)"), std::string::npos) << w.problems[2].detail;
  EXPECT_EQ(w.problems[3].kind, FindingKind::unreadable);
  ASSERT_EQ(w.leaves.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_FALSE(w.leaves[i].known) << i;
  EXPECT_TRUE(w.leaves[4].known);
  EXPECT_EQ(w.leaves[4].ref.offset, 40u);
  EXPECT_EQ(w.leaves[3].ref.offset, 30u);
  EXPECT_EQ(w.leaves[3].ref.next_offset, 40u);
}

TEST(TierScrubTree, UnreadGroupsAreListedForTheNextRound) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(9);
  ASSERT_FALSE(t.store.size() == 0);
  TreeWalk w = walk_tree(t.root, tree_keys(), {});
  EXPECT_FALSE(w.complete());
  EXPECT_EQ(w.unread.size(), w.groups.size());
  EXPECT_TRUE(w.problems.empty());
}

}  // namespace strata::tier
