// The uploader core's rules, one named test each: ordering, transfers and
// retries, persists, waiters, references. Rebalance, retention and
// deadlines are in uploader_core_ops_test.cpp.
#include "tier/uploader_core.h"

#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "uploader_harness.h"

namespace strata::tier {

using namespace upload;
using test::all_of;
using test::Harness;
using test::has;
using test::one;
using test::test_config;

// ---- start, cuts, ordering ----

TEST(TierUploaderCore, CreatingACoreProducesNoEffects) {
  Harness h;
  EXPECT_TRUE(h.core.accepts_cuts());
  EXPECT_EQ(h.core.in_flight(), UploaderCore::Op::none);
  auto fx = h.on(Tick{});
  EXPECT_TRUE(fx.empty());
}

TEST(TierUploaderCore, FragmentCutSubmitsATransferToANewKey) {
  Harness h;
  auto s = h.cut(3, 500);
  EXPECT_EQ(s.ref, 1u);
  EXPECT_EQ(s.meta.first_offset, 0u);
  EXPECT_EQ(s.meta.next_offset, 3u);
  EXPECT_EQ(s.attempt, 1u);
  EXPECT_EQ(s.delay_ms, 0);
  EXPECT_EQ(s.deadline_ms, 180'000);
  EXPECT_EQ(s.key, h.core.keys().fragment(0, 3, s.uid));
  auto s2 = h.cut(2, 500);
  EXPECT_EQ(s2.ref, 2u);
  EXPECT_EQ(s2.meta.first_offset, 3u);
  EXPECT_NE(s2.key, s.key);
  EXPECT_EQ(h.core.metrics().transfers_in_flight, 2u);
  EXPECT_EQ(h.core.metrics().bytes_in_transfer, 1000u);
}

TEST(TierUploaderCore, CutsMustBeContiguousAndWellFormed) {
  Harness h;
  h.cut(3);
  auto gap = h.try_on(FragmentCut{FragmentMeta{4, 5, 0, 0, 10, 1}});
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.error().message.find("must start at 3"), std::string::npos);
  EXPECT_FALSE(h.try_on(FragmentCut{FragmentMeta{3, 3, 0, 0, 10, 1}}).ok());
  EXPECT_FALSE(h.try_on(FragmentCut{FragmentMeta{3, 4, 0, 0, 0, 1}}).ok());
  EXPECT_EQ(h.core.slots(), 1u);
}

TEST(TierUploaderCore, CutsBeyondTheUnpersistedBoundAreRefused) {
  auto cfg = test_config();
  cfg.max_unpersisted_fragments = 3;
  cfg.persist_threshold = 100;
  Harness h(cfg);
  auto a = h.cut();
  h.cut();
  h.complete(a);  // applied but not persisted: still counts
  h.cut();
  EXPECT_FALSE(h.core.accepts_cuts());
  auto r = h.try_on(FragmentCut{FragmentMeta{3, 4, 0, 0, 10, 1}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::unavailable);
  EXPECT_NE(r.error().message.find("bound is 3"), std::string::npos);
}

TEST(TierUploaderCore, InOrderCompletionIsAppliedAtOnce) {
  Harness h;
  auto s = h.cut(2);
  h.complete(s);
  EXPECT_EQ(h.core.live_manifest().next_offset, 2u);
  EXPECT_EQ(h.core.slots(), 0u);
  EXPECT_EQ(h.core.pending_edits(), 1u);
}

TEST(TierUploaderCore, OutOfOrderCompletionWaitsForTheFront) {
  Harness h;
  auto a = h.cut();
  auto b = h.cut();
  h.complete(b);
  EXPECT_EQ(h.core.live_manifest().next_offset, 0u);
  EXPECT_EQ(h.core.slots(), 2u);
  h.complete(a);
  EXPECT_EQ(h.core.live_manifest().next_offset, 2u);
  EXPECT_EQ(h.core.slots(), 0u);
}

TEST(TierUploaderCore, ThreeFragmentsCompletingInAnyOrderApplyInCutOrder) {
  Harness h;
  auto a = h.cut(1), b = h.cut(2), c = h.cut(3);
  h.complete(c);
  h.complete(a);
  EXPECT_EQ(h.core.live_manifest().next_offset, 1u);
  h.complete(b);
  const auto& m = h.core.live_manifest();
  ASSERT_EQ(m.entries.size(), 3u);
  EXPECT_EQ(m.entries[0].uid, a.uid);
  EXPECT_EQ(m.entries[1].uid, b.uid);
  EXPECT_EQ(m.entries[2].uid, c.uid);
  EXPECT_EQ(m.next_offset, 6u);
}

TEST(TierUploaderCore, InterleavedCutCompleteCut) {
  Harness h;
  auto a = h.cut();
  h.complete(a);
  auto b = h.cut();
  EXPECT_EQ(b.meta.first_offset, 1u);
  h.complete(b);
  EXPECT_EQ(h.core.live_manifest().entries.size(), 2u);
}

TEST(TierUploaderCore, FirstFragmentSetsManifestMetadata) {
  Harness h(test_config(), Manifest::empty_at(1000));
  h.now = 5000;
  auto s = h.cut(10, 777);
  h.complete(s);
  const auto& m = h.core.live_manifest();
  EXPECT_EQ(m.first_offset, 1000u);
  EXPECT_EQ(m.next_offset, 1010u);
  EXPECT_EQ(m.first_ts, 5000);
  EXPECT_EQ(m.total_size, 777u);
  EXPECT_EQ(m.entries[0].epoch, 3u);
}

TEST(TierUploaderCore, HundredThousandInFlightCompletingInReverseDrainIteratively) {
  auto cfg = test_config();
  cfg.max_unpersisted_fragments = 200'000;
  cfg.persist_threshold = 1'000'000;
  Harness h(cfg);
  const int n = 100'000;
  std::vector<SubmitTransfer> subs;
  subs.reserve(n);
  for (int i = 0; i < n; ++i) {
    FragmentMeta m{uint64_t(i), uint64_t(i) + 1, 0, 0, 10, 1};
    auto r = h.core.on(FragmentCut{m}, 0);
    ASSERT_TRUE(r.ok());
    subs.push_back(std::get<SubmitTransfer>(r->front()));
  }
  for (int i = n - 1; i > 0; --i) {
    ASSERT_TRUE(h.core.on(TransferComplete{subs[i].ref, subs[i].token}, 0).ok());
  }
  EXPECT_EQ(h.core.live_manifest().next_offset, 0u);
  // The front completes: 100 000 fragments applied in one loop.
  ASSERT_TRUE(h.core.on(TransferComplete{subs[0].ref, subs[0].token}, 0).ok());
  EXPECT_EQ(h.core.live_manifest().next_offset, uint64_t(n));
  EXPECT_EQ(h.core.slots(), 0u);
  EXPECT_EQ(h.core.pending_edits(), size_t(n));
  EXPECT_TRUE(h.core.check_invariants().ok());
}

// ---- transfer failures ----

TEST(TierUploaderCore, TransientFailureResubmitsAtOnceThenWithBackoff) {
  Harness h;
  auto s = h.cut();
  auto r1 = one<SubmitTransfer>(h.fail(s, TransferFailure::from(Error(Errc::transient, "reset"))));
  EXPECT_EQ(r1.ref, s.ref);
  EXPECT_NE(r1.token, s.token);
  EXPECT_NE(r1.key, s.key);  // every write goes to a new key
  EXPECT_EQ(r1.attempt, 2u);
  EXPECT_EQ(r1.delay_ms, 0);
  auto r2 = one<SubmitTransfer>(h.fail(r1, TransferFailure::from(Error(Errc::timeout, "t"))));
  EXPECT_GE(r2.delay_ms, 5);
  EXPECT_LE(r2.delay_ms, 10);
  auto r3 = one<SubmitTransfer>(h.fail(r2, TransferFailure::http(500, "InternalError", "put")));
  EXPECT_GE(r3.delay_ms, 10);
  EXPECT_LE(r3.delay_ms, 20);
  EXPECT_FALSE(h.core.metrics().upload_stalled_offset.has_value());
  h.complete(r3);
  EXPECT_EQ(h.core.live_manifest().entries[0].uid, r3.uid);
  EXPECT_EQ(h.core.metrics().transfer_retries, 3u);
}

TEST(TierUploaderCore, Http429And503AreRetriedFastNotStalled) {
  Harness h;
  auto s = h.cut();
  auto r = one<SubmitTransfer>(h.fail(s, TransferFailure::http(429, "", "PUT data/..")));
  EXPECT_EQ(r.delay_ms, 0);
  auto r2 = one<SubmitTransfer>(h.fail(r, TransferFailure::http(503, "SlowDown", "PUT")));
  EXPECT_LE(r2.delay_ms, 10);
  EXPECT_FALSE(h.core.metrics().upload_stalled_offset.has_value());
  EXPECT_EQ(h.core.metrics().nontransient_transfer_retries, 0u);
}

TEST(TierUploaderCore, FatalFailureRetriesSlowlyAndStallsWithoutAGap) {
  Harness h;
  auto a = h.cut(2);
  auto b = h.cut(3);
  auto ra = one<SubmitTransfer>(h.fail(a, TransferFailure::http(403, "AccessDenied", "PUT")));
  EXPECT_GE(ra.delay_ms, 500);
  EXPECT_LE(ra.delay_ms, 1000);
  EXPECT_EQ(h.core.metrics().upload_stalled_offset, 0u);
  h.complete(b);  // nothing behind the stalled fragment is applied
  EXPECT_EQ(h.core.live_manifest().next_offset, 0u);
  h.complete(ra);
  EXPECT_EQ(h.core.live_manifest().next_offset, 5u);
  EXPECT_FALSE(h.core.metrics().upload_stalled_offset.has_value());
  EXPECT_EQ(h.core.metrics().nontransient_transfer_retries, 1u);
}

TEST(TierUploaderCore, FatalFailureMidSequenceHoldsOnlyWhatFollowsIt) {
  Harness h;
  auto a = h.cut(), b = h.cut(), c = h.cut();
  h.complete(a);
  auto rb =
      one<SubmitTransfer>(h.fail(b, TransferFailure::from(Error(Errc::corrupt, "chunk CRC"))));
  h.complete(c);
  EXPECT_EQ(h.core.live_manifest().next_offset, 1u);
  EXPECT_EQ(h.core.metrics().upload_stalled_offset, 1u);
  h.complete(rb);
  EXPECT_EQ(h.core.live_manifest().next_offset, 3u);
}

TEST(TierUploaderCore, RepeatedFatalFailuresKeepTheQueueAndBackOffToThirtySeconds) {
  Harness h;
  auto a = h.cut();
  auto b = h.cut();
  h.complete(b);
  SubmitTransfer cur = a;
  int64_t last_nominal = 0;
  for (int i = 1; i <= 8; ++i) {
    cur = one<SubmitTransfer>(h.fail(cur, TransferFailure::http(404, "NoSuchBucket", "PUT")));
    int64_t nominal = nominal_backoff_ms(BackoffPolicy::fatal(), uint32_t(i));
    EXPECT_GE(cur.delay_ms, nominal / 2);
    EXPECT_LE(cur.delay_ms, nominal);
    EXPECT_GE(nominal, last_nominal);
    last_nominal = nominal;
    EXPECT_EQ(h.core.slots(), 2u);
  }
  EXPECT_EQ(last_nominal, 30'000);
  h.complete(cur);
  EXPECT_EQ(h.core.live_manifest().next_offset, 2u);
}

TEST(TierUploaderCore, FatalFrontDoesNotDrainBufferedCompletions) {
  Harness h;
  auto a = h.cut();
  std::vector<SubmitTransfer> rest;
  for (int i = 0; i < 10; ++i) rest.push_back(h.cut());
  for (auto& s : rest) h.complete(s);
  auto ra = one<SubmitTransfer>(h.fail(a, TransferFailure::http(403, "", "PUT")));
  EXPECT_EQ(h.core.live_manifest().next_offset, 0u);
  EXPECT_EQ(h.core.pending_edits(), 0u);
  h.complete(ra);
  EXPECT_EQ(h.core.live_manifest().next_offset, 11u);
}

TEST(TierUploaderCore, TransferDeadlineResubmitsAndTheLateResultIsIgnored) {
  Harness h;
  auto s = h.cut();
  auto r = one<SubmitTransfer>(h.on(TransferDeadline{s.ref, s.token}));
  EXPECT_EQ(r.delay_ms, 0);
  EXPECT_EQ(h.core.metrics().transfer_deadlines, 1u);
  // The first attempt finishes after all: ignored, the retry decides.
  auto late = h.complete(s);
  EXPECT_TRUE(late.empty());
  EXPECT_EQ(h.core.live_manifest().next_offset, 0u);
  EXPECT_EQ(h.core.metrics().stale_results_ignored, 1u);
  h.complete(r);
  EXPECT_EQ(h.core.live_manifest().entries[0].uid, r.uid);
  // A duplicate of an applied result is ignored too.
  EXPECT_TRUE(h.complete(r).empty());
  EXPECT_EQ(h.core.metrics().stale_results_ignored, 2u);
}

TEST(TierUploaderCore, UnknownReferencesAndTokensAreErrorsNamingThem) {
  Harness h;
  auto s = h.cut();
  auto r = h.try_on(TransferComplete{77, s.token});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unknown transfer reference 77"), std::string::npos);
  r = h.try_on(TransferComplete{s.ref, 9999});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("9999"), std::string::npos);
  r = h.try_on(PersistComplete{12345, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("12345"), std::string::npos);
  r = h.try_on(GroupUploadComplete{555});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("555"), std::string::npos);
  r = h.try_on(OperationDeadline{4242});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("4242"), std::string::npos);
  // Nothing changed.
  EXPECT_EQ(h.core.slots(), 1u);
  EXPECT_TRUE(h.core.check_invariants().ok());
}

// ---- persist ----

TEST(TierUploaderCore, PersistTimerIsArmedByTheFirstUnpersistedFragmentOnly) {
  Harness h;
  auto s = h.cut();
  auto fx = h.complete(s);
  EXPECT_EQ(one<SetTimer>(fx).at_ms, 2000);
  h.now = 100;
  auto fx2 = h.apply(1);
  EXPECT_FALSE(has<SetTimer>(fx2));
  EXPECT_FALSE(has<StartPersist>(fx2));
}

TEST(TierUploaderCore, PersistStartsAtTheThreshold) {
  Harness h;
  auto fx = h.apply(4);
  EXPECT_FALSE(has<StartPersist>(fx));
  fx = h.apply(1);
  auto p = one<StartPersist>(fx);
  EXPECT_EQ(p.edits.size(), 5u);
  EXPECT_EQ(p.expected_revision, 0u);
  EXPECT_EQ(p.epoch, 3u);
  EXPECT_EQ(p.manifest->next_offset, 5u);
  EXPECT_EQ(p.root_key, h.core.keys().root(3, h.core.keys().parse(p.root_key)->uid));
  EXPECT_EQ(h.core.in_flight(), UploaderCore::Op::persist);
  EXPECT_TRUE(has<CancelTimer>(fx));  // nothing to wake up for while it runs
}

TEST(TierUploaderCore, NoSecondPersistWhileOneIsInFlight) {
  Harness h;
  auto p = one<StartPersist>(h.apply(5));
  auto fx = h.apply(7);
  EXPECT_FALSE(has<StartPersist>(fx));
  h.now = 10'000;
  EXPECT_FALSE(has<StartPersist>(h.on(Tick{})));
  EXPECT_EQ(one<StartPersist>(h.persist_ok(p)).edits.size(), 7u);
}

TEST(TierUploaderCore, PersistStartsOnTickOnlyAfterTheInterval) {
  Harness h;
  h.now = 1000;
  h.apply(2);
  h.now = 2999;
  EXPECT_FALSE(has<StartPersist>(h.on(Tick{})));
  h.now = 3000;  // exactly first edit + 2 s
  auto p = one<StartPersist>(h.on(Tick{}));
  EXPECT_EQ(p.edits.size(), 2u);
}

TEST(TierUploaderCore, TickDoesNothingWithoutEditsOrWithAPersistInFlight) {
  Harness h;
  h.now = 1'000'000;
  EXPECT_TRUE(h.on(Tick{}).empty());
  h.apply(5);
  h.now = 9'000'000;
  EXPECT_FALSE(has<StartPersist>(h.on(Tick{})));
}

TEST(TierUploaderCore, PersistCompleteUpdatesRangeBroadcastsAndDeletesTheOldRoot) {
  Harness h(test_config(), Manifest::empty_at(0), 0, "");
  auto p1 = one<StartPersist>(h.apply(5));
  auto fx = h.persist_ok(p1);
  auto range = one<UpdateLocalRetention>(fx);
  EXPECT_EQ(range.next_offset, 5u);
  EXPECT_EQ(range.revision, 1u);
  auto b = one<Broadcast>(fx);
  EXPECT_EQ(b.batch.prev_revision, 0u);
  EXPECT_EQ(b.batch.revision, 1u);
  EXPECT_EQ(b.batch.edits, p1.edits);
  EXPECT_FALSE(has<DeleteObjects>(fx));  // there was no old root
  EXPECT_EQ(h.core.root_key(), p1.root_key);
  auto p2 = one<StartPersist>(h.apply(5));
  EXPECT_NE(p2.root_key, p1.root_key);
  auto fx2 = h.persist_ok(p2);
  auto del = one<DeleteObjects>(fx2);
  EXPECT_EQ(del.keys, std::vector<std::string>{p1.root_key});
  EXPECT_EQ(del.revision, 2u);
  EXPECT_EQ(h.core.metrics().manifest_next_offset, 10u);
  EXPECT_EQ(h.core.metrics().last_persist_ts_ms, 0);
}

TEST(TierUploaderCore, PersistCompleteStartsTheNextPersistWhenThresholdIsPending) {
  Harness h;
  auto p1 = one<StartPersist>(h.apply(5));
  h.apply(6);
  auto fx = h.persist_ok(p1);
  auto p2 = one<StartPersist>(fx);
  EXPECT_EQ(p2.edits.size(), 6u);
  EXPECT_EQ(p2.expected_revision, 1u);
}

TEST(TierUploaderCore, PersistCompleteRearmsTheTimerForASubThresholdRemainder) {
  Harness h;
  auto p1 = one<StartPersist>(h.apply(5));
  h.now = 500;
  h.apply(2);
  h.now = 600;
  auto fx = h.persist_ok(p1);
  EXPECT_FALSE(has<StartPersist>(fx));
  EXPECT_EQ(one<SetTimer>(fx).at_ms, 2500);
}

TEST(TierUploaderCore, TimerRestartsAfterPersistAndANewFragment) {
  Harness h;
  auto p1 = one<StartPersist>(h.apply(5));
  h.now = 100;
  h.persist_ok(p1);
  h.now = 7000;
  auto fx = h.apply(1);
  EXPECT_EQ(one<SetTimer>(fx).at_ms, 9000);
}

TEST(TierUploaderCore, BroadcastCarriesExactlyThePersistedEdits) {
  Harness h;
  auto p1 = one<StartPersist>(h.apply(5));
  h.apply(3);  // applied during the persist: not part of it
  auto b1 = one<Broadcast>(h.persist_ok(p1));
  ASSERT_EQ(b1.batch.edits.size(), 5u);
  EXPECT_EQ(std::get<AppendEdit>(b1.batch.edits.back()).entry.offset, 4u);
  h.now = 5000;
  auto p2 = one<StartPersist>(h.on(Tick{}));
  ASSERT_EQ(p2.edits.size(), 3u);
  EXPECT_EQ(std::get<AppendEdit>(p2.edits.front()).entry.offset, 5u);
  auto b2 = one<Broadcast>(h.persist_ok(p2));
  EXPECT_EQ(b2.batch.edits, p2.edits);
  EXPECT_EQ(b2.batch.prev_revision, 1u);
  EXPECT_EQ(b2.batch.revision, 2u);
}

TEST(TierUploaderCore, BroadcastEditsReplayToThePersistedManifest) {
  auto cfg = test_config();
  cfg.persist_threshold = 1000;
  Harness h(cfg);
  Manifest replica = Manifest::empty_at(0);
  uint64_t seq = 0;
  for (int round = 0; round < 6; ++round) {
    h.apply(1 + round);
    h.now += 2000;
    auto p = one<StartPersist>(h.on(Tick{}));
    auto b = one<Broadcast>(h.persist_ok(p));
    ASSERT_EQ(b.batch.prev_revision, seq);
    for (auto& e : b.batch.edits) ASSERT_TRUE(apply_edit(replica, e).ok());
    seq = b.batch.revision;
    EXPECT_EQ(replica, *h.core.persisted_manifest());
  }
}

TEST(TierUploaderCore, PersistConflictAsksForReinitialization) {
  Harness h;
  auto p = one<StartPersist>(h.apply(5));
  auto fx = h.on(PersistFailed{p.token, PersistError::conflict, "revision moved"});
  auto r = one<Reinitialize>(fx);
  EXPECT_NE(r.reason.find("conflict"), std::string::npos);
  EXPECT_FALSE(h.core.running());
  EXPECT_FALSE(has<DeleteObjects>(fx));
  auto after = h.try_on(Tick{});
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, Errc::closed);
}

