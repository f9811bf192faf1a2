// The scrub core, one rule per test: a manifest of three fragments, the
// bucket's listing and what reading each fragment showed, changed one
// thing at a time.
#include "tier/scrub.h"

#include <gtest/gtest.h>

namespace strata::tier {
namespace {

constexpr uint64_t kEpoch = 4;
constexpr uint64_t kData = 100;
constexpr uint32_t kChunks = 2;
constexpr int64_t kNow = 1'700'000'000'000;

ObjectKeys keys() {
  return *ObjectKeys::make("t", "s1");
}

// [0, 10), [10, 20), [20, 30), each kData bytes of kChunks chunks.
struct Fixture {
  ScrubInput in;
  Fixture() {
    in.stream = "s1";
    Manifest m;
    m.first_offset = 0;
    m.next_offset = 30;
    m.total_size = 3 * kData;
    for (uint32_t i = 0; i < 3; ++i) {
      m.entries.push_back(ManifestEntry{i * 10, 1, 2, kData, kEpoch, 100 + i, kKindFragment});
    }
    const std::string root_key = keys().root(kEpoch, 1);
    in.entry = catalog::StreamEntry{"s1", kEpoch, root_key, 7};
    in.root.manifest = m;
    in.walk = walk_tree(m, keys(), {});
    in.listing.push_back(objstore::ObjectInfo{root_key, 200, "", std::nullopt, kNow - 5000});
    for (const auto& leaf : in.walk.leaves) {
      in.listing.push_back(objstore::ObjectInfo{leaf.key, fragment_object_size(kData, kChunks), "",
                                                std::nullopt, kNow - 9000});
      FragmentCheck c;
      c.read = true;
      c.header = FragmentHeader{
          FragmentMeta{leaf.ref.offset, leaf.ref.next_offset, 1, 2, kData, kChunks}, kEpoch};
      c.tail_checked = true;
      in.checks.push_back(c);
    }
    in.now_ms = kNow;
  }
  std::string key(size_t i) const { return in.walk.leaves[i].key; }
  FragmentMeta& header(size_t i) { return in.checks[i].header->meta; }
  ScrubReport report() const { return scrub_report(in, keys()); }
};

std::vector<FindingKind> kinds(const ScrubReport& r) {
  std::vector<FindingKind> out;
  for (const auto& f : r.findings) out.push_back(f.kind);
  return out;
}

}  // namespace

TEST(TierScrub, ACleanStreamHasNoFindings) {
  Fixture fx;
  auto r = fx.report();
  EXPECT_TRUE(r.findings.empty());
  EXPECT_FALSE(r.damaged());
  EXPECT_FALSE(r.incomplete());
  EXPECT_EQ(r.fragments, 3u);
  EXPECT_EQ(r.fragment_bytes, 3 * kData);
  EXPECT_EQ(r.headers_checked, 3u);
  EXPECT_EQ(r.objects_listed, 4u);
  EXPECT_EQ(r.first_offset, 0u);
  EXPECT_EQ(r.next_offset, 30u);
  EXPECT_EQ(r.revision, 7u);
}

TEST(TierScrub, AReferencedFragmentNotListedIsMissingWithItsOffsets) {
  Fixture fx;
  fx.in.listing.erase(fx.in.listing.begin() + 2);  // the second fragment
  fx.in.checks[1] = FragmentCheck{};
  auto r = fx.report();
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, FindingKind::missing_object);
  EXPECT_EQ(r.findings[0].key, fx.key(1));
  EXPECT_EQ(r.findings[0].first_offset, 10u);
  EXPECT_EQ(r.findings[0].next_offset, 20u);
  EXPECT_TRUE(r.damaged());
}

TEST(TierScrub, AFragmentGoneWhenReadIsMissing) {
  Fixture fx;
  fx.in.checks[2] = FragmentCheck{};
  fx.in.checks[2].read = true;
  fx.in.checks[2].vanished = true;
  auto r = fx.report();
  ASSERT_EQ(kinds(r), std::vector<FindingKind>{FindingKind::missing_object});
  EXPECT_EQ(r.findings[0].key, fx.key(2));
}

TEST(TierScrub, AHeaderNarrowerThanItsEntryIsAMismatchAndLeavesAGap) {
  Fixture fx;
  fx.header(1).next_offset = 15;
  auto r = fx.report();
  ASSERT_EQ(kinds(r), (std::vector<FindingKind>{FindingKind::header_mismatch, FindingKind::gap}));
  EXPECT_EQ(r.findings[0].key, fx.key(1));
  EXPECT_NE(r.findings[0].detail.find("[10, 15)"), std::string::npos) << r.findings[0].detail;
  EXPECT_EQ(r.findings[1].first_offset, 15u);
  EXPECT_EQ(r.findings[1].next_offset, 20u);
  EXPECT_EQ(r.findings[1].key, fx.key(2)) << "a gap names the fragment after it";
}

