// Crash tests on the fault-injecting file system: a workload runs until a
// chosen mutation (crash_after(n), n swept over the workload's mutation
// count), the machine "loses power" in one of several modes, and the log is
// reopened. Checked after every crash:
//  - recovery succeeds (a crash never makes a log unopenable);
//  - offsets are contiguous from the first, and every CRC verifies;
//  - every record found is the record attempted at that offset (nothing
//    that was never written appears), and batches are all-or-nothing;
//  - under fsync=always and =interval, every acknowledged offset is there;
//  - the log accepts appends afterwards.
// Also: stream create and delete through the registry are crash-atomic.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <map>
#include <set>

#include "common/fault_fs.h"
#include "common/random.h"
#include "log/log_test_util.h"
#include "log/registry.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

using test::payload_for;

// Thousands of crashes: the repair warnings would drown the test output.
using strata::test::QuietLogs;

CrashOptions crash_mode(int mode, uint64_t seed) {
  CrashOptions c;
  c.seed = seed;
  c.keep_random_prefix = mode >= 1;
  c.tear = mode >= 2;
  c.random_dir_entries = mode >= 3;
  return c;
}

struct Workload {
  FsyncPolicy policy = FsyncPolicy::always;
  int batches = 60;
  uint64_t seed = 1;

  LogOptions options(FaultFileSystem& fs) const {
    LogOptions o;
    o.fs = &fs;
    o.fsync = policy;
    o.fsync_interval_ms = 0;
    o.create_if_missing = true;
    o.max_segment_bytes = 700;  // rolls every few batches
    return o;
  }
};

struct Attempted {
  std::map<uint64_t, std::string> record;  // offset -> bytes attempted there
  std::set<uint64_t> batch_starts;         // first offsets of attempted batches
  uint64_t acked_next = 0;                 // offsets below were acknowledged
  uint64_t end = 0;                        // offsets below were attempted
};

// Runs the workload against an existing stream whose committed end is
// `start`; stops at the first failure.
Attempted run_workload(FaultFileSystem& fs, const Workload& w, uint64_t start) {
  Attempted a;
  a.acked_next = a.end = start;
  a.batch_starts.insert(start);
  auto log = StreamLog::open("/s", w.options(fs));
  if (!log.ok()) return a;
  Random rng(w.seed);
  uint64_t next = (*log)->committed_next();
  EXPECT_EQ(next, start);
  for (int b = 0; b < w.batches; ++b) {
    int n = int(rng.range(1, 4));
    std::vector<std::string> recs;
    for (int i = 0; i < n; ++i) recs.push_back(payload_for(next + i, w.seed, 1, 120));
    for (int i = 0; i < n; ++i) a.record[next + i] = recs[i];
    a.batch_starts.insert(next);
    a.end = next + n;
    auto r = (*log)->append(test::views(recs));
    if (!r.ok()) break;
    EXPECT_EQ(r->first_offset, next);
    next += n;
    a.acked_next = next;
  }
  a.batch_starts.insert(a.end);
  (void)(*log)->close();
  return a;
}

// Opens the log after a crash and checks everything the file comment lists.
void check_after_crash(FaultFileSystem& fs, const Workload& w, const Attempted& a,
                       const std::map<uint64_t, std::string>& before, const std::string& ctx) {
  auto log = StreamLog::open("/s", w.options(fs));
  ASSERT_TRUE(log.ok()) << ctx << ": reopen failed: " << log.error().to_string();
  auto rb = test::read_all(**log);
  ASSERT_TRUE(rb.status.ok()) << ctx << ": " << rb.status.to_string();
  uint64_t next = (*log)->committed_next();
  ASSERT_EQ(rb.records.size(), next) << ctx;
  for (size_t i = 0; i < rb.records.size(); ++i) {
    uint64_t off = rb.records[i].first;
    ASSERT_EQ(off, i) << ctx << ": offsets not contiguous";
    auto b = before.find(off);
    const std::string& want = b != before.end() ? b->second : a.record.at(off);
    ASSERT_EQ(rb.records[i].second, want) << ctx << ": wrong bytes at offset " << off;
  }
  // Batches are all-or-nothing: the log ends on a batch boundary.
  ASSERT_TRUE(a.batch_starts.count(next)) << ctx << ": batch split, log ends at " << next;
  ASSERT_LE(next, a.end) << ctx << ": more offsets than ever attempted";
  if (w.policy != FsyncPolicy::never) {
    ASSERT_GE(next, a.acked_next) << ctx << ": lost acknowledged offsets";
  }
  // Usable afterwards.
  std::string more = payload_for(next, 99);
  auto r = (*log)->append({more});
  ASSERT_TRUE(r.ok()) << ctx << ": " << r.error().to_string();
  ASSERT_EQ(r->first_offset, next);
}