TEST(TierUploaderCore, NotFoundAtRevisionZeroReinitializes) {
  Harness h;
  auto p = one<StartPersist>(h.apply(5));
  EXPECT_TRUE(has<Reinitialize>(h.on(PersistFailed{p.token, PersistError::not_found, "no key"})));
}

TEST(TierUploaderCore, NotFoundAtARealRevisionStopsBecauseTheStreamIsGone) {
  Harness h;
  auto p = one<StartPersist>(h.apply(5));
  h.persist_ok(p);
  h.on(AwaitOffset{100, 7});
  auto p2 = one<StartPersist>(h.apply(5));
  auto fx = h.on(PersistFailed{p2.token, PersistError::not_found, "deleted"});
  EXPECT_TRUE(has<Stop>(fx));
  auto w = one<ReplyWaiters>(fx);
  EXPECT_EQ(w.waiters, std::vector<uint64_t>{7});
  EXPECT_EQ(w.status.code(), Errc::not_found);
  EXPECT_FALSE(h.core.running());
}

TEST(TierUploaderCore, RepeatedConflictsReinitializeEachTime) {
  // What a shell does: on Reinitialize, read the catalog and start again.
  Manifest catalog = Manifest::empty_at(0);
  for (int i = 0; i < 3; ++i) {
    Harness h(test_config(), catalog, 4, "t/x/s1/meta/root.3.00000001");
    auto p = one<StartPersist>(h.apply(5));
    EXPECT_EQ(p.expected_revision, 4u);
    EXPECT_TRUE(has<Reinitialize>(h.on(PersistFailed{p.token, PersistError::conflict, "again"})));
  }
}

