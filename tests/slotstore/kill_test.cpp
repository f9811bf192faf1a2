// kill -9 of a real writer process (slotstore_crash_child) at random
// moments, on the real file system, with background and inline compaction.
// A killed process loses nothing the kernel already has: after each kill
// the store must hold exactly the acknowledged ops, plus possibly a prefix
// of the one batch in flight. Each round reopens the store the previous
// round's child left behind.
#include <sstream>
#include <thread>

#include "common/random.h"
#include "slotstore_test_util.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::slotstore {
namespace {

using namespace test;

struct Logged {
  std::vector<std::vector<WriteBatch::Op>> acked;  // batches, in order
  std::vector<WriteBatch::Op> in_flight;           // the batch logged but not answered
  size_t lines = 0;
  uint64_t compactions = 0;  // the child's last report
};

Result<WriteBatch::Op> parse_op(const std::string& line) {
  std::istringstream in(line);
  std::string kind;
  WriteBatch::Op op;
  in >> kind >> op.key;
  if (kind == "E") {
    op.erase = true;
    return op;
  }
  if (kind != "P") return Error(Errc::corrupt, "bad op line: " + line);
  std::string tok;
  while (in >> tok) {
    std::string v = tok.substr(2);
    if (tok[0] == 'T') {
      op.updates.push_back(v == "-" ? clear(kTerm) : set(kTerm, Value::u64(std::stoull(v))));
    } else if (tok[0] == 'A') {
      op.updates.push_back(set(kApplied, Value::u64(std::stoull(v))));
    } else if (tok[0] == 'V') {
      if (v == "-") {
        op.updates.push_back(clear(kVote));
      } else {
        size_t comma = v.find(',');
        op.updates.push_back(set(kVote, vote(v.substr(0, comma), v.substr(comma + 1))));
      }
    } else {
      return Error(Errc::corrupt, "bad field in: " + line);
    }
  }
  return op;
}

Logged parse_log(const std::string& out) {
  Logged log;
  std::istringstream in(out);
  std::string line;
  std::vector<WriteBatch::Op> pending;
  uint64_t pending_n = UINT64_MAX;
  while (std::getline(in, line)) {
    if (in.eof() && !out.empty() && out.back() != '\n') break;  // cut by the kill
    ++log.lines;
    std::istringstream ls(line);
    std::string what;
    uint64_t n = 0;
    ls >> what >> n;
    if (what == "op") {
      if (n != pending_n) {
        pending.clear();
        pending_n = n;
      }
      std::string rest;
      std::getline(ls, rest);
      auto op = parse_op(rest.substr(1));
      EXPECT_TRUE(op.ok()) << op.error().to_string();
      if (op.ok()) pending.push_back(*op);
    } else if (what == "ack") {
      EXPECT_EQ(n, pending_n);
      log.acked.push_back(pending);
      pending.clear();
      pending_n = UINT64_MAX;
    } else if (what == "compactions") {
      log.compactions = n;
    } else if (what == "err") {
      pending.clear();
      pending_n = UINT64_MAX;
    } else {
      ADD_FAILURE() << "unexpected child output: " << line;
    }
  }
  log.in_flight = pending;
  return log;
}

TEST(SlotStoreKill, KillNineAtRandomMomentsLosesNothingAcknowledged) {
  strata::test::TempDir dir;
  const std::string path = dir.sub("meta.slots");
  Random rng(strata::test::test_seed(0x6b11));
  Contents state;
  const int rounds = strata::test::scaled(10);
  size_t total_acked = 0;
  uint64_t compactions = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto child = strata::test::Process::spawn(
        {SLOTSTORE_CRASH_CHILD, path, std::to_string(round + 1), std::to_string(round % 2)},
        dir.path());
    ASSERT_TRUE(child.wait_for_output("ack", std::chrono::seconds(20)).has_value())
        << child.stderr_text();
    std::this_thread::sleep_for(std::chrono::milliseconds(rng.range(5, 250)));
    child.kill(9);
    auto status = child.wait();
    ASSERT_TRUE(status.has_value());
    ASSERT_EQ(*status, 128 + 9) << child.stderr_text();
    Logged log = parse_log(child.stdout_text());
    for (const auto& batch : log.acked) {
      for (const auto& op : batch) apply_to(state, op, 3);
    }
    total_acked += log.acked.size();
    compactions += log.compactions;

    auto s = must_open(posix_fs(), path, raft_schema(), small_options());
    ASSERT_TRUE(s);
    Contents got = contents_of(*s);
    EXPECT_EQ(s->info().stale_entries_skipped, 0u);
    Contents expect = state;
    size_t p = 0;
    while (!(expect == got) && p < log.in_flight.size()) apply_to(expect, log.in_flight[p++], 3);
    ASSERT_EQ(got, expect) << "after " << log.acked.size() << " acknowledged batches and "
                           << log.in_flight.size() << " in-flight ops\nrecovered:\n"
                           << describe(got) << "expected:\n"
                           << describe(state);
    state = got;
  }
  std::printf("%d kills, %zu acknowledged batches verified, >= %llu compactions in the children\n",
              rounds, total_acked, (unsigned long long)compactions);
  EXPECT_GT(total_acked, size_t(rounds));
  EXPECT_GT(compactions, 0u);
}

}  // namespace
}  // namespace strata::slotstore
