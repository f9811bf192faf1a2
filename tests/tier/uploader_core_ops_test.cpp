// The uploader core's single-mutator operations: rebalance, retention, and
// what happens when they overlap, fail or time out.
#include <gtest/gtest.h>

#include "tier/manifest_retention.h"
#include "tier/uploader_core.h"
#include "uploader_harness.h"

namespace strata::tier {

using namespace upload;
using test::all_of;
using test::Harness;
using test::has;
using test::one;
using test::test_config;

namespace {

UploaderConfig rebalance_config(uint32_t fragments = 4, uint32_t groups = 2,
                                uint32_t persist_threshold = 100) {
  UploaderConfig c = test_config();
  c.rebalance = RebalancePolicy{fragments, groups};
  c.persist_threshold = persist_threshold;
  return c;
}

UploaderConfig retention_config(uint64_t max_bytes, uint32_t persist_threshold = 5) {
  UploaderConfig c = test_config();
  c.retention.max_bytes = max_bytes;
  c.retention_interval_ms = 0;
  c.persist_threshold = persist_threshold;
  return c;
}

// Completes every group upload the core asks for, until it asks for none;
// returns the effects of the last completion and the uploads seen.
Effects complete_groups(Harness& h, Effects fx, std::vector<UploadGroup>* seen = nullptr) {
  while (has<UploadGroup>(fx)) {
    auto g = one<UploadGroup>(fx);
    if (seen) seen->push_back(g);
    fx = h.on(GroupUploadComplete{g.token});
  }
  return fx;
}

// Runs the retention the core asked for, as a shell would.
Effects run_retention(Harness& h, const EvaluateRetention& ev, const GroupFetch& fetch = nullptr) {
  auto plan = plan_retention(*ev.manifest, ev.spec, ev.now_ms, fetch);
  EXPECT_TRUE(plan.ok()) << plan.error().to_string();
  return h.on(RetentionComplete{ev.token, *plan});
}

}  // namespace

// ---- rebalance ----

TEST(TierUploaderRebalance, NotStartedBelowTheThreshold) {
  Harness h(rebalance_config());
  EXPECT_FALSE(has<UploadGroup>(h.apply(3)));
  EXPECT_EQ(h.core.in_flight(), UploaderCore::Op::none);
}

TEST(TierUploaderRebalance, StartedWhenTheFrontRunReachesTheThreshold) {
  Harness h(rebalance_config());
  auto fx = h.apply(4);
  auto g = one<UploadGroup>(fx);
  EXPECT_EQ(g.group->level, 1);
  EXPECT_EQ(g.group->entries.size(), 4u);
  EXPECT_EQ(g.group->first_offset, 0u);
  EXPECT_EQ(g.group->next_offset, 4u);
  EXPECT_EQ(g.entry.kind, 1);
  EXPECT_EQ(g.entry.size, 400u);
  EXPECT_EQ(g.key, h.core.keys().group(0, g.entry.uid, 1));
  EXPECT_EQ(g.deadline_ms, 60'000);
  EXPECT_EQ(h.core.in_flight(), UploaderCore::Op::rebalance);
}

TEST(TierUploaderRebalance, GroupUploadCompleteAppliesTheReplaceAndPersistsAtOnce) {
  Harness h(rebalance_config());
  auto g = one<UploadGroup>(h.apply(4));
  auto fx = h.on(GroupUploadComplete{g.token});
  const Manifest& m = h.core.live_manifest();
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_EQ(m.entries[0], g.entry);
  auto p = one<StartPersist>(fx);
  ASSERT_EQ(p.edits.size(), 5u);
  EXPECT_EQ(std::get<ReplaceEdit>(p.edits[4]).group, g.entry);
  auto b = one<Broadcast>(h.persist_ok(p));
  EXPECT_TRUE(std::holds_alternative<ReplaceEdit>(b.batch.edits.back()));
  EXPECT_EQ(h.core.metrics().groups_created[0], 1u);
  // Nothing is deleted for a rebalance: the fragments live on in the group.
  EXPECT_FALSE(h.core.live_manifest().entries.empty());
}

TEST(TierUploaderRebalance, RebalanceInFlightDefersThePersist) {
  Harness h(rebalance_config(4, 2, 5));
  auto g = one<UploadGroup>(h.apply(4));
  auto fx = h.apply(1);  // 5 fragments: the threshold is reached
  EXPECT_FALSE(has<StartPersist>(fx));
  EXPECT_TRUE(h.core.persist_deferred(h.now));
  auto p = one<StartPersist>(h.on(GroupUploadComplete{g.token}));
  ASSERT_EQ(p.edits.size(), 6u);
  // Appends applied during the rebalance come before it, in time order.
  EXPECT_EQ(std::get<AppendEdit>(p.edits[4]).entry.offset, 4u);
  EXPECT_TRUE(std::holds_alternative<ReplaceEdit>(p.edits[5]));
}

TEST(TierUploaderRebalance, AppendsDuringARebalanceStayBehindTheGroup) {
  Harness h(rebalance_config(4, 8));
  auto g = one<UploadGroup>(h.apply(4));
  h.apply(3);
  h.on(GroupUploadComplete{g.token});
  const Manifest& m = h.core.live_manifest();
  ASSERT_EQ(m.entries.size(), 4u);
  EXPECT_EQ(m.entries[0].kind, 1);
  EXPECT_EQ(m.entries[1].offset, 4u);
  EXPECT_EQ(m.next_offset, 7u);
  EXPECT_TRUE(h.core.check_invariants().ok());
}

TEST(TierUploaderRebalance, RecursesFromGroupsToAKiloGroup) {
  Harness h(rebalance_config(2, 2));
  auto fx = h.apply(2);
  ASSERT_TRUE(has<UploadGroup>(fx));
  h.apply(2);  // during the first upload
  std::vector<UploadGroup> seen;
  fx = complete_groups(h, fx, &seen);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].group->level, 1);
  EXPECT_EQ(seen[1].group->level, 1);
  EXPECT_EQ(seen[2].group->level, 2);
  ASSERT_EQ(h.core.live_manifest().entries.size(), 1u);
  EXPECT_EQ(h.core.live_manifest().entries[0].kind, 2);
  auto p = one<StartPersist>(fx);  // one persist after the whole recursion
  EXPECT_EQ(p.edits.size(), 7u);
}

