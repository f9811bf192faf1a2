// Crash safety of the embedded catalog on the fault-injecting file system
// (common/fault_fs.h): random catalog calls until a random mutation brings
// the "machine" down; the machine restarts with its unsynced writes
// dropped, or a random prefix of them kept and the first lost one torn; the
// catalog is reopened. Every reopen must show exactly the acknowledged
// calls, plus possibly the one in flight at the crash: nothing acknowledged
// lost, so no revision ever goes backwards, and nothing never written.
//
// Replay a failure with STRATA_TEST_SEED=<seed printed in the failure>.
#include <gtest/gtest.h>

#include "catalog/embedded_catalog.h"
#include "catalog_ops.h"
#include "common/fault_fs.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::catalog {
namespace {

using ops::Model;
using ops::Op;

struct Recovered {
  std::map<std::string, StreamEntry> entries;
  uint64_t floor = 0;
};

Recovered read_back(EmbeddedCatalog& c) {
  Recovered r;
  auto l = c.list();
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  if (l.ok()) {
    for (auto& e : *l) r.entries[e.stream] = e;
  }
  r.floor = c.info().revision_floor;
  return r;
}

// The recovered state is the model, or the model after the call in flight.
// A remove in flight writes the floor before it erases the entry (two keys
// of one batch), so a crash between them shows the entry with the new floor.
::testing::AssertionResult matches(const Model& before, const std::optional<Op>& in_flight,
                                   const Recovered& got) {
  if (got.entries == before.entries && got.floor == before.floor) {
    return ::testing::AssertionSuccess();
  }
  if (in_flight) {
    Model after = before;
    after.apply(*in_flight);
    if (got.entries == after.entries && got.floor == after.floor) {
      return ::testing::AssertionSuccess();
    }
    if (in_flight->kind == Op::Kind::remove && got.entries == before.entries &&
        got.floor == after.floor) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "recovered (floor " << got.floor << "):\n"
         << ops::describe(got.entries) << "acknowledged (floor " << before.floor << "):\n"
         << ops::describe(before.entries)
         << (in_flight ? "in flight: " + ops::format_op(*in_flight)
                       : std::string("nothing in flight"));
}

struct Stats {
  uint64_t crashes = 0;
  uint64_t acknowledged = 0;
  uint64_t in_flight_applied = 0;
  uint64_t compactions = 0;
  uint64_t outcomes[5] = {};  // ok, conflict, fenced, not_found, exists
};

void count_outcome(Stats& s, const std::string& out) {
  const char* names[] = {"ok", "conflict", "fenced", "not_found", "exists"};
  for (size_t i = 0; i < 5; ++i) {
    if (out.rfind(names[i], 0) == 0) s.outcomes[i] += 1;
  }
}

void run_machine(uint64_t seed, int rounds, Stats* stats) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rng(seed);
  FaultFileSystem fs;
  EmbeddedCatalogOptions o;
  o.capacity = 16;
  o.wal_bytes = 24 * 1024;  // a few hundred calls fill it: compactions happen
  o.background_compaction = rng.chance(1, 2);
  Model model;
  for (int round = 0; round <= rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto opened = EmbeddedCatalog::open(fs, "/node", o);
    ASSERT_TRUE(opened.ok()) << opened.error().to_string();
    auto c = std::move(opened).value();
    if (round == rounds) break;

    fs.crash_after(rng.uniform(200));
    std::optional<Op> in_flight;
    for (int i = 0; i < 300; ++i) {
      const std::string stream = ops::random_stream(rng);
      Op op = ops::random_op(rng, stream, model.find(stream));
      auto got = ops::run_op(*c, op);
      if (!got.ok()) {
        ASSERT_TRUE(got.code() == Errc::simulated_crash || got.code() == Errc::fail_stopped)
            << got.error().to_string();
        in_flight = op;
        break;
      }
      const std::string expect = model.apply(op);
      ASSERT_EQ(*got, expect) << ops::format_op(op);
      count_outcome(*stats, expect);
      stats->acknowledged += 1;
    }
    stats->compactions += c->info().compactions;
    fs.crash_after(0);  // down before the catalog closes: its close writes nothing
    c.reset();
    fs.crash(CrashOptions{rng.next(), rng.chance(1, 2), rng.chance(1, 2), rng.chance(1, 2)});
    fs.clear_crash_after();
    stats->crashes += 1;

    auto again = EmbeddedCatalog::open(fs, "/node", o);
    ASSERT_TRUE(again.ok()) << again.error().to_string();
    Recovered got = read_back(**again);
    ASSERT_TRUE(matches(model, in_flight, got));
    // Adopt what survived (the call in flight may or may not have).
    if (!(got.entries == model.entries && got.floor == model.floor)) {
      stats->in_flight_applied += 1;
    }
    for (const auto& [name, e] : model.entries) {
      auto it = got.entries.find(name);
      if (it != got.entries.end()) {
        EXPECT_GE(it->second.revision, e.revision) << name;
      }
    }
    model.entries = got.entries;
    model.floor = got.floor;
  }
}

TEST(CatalogCrash, RandomCrashPointsKeepEveryAcknowledgedCall) {
  test::QuietLogs quiet;
  const uint64_t base = strata::test::test_seed(0xca7a);
  const int machines = strata::test::scaled(150);
  Stats stats;
  for (int i = 0; i < machines; ++i) {
    run_machine(base + uint64_t(i), 5, &stats);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf(
      "%d machines, %llu crashes, %llu acknowledged calls (ok %llu, conflict %llu, fenced %llu, "
      "not_found %llu, exists %llu), %llu in-flight calls survived, %llu compactions\n",
      machines, (unsigned long long)stats.crashes, (unsigned long long)stats.acknowledged,
      (unsigned long long)stats.outcomes[0], (unsigned long long)stats.outcomes[1],
      (unsigned long long)stats.outcomes[2], (unsigned long long)stats.outcomes[3],
      (unsigned long long)stats.outcomes[4], (unsigned long long)stats.in_flight_applied,
      (unsigned long long)stats.compactions);
  // The workload reaches every outcome and crashes mid-call.
  for (uint64_t n : stats.outcomes) EXPECT_GT(n, 0u);
  EXPECT_EQ(stats.crashes, uint64_t(machines) * 5);
  EXPECT_GT(stats.acknowledged, stats.crashes * 20);
  EXPECT_GT(stats.compactions, uint64_t(machines));
}

}  // namespace
}  // namespace strata::catalog