TEST(TierScrub, AHeaderWiderThanItsEntryOverlapsTheNextFragment) {
  Fixture fx;
  fx.header(1).next_offset = 25;
  auto r = fx.report();
  ASSERT_EQ(kinds(r),
            (std::vector<FindingKind>{FindingKind::header_mismatch, FindingKind::overlap}));
  EXPECT_EQ(r.findings[1].key, fx.key(2));
  EXPECT_EQ(r.findings[1].first_offset, 20u);
  EXPECT_EQ(r.findings[1].next_offset, 25u);
}

TEST(TierScrub, FragmentsEndingBeforeTheNextOffsetLeaveAGapAtTheEnd) {
  Fixture fx;
  fx.header(2).next_offset = 28;
  auto r = fx.report();
  ASSERT_EQ(kinds(r), (std::vector<FindingKind>{FindingKind::header_mismatch, FindingKind::gap}));
  EXPECT_EQ(r.findings[1].key, r.root_key);
  EXPECT_EQ(r.findings[1].first_offset, 28u);
  EXPECT_EQ(r.findings[1].next_offset, 30u);
}

TEST(TierScrub, AFirstFragmentAboveTheFirstOffsetLeavesAGapAtTheStart) {
  Fixture fx;
  fx.header(0).first_offset = 3;
  auto r = fx.report();
  ASSERT_EQ(kinds(r), (std::vector<FindingKind>{FindingKind::header_mismatch, FindingKind::gap}));
  EXPECT_EQ(r.findings[1].first_offset, 0u);
  EXPECT_EQ(r.findings[1].next_offset, 3u);
}

TEST(TierScrub, AHeaderOfAnotherEpochOrDataSizeIsAMismatch) {
  Fixture fx;
  fx.in.checks[0].header->epoch = kEpoch + 1;
  fx.header(2).size = kData + 1;
  fx.header(2).chunk_count = kChunks;
  fx.in.listing[3].size = fragment_object_size(kData + 1, kChunks);
  auto r = fx.report();
  ASSERT_EQ(kinds(r),
            (std::vector<FindingKind>{FindingKind::header_mismatch, FindingKind::header_mismatch}));
  EXPECT_EQ(r.findings[0].key, fx.key(0));
  EXPECT_EQ(r.findings[1].key, fx.key(2));
}

TEST(TierScrub, AListedSizeOtherThanTheHeaderImpliesIsASizeMismatch) {
  Fixture fx;
  fx.in.listing[1].size -= 7;  // truncated
  auto r = fx.report();
  ScrubFinding f = r.findings.size() == 1 ? r.findings[0] : ScrubFinding{};
  ASSERT_EQ(kinds(r), std::vector<FindingKind>{FindingKind::size_mismatch});
  EXPECT_EQ(f.key, fx.key(0));
  EXPECT_EQ(f.size, fragment_object_size(kData, kChunks) - 7);
  EXPECT_EQ(f.first_offset, 0u);
}

TEST(TierScrub, HeaderIndexAndWholeObjectFailuresAreCrcMismatches) {
  Fixture fx;
  fx.in.checks[0].header.reset();
  fx.in.checks[0].header_error = "header CRC mismatch";
  fx.in.checks[1].tail_error = "index CRC mismatch";
  fx.in.checks[2].tail_checked = false;
  fx.in.checks[2].whole_checked = true;
  fx.in.checks[2].whole_error = "chunk at offset 25: data CRC mismatch";
  auto r = fx.report();
  ASSERT_EQ(kinds(r),
            (std::vector<FindingKind>{FindingKind::crc_mismatch, FindingKind::crc_mismatch,
                                      FindingKind::crc_mismatch}));
  EXPECT_EQ(r.findings[0].key, fx.key(0));
  EXPECT_NE(r.findings[0].detail.find("header CRC mismatch"), std::string::npos);
  EXPECT_NE(r.findings[1].detail.find("index CRC mismatch"), std::string::npos);
  EXPECT_NE(r.findings[2].detail.find("data CRC"), std::string::npos);
  EXPECT_EQ(r.fragments_verified, 0u);
}

TEST(TierScrub, AFragmentReadWholeAndVerifiedIsCounted) {
  Fixture fx;
  fx.in.checks[1].tail_checked = false;
  fx.in.checks[1].whole_checked = true;
  auto r = fx.report();
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.fragments_verified, 1u);
}

TEST(TierScrub, AnUnreadableFragmentMakesTheScrubIncompleteNotDamaged) {
  Fixture fx;
  fx.in.checks[1] = FragmentCheck{};
  fx.in.checks[1].read = true;
  fx.in.checks[1].read_error = "get: HTTP 503 SlowDown [transient]";
  auto r = fx.report();
  ASSERT_EQ(kinds(r), std::vector<FindingKind>{FindingKind::unreadable});
  EXPECT_FALSE(r.damaged());
  EXPECT_TRUE(r.incomplete());
}