TEST(TierUploaderCore, TransientPersistFailureRetriesAtOnceThenWithBackoff) {
  Harness h;
  auto p1 = one<StartPersist>(h.apply(5));
  auto fx = h.on(PersistFailed{p1.token, PersistError::transient, "503"});
  auto p2 = one<StartPersist>(fx);
  EXPECT_EQ(p2.edits, p1.edits);
  EXPECT_EQ(p2.expected_revision, p1.expected_revision);
  EXPECT_NE(p2.token, p1.token);
  auto fx3 = h.on(PersistFailed{p2.token, PersistError::transient, "503"});
  EXPECT_FALSE(has<StartPersist>(fx3));
  int64_t at = one<SetTimer>(fx3).at_ms;
  EXPECT_GE(at, 5);
  EXPECT_LE(at, 10);
  h.apply(1);  // edits keep coming; the retry will include them
  h.now = at;
  auto p3 = one<StartPersist>(h.on(Tick{}));
  EXPECT_EQ(p3.edits.size(), 6u);
  h.persist_ok(p3);
  EXPECT_EQ(h.core.revision(), 1u);
}

TEST(TierUploaderCore, PersistReportingAnOlderRevisionReinitializes) {
  Harness h(test_config(), Manifest::empty_at(0), 9, "");
  auto p = one<StartPersist>(h.apply(5));
  EXPECT_TRUE(has<Reinitialize>(h.on(PersistComplete{p.token, 9})));
}