TEST(TierUploaderRebalance, RecursesThreeLevelsDeep) {
  Harness h(rebalance_config(2, 2));
  auto fx = h.apply(2);
  h.apply(6);
  std::vector<UploadGroup> seen;
  complete_groups(h, fx, &seen);
  EXPECT_EQ(seen.size(), 4u + 2 + 1);
  ASSERT_EQ(h.core.live_manifest().entries.size(), 1u);
  EXPECT_EQ(h.core.live_manifest().entries[0].kind, 3);
  auto m = h.core.metrics();
  EXPECT_EQ(m.groups_created[0], 4u);
  EXPECT_EQ(m.groups_created[1], 2u);
  EXPECT_EQ(m.groups_created[2], 1u);
}

TEST(TierUploaderRebalance, TickDoesNotPersistWhileARebalanceIsInFlight) {
  Harness h(rebalance_config());
  one<UploadGroup>(h.apply(4));
  h.now = 100'000;
  EXPECT_FALSE(has<StartPersist>(h.on(Tick{})));
}

TEST(TierUploaderRebalance, TransientGroupFailureRetriesAtOnceUnderANewKey) {
  Harness h(rebalance_config());
  auto g = one<UploadGroup>(h.apply(4));
  auto fx = h.on(GroupUploadFailed{g.token, TransferFailure::http(503, "SlowDown", "PUT")});
  auto g2 = one<UploadGroup>(fx);
  EXPECT_NE(g2.token, g.token);
  EXPECT_NE(g2.key, g.key);
  EXPECT_EQ(g2.group->entries, g.group->entries);
  // The stale result of the first attempt is ignored.
  EXPECT_TRUE(h.on(GroupUploadComplete{g.token}).empty());
  EXPECT_EQ(h.core.live_manifest().entries.size(), 4u);
  h.on(GroupUploadComplete{g2.token});
  EXPECT_EQ(h.core.live_manifest().entries.size(), 1u);
}

