#include "tier/fragment_iterator.h"

#include <gtest/gtest.h>

#include "tier/manifest_lookup.h"
#include "tier/manifest_retention.h"
#include "tier_test_util.h"

namespace strata::tier {
namespace {

using test::TreeBuilder;

// Drains an iterator; fails the test on an error.
std::vector<FragmentRef> drain(FragmentIterator& it) {
  std::vector<FragmentRef> out;
  while (true) {
    auto r = it.next();
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    if (!r.ok() || !r->has_value()) return out;
    out.push_back(**r);
  }
}

// Expected refs: the builder's fragments from index `from` on.
std::vector<FragmentRef> expected(const TreeBuilder& t, size_t from = 0) {
  std::vector<FragmentRef> out;
  for (size_t i = from; i < t.fragments.size(); ++i) {
    uint64_t next = i + 1 < t.fragments.size() ? t.fragments[i + 1].offset : t.root.next_offset;
    out.push_back(FragmentRef::of(t.fragments[i], next));
  }
  return out;
}

// Index of the builder fragment holding `offset`.
size_t fragment_at(const TreeBuilder& t, uint64_t offset) {
  size_t i = 0;
  while (i + 1 < t.fragments.size() && t.fragments[i + 1].offset <= offset) ++i;
  return i;
}

}  // namespace

TEST(TierFragmentIterator, EmptyManifestEndsAtOnce) {
  FragmentIterator it(std::make_shared<Manifest>(Manifest::empty_at(10)), 0, nullptr);
  auto r = it.next();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(TierFragmentIterator, SingleFragmentThenEnd) {
  TreeBuilder t(RebalancePolicy{4, 2}, 5);
  t.append(3, 100, 1);
  FragmentIterator it(t.shared(), 0, t.fetch());
  auto refs = drain(it);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].offset, 5u);
  EXPECT_EQ(refs[0].next_offset, 8u);
  EXPECT_EQ(it.position(), 8u);
}

TEST(TierFragmentIterator, MultipleFragmentsInOrderWithSizes) {
  TreeBuilder t(RebalancePolicy{100, 2});
  t.grow(7);
  FragmentIterator it(t.shared(), 0, t.fetch());
  auto refs = drain(it);
  EXPECT_EQ(refs, expected(t));
  for (size_t i = 0; i < refs.size(); ++i) EXPECT_EQ(refs[i].size, t.fragments[i].size);
  EXPECT_EQ(it.group_reads(), 0u);
}

TEST(TierFragmentIterator, DescendsIntoGroupKiloAndMegaGroups) {
  for (int kind : {1, 2, 3}) {
    TreeBuilder t(RebalancePolicy{4, 2});
    uint64_t n = kind == 1 ? 4 : kind == 2 ? 8 : 16;
    t.grow(n + 1);  // one level-`kind` group plus a trailing fragment
    ASSERT_EQ(t.root.entries[0].kind, kind);
    FragmentIterator it(t.shared(), 0, t.fetch());
    EXPECT_EQ(drain(it), expected(t)) << "kind " << kind;
    // Each group object is read once.
    EXPECT_EQ(it.group_reads(), uint64_t((1 << kind) - 1)) << "kind " << kind;
  }
}

TEST(TierFragmentIterator, EndOfManifestAfterLastStaysAtTheEnd) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(9);
  FragmentIterator it(t.shared(), 0, t.fetch());
  drain(it);
  for (int i = 0; i < 3; ++i) {
    auto r = it.next();
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->has_value());
  }
  EXPECT_EQ(it.position(), t.root.next_offset);
}

TEST(TierFragmentIterator, StartsInTheMiddleAtTheFragmentHoldingTheOffset) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(37);
  for (uint64_t off = 0; off < t.root.next_offset; off += 3) {
    FragmentIterator it(t.shared(), off, t.fetch());
    EXPECT_EQ(drain(it), expected(t, fragment_at(t, off))) << "offset " << off;
  }
}

TEST(TierFragmentIterator, StartBeyondTheEndIsTheEnd) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(5);
  FragmentIterator it(t.shared(), t.root.next_offset + 100, t.fetch());
  auto r = it.next();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  EXPECT_EQ(t.store.fetches, 0u);
}

TEST(TierFragmentIterator, StartAtAGroupBoundary) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(13);
  // The first fragment of the second group.
  uint64_t boundary = t.fragments[4].offset;
  FragmentIterator it(t.shared(), boundary, t.fetch());
  EXPECT_EQ(drain(it), expected(t, 4));
}

