// The GC rules of gc_plan.h, case by case: each test names the rule it
// pins, with the boundary on both sides where the rule has one.
#include "tier/gc_plan.h"

#include <gtest/gtest.h>

namespace strata::tier {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kGrace = 60'000;
constexpr uint64_t kEpoch = 5;
constexpr uint64_t kNext = 1000;  // the persisted manifest's next offset
constexpr int64_t kRootTime = kNow - 10 * kGrace;

ObjectKeys keys(const std::string& stream = "s1") {
  return *ObjectKeys::make("t", stream);
}

objstore::ObjectInfo object(const std::string& key, std::optional<int64_t> age_ms) {
  objstore::ObjectInfo o{key, 10, "", std::nullopt, std::nullopt};
  if (age_ms) o.last_modified_ms = kNow - *age_ms;
  return o;
}

// A stream in the catalog at kEpoch whose persisted manifest ends at kNext
// and whose root was written at kRootTime; its tree references `refs`.
GcStream present(std::vector<std::string> refs = {}) {
  GcStream s;
  s.entry = catalog::StreamEntry{"s1", kEpoch, keys().root(kEpoch, 1), 9};
  s.exact = true;
  s.referenced.insert(s.entry->root_key);
  for (auto& r : refs) s.referenced.insert(r);
  s.next_offset = kNext;
  s.root_last_modified_ms = kRootTime;
  return s;
}

GcVerdict verdict(const std::string& key, std::optional<int64_t> age_ms, const GcStream& s) {
  auto k = parse_node_key("t", key);
  EXPECT_TRUE(k.has_value()) << key;
  if (!k) return GcVerdict::unparsable;
  return gc_verdict(*k, object(key, age_ms), s, kNow, kGrace);
}

const int64_t kOld = 2 * kGrace;

}  // namespace

TEST(TierGcPlan, NodeKeysSplitIntoStreamAndTierKey) {
  auto f = parse_node_key("t", keys("a.b").fragment(42, 3, 0xabc));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->component, "a.b");
  EXPECT_EQ(f->parsed.type, ObjectType::fragment);
  EXPECT_EQ(f->parsed.first_offset, 42u);
  EXPECT_EQ(f->parsed.epoch, 3u);
  auto r = parse_node_key("t", keys().root(7, 1));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->parsed.type, ObjectType::root);
  auto g = parse_node_key("t", keys().group(0, 2, 1));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->parsed.type, ObjectType::group);
  auto bare = parse_node_key("", ObjectKeys::make("", "s1")->fragment(1, 1, 1));
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->component, "s1");
  auto deep = parse_node_key("a/b", ObjectKeys::make("a/b", "s1")->root(1, 1));
  ASSERT_TRUE(deep.has_value());
}

// A stream is known by its key segment: an escaped one ("a%2Fb") and a
// hashed one (a long name, which cannot be decoded) parse alike, and the
// hash segment must be the CRC32C of the segment.
TEST(TierGcPlan, NodeKeysOfAnyNameSplitIntoComponentAndTierKey) {
  for (const std::string& name : {std::string("a/b"), std::string(".."), std::string(255, 'n'),
                                  std::string("orders 2026/Q1 \xe2\x82\xac")}) {
    auto k = ObjectKeys::make("t", name);
    ASSERT_TRUE(k.ok());
    auto f = parse_node_key("t", k->fragment(42, 3, 0xabc));
    ASSERT_TRUE(f.has_value()) << name;
    EXPECT_EQ(f->component, k->component());
    EXPECT_EQ(f->parsed.first_offset, 42u);
    const std::string wrong_hash = "t/00000000/" + k->component() + "/meta/root.1.00000001";
    EXPECT_FALSE(parse_node_key("t", wrong_hash).has_value());
  }
}

TEST(TierGcPlan, Rule1KeysThatAreNotTierKeysOfTheirStreamAreNeverCandidates) {
  const std::string good = keys().fragment(1, 1, 1);
  for (std::string bad : {
           std::string("t/readme.txt"),
           std::string("other/") + good.substr(2),          // another prefix
           "t/00000000/" + good.substr(11),                 // the hash is not the stream's
           keys().stream_prefix() + "data/junk",            // no tier key
           keys().stream_prefix() + "meta/root.x.y",        //
           keys().stream_prefix() + "tmp/" + "x",           //
           std::string("t/") + stream_hash8("s1") + "/s1",  // no object part
       }) {
    EXPECT_FALSE(parse_node_key("t", bad).has_value()) << bad;
  }
  GcPlan p = plan_gc({object("t/readme.txt", kOld)}, "t", {}, kNow, kGrace);
  EXPECT_TRUE(p.candidates.empty());
  ASSERT_EQ(p.kept.size(), 1u);
  EXPECT_EQ(p.kept[0].verdict, GcVerdict::unparsable);
  EXPECT_EQ(p.kept[0].component, "");
}