// ---- waiters ----

TEST(TierUploaderCore, AwaitOffsetAlreadyPersistedRepliesAtOnce) {
  Harness h;
  h.persist_ok(one<StartPersist>(h.apply(5)));
  auto w = one<ReplyWaiters>(h.on(AwaitOffset{4, 1}));
  EXPECT_EQ(w.waiters, std::vector<uint64_t>{1});
  EXPECT_TRUE(w.status.ok());
}

TEST(TierUploaderCore, AwaitOffsetWaitsForThePersistNotTheApply) {
  Harness h;
  EXPECT_TRUE(h.on(AwaitOffset{2, 1}).empty());
  auto p = one<StartPersist>(h.apply(5));
  EXPECT_EQ(h.core.live_manifest().next_offset, 5u);  // applied, not persisted
  EXPECT_EQ(h.core.metrics().waiters, 1u);
  auto fx = h.persist_ok(p);
  EXPECT_EQ(one<ReplyWaiters>(fx).waiters, std::vector<uint64_t>{1});
}

TEST(TierUploaderCore, UrgentWaiterPersistsOnceItsOffsetIsAppliedWithoutTheDebounce) {
  Harness h;
  h.on(AwaitOffset{2, 1});  // an ordinary waiter leaves the debounce alone
  EXPECT_FALSE(has<StartPersist>(h.apply(2)));
  h.on(AwaitOffset{3, 2, /*urgent=*/true});  // offset 3 is not applied yet
  EXPECT_FALSE(has<StartPersist>(h.on(Tick{})));
  auto p = one<StartPersist>(h.apply(2));  // 4 of 5, well within the interval
  EXPECT_EQ(p.edits.size(), 4u);
  EXPECT_EQ(one<ReplyWaiters>(h.persist_ok(p)).waiters, (std::vector<uint64_t>{1, 2}));
  // Once replied, the debounce is back.
  EXPECT_FALSE(has<StartPersist>(h.apply(1)));
}