TEST(TierFragmentIterator, GroupFetchFailedIsAnErrorValueAndRetryable) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(6);
  bool fail = true;
  GroupFetch real = t.fetch();
  GroupFetch flaky = [&](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
    if (fail) return Error(Errc::transient, "503 SlowDown");
    return real(e);
  };
  FragmentIterator it(t.shared(), 0, flaky);
  auto r = it.next();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(is_group_fetch_failure(r.error()));
  EXPECT_EQ(r.error().code, Errc::transient);
  EXPECT_NE(r.error().message.find("503 SlowDown"), std::string::npos);
  EXPECT_NE(r.error().message.find("offset 0"), std::string::npos);
  fail = false;
  EXPECT_EQ(drain(it), expected(t));
}

TEST(TierFragmentIterator, GroupFetchFailedMidTraversalKeepsThePosition) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(13);  // [k2, g, f...]: the second group is entered mid-walk
  int calls = 0;
  GroupFetch real = t.fetch();
  GroupFetch flaky = [&](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
    if (++calls == 3) return Error(Errc::not_found, "404");
    return real(e);
  };
  FragmentIterator it(t.shared(), 0, flaky);
  std::vector<FragmentRef> got;
  bool failed = false;
  while (true) {
    auto r = it.next();
    if (!r.ok()) {
      EXPECT_FALSE(failed);
      failed = true;
      EXPECT_EQ(it.position(), got.back().next_offset);
      continue;
    }
    if (!r->has_value()) break;
    got.push_back(**r);
  }
  EXPECT_TRUE(failed);
  EXPECT_EQ(got, expected(t));
}

TEST(TierFragmentIterator, AFetchedGroupThatIsNotTheEntrysGroupIsRejected) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(5);
  GroupFetch wrong = [&](const ManifestEntry&) -> Result<std::shared_ptr<const ManifestGroup>> {
    ManifestGroup g;
    g.level = 1;
    g.first_offset = 1;  // not the entry's offset
    g.next_offset = 99;
    return std::make_shared<const ManifestGroup>(g);
  };
  FragmentIterator it(t.shared(), 0, wrong);
  auto r = it.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::corrupt);
  EXPECT_TRUE(is_group_fetch_failure(r.error()));
}

TEST(TierFragmentIterator, RefreshAfterExhaustionContinuesWithNewFragments) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(6);
  FragmentIterator it(t.shared(), 0, t.fetch());
  auto first = drain(it);
  size_t seen = first.size();
  t.grow(9);  // the stream grew, with rebalances
  it.refresh(t.shared());
  auto rest = drain(it);
  EXPECT_EQ(rest, expected(t, seen));
}

TEST(TierFragmentIterator, IteratorIsASnapshot) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(6);
  auto snap = t.shared();
  auto want = expected(t);
  FragmentIterator it(snap, 0, t.fetch());
  ASSERT_TRUE(it.next().ok());
  t.grow(20);  // later edits (appends and rebalances) of the caller's manifest
  auto rest = drain(it);
  want.erase(want.begin());
  EXPECT_EQ(rest, want);
}

TEST(TierFragmentIterator, SkipsEntriesBelowFirstOffsetInsideGroups) {
  for (int kind : {1, 2}) {
    TreeBuilder t(RebalancePolicy{4, 2});
    t.grow(kind == 1 ? 6 : 10);
    ASSERT_EQ(t.root.entries[0].kind, kind);
    // Retention moved first_offset into the middle of the first group; the
    // objects below it may be gone: the iterator must not need them.
    RetentionSpec spec;
    spec.max_bytes = t.root.total_size - t.fragments[0].size - t.fragments[1].size;
    auto plan = plan_retention(t.root, spec, 0, t.fetch());
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->fragments_removed, 2u);
    ASSERT_TRUE(apply_edit(t.root, plan->edit).ok());
    ASSERT_EQ(t.root.entries[0].kind, kind);  // the group is partly consumed
    FragmentIterator it(t.shared(), 0, t.fetch());
    EXPECT_EQ(drain(it), expected(t, 2)) << "kind " << kind;
  }
}

