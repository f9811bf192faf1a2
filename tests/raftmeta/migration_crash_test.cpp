// Crash atomicity of the DETS migration. A crash at any point must leave
// either no store and the original meta.dets (the next start migrates
// again) or a complete store; never a partial store, and never a lost
// source. The retry then completes and leaves no temp file behind.
//  - FaultFileSystem: a power loss after each mutating file operation of a
//    whole migration in turn (dropping, keeping a prefix of, or tearing the
//    unsynced writes);
//  - kill -9 of a real child process (raftmeta_child migrate) at random
//    moments on the real file system.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/fault_fs.h"
#include "common/random.h"
#include "raftmeta/dets_migration.h"
#include "raftmeta/dets_test_util.h"
#include "raftmeta/raft_meta.h"
#include "raftmeta_test_util.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::raftmeta {
namespace {

using namespace test;

// The invariant after a crash at any point, given the source bytes.
void check_after_crash(FileSystem& fs, const std::string& dir, const Bytes& source,
                       const std::string& where) {
  SCOPED_TRACE(where);
  const bool store = exists(fs, store_path(dir));
  const bool dets = exists(fs, dets_path(dir));
  const bool retired = exists(fs, dets_path(dir) + kRetiredSuffix);
  // The source is never lost nor changed: it is meta.dets or, once the
  // store is in place, possibly meta.dets.migrated.
  ASSERT_TRUE(dets || retired) << "the source disappeared";
  ASSERT_EQ(file_bytes(fs, dets ? dets_path(dir) : dets_path(dir) + kRetiredSuffix), source);
  if (!store) {
    ASSERT_TRUE(dets) << "no store, and the source was retired";
    return;
  }
  // A store exists: it must be complete.
  EXPECT_OK(compare_with_dets(fs, dets ? dets_path(dir) : dets_path(dir) + kRetiredSuffix,
                              store_path(dir)));
}

// After the retry: a complete store, the source retired, no temp file.
void check_retry(FileSystem& fs, const std::string& dir, const Options& o,
                 const std::vector<std::string>& rows, const std::string& where) {
  SCOPED_TRACE(where);
  auto m = RaftMeta::open(fs, dir, o);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(row_lines((*m)->list()), rows);
  ASSERT_OK((*m)->close());
  auto l = fs.list_dir(dir);
  ASSERT_TRUE(l.ok());
  // On the real file system the directory's LOCK file stays (it holds no
  // data; the kernel drops the lock itself when a process dies).
  std::erase(*l, "LOCK");
  EXPECT_EQ(*l, (std::vector<std::string>{"meta.dets.migrated", "meta.slots"}));
}

TEST(MigrationCrash, PowerLossAtEveryStepLeavesNoPartialStore) {
  const auto& fx = dets_fixtures();
  ASSERT_EQ(fx.error, "");
  const Bytes source = dets::test::read_bytes(fx.ra_small);
  // Every crash makes the store fail-stop loudly: keep the output readable.
  QuietLogs quiet;
  // A WAL far smaller than the rows: the migration compacts as it goes.
  const Options o = small_options(64, 16, 12 * 1024);
  const std::string dir = "/node/ra";
  auto fresh = [&](FaultFileSystem& fs) {
    ASSERT_OK(create_dirs(fs, dir));
    copy_into(fs, fx.ra_small, dets_path(dir));
  };
  uint64_t steps = 0;
  {
    FaultFileSystem fs;
    fresh(fs);
    const uint64_t before = fs.mutation_count();
    auto m = RaftMeta::open(fs, dir, o);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    ASSERT_EQ(row_lines((*m)->list()), fx.ra_small_rows);
    steps = fs.mutation_count() - before;
  }
  ASSERT_GT(steps, 20u);
  RecordProperty("steps", int(steps));
  Random rng(strata::test::test_seed(99));
  // Every step when affordable, else an even spread (scaled runs).
  const uint64_t stride = std::max<uint64_t>(1, steps / uint64_t(strata::test::scaled(int(steps))));
  std::vector<uint64_t> points;
  for (uint64_t n = 0; n <= steps; n += stride) points.push_back(n);
  // Always the last steps too: the renames and directory fsyncs.
  for (uint64_t n = steps > 6 ? steps - 6 : 0; n <= steps; ++n) {
    if (n % stride != 0) points.push_back(n);
  }
  uint64_t with_store = 0, without_store = 0;
  for (uint64_t n : points) {
    for (int variant = 0; variant < 2; ++variant) {
      const std::string where = "crash after step " + std::to_string(n) + " of " +
                                std::to_string(steps) + " variant " + std::to_string(variant);
      FaultFileSystem fs;
      fresh(fs);
      fs.crash_after(n);
      {
        auto m = RaftMeta::open(fs, dir, o);
        // Past the last step the open succeeds; otherwise it fails.
        if (m.ok()) (*m)->close().ok();
      }
      CrashOptions c;
      c.seed = rng.next();
      c.keep_random_prefix = variant == 1;
      c.tear = variant == 1;
      c.random_dir_entries = variant == 1;
      fs.crash(c);
      check_after_crash(fs, dir, source, where);
      if (HasFatalFailure()) return;
      (exists(fs, store_path(dir)) ? with_store : without_store) += 1;
      check_retry(fs, dir, o, fx.ra_small_rows, where);
      if (HasFatalFailure()) return;
    }
  }
  // Both outcomes were reached (the crash points span the rename).
  EXPECT_GT(with_store, 0u);
  EXPECT_GT(without_store, 0u);
}

TEST(MigrationCrash, KillNineAtRandomMomentsLeavesNoPartialStore) {
  const auto& fx = dets_fixtures();
  ASSERT_EQ(fx.error, "");
  const Bytes source = dets::test::read_bytes(fx.ra);
  const std::string wal = std::to_string(32 * 1024);
  const Options o = small_options(64, 16, 32 * 1024);
  strata::test::TempDir logs;
  int runs = 0;
  auto run_child = [&](const std::string& dir) {
    const std::string log_dir = logs.sub("run" + std::to_string(runs++));
    EXPECT_OK(create_dirs(posix_fs(), log_dir));
    return strata::test::Process::spawn({RAFTMETA_CHILD, "migrate", dir, wal}, log_dir);
  };
  // One uninterrupted run gives the migration's duration.
  std::chrono::microseconds full{0};
  {
    strata::test::TempDir d;
    copy_into(posix_fs(), fx.ra, dets_path(d.path()));
    const auto t0 = std::chrono::steady_clock::now();
    auto p = run_child(d.path());
    ASSERT_EQ(p.wait(std::chrono::seconds(60)), 0) << p.stderr_text();
    full = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 t0);
    ASSERT_NE(p.stdout_text().find("done migrated"), std::string::npos) << p.stdout_text();
  }
  Random rng(strata::test::test_seed(5));
  int killed_mid_run = 0;
  const int rounds = strata::test::scaled(8);
  for (int r = 0; r < rounds; ++r) {
    strata::test::TempDir d;
    copy_into(posix_fs(), fx.ra, dets_path(d.path()));
    auto p = run_child(d.path());
    const auto delay = std::chrono::microseconds(rng.uniform(uint64_t(full.count()) + 1));
    std::this_thread::sleep_for(delay);
    const bool was_running = p.running();
    p.kill(9);
    auto status = p.wait(std::chrono::seconds(30));
    ASSERT_TRUE(status.has_value());
    if (was_running && *status == 128 + 9) ++killed_mid_run;
    const std::string where = "kill after " + std::to_string(delay.count()) + " us of " +
                              std::to_string(full.count()) + "; child said: " + p.stdout_text();
    check_after_crash(posix_fs(), d.path(), source, where);
    if (HasFatalFailure()) return;
    check_retry(posix_fs(), d.path(), o, fx.ra_rows, where);
    if (HasFatalFailure()) return;
  }
  RecordProperty("killed_mid_run", killed_mid_run);
  EXPECT_GT(killed_mid_run, 0);
}

}  // namespace
}  // namespace strata::raftmeta