TEST(TierUploaderRebalance, FatalGroupFailureAbandonsTheRunAndLetsThePersistGo) {
  Harness h(rebalance_config(4, 2, 4));
  auto g = one<UploadGroup>(h.apply(4));  // rebalance goes before the due persist
  auto fx = h.on(GroupUploadFailed{g.token, TransferFailure::http(403, "AccessDenied", "PUT")});
  EXPECT_FALSE(has<UploadGroup>(fx));
  auto p = one<StartPersist>(fx);
  EXPECT_EQ(p.edits.size(), 4u);  // persisted without the replace
  auto done = h.persist_ok(p);
  int64_t at = one<SetTimer>(done).at_ms;  // the rebalance retry
  EXPECT_GE(at, 500);
  EXPECT_LE(at, 1000);
  h.now = at;
  auto g2 = one<UploadGroup>(h.on(Tick{}));
  EXPECT_EQ(g2.group->entries, g.group->entries);
  EXPECT_EQ(h.core.metrics().group_upload_failures, 1u);
}

TEST(TierUploaderRebalance, PersistFailureWithARebalancePendingRunsTheRebalanceThenRetries) {
  Harness h(rebalance_config(6, 2, 5));
  auto p = one<StartPersist>(h.apply(5));
  h.apply(1);  // 6 fragments: rebalance wanted, deferred behind the persist
  EXPECT_TRUE(h.core.rebalance_deferred());
  auto fx = h.on(PersistFailed{p.token, PersistError::transient, "503"});
  auto g = one<UploadGroup>(fx);
  EXPECT_FALSE(has<StartPersist>(fx));
  auto p2 = one<StartPersist>(h.on(GroupUploadComplete{g.token}));
  EXPECT_EQ(p2.edits.size(), 7u);
  EXPECT_EQ(p2.expected_revision, 0u);
}

// ---- retention ----