TEST(TierFragmentIterator, GroupWithNothingLeftAscendsImmediately) {
  // A group whose entries all lie below the cursor is entered and left
  // without yielding anything.
  ManifestGroup g{1, 0, 4, 1, 2, 30, 1, {}};
  g.entries = {ManifestEntry{0, 1, 1, 10, 1, 1, 0}, ManifestEntry{2, 2, 2, 20, 1, 2, 0}};
  Manifest root;
  root.first_offset = 0;
  root.next_offset = 9;
  root.entries = {ManifestEntry{0, 1, 2, 30, 1, 9, 1}, ManifestEntry{4, 3, 3, 5, 1, 3, 0}};
  root.total_size = 35;
  GroupFetch fetch = [&](const ManifestEntry&) -> Result<std::shared_ptr<const ManifestGroup>> {
    return std::make_shared<const ManifestGroup>(g);
  };
  FragmentIterator it(std::make_shared<Manifest>(root), 3, fetch);
  // Offset 3 is in the group's last fragment [2, 4); start after it.
  auto r = it.next();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->offset, 2u);
  FragmentIterator past(std::make_shared<Manifest>(root), 4, fetch);
  auto r2 = past.next();
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ((*r2)->offset, 4u);
  EXPECT_EQ(past.group_reads(), 0u);  // never entered
  ManifestGroup empty{1, 0, 4, 1, 2, 0, 1, {}};
  GroupFetch empty_fetch =
      [&](const ManifestEntry&) -> Result<std::shared_ptr<const ManifestGroup>> {
    return std::make_shared<const ManifestGroup>(empty);
  };
  FragmentIterator e(std::make_shared<Manifest>(root), 0, empty_fetch);
  auto r3 = e.next();
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ((*r3)->offset, 4u);
}

TEST(TierFragmentIterator, AllRefsOfEmptyFlatAndDeepTrees) {
  auto empty = all_fragments(std::make_shared<Manifest>(Manifest::empty_at(0)), nullptr);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  TreeBuilder flat(RebalancePolicy{100, 2});
  flat.grow(9);
  auto f = all_fragments(flat.shared(), flat.fetch());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, expected(flat));
  TreeBuilder deep(RebalancePolicy{2, 2});
  deep.grow(300);  // kinds up to 8
  EXPECT_GE(deep.root.entries[0].kind, 7);
  auto d = all_fragments(deep.shared(), deep.fetch());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, expected(deep));
}

// ---- lookups ----

TEST(TierManifestLookup, FindsEveryOffsetWithOneReadPerLevel) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(61);
  for (uint64_t off = 0; off < t.root.next_offset; ++off) {
    LookupStats stats;
    auto r = find_fragment(t.root, off, t.fetch(), &stats);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_TRUE(r->has_value());
    size_t i = fragment_at(t, off);
    EXPECT_EQ(**r, expected(t)[i]);
    // Reads = height of the root entry holding the offset.
    uint8_t height = 0;
    for (auto& e : t.root.entries) {
      if (e.offset <= off) height = e.kind;
    }
    EXPECT_EQ(stats.group_reads, height) << off;
  }
  auto before = find_fragment(t.root, t.root.next_offset, t.fetch());
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(before->has_value());
}

TEST(TierManifestLookup, AtMostThreeReadsForThreeGroupLevels) {
  TreeBuilder t(RebalancePolicy{8, 4});
  t.grow(8 * 4 * 4 * 3 + 5);
  uint8_t top = 0;
  for (auto& e : t.root.entries) top = std::max(top, e.kind);
  ASSERT_EQ(top, 3);
  uint32_t worst = 0;
  for (uint64_t off = 0; off < t.root.next_offset; off += 5) {
    LookupStats stats;
    ASSERT_TRUE(find_fragment(t.root, off, t.fetch(), &stats).ok());
    worst = std::max(worst, stats.group_reads);
  }
  EXPECT_EQ(worst, 3u);
}

TEST(TierManifestLookup, FindsByTimestamp) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(40, 1000);  // fragment i has timestamp 1000 + i
  for (int64_t ts = 990; ts < 1045; ++ts) {
    auto r = find_fragment_by_timestamp(t.root, ts, t.fetch());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    if (ts >= 1040) {
      EXPECT_FALSE(r->has_value()) << ts;
      continue;
    }
    ASSERT_TRUE(r->has_value()) << ts;
    size_t want = ts <= 1000 ? 0 : size_t(ts - 1000);
    EXPECT_EQ((*r)->offset, t.fragments[want].offset) << ts;
  }
}

TEST(TierManifestLookup, TimestampLookupIgnoresRetainedEntries) {
  TreeBuilder t(RebalancePolicy{4, 2});
  t.grow(12, 1000);
  ASSERT_TRUE(apply_edit(t.root, TruncateEdit{0, t.fragments[2].offset, 1002,
                                              t.fragments[0].size + t.fragments[1].size})
                  .ok());
  auto r = find_fragment_by_timestamp(t.root, 0, t.fetch());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->offset, t.fragments[2].offset);
  auto below = find_fragment(t.root, 0, t.fetch());
  ASSERT_TRUE(below.ok());
  EXPECT_FALSE(below->has_value());
}

}  // namespace strata::tier
