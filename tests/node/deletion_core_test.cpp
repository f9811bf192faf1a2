// DeletionCore driven directly: the order of the steps, the list/remove loop
// until a listing is empty, retries of transient failures with the backoff
// schedule, giving up, fatal failures, stale outcomes; then a seeded
// simulation against a model bucket whose operations fail at random.
#include "node/deletion_core.h"

#include <gtest/gtest.h>

#include <set>

#include "common/overloaded.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

StepOutcome ok(DeletionStep s, std::vector<std::string> keys = {}) {
  StepOutcome o;
  o.step = s;
  o.keys = std::move(keys);
  return o;
}

StepOutcome fail(DeletionStep s, StepResult r, std::string msg = "boom") {
  StepOutcome o;
  o.step = s;
  o.result = r;
  o.error = std::move(msg);
  return o;
}

const RunStep& as_run(const DeletionEffect& e) {
  static const RunStep none{};
  const auto* r = std::get_if<RunStep>(&e);
  EXPECT_NE(r, nullptr) << "expected a RunStep";
  return r ? *r : none;
}

TEST(DeletionCore, RunsEveryStepInOrderAndLoopsUntilAListingIsEmpty) {
  DeletionCore c("s1", {}, 1);
  EXPECT_EQ(as_run(c.start()).step, DeletionStep::fence);
  EXPECT_EQ(as_run(*c.on(ok(DeletionStep::fence))).step, DeletionStep::list);
  auto r = as_run(*c.on(ok(DeletionStep::list, {"a", "b"})));
  EXPECT_EQ(r.step, DeletionStep::remove_objects);
  EXPECT_EQ(r.keys, (std::vector<std::string>{"a", "b"}));
  StepOutcome removed = ok(DeletionStep::remove_objects);
  removed.removed = 2;
  EXPECT_EQ(as_run(*c.on(removed)).step, DeletionStep::list);
  EXPECT_EQ(as_run(*c.on(ok(DeletionStep::list, {"c"}))).step, DeletionStep::remove_objects);
  removed.removed = 1;
  EXPECT_EQ(as_run(*c.on(removed)).step, DeletionStep::list);
  EXPECT_EQ(as_run(*c.on(ok(DeletionStep::list))).step, DeletionStep::remove_local);
  EXPECT_EQ(as_run(*c.on(ok(DeletionStep::remove_local))).step, DeletionStep::remove_catalog);
  EXPECT_EQ(as_run(*c.on(ok(DeletionStep::remove_catalog))).step, DeletionStep::remove_marker);
  auto end = c.on(ok(DeletionStep::remove_marker));
  ASSERT_TRUE(end);
  auto* f = std::get_if<DeletionFinished>(&*end);
  ASSERT_NE(f, nullptr);
  EXPECT_OK(f->status);
  EXPECT_TRUE(c.progress().finished);
  EXPECT_EQ(c.progress().objects_removed, 3u);
  EXPECT_EQ(c.progress().listings, 3u);
  // Nothing after the end.
  EXPECT_FALSE(c.on(ok(DeletionStep::remove_marker)));
}

TEST(DeletionCore, IgnoresOutcomesOfStepsNotInFlight) {
  DeletionCore c("s1", {}, 1);
  EXPECT_FALSE(c.on(ok(DeletionStep::fence))) << "before start";
  c.start();
  EXPECT_FALSE(c.on(ok(DeletionStep::list)));
  EXPECT_FALSE(c.on(ok(DeletionStep::remove_marker)));
  EXPECT_EQ(c.progress().step, DeletionStep::fence);
  EXPECT_EQ(as_run(*c.on(ok(DeletionStep::fence))).step, DeletionStep::list);
}

TEST(DeletionCore, TransientFailuresRetryTheStepOnTheBackoffScheduleThenGiveUp) {
  DeletionCoreOptions o;
  o.max_failures_in_a_row = 5;
  DeletionCore c("s1", o, 7);
  c.start();
  auto r = as_run(*c.on(fail(DeletionStep::fence, StepResult::transient, "catalog busy")));
  EXPECT_EQ(r.step, DeletionStep::fence);
  EXPECT_EQ(r.delay_ms, 0) << "the first retry is immediate";
  for (uint32_t attempt = 2; attempt <= 5; ++attempt) {
    r = as_run(*c.on(fail(DeletionStep::fence, StepResult::transient, "catalog busy")));
    EXPECT_EQ(r.step, DeletionStep::fence);
    int64_t nominal = tier::nominal_backoff_ms(o.backoff, attempt);
    EXPECT_GE(r.delay_ms, nominal / 2) << attempt;
    EXPECT_LE(r.delay_ms, nominal) << attempt;
  }
  auto end = c.on(fail(DeletionStep::fence, StepResult::transient, "catalog busy"));
  auto* f = std::get_if<DeletionFinished>(&*end);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status.code(), Errc::transient);
  EXPECT_NE(f->status.error().message.find("6 transient failures in a row"), std::string::npos)
      << f->status.error().message;
  EXPECT_NE(f->status.error().message.find("catalog busy"), std::string::npos);
  EXPECT_EQ(c.progress().transient_failures, 6u);
}