TEST(TierGcPlan, Rule2AnObjectWithoutATimeIsKept) {
  EXPECT_EQ(verdict(keys().fragment(1, 1, 1), std::nullopt, GcStream{}), GcVerdict::no_time);
}

TEST(TierGcPlan, Rule3ReferencedObjectsAreKeptHoweverOld) {
  const std::string f = keys().fragment(0, kEpoch - 2, 3);
  const std::string g = keys().group(0, 4, 1);
  GcStream s = present({f, g});
  EXPECT_EQ(verdict(f, 100 * kGrace, s), GcVerdict::referenced);
  EXPECT_EQ(verdict(g, 100 * kGrace, s), GcVerdict::referenced);
  EXPECT_EQ(verdict(s.entry->root_key, 100 * kGrace, s), GcVerdict::referenced);
}

TEST(TierGcPlan, Rule4AStreamWhoseTreeWasNotReadKeepsEverything) {
  GcStream s = present();
  s.exact = false;
  EXPECT_EQ(verdict(keys().fragment(0, 1, 3), 100 * kGrace, s), GcVerdict::unknown_tree);
  EXPECT_EQ(verdict(keys().root(1, 3), 100 * kGrace, s), GcVerdict::unknown_tree);
}

TEST(TierGcPlan, Rule5ObjectsYoungerThanTheGraceAreKept) {
  const std::string f = keys().fragment(0, 1, 3);
  EXPECT_EQ(verdict(f, kGrace - 1, GcStream{}), GcVerdict::young);
  EXPECT_EQ(verdict(f, kGrace, GcStream{}), GcVerdict::candidate) << "exactly the grace is old";
  EXPECT_EQ(verdict(f, kGrace - 1, present()), GcVerdict::young);
  EXPECT_EQ(verdict(f, -5000, present()), GcVerdict::young) << "a store clock ahead of ours";
}

TEST(TierGcPlan, Rule6aFragmentsPendingForTheNextPersistAreKept) {
  GcStream s = present();
  // The current epoch, at or above the persisted next offset: kept.
  EXPECT_EQ(verdict(keys().fragment(kNext, kEpoch, 1), kOld, s), GcVerdict::pending_fragment);
  EXPECT_EQ(verdict(keys().fragment(kNext + 50, kEpoch, 1), 1000 * kGrace, s),
            GcVerdict::pending_fragment)
      << "however long the persist stalls";
  // A higher epoch cannot be listed before the entry was read; kept anyway.
  EXPECT_EQ(verdict(keys().fragment(kNext, kEpoch + 1, 1), kOld, s), GcVerdict::pending_fragment);
  // Below the persisted next offset: an upload the manifest never took (a
  // retried upload's first copy).
  EXPECT_EQ(verdict(keys().fragment(kNext - 1, kEpoch, 1), kOld, s), GcVerdict::candidate);
  // An older epoch above it: a deposed writer's upload, never persistable.
  EXPECT_EQ(verdict(keys().fragment(kNext, kEpoch - 1, 1), kOld, s), GcVerdict::candidate);
}

TEST(TierGcPlan, Rule6bRootsAndGroupsWrittenAfterTheCurrentRootAreKept) {
  GcStream s = present();
  const int64_t root_age = kNow - kRootTime;
  for (const std::string& k : {keys().root(kEpoch, 2), keys().group(0, 3, 1)}) {
    // Written after the current root (a persist or rebalance in flight).
    EXPECT_EQ(verdict(k, root_age - 1000, s), GcVerdict::pending_meta) << k;
    // Down to the grace before it: kept; older: a candidate.
    EXPECT_EQ(verdict(k, root_age + kGrace, s), GcVerdict::pending_meta) << k;
    EXPECT_EQ(verdict(k, root_age + kGrace + 1, s), GcVerdict::candidate) << k;
  }
}

TEST(TierGcPlan, Rule6bWithoutARootOrItsTimeEveryRootAndGroupIsKept) {
  GcStream no_root = present();
  no_root.entry->root_key = "";
  no_root.referenced.clear();
  no_root.next_offset = 0;
  no_root.root_last_modified_ms.reset();
  EXPECT_EQ(verdict(keys().root(kEpoch, 2), 1000 * kGrace, no_root), GcVerdict::pending_meta);
  EXPECT_EQ(verdict(keys().group(0, 2, 1), 1000 * kGrace, no_root), GcVerdict::pending_meta);
  // Its fragments follow rule 6a from offset 0.
  EXPECT_EQ(verdict(keys().fragment(0, kEpoch, 2), 1000 * kGrace, no_root),
            GcVerdict::pending_fragment);
  EXPECT_EQ(verdict(keys().fragment(0, kEpoch - 1, 2), 1000 * kGrace, no_root),
            GcVerdict::candidate);
  GcStream no_time = present();
  no_time.root_last_modified_ms.reset();
  EXPECT_EQ(verdict(keys().root(kEpoch, 2), 1000 * kGrace, no_time), GcVerdict::pending_meta);
}

