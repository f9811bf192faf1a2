// kill -9 of a real process writing a stream, with each fsync policy.
// A child (log_crash_child) appends from several threads and prints each
// acknowledged batch; the test kills it at a random moment, reopens the
// stream (running recovery) and checks: every acknowledged offset is present
// and byte-identical, offsets are contiguous from 0, every chunk's CRC
// verifies, and every record present is one the child wrote. The page cache
// survives a process crash, so this holds for every policy. Iterations
// continue on the same directory, so each run also recovers the previous
// runs' crashes.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <map>
#include <sstream>
#include <thread>

#include "common/random.h"
#include "log/kill_record.h"
#include "log/log_test_util.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

struct Ack {
  uint64_t first;
  int thread;
  uint64_t seq;
  int n;
};

std::vector<Ack> parse_acks(const std::string& out) {
  std::vector<Ack> acks;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // the last line had no newline: cut by the kill
    unsigned long long f, s;
    int t, n;
    if (std::sscanf(line.c_str(), "ack %llu %d %llu %d", &f, &t, &s, &n) == 4) {
      acks.push_back(Ack{f, t, s, n});
    }
  }
  return acks;
}

void kill_loop(const std::string& policy, int iterations) {
  strata::test::TempDir tmp;
  std::string dir = tmp.sub("stream");
  Random rng(strata::test::test_seed(4242 + policy.size()));
  std::map<uint64_t, std::string> acked;  // offset -> record, over all iterations
  uint64_t total_acks = 0;
  auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::err);
  for (int it = 0; it < iterations; ++it) {
    uint64_t seed = rng.next() % 1000000;
    auto child = strata::test::Process::spawn(
        {LOG_CRASH_CHILD, dir, policy, std::to_string(seed), "4"}, tmp.path());
    // Mostly kill while appending; sometimes while the child is still
    // opening (recovering) the stream.
    if (rng.chance(1, 8)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng.range(0, 5)));
    } else {
      auto out = child.wait_for_output("ack ", std::chrono::seconds(20));
      ASSERT_TRUE(out) << "child never acknowledged: " << child.stderr_text();
      std::this_thread::sleep_for(std::chrono::milliseconds(rng.range(1, 25)));
    }
    child.kill(9);
    auto st = child.wait();
    ASSERT_TRUE(st);
    EXPECT_EQ(*st, 128 + 9) << "child exited on its own: " << child.stderr_text();
    for (const Ack& a : parse_acks(child.stdout_text())) {
      for (int i = 0; i < a.n; ++i) acked[a.first + i] = kill_record(seed, a.thread, a.seq, i);
      ++total_acks;
    }
    if (!exists(posix_fs(), dir)) continue;  // killed before it created anything
    LogOptions o;
    // A child killed while creating the stream leaves a directory without a
    // complete first segment; finishing the creation is what it would do.
    o.create_if_missing = true;
    auto log = StreamLog::open(dir, o);
    ASSERT_TRUE(log.ok()) << "iteration " << it << ": " << log.error().to_string();
    auto rb = test::read_all(**log);
    ASSERT_TRUE(rb.status.ok()) << "iteration " << it << ": " << rb.status.to_string();
    for (size_t i = 0; i < rb.records.size(); ++i) {
      ASSERT_EQ(rb.records[i].first, i) << "iteration " << it;
      ASSERT_TRUE(is_kill_record(rb.records[i].second))
          << "iteration " << it << ": offset " << i << " holds bytes nobody wrote";
    }
    for (const auto& [off, rec] : acked) {
      ASSERT_LT(off, rb.records.size()) << "iteration " << it << ": acknowledged offset " << off
                                        << " lost (" << fsync_policy_name(o.fsync) << ")";
      ASSERT_EQ(rb.records[off].second, rec) << "iteration " << it << ": offset " << off;
    }
  }
  spdlog::set_level(level);
  EXPECT_GT(total_acks, uint64_t(iterations));
  std::printf("[ %s ] %d kills, %llu acknowledged batches, %zu acknowledged offsets verified\n",
              policy.c_str(), iterations, (unsigned long long)total_acks, acked.size());
}

TEST(LogKill, Kill9UnderFsyncAlways) {
  kill_loop("always", strata::test::scaled(80));
}
TEST(LogKill, Kill9UnderFsyncInterval) {
  kill_loop("interval", strata::test::scaled(80));
}
TEST(LogKill, Kill9UnderFsyncNever) {
  kill_loop("never", strata::test::scaled(80));
}

}  // namespace
}  // namespace strata::log
