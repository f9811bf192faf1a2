// kill -9 of a real process making catalog calls (catalog_crash_child) at
// random moments, on the real file system. Each round reopens the catalog
// the previous child left behind and checks it holds exactly the calls the
// child saw acknowledged, plus possibly the one it was making when killed:
// every acknowledged put is there and no revision goes backwards. The
// outcomes the child saw are checked against the model too.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "catalog/embedded_catalog.h"
#include "catalog_ops.h"
#include "support/assertions.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::catalog {
namespace {

using ops::Model;
using ops::Op;

struct Log {
  std::vector<std::pair<Op, std::string>> acked;  // call and the outcome the child saw
  std::optional<Op> in_flight;                    // logged, not answered
  uint64_t errors = 0;
};

Log parse_log(const std::string& out) {
  Log log;
  std::istringstream in(out);
  std::string line;
  std::optional<std::pair<uint64_t, Op>> pending;
  while (std::getline(in, line)) {
    if (in.eof() && !out.empty() && out.back() != '\n') break;  // cut by the kill
    std::istringstream ls(line);
    std::string what;
    uint64_t n = 0;
    ls >> what >> n;
    std::string rest;
    std::getline(ls, rest);
    if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
    if (what == "op") {
      auto op = ops::parse_op(rest);
      EXPECT_TRUE(op.ok()) << op.error().to_string();
      if (op.ok()) pending = std::make_pair(n, *op);
    } else if (what == "ack" || what == "err") {
      EXPECT_TRUE(pending && pending->first == n) << line;
      if (what == "ack" && pending) log.acked.emplace_back(pending->second, rest);
      if (what == "err") log.errors += 1;
      pending.reset();
    } else {
      ADD_FAILURE() << "unexpected child output: " << line;
    }
  }
  if (pending) log.in_flight = pending->second;
  return log;
}

TEST(CatalogKill, KillNineAtRandomMomentsLosesNoAcknowledgedCall) {
  strata::test::TempDir dir;
  Random rng(strata::test::test_seed(0x6b17));
  Model model;
  const int rounds = strata::test::scaled(10);
  size_t total = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto child = strata::test::Process::spawn(
        {CATALOG_CRASH_CHILD, dir.sub("node"), std::to_string(rng.next())}, dir.path());
    ASSERT_TRUE(child.wait_for_output("ack", std::chrono::seconds(20)).has_value())
        << child.stderr_text();
    // A random moment to kill at (not a synchronisation).
    std::this_thread::sleep_for(std::chrono::milliseconds(rng.range(5, 250)));
    child.kill(9);
    auto status = child.wait();
    ASSERT_TRUE(status.has_value());
    ASSERT_EQ(*status, 128 + 9) << child.stderr_text();
    Log log = parse_log(child.stdout_text());
    ASSERT_EQ(log.errors, 0u) << "the child saw a backend error";
    for (const auto& [op, outcome] : log.acked) {
      ASSERT_EQ(model.apply(op), outcome) << ops::format_op(op);
    }
    total += log.acked.size();

    EmbeddedCatalogOptions ro;
    ro.read_only = true;  // look without writing recovery into the file
    auto c = EmbeddedCatalog::open(posix_fs(), dir.sub("node"), ro);
    ASSERT_TRUE(c.ok()) << c.error().to_string();
    std::map<std::string, StreamEntry> got;
    auto listed = (*c)->list();
    ASSERT_TRUE(listed.ok()) << listed.error().to_string();
    for (auto& e : *listed) got[e.stream] = e;
    const uint64_t floor = (*c)->info().revision_floor;
    // A kill loses nothing the kernel has: the call in flight either wrote
    // all it writes or nothing, except that a remove writes the floor
    // before the erase.
    Model after = model;
    if (log.in_flight) after.apply(*log.in_flight);
    const bool as_acked = got == model.entries && floor == model.floor;
    const bool with_in_flight = got == after.entries && floor == after.floor;
    const bool remove_half = log.in_flight && log.in_flight->kind == Op::Kind::remove &&
                             got == model.entries && floor == after.floor;
    ASSERT_TRUE(as_acked || with_in_flight || remove_half)
        << "after " << log.acked.size() << " acknowledged calls; in flight: "
        << (log.in_flight ? ops::format_op(*log.in_flight) : "none") << "\nrecovered (floor "
        << floor << "):\n"
        << ops::describe(got) << "acknowledged (floor " << model.floor << "):\n"
        << ops::describe(model.entries);
    for (const auto& [name, e] : model.entries) {
      auto it = got.find(name);
      if (it != got.end()) {
        EXPECT_GE(it->second.revision, e.revision) << name;
      }
    }
    model.entries = got;
    model.floor = floor;
  }
  std::printf("%d kills, %zu acknowledged calls verified\n", rounds, total);
  EXPECT_GT(total, size_t(rounds));
}

}  // namespace
}  // namespace strata::catalog