TEST(TierGcPlan, Rule7OldObjectsOfAStreamNotInTheCatalogAreCandidates) {
  for (const std::string& k :
       {keys().fragment(0, 1, 1), keys().root(1, 1), keys().group(0, 1, 2)}) {
    EXPECT_EQ(verdict(k, kOld, GcStream{}), GcVerdict::candidate) << k;
  }
}

TEST(TierGcPlan, PlanSortsTheListingAndCountsByStream) {
  const std::string ref = keys().fragment(0, kEpoch, 1);
  const std::string pending = keys().fragment(kNext, kEpoch, 2);
  const std::string stale = keys().fragment(10, kEpoch, 3);
  const std::string gone = keys("gone").fragment(0, 1, 1);
  const std::string young_gone = keys("gone").root(1, 1);
  std::map<std::string, GcStream> streams{{"s1", present({ref})}};
  GcPlan p = plan_gc({object(ref, kOld), object(pending, kOld), object(stale, kOld),
                      object(gone, kOld), object(young_gone, 10), object("t/x", kOld)},
                     "t", streams, kNow, kGrace);
  ASSERT_EQ(p.candidates.size(), 2u);
  EXPECT_EQ(p.candidates[0].key, stale);
  EXPECT_EQ(p.candidates[0].component, "s1");
  EXPECT_EQ(p.candidates[0].age_ms, kOld);
  EXPECT_EQ(p.candidates[1].key, gone);
  EXPECT_EQ(p.candidates[1].component, "gone");
  EXPECT_EQ(p.candidate_bytes(), 20u);
  ASSERT_EQ(p.kept.size(), 3u) << "referenced objects are counted, not listed";
  EXPECT_EQ(p.kept[0].verdict, GcVerdict::pending_fragment);
  EXPECT_EQ(p.kept[1].verdict, GcVerdict::young);
  EXPECT_EQ(p.kept[2].verdict, GcVerdict::unparsable);
  EXPECT_EQ(p.count(GcVerdict::referenced), 1u);
  EXPECT_EQ(p.count(GcVerdict::candidate), 2u);
  EXPECT_EQ(p.counts["gone"][GcVerdict::young], 1u);
  EXPECT_EQ(p.counts[""][GcVerdict::unparsable], 1u);
}

TEST(TierGcPlan, CandidatesOfStreamsWhoseEntryChangedAreSkipped) {
  const std::string a = keys("a").fragment(0, 1, 1);
  const std::string b = keys("b").fragment(0, 1, 1);
  const std::string c = keys("c").fragment(0, 1, 1);
  const std::string d = keys("d").fragment(0, 1, 1);
  const std::string e = keys("e").fragment(0, 1, 1);
  auto with_entry = [](const std::string& name, uint64_t revision) {
    GcStream s;
    s.entry = catalog::StreamEntry{name, 9, "", revision};
    s.exact = true;
    return s;
  };
  // a: unchanged. b: persisted to since (revision). c: created since (a
  // stream being created must not lose its objects). d: deleted since.
  // e: absent at both reads.
  std::map<std::string, GcStream> streams{
      {"a", with_entry("a", 3)}, {"b", with_entry("b", 3)}, {"d", with_entry("d", 3)}};
  std::map<std::string, catalog::StreamEntry> now{
      {"a", {"a", 9, "", 3}}, {"b", {"b", 9, "", 4}}, {"c", {"c", 1, "", 1}}};
  GcPlan p;
  for (const auto& [k, s] : {std::pair{a, "a"}, {b, "b"}, {c, "c"}, {d, "d"}, {e, "e"}}) {
    p.candidates.push_back(GcObject{k, s, 10, kOld, GcVerdict::candidate});
    p.counts[s][GcVerdict::candidate] += 1;
  }
  auto changed = drop_changed(p, streams, now);
  EXPECT_EQ(changed, (std::set<std::string>{"b", "c", "d"}));
  ASSERT_EQ(p.candidates.size(), 2u);
  EXPECT_EQ(p.candidates[0].key, a);
  EXPECT_EQ(p.candidates[1].key, e);
  ASSERT_EQ(p.skipped.size(), 3u);
  for (const auto& s : p.skipped) EXPECT_EQ(s.verdict, GcVerdict::entry_changed);
  EXPECT_EQ(p.count(GcVerdict::candidate), 2u);
  EXPECT_EQ(p.count(GcVerdict::entry_changed), 3u);
}

}  // namespace strata::tier