// Sweeps crash points over the workload for one policy; returns the count.
int sweep(FsyncPolicy policy, int max_points) {
  QuietLogs quiet;
  Workload w;
  w.policy = policy;
  w.seed = strata::test::test_seed(1000 + int(policy));
  uint64_t setup_mutations, total;
  {
    FaultFileSystem fs;
    auto l = StreamLog::open("/s", w.options(fs));
    EXPECT_TRUE(l.ok());
    (void)(*l)->close();
    setup_mutations = fs.mutation_count();
    run_workload(fs, w, 0);
    total = fs.mutation_count() - setup_mutations;
  }
  int points = 0;
  uint64_t stride = std::max<uint64_t>(1, (total + 1) * 4 / uint64_t(max_points));
  for (uint64_t n = 0; n <= total; n += stride) {
    for (int mode = 0; mode < 4; ++mode) {
      FaultFileSystem fs;
      {
        auto l = StreamLog::open("/s", w.options(fs));
        (void)(*l)->close();
      }
      fs.crash_after(n);
      Attempted a = run_workload(fs, w, 0);
      fs.crash(crash_mode(mode, w.seed * 31 + n * 7 + uint64_t(mode)));
      std::string ctx = fmt::format("policy {} crash after {} of {} mutations, mode {}, seed {}",
                                    fsync_policy_name(policy), n, total, mode, w.seed);
      check_after_crash(fs, w, a, {}, ctx);
      if (::testing::Test::HasFatalFailure()) return points;
      ++points;
    }
  }
  return points;
}

TEST(LogCrash, EveryCrashPointUnderFsyncAlways) {
  int points = sweep(FsyncPolicy::always, strata::test::scaled(1600));
  EXPECT_GE(points, strata::test::scaled(1600) / 4);
  RecordProperty("crash_points", points);
  std::printf("[ always ] %d crash points checked\n", points);
}

TEST(LogCrash, EveryCrashPointUnderFsyncInterval) {
  int points = sweep(FsyncPolicy::interval, strata::test::scaled(600));
  EXPECT_GE(points, strata::test::scaled(600) / 4);
  RecordProperty("crash_points", points);
  std::printf("[ interval ] %d crash points checked\n", points);
}

TEST(LogCrash, EveryCrashPointUnderFsyncNever) {
  int points = sweep(FsyncPolicy::never, strata::test::scaled(1000));
  EXPECT_GE(points, strata::test::scaled(1000) / 4);
  RecordProperty("crash_points", points);
  std::printf("[ never ] %d crash points checked\n", points);
}

// Repeated crashes without a clean shutdown in between: what was
// acknowledged in earlier lives must survive later crashes and recoveries.
TEST(LogCrash, RepeatedCrashesAccumulateNoDamage) {
  QuietLogs quiet;
  Random rng(strata::test::test_seed(77));
  FaultFileSystem fs;
  Workload w;
  w.batches = 12;
  {
    auto l = StreamLog::open("/s", w.options(fs));
    (void)(*l)->close();
  }
  std::map<uint64_t, std::string> durable;  // acknowledged in earlier lives
  int lives = strata::test::scaled(300);
  for (int life = 0; life < lives; ++life) {
    w.seed = rng.next();
    fs.crash_after(rng.uniform(60));
    Attempted a = run_workload(fs, w, durable.size());
    fs.crash(crash_mode(int(rng.uniform(4)), rng.next()));
    std::string ctx = fmt::format("life {} seed {}", life, w.seed);
    // Acknowledged offsets of this life join the ones that must survive.
    check_after_crash(fs, w, a, durable, ctx);
    if (HasFatalFailure()) return;
    // check_after_crash appended one more record and closed cleanly.
    auto log = *StreamLog::open("/s", w.options(fs));
    auto rb = test::read_all(*log);
    durable.clear();
    for (auto& [off, v] : rb.records) durable[off] = v;
  }
}