TEST(DeletionCore, ASucceedingStepResetsTheCountButAListingAloneDoesNot) {
  DeletionCoreOptions o;
  o.max_failures_in_a_row = 2;
  DeletionCore c("s1", o, 7);
  c.start();
  c.on(fail(DeletionStep::fence, StepResult::transient));
  c.on(fail(DeletionStep::fence, StepResult::transient));
  EXPECT_EQ(as_run(*c.on(ok(DeletionStep::fence))).step, DeletionStep::list);
  EXPECT_EQ(c.progress().failures_in_a_row, 0u);
  // A store that lists but never removes: the failed batch goes back to
  // the listing, and the listings in between do not reset the count.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(as_run(*c.on(ok(DeletionStep::list, {"k"}))).step, DeletionStep::remove_objects);
    auto r = as_run(*c.on(fail(DeletionStep::remove_objects, StepResult::transient)));
    EXPECT_EQ(r.step, DeletionStep::list) << "a failed batch is retried from a fresh listing";
    EXPECT_TRUE(r.keys.empty());
  }
  c.on(ok(DeletionStep::list, {"k"}));
  auto end = c.on(fail(DeletionStep::remove_objects, StepResult::transient));
  ASSERT_TRUE(end);
  EXPECT_TRUE(std::holds_alternative<DeletionFinished>(*end));
}

TEST(DeletionCore, AFatalFailureEndsTheRunWithItsError) {
  DeletionCore c("s1", {}, 1);
  c.start();
  c.on(ok(DeletionStep::fence));
  c.on(ok(DeletionStep::list, {"k1", "k2"}));
  StepOutcome f = fail(DeletionStep::remove_objects, StepResult::fatal, "AccessDenied on k2");
  f.removed = 1;
  auto end = c.on(f);
  auto* d = std::get_if<DeletionFinished>(&*end);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->status.code(), Errc::fatal);
  EXPECT_NE(d->status.error().message.find("stream s1"), std::string::npos);
  EXPECT_NE(d->status.error().message.find("remove_objects: AccessDenied on k2"), std::string::npos)
      << d->status.error().message;
  EXPECT_EQ(c.progress().objects_removed, 1u);
  EXPECT_EQ(c.progress().last_error, "remove_objects: AccessDenied on k2");
}

// A model of everything a deletion removes, with steps that fail at random
// (transient mostly, fatal rarely) and, when they "fail", sometimes did part
// of their work anyway (a removal that went through but whose answer was
// lost). Runs are repeated, each from `fence`, as after a crash or a failed
// run, until one finishes: then nothing may be left, and a run may finish
// only when nothing is left.
TEST(DeletionCore, SimulatedRunsAgainstAFlakyStoreConvergeToNothingLeft) {
  const uint64_t seed = strata::test::test_seed(0xde1e7e);
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  Random rng(seed);
  const int worlds = strata::test::scaled(200);
  for (int w = 0; w < worlds; ++w) {
    std::set<std::string> bucket;
    const int objects = int(rng.uniform(300));
    for (int i = 0; i < objects; ++i) bucket.insert("k" + std::to_string(i));
    bool local = true, catalog = true, marker = true;
    const uint64_t page = 1 + rng.uniform(50);
    const uint64_t fail_permille = rng.uniform(400);
    int runs = 0;
    bool done = false;
    while (!done) {
      ASSERT_LT(++runs, 10'000) << "world " << w << " never converges";
      DeletionCoreOptions o;
      o.max_failures_in_a_row = 4;
      DeletionCore c("s", o, rng.next());
      DeletionEffect e = c.start();
      for (int steps = 0;; ++steps) {
        ASSERT_LT(steps, 100'000);
        if (auto* f = std::get_if<DeletionFinished>(&e)) {
          if (f->status.ok()) {
            EXPECT_TRUE(bucket.empty()) << "world " << w;
            EXPECT_FALSE(local || catalog || marker) << "world " << w;
            done = true;
          }
          break;
        }
        const RunStep& r = std::get<RunStep>(e);
        EXPECT_GE(r.delay_ms, 0);
        StepOutcome out = ok(r.step);
        bool failed = rng.uniform(1000) < fail_permille;
        bool did_work = !failed || rng.chance(1, 2);
        switch (r.step) {
          case DeletionStep::fence:
            break;
          case DeletionStep::list:
            for (const auto& k : bucket) {
              if (out.keys.size() == page) break;
              out.keys.push_back(k);
            }
            break;
          case DeletionStep::remove_objects:
            for (const auto& k : r.keys) {
              if (did_work || rng.chance(1, 3)) out.removed += bucket.erase(k);
            }
            break;
          case DeletionStep::remove_local:
            if (did_work) local = false;
            break;
          case DeletionStep::remove_catalog:
            // The protocol's order: the catalog entry goes only once
            // nothing is left in the bucket or on local disk.
            EXPECT_TRUE(bucket.empty());
            EXPECT_FALSE(local);
            if (did_work) catalog = false;
            break;
          case DeletionStep::remove_marker:
            EXPECT_FALSE(catalog);
            if (did_work) marker = false;
            break;
        }
        if (failed) {
          out.result = rng.chance(1, 20) ? StepResult::fatal : StepResult::transient;
          out.error = "injected";
          out.keys.clear();
        }
        auto next = c.on(out);
        ASSERT_TRUE(next.has_value());
        e = std::move(*next);
      }
    }
  }
}

}  // namespace
}  // namespace strata::node