TEST(TierUploaderCore, MultipleWaitersAreRepliedTogetherAndOnlyWhenCovered) {
  Harness h;
  h.on(AwaitOffset{0, 1});
  h.on(AwaitOffset{4, 2});
  h.on(AwaitOffset{5, 3});
  auto fx = h.persist_ok(one<StartPersist>(h.apply(5)));
  auto w = one<ReplyWaiters>(fx);
  EXPECT_EQ(w.waiters, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(h.core.metrics().waiters, 1u);
}

TEST(TierUploaderCore, AwaitOffsetSatisfiedByTheSecondOfCascadingPersists) {
  Harness h;
  auto p1 = one<StartPersist>(h.apply(5));
  h.apply(5);
  h.on(AwaitOffset{8, 9});
  auto fx1 = h.persist_ok(p1);
  EXPECT_FALSE(has<ReplyWaiters>(fx1));
  auto p2 = one<StartPersist>(fx1);
  EXPECT_EQ(one<ReplyWaiters>(h.persist_ok(p2)).waiters, std::vector<uint64_t>{9});
}

TEST(TierUploaderCore, WaitersAreBounded) {
  auto cfg = test_config();
  cfg.max_waiters = 2;
  Harness h(cfg);
  h.on(AwaitOffset{10, 1});
  h.on(AwaitOffset{10, 2});
  auto w = one<ReplyWaiters>(h.on(AwaitOffset{10, 3}));
  EXPECT_EQ(w.waiters, std::vector<uint64_t>{3});
  EXPECT_EQ(w.status.code(), Errc::unavailable);
}

TEST(TierUploaderCore, MetricsFollowBytesThroughTheStages) {
  Harness h;
  auto a = h.cut(1, 1000), b = h.cut(1, 2000);
  auto m = h.core.metrics();
  EXPECT_EQ(m.bytes_in_transfer, 3000u);
  h.complete(a);
  m = h.core.metrics();
  EXPECT_EQ(m.bytes_in_transfer, 2000u);
  EXPECT_EQ(m.bytes_unpersisted, 1000u);
  h.complete(b);
  h.now = 2000;
  auto p = one<StartPersist>(h.on(Tick{}));
  EXPECT_EQ(h.core.metrics().bytes_in_persist, 3000u);
  h.persist_ok(p);
  m = h.core.metrics();
  EXPECT_EQ(m.bytes_in_persist, 0u);
  EXPECT_EQ(m.bytes_unpersisted, 0u);
  EXPECT_EQ(m.remote_bytes, 3000u);
  EXPECT_EQ(m.bytes_persisted_total, 3000u);
  EXPECT_EQ(m.persists_completed, 1u);
  EXPECT_EQ(m.last_persist_ts_ms, 2000);
}

}  // namespace strata::tier