TEST(TierScrub, UnreferencedObjectsAreOrphansWithTheirAgeAndNotDamage) {
  Fixture fx;
  const std::string old_root = keys().root(kEpoch - 1, 99);
  const std::string stray = keys().fragment(30, kEpoch, 77);
  fx.in.listing.push_back(objstore::ObjectInfo{old_root, 150, "", std::nullopt, kNow - 60'000});
  fx.in.listing.push_back(objstore::ObjectInfo{stray, 500, "", std::nullopt, std::nullopt});
  auto r = fx.report();
  ASSERT_EQ(kinds(r), (std::vector<FindingKind>{FindingKind::orphan, FindingKind::orphan}));
  EXPECT_FALSE(r.damaged());
  EXPECT_EQ(r.findings[0].key, old_root);
  EXPECT_EQ(r.findings[0].age_ms, 60'000);
  EXPECT_EQ(r.findings[0].size, 150u);
  EXPECT_EQ(r.findings[1].key, stray);
  EXPECT_EQ(r.findings[1].first_offset, 30u);
  EXPECT_FALSE(r.findings[1].age_ms.has_value()) << "the store gave no time";
}

TEST(TierScrub, AKeyThatIsNotATierKeyIsUnparsableAndDamage) {
  Fixture fx;
  const std::string bad = keys().stream_prefix() + "data/not-a-fragment";
  fx.in.listing.push_back(objstore::ObjectInfo{bad, 3, "", std::nullopt, kNow});
  auto r = fx.report();
  ASSERT_EQ(kinds(r), std::vector<FindingKind>{FindingKind::unparsable_key});
  EXPECT_EQ(r.findings[0].key, bad);
  EXPECT_NE(r.findings[0].detail.find("no .frag suffix"), std::string::npos)
      << r.findings[0].detail;
  EXPECT_TRUE(r.damaged());
}

TEST(TierScrub, AMissingOrCorruptRootIsReportedAndNothingElseIsReferenced) {
  for (ReadState state : {ReadState::missing, ReadState::corrupt}) {
    Fixture fx;
    fx.in.root.state = state;
    fx.in.root.error = "because";
    auto r = fx.report();
    ASSERT_EQ(r.findings.size(), 4u);  // the root, then three orphaned fragments
    EXPECT_EQ(r.findings[0].kind,
              state == ReadState::missing ? FindingKind::missing_root : FindingKind::corrupt_root);
    EXPECT_EQ(r.findings[0].key, r.root_key);
    for (size_t i = 1; i < 4; ++i) EXPECT_EQ(r.findings[i].kind, FindingKind::orphan);
    EXPECT_TRUE(r.damaged());
  }
}

TEST(TierScrub, AStreamWithoutARootIsCleanAndItsObjectsAreOrphans) {
  Fixture fx;
  fx.in.entry->root_key = "";
  fx.in.listing.erase(fx.in.listing.begin());
  auto r = fx.report();
  EXPECT_EQ(r.count(FindingKind::orphan), 3u);
  EXPECT_FALSE(r.damaged());
  EXPECT_EQ(r.fragments, 0u);
}

TEST(TierScrub, GroupProblemsOfTheWalkAreFindingsAndTheirRangesNoGap) {
  Fixture fx;
  // The first fragment's place is taken by a group the shell found missing.
  Manifest m = fx.in.root.manifest;
  m.entries[0].kind = 1;
  fx.in.root.manifest = m;
  std::map<std::string, GroupRead> reads;
  reads[keys().for_entry(m.entries[0])] = GroupRead{ReadState::missing, {}, "404"};
  fx.in.walk = walk_tree(m, keys(), reads);
  auto r = fx.report();
  // The group's missing, and the fragment listed where it was is an orphan now.
  ASSERT_EQ(kinds(r), (std::vector<FindingKind>{FindingKind::missing_object, FindingKind::orphan}));
  EXPECT_EQ(r.findings[0].key, keys().for_entry(m.entries[0]));
  EXPECT_EQ(r.findings[0].first_offset, 0u);
  EXPECT_EQ(r.findings[0].next_offset, 10u);
  EXPECT_EQ(r.groups, 1u);
  EXPECT_EQ(r.fragments, 2u);
}

TEST(TierScrub, FindingNamesAndDamageClasses) {
  EXPECT_EQ(finding_name(FindingKind::missing_object), "missing_object");
  EXPECT_EQ(finding_name(FindingKind::crc_mismatch), "crc_mismatch");
  EXPECT_TRUE(is_damage(FindingKind::gap));
  EXPECT_TRUE(is_damage(FindingKind::unparsable_key));
  EXPECT_FALSE(is_damage(FindingKind::orphan));
  EXPECT_FALSE(is_damage(FindingKind::unreadable));
}

}  // namespace strata::tier