TEST(TierUploaderRetention, PersistCompleteBroadcastsUpdatesRangeThenEvaluatesRetention) {
  Harness h(retention_config(250));
  auto fx = h.persist_ok(one<StartPersist>(h.apply(5)));
  ASSERT_GE(fx.size(), 3u);
  // The readers' manifest before the boundary local retention deletes below.
  EXPECT_TRUE(std::holds_alternative<Broadcast>(fx[0]));
  EXPECT_TRUE(std::holds_alternative<UpdateLocalRetention>(fx[1]));
  auto ev = one<EvaluateRetention>(fx);
  EXPECT_EQ(ev.manifest->next_offset, 5u);
  EXPECT_EQ(ev.spec.max_bytes, 250u);
  EXPECT_EQ(ev.deadline_ms, 60'000);
  EXPECT_EQ(h.core.in_flight(), UploaderCore::Op::retention);
}

TEST(TierUploaderRetention, DroppedObjectsAreDeletedOnlyAfterThePersistWithoutThem) {
  Harness h(retention_config(250));
  auto p1 = one<StartPersist>(h.apply(5));
  std::vector<std::string> frag_keys;
  for (auto& e : p1.manifest->entries) frag_keys.push_back(h.core.keys().for_entry(e));
  auto ev = one<EvaluateRetention>(h.persist_ok(p1));
  auto fx = run_retention(h, ev);
  EXPECT_EQ(h.core.live_manifest().first_offset, 3u);  // 500 -> 200 bytes
  EXPECT_EQ(h.core.persisted_manifest()->first_offset, 0u);
  EXPECT_FALSE(has<DeleteObjects>(fx));
  auto p2 = one<StartPersist>(fx);  // retention edits persist at once
  ASSERT_EQ(p2.edits.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<TruncateEdit>(p2.edits[0]));
  // A failed persist deletes nothing.
  auto fail = h.on(PersistFailed{p2.token, PersistError::transient, "503"});
  EXPECT_FALSE(has<DeleteObjects>(fail));
  auto p3 = one<StartPersist>(fail);
  auto done = h.persist_ok(p3);
  auto del = one<DeleteObjects>(done);
  std::vector<std::string> want = {p1.root_key, frag_keys[0], frag_keys[1], frag_keys[2]};
  EXPECT_EQ(del.keys, want);
  EXPECT_EQ(one<Broadcast>(done).batch.edits, p3.edits);
  EXPECT_EQ(h.core.metrics().fragments_removed_by_retention, 3u);
  EXPECT_EQ(h.core.metrics().manifest_first_offset, 3u);
}

TEST(TierUploaderRetention, RetentionInFlightDefersThePersist) {
  Harness h(retention_config(250));
  auto ev = one<EvaluateRetention>(h.persist_ok(one<StartPersist>(h.apply(5))));
  EXPECT_FALSE(has<StartPersist>(h.apply(5)));
  EXPECT_TRUE(h.core.persist_deferred(h.now));
  auto fx = run_retention(h, ev);
  auto p = one<StartPersist>(fx);
  EXPECT_EQ(p.edits.size(), 6u);  // the 5 appends and the truncate
}

TEST(TierUploaderRetention, RetentionFailureClearsTheOperationAndRetriesLater) {
  Harness h(retention_config(250));
  auto ev = one<EvaluateRetention>(h.persist_ok(one<StartPersist>(h.apply(5))));
  h.apply(5);
  auto fx = h.on(RetentionFailed{ev.token, "group fetch failed: 503"});
  EXPECT_NE(h.core.in_flight(), UploaderCore::Op::retention);
  auto p = one<StartPersist>(fx);  // the deferred persist goes
  auto done = h.persist_ok(p);
  EXPECT_FALSE(has<EvaluateRetention>(done));  // backing off
  int64_t at = one<SetTimer>(done).at_ms;
  EXPECT_GE(at, 500);
  h.now = at;
  EXPECT_TRUE(has<EvaluateRetention>(h.on(Tick{})));
  EXPECT_EQ(h.core.metrics().retention_failures, 1u);
}

TEST(TierUploaderRetention, ARebalanceWaitsForRetentionAndTheBlockerIsReported) {
  auto cfg = retention_config(250, 100);
  cfg.rebalance = RebalancePolicy{4, 2};
  Harness h(cfg);
  h.apply(3);
  h.now = 2000;
  auto ev = one<EvaluateRetention>(h.persist_ok(one<StartPersist>(h.on(Tick{}))));
  EXPECT_FALSE(has<UploadGroup>(h.apply(2)));  // 5 fragments now
  EXPECT_EQ(h.core.in_flight(), UploaderCore::Op::retention);
  EXPECT_TRUE(h.core.rebalance_deferred());
  // Retention drops f0; the rebalance goes next; both edits share a persist.
  auto fx = run_retention(h, ev);
  auto g = one<UploadGroup>(fx);
  EXPECT_FALSE(has<StartPersist>(fx));
  EXPECT_EQ(g.group->first_offset, 1u);
  auto p = one<StartPersist>(h.on(GroupUploadComplete{g.token}));
  ASSERT_EQ(p.edits.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<TruncateEdit>(p.edits[2]));
  EXPECT_TRUE(std::holds_alternative<ReplaceEdit>(p.edits[3]));
  auto del = one<DeleteObjects>(h.persist_ok(p));
  EXPECT_EQ(del.keys.size(), 2u);  // old root and f0
}

TEST(TierUploaderRetention, RetentionFailureAlsoRechecksTheDeferredRebalance) {
  auto cfg = retention_config(250, 100);
  cfg.rebalance = RebalancePolicy{4, 2};
  Harness h(cfg);
  h.apply(3);
  h.now = 2000;
  auto ev = one<EvaluateRetention>(h.persist_ok(one<StartPersist>(h.on(Tick{}))));
  h.apply(2);
  auto fx = h.on(RetentionFailed{ev.token, "timeout"});
  EXPECT_TRUE(has<UploadGroup>(fx));
}

TEST(TierUploaderRetention, ARebalanceAfterAPersistGoesBeforeRetention) {
  auto cfg = retention_config(250, 3);
  cfg.rebalance = RebalancePolicy{4, 2};
  Harness h(cfg);
  auto p1 = one<StartPersist>(h.apply(3));
  h.apply(1);  // 4 fragments: rebalance wanted behind the persist
  auto fx = h.persist_ok(p1);
  auto g = one<UploadGroup>(fx);
  EXPECT_FALSE(has<EvaluateRetention>(fx));
  EXPECT_TRUE(h.core.retention_deferred());
  auto fx2 = h.on(GroupUploadComplete{g.token});
  auto p2 = one<StartPersist>(fx2);  // the rebalance edit persists first
  EXPECT_FALSE(has<EvaluateRetention>(fx2));
  EXPECT_TRUE(has<EvaluateRetention>(h.persist_ok(p2)));
}

TEST(TierUploaderRetention, RetentionCanEmptyTheManifestAndANewFragmentStartsItAgain) {
  auto cfg = test_config();
  cfg.retention.max_age_ms = 1;
  Harness h(cfg);
  h.persist_ok(one<StartPersist>(h.apply(5)));
  auto ev = one<EvaluateRetention>(h.on(RetentionRequested{}));
  // A plan (from a shell with other rules) that drops every entry.
  RetentionPlan plan;
  plan.fragments_removed = 5;
  plan.edit = TruncateEdit{5, 5, -1, 500};
  plan.deleted = ev.manifest->entries;
  auto p = one<StartPersist>(h.on(RetentionComplete{ev.token, plan}));
  EXPECT_TRUE(p.manifest->empty());
  EXPECT_EQ(p.manifest->first_offset, 5u);
  EXPECT_EQ(one<DeleteObjects>(h.persist_ok(p)).keys.size(), 6u);
  h.now = 777;
  auto s = h.cut(2, 50);
  EXPECT_EQ(s.meta.first_offset, 5u);
  h.complete(s);
  const Manifest& m = h.core.live_manifest();
  EXPECT_EQ(m.first_offset, 5u);
  EXPECT_EQ(m.next_offset, 7u);
  EXPECT_EQ(m.first_ts, 777);
  EXPECT_EQ(m.total_size, 50u);
}

TEST(TierUploaderRetention, AnInapplicablePlanIsReportedAndCountsAsAFailure) {
  Harness h(retention_config(250));
  auto ev = one<EvaluateRetention>(h.persist_ok(one<StartPersist>(h.apply(5))));
  RetentionPlan bad;
  bad.fragments_removed = 1;
  bad.edit = TruncateEdit{1, 99, 0, 100};  // beyond the manifest
  auto fx = h.on(RetentionComplete{ev.token, bad});
  auto r = one<Report>(fx);
  EXPECT_NE(r.error.message.find("retention plan rejected"), std::string::npos);
  EXPECT_EQ(h.core.live_manifest().first_offset, 0u);
  EXPECT_EQ(h.core.in_flight(), UploaderCore::Op::none);
  EXPECT_EQ(h.core.metrics().retention_failures, 1u);
}

TEST(TierUploaderRetention, AnIdleStreamIsReevaluatedOnlyWhenAgeOrNewDataCanChangeTheAnswer) {
  auto cfg = test_config();
  cfg.retention.max_age_ms = 10'000;
  cfg.retention_interval_ms = 0;
  Harness h(cfg);
  h.now = 1000;
  h.apply(2);
  h.now = 3000;
  h.persist_ok(one<StartPersist>(h.on(Tick{})));
  // Too young: no evaluation, a timer for when the first fragment turns old.
  h.now = 5000;
  EXPECT_FALSE(has<EvaluateRetention>(h.on(Tick{})));
  h.now = 11'001;
  auto ev = one<EvaluateRetention>(h.on(Tick{}));
  auto fx = run_retention(h, ev);  // drops f0, keeps the last fragment
  auto p = one<StartPersist>(fx);
  h.persist_ok(p);
  // Only the last fragment is left: nothing to evaluate, whatever the time.
  h.now = 1'000'000;
  EXPECT_FALSE(has<EvaluateRetention>(h.on(Tick{})));
}

TEST(TierUploaderRetention, RequestedRetentionRunsAtOnceWhenNothingElseIsInFlight) {
  Harness h(retention_config(1'000'000));
  h.persist_ok(one<StartPersist>(h.apply(5)));
  auto ev = one<EvaluateRetention>(h.on(RetentionRequested{}));
  auto fx = run_retention(h, ev);
  EXPECT_FALSE(has<StartPersist>(fx));  // nothing dropped
  EXPECT_EQ(h.core.metrics().retention_evaluations, 1u);
}

TEST(TierUploaderRetention, NewLimitsApplyFromTheRequestThatCarriesThem) {
  // No limits: retention never runs, even when asked.
  Harness h(test_config());
  h.persist_ok(one<StartPersist>(h.apply(5)));
  EXPECT_FALSE(has<EvaluateRetention>(h.on(RetentionRequested{})));
  // An operator sets one: evaluated at once, under it.
  RetentionSpec spec;
  spec.max_bytes = 250;
  auto ev = one<EvaluateRetention>(h.on(RetentionRequested{spec}));
  EXPECT_EQ(ev.spec.max_bytes, 250u);
  auto fx = run_retention(h, ev);
  h.persist_ok(one<StartPersist>(fx));
  EXPECT_EQ(h.core.metrics().retention_evaluations, 1u);
  EXPECT_LT(h.core.live_manifest().total_size, 500u);
  // And taken away again: with nothing in flight, a request that ran at
  // once under the limit now runs nothing.
  ASSERT_EQ(h.core.in_flight(), UploaderCore::Op::none);
  EXPECT_FALSE(has<EvaluateRetention>(h.on(RetentionRequested{RetentionSpec{}})));
  EXPECT_FALSE(has<EvaluateRetention>(h.on(RetentionRequested{})));
}

// ---- deadlines ----

TEST(TierUploaderDeadlines, EveryOperationIsClearedByItsDeadline) {
  // Persist: retried at once.
  {
    Harness h;
    auto p = one<StartPersist>(h.apply(5));
    auto p2 = one<StartPersist>(h.on(OperationDeadline{p.token}));
    EXPECT_EQ(p2.expected_revision, p.expected_revision);
    EXPECT_TRUE(h.on(PersistComplete{p.token, 1}).empty());  // too late: ignored
    h.persist_ok(p2);
    EXPECT_EQ(h.core.revision(), 1u);
  }
  // Group upload: retried.
  {
    Harness h(rebalance_config());
    auto g = one<UploadGroup>(h.apply(4));
    auto g2 = one<UploadGroup>(h.on(OperationDeadline{g.token}));
    EXPECT_NE(g2.token, g.token);
  }
  // Retention: cleared, and the deferred persist goes.
  {
    Harness h(retention_config(250));
    auto ev = one<EvaluateRetention>(h.persist_ok(one<StartPersist>(h.apply(5))));
    h.apply(5);
    auto fx = h.on(OperationDeadline{ev.token});
    EXPECT_TRUE(has<StartPersist>(fx));
    EXPECT_EQ(h.core.metrics().retention_failures, 1u);
  }
}

TEST(TierUploaderDeadlines, APersistThatCommittedAfterItsDeadlineEndsInReinitializeNotDeletes) {
  Harness h(retention_config(250));
  auto ev = one<EvaluateRetention>(h.persist_ok(one<StartPersist>(h.apply(5))));
  auto p = one<StartPersist>(run_retention(h, ev));
  // The catalog did commit p, but the answer never came: the deadline fires.
  auto p2 = one<StartPersist>(h.on(OperationDeadline{p.token}));
  EXPECT_EQ(p2.expected_revision, 1u);
  // The retry finds revision 2 in the catalog: conflict.
  auto fx = h.on(PersistFailed{p2.token, PersistError::conflict, "revision is 2"});
  EXPECT_TRUE(has<Reinitialize>(fx));
  EXPECT_FALSE(has<DeleteObjects>(fx));  // unknown outcome: leave it to GC
}

TEST(TierUploaderDeadlines, StaleDeadlinesAreIgnored) {
  Harness h;
  auto p = one<StartPersist>(h.apply(5));
  h.persist_ok(p);
  EXPECT_TRUE(h.on(OperationDeadline{p.token}).empty());
  EXPECT_EQ(h.core.metrics().stale_results_ignored, 1u);
}

}  // namespace strata::tier