// Crashes in the middle of retention never leave a gap or lose the active segment.
TEST(LogCrash, RetentionIsCrashSafe) {
  QuietLogs quiet;
  Workload w;
  w.batches = 40;
  w.policy = FsyncPolicy::always;
  int checked = 0;
  for (uint64_t n = 0; n < 40; ++n) {
    for (int mode = 0; mode < 4; ++mode) {
      FaultFileSystem fs;
      Attempted a;
      {
        auto l = StreamLog::open("/s", w.options(fs));
        (void)(*l)->close();
        a = run_workload(fs, w, 0);
      }
      LogOptions o = w.options(fs);
      o.retention.max_bytes = 1500;
      auto log = *StreamLog::open("/s", o);
      uint64_t next = log->committed_next();
      fs.crash_after(n);
      (void)log->apply_retention();
      log.reset();
      fs.crash(crash_mode(mode, n * 4 + uint64_t(mode)));
      auto again = StreamLog::open("/s", w.options(fs));
      ASSERT_TRUE(again.ok()) << again.error().to_string();
      EXPECT_EQ((*again)->committed_next(), next) << "crash after " << n << " mode " << mode;
      auto rb = test::read_all(**again);
      ASSERT_TRUE(rb.status.ok()) << rb.status.to_string();
      uint64_t first = (*again)->first_offset();
      ASSERT_EQ(rb.records.size(), next - first);
      for (size_t i = 0; i < rb.records.size(); ++i) {
        ASSERT_EQ(rb.records[i].second, a.record.at(first + i));
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 160);
}

// Deleting a stream is durable and atomic: after a crash at any point the
// stream is either whole or gone (and its tombstone is cleaned up).
TEST(LogCrash, StreamDeleteNeverResurrectsAHalfStream) {
  QuietLogs quiet;
  auto prepare = [](FaultFileSystem& fs) {
    LogOptions o;
    o.fs = &fs;
    o.max_segment_bytes = 500;
    auto reg = *StreamRegistry::open("/data", o);
    for (const char* name : {"doomed", "bystander"}) {
      auto s = *reg->create(name);
      for (int i = 0; i < 20; ++i) EXPECT_TRUE(s->append({payload_for(uint64_t(i))}).ok());
    }
  };
  uint64_t total;
  {
    FaultFileSystem fs;
    prepare(fs);
    uint64_t before = fs.mutation_count();
    LogOptions o;
    o.fs = &fs;
    auto reg = *StreamRegistry::open("/data", o);
    ASSERT_TRUE(reg->remove("doomed").ok());
    total = fs.mutation_count() - before;
  }
  int gone = 0, whole = 0;
  for (uint64_t n = 0; n <= total; ++n) {
    for (int mode = 0; mode < 4; ++mode) {
      FaultFileSystem fs;
      prepare(fs);
      LogOptions o;
      o.fs = &fs;
      {
        auto reg = *StreamRegistry::open("/data", o);
        fs.crash_after(n);
        (void)reg->remove("doomed");
      }
      fs.crash(crash_mode(mode, n * 4 + uint64_t(mode)));
      auto reg = StreamRegistry::open("/data", o);
      ASSERT_TRUE(reg.ok()) << reg.error().to_string();
      auto names = *fs.list_dir("/data");
      for (const auto& nm : names) EXPECT_FALSE(nm.starts_with(".")) << "leftover " << nm;
      for (const char* name : {"doomed", "bystander"}) {
        if (std::string(name) == "doomed" && !(*reg)->exists(name)) {
          ++gone;
          continue;
        }
        auto s = (*reg)->open_stream(name);
        ASSERT_TRUE(s.ok()) << name << " after crash at " << n << ": " << s.error().to_string();
        auto rb = test::read_all(**s);
        ASSERT_TRUE(rb.status.ok());
        ASSERT_EQ(rb.records.size(), 20u) << name << " is not whole after crash at " << n;
        if (std::string(name) == "doomed") ++whole;
      }
    }
  }
  EXPECT_GT(gone, 0);
  EXPECT_GT(whole, 0);
  std::printf("[ delete ] %llu crash points x 4 modes: %d gone, %d whole\n",
              (unsigned long long)total + 1, gone, whole);
}

TEST(LogCrash, StreamCreateIsAllOrNothing) {
  QuietLogs quiet;
  uint64_t total;
  {
    FaultFileSystem fs;
    LogOptions o;
    o.fs = &fs;
    auto reg = *StreamRegistry::open("/data", o);
    uint64_t before = fs.mutation_count();
    ASSERT_TRUE(reg->create("new").ok());
    total = fs.mutation_count() - before;
  }
  int absent = 0, present = 0;
  for (uint64_t n = 0; n <= total; ++n) {
    for (int mode = 0; mode < 4; ++mode) {
      FaultFileSystem fs;
      LogOptions o;
      o.fs = &fs;
      {
        auto reg = *StreamRegistry::open("/data", o);
        fs.crash_after(n);
        (void)reg->create("new");
      }
      fs.crash(crash_mode(mode, n + 100 * uint64_t(mode)));
      auto reg = *StreamRegistry::open("/data", o);
      if (!reg->exists("new")) {
        ++absent;
        continue;
      }
      ++present;
      auto s = reg->open_stream("new");
      ASSERT_TRUE(s.ok()) << "crash after " << n << ": " << s.error().to_string();
      EXPECT_EQ((*s)->committed_next(), 0u);
      EXPECT_TRUE((*s)->append({"first"}).ok());
    }
  }
  EXPECT_GT(absent, 0);
  EXPECT_GT(present, 0);
  std::printf("[ create ] %llu crash points x 4 modes: %d absent, %d present\n",
              (unsigned long long)total + 1, absent, present);
}

}  // namespace
}  // namespace strata::log
