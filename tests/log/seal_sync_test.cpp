// Seal syncs under fsync=never run off the append path (stream_log.h):
// the sync happens in the background and before close() returns, appends
// wait when too many seals are pending, a failed background sync
// fail-stops the log, `always`/`interval` still seal before the successor
// exists, and recovery uses the sync mark (sync_mark.h) to tell a segment
// torn by a power loss from a corrupt one.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "common/fault_fs.h"
#include "log/gated_fs.h"
#include "log/log_test_util.h"
#include "log/sync_mark.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

using test::GatedFs;
using test::payload_for;

constexpr int kPer = 3;  // records per batch; 2 chunks a segment: segments at 0, 6, 12, ...

LogOptions never_opts(FileSystem& fs, size_t max_pending = 2) {
  LogOptions o;
  o.fs = &fs;
  o.fsync = FsyncPolicy::never;
  o.create_if_missing = true;
  o.max_segment_chunks = 2;
  o.max_pending_seal_syncs = max_pending;
  return o;
}

Status append_batch(StreamLog& log) {
  uint64_t first = log.committed_next();
  std::vector<std::string> recs;
  for (int i = 0; i < kPer; ++i) recs.push_back(payload_for(first + uint64_t(i)));
  auto r = log.append(test::views(recs));
  if (!r.ok()) return std::move(r).error();
  return Status::OK();
}

// Appends `n` batches on another thread; the future fails the test
// (instead of hanging it) if an append blocks on a held sync.
std::future<Status> append_async(StreamLog& log, int n) {
  return std::async(std::launch::async, [&log, n]() -> Status {
    for (int i = 0; i < n; ++i) STRATA_TRY(append_batch(log));
    return Status::OK();
  });
}

// Spins (yielding) until pred() or the deadline: a handshake on state the
// log exposes, not a sleep.
template <typename Pred>
bool eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

void expect_all_records(StreamLog& log, uint64_t next) {
  auto rb = test::read_all(log);
  ASSERT_OK(rb.status);
  ASSERT_EQ(rb.records.size(), next);
  for (size_t i = 0; i < rb.records.size(); ++i) {
    ASSERT_EQ(rb.records[i].first, i);
    ASSERT_EQ(rb.records[i].second, payload_for(i)) << "offset " << i;
  }
}

TEST(LogSealSync, NeverSealsInTheBackgroundAndCloseWaitsForIt) {
  FaultFileSystem fault;
  GatedFs fs(fault);
  const std::string seg0 = segment_file_name(0);
  auto log = *StreamLog::open("/s", never_opts(fs));
  fs.hold_syncs_of(seg0);
  // Four batches: segment 0 sealed after two, two more in segment 6, all
  // acknowledged while segment 0's sync is held.
  auto appended = append_async(*log, 4);
  bool finished = appended.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  EXPECT_TRUE(finished) << "an append waited for the seal sync";
  ASSERT_TRUE(fs.wait_held(std::chrono::seconds(20))) << "segment 0 was never synced";
  if (finished) {
    EXPECT_OK(appended.get());
  }
  EXPECT_EQ(log->segments().size(), 2u);
  EXPECT_EQ(log->seal_syncs().pending, 1u);
  // Not durable yet: the sync is what the gate holds.
  const std::string path0 = "/s/" + seg0;
  EXPECT_LT(fault.durable_contents(path0)->size(), read_file(fault, path0)->size());
  // The successor was created before the seal sync, which has not ended.
  const long created = fs.position("create " + segment_file_name(6));
  ASSERT_GE(created, 0);
  EXPECT_EQ(fs.position("synced " + seg0, created), -1);

  fs.open_gate();
  if (!finished) appended.wait();
  ASSERT_OK(log->close());
  EXPECT_GT(fs.position("synced " + seg0, created), created);
  EXPECT_EQ(log->seal_syncs().completed, 1u);
  EXPECT_EQ(log->seal_syncs().pending, 0u);
  EXPECT_EQ(*fault.durable_contents(path0), *read_file(fault, path0));
  EXPECT_EQ(*fault.durable_contents("/s/" + index_file_name(0)),
            *read_file(fault, "/s/" + index_file_name(0)));
  // The mark moved past segment 0, durably.
  EXPECT_EQ(*decode_sync_mark(*fault.durable_contents("/s/synced_below"), "mark"), 6u);
  // And a power loss now keeps everything (close synced the active segment).
  fault.crash();
  auto again = *StreamLog::open("/s", never_opts(fault));
  EXPECT_EQ(again->committed_next(), 12u);
  expect_all_records(*again, 12);
}

TEST(LogSealSync, AlwaysAndIntervalSealBeforeTheSuccessorExists) {
  for (auto policy : {FsyncPolicy::always, FsyncPolicy::interval}) {
    SCOPED_TRACE(fsync_policy_name(policy));
    FaultFileSystem fault;
    GatedFs fs(fault);
    LogOptions o = never_opts(fs);
    o.fsync = policy;
    o.fsync_interval_ms = 0;
    auto log = *StreamLog::open("/s", o);
    for (int i = 0; i < 5; ++i) ASSERT_OK(append_batch(*log));
    const long created = fs.position("create " + segment_file_name(6));
    ASSERT_GE(created, 0);
    EXPECT_GE(fs.position("synced " + segment_file_name(0)), 0);
    EXPECT_LT(fs.position("synced " + segment_file_name(0)), created);
    EXPECT_LT(fs.position("synced " + index_file_name(0)), created);
    EXPECT_EQ(log->seal_syncs().completed, 0u) << "no background seal under this policy";
    EXPECT_FALSE(exists(fault, "/s/synced_below"));
    ASSERT_OK(log->close());
  }
}

TEST(LogSealSync, AppendsWaitWhenTooManySealsArePending) {
  FaultFileSystem fault;
  GatedFs fs(fault);
  auto log = *StreamLog::open("/s", never_opts(fs, /*max_pending=*/1));
  fs.hold_syncs_of(segment_file_name(0));
  // Batches 1-2 fill segment 0, 3-4 segment 6 (segment 0 sealed, pending),
  // batch 5 must seal segment 6: with one pending allowed it waits.
  auto appended = append_async(*log, 5);
  ASSERT_TRUE(eventually([&] { return log->seal_syncs().append_waiting; }))
      << "the fifth append did not wait for room";
  EXPECT_EQ(log->segments().size(), 2u) << "a third segment was created while waiting";
  EXPECT_EQ(log->committed_next(), 12u);
  EXPECT_EQ(log->seal_syncs().pending, 1u);
  EXPECT_NE(appended.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  fs.open_gate();
  ASSERT_OK(appended.get());
  EXPECT_EQ(log->committed_next(), 15u);
  EXPECT_GE(log->seal_syncs().waits, 1u);
  ASSERT_OK(log->close());
  EXPECT_EQ(log->seal_syncs().completed, 2u);
  auto again = *StreamLog::open("/s", never_opts(fault));
  expect_all_records(*again, 15);
}

TEST(LogSealSync, FailedBackgroundSyncFailStopsTheLog) {
  strata::test::QuietLogs quiet;
  FaultFileSystem fault;
  auto log = *StreamLog::open("/s", never_opts(fault, /*max_pending=*/1));
  const std::string path0 = "/s/" + segment_file_name(0);
  fault.fail_when(
      [&](const FaultOp& op) { return op.kind == FaultOp::Kind::sync && op.path == path0; });
  // The third append seals segment 0 (its sync fails in the background);
  // at the latest the fifth, which needs room for another seal, fails.
  Status failure;
  uint64_t acked = 0;
  for (int i = 0; i < 8 && failure.ok(); ++i) {
    failure = append_batch(*log);
    if (failure.ok()) acked = log->committed_next();
  }
  ASSERT_FALSE(failure.ok()) << "appends went on after the seal sync failed";
  EXPECT_NE(failure.to_string().find(path0), std::string::npos) << failure.to_string();
  EXPECT_NE(failure.to_string().find("background sync"), std::string::npos);
  Status h = log->health();
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.code(), Errc::io);
  EXPECT_NE(h.to_string().find(path0), std::string::npos);
  EXPECT_EQ(log->append({"more"}).code(), Errc::fail_stopped);
  Status closed = log->close();
  EXPECT_FALSE(closed.ok());
  EXPECT_NE(closed.to_string().find(path0), std::string::npos);
  // Nothing acknowledged is lost (the process did not crash).
  fault.fail_when(nullptr);
  auto again = *StreamLog::open("/s", never_opts(fault));
  EXPECT_GE(again->committed_next(), acked);
  expect_all_records(*again, again->committed_next());
}

// Power loss while seals are pending: the log reopens, holds a prefix of
// what was written, and drops segments written after a torn one.
TEST(LogSealSync, PowerLossWithPendingSealsLeavesAPrefix) {
  strata::test::QuietLogs quiet;
  int dropped = 0;
  for (int mode = 0; mode < 4; ++mode) {
    for (uint64_t seed = 1; seed <= uint64_t(strata::test::scaled(20)); ++seed) {
      SCOPED_TRACE(fmt::format("mode {} seed {}", mode, seed));
      FaultFileSystem fault;
      GatedFs fs(fault);
      auto log = *StreamLog::open("/s", never_opts(fs));
      fs.hold_syncs_of(segment_file_name(0));
      // Segments 0, 6, 12 (0 and 6 sealed, neither synced).
      auto appended = append_async(*log, 5);
      ASSERT_EQ(appended.wait_for(std::chrono::seconds(20)), std::future_status::ready);
      ASSERT_OK(appended.get());
      CrashOptions c;
      c.seed = seed * 4 + uint64_t(mode);
      c.keep_random_prefix = mode >= 1;
      c.tear = mode >= 2;
      c.random_dir_entries = mode >= 3;
      fault.crash(c);
      fs.open_gate();  // the held sync now fails on a dead handle
      (void)log->close();
      log.reset();
      auto again = StreamLog::open("/s", never_opts(fault));
      ASSERT_TRUE(again.ok()) << again.error().to_string();
      auto rb = test::read_all(**again);
      ASSERT_OK(rb.status);
      const uint64_t next = (*again)->committed_next();
      ASSERT_LE(next, 15u);
      ASSERT_EQ(next % kPer, 0u) << "a batch was split";
      ASSERT_EQ(rb.records.size(), next);
      for (size_t i = 0; i < rb.records.size(); ++i) {
        ASSERT_EQ(rb.records[i].second, payload_for(i));
      }
      for (const auto& r : (*again)->repairs()) dropped += r.find("dropped") != std::string::npos;
      ASSERT_OK((*again)->append({payload_for(next)}));
    }
  }
  // Mode 3 keeps the successors' entries, so some runs must drop them.
  EXPECT_GT(dropped, 0);
}

// A sealed segment below the mark was synced: damage there is corruption,
// as before. The same damage at or above the mark is a torn tail.
TEST(LogSealSync, TheMarkDecidesBetweenTornAndCorrupt) {
  strata::test::QuietLogs quiet;
  strata::test::TempDir tmp;
  const std::string dir = tmp.sub("s");
  FileSystem& fs = posix_fs();
  {
    LogOptions o = never_opts(fs);
    auto log = *StreamLog::open(dir, o);
    for (int i = 0; i < 7; ++i) ASSERT_OK(append_batch(*log));  // segments 0, 6, 12, 18
    ASSERT_OK(log->close());
  }
  EXPECT_EQ(**read_sync_mark(fs, dir), 18u);
  const std::string seg6 = path_join(dir, segment_file_name(6));
  const uint64_t size6 = fs.stat(seg6)->size;
  {
    auto f = *fs.open(seg6, OpenOptions::read_write());
    ASSERT_OK(f->truncate(size6 - 5));
  }
  auto corrupt = StreamLog::open(dir, never_opts(fs));
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.error().code, Errc::corrupt) << corrupt.error().to_string();
  EXPECT_NE(corrupt.error().to_string().find(segment_file_name(6)), std::string::npos)
      << corrupt.error().to_string();

  // As if segment 6 had been sealed in the background and never synced.
  ASSERT_OK(write_sync_mark(fs, dir, 6));
  auto torn = StreamLog::open(dir, never_opts(fs));
  ASSERT_TRUE(torn.ok()) << torn.error().to_string();
  EXPECT_EQ((*torn)->committed_next(), 9u);  // segment 6 keeps its first chunk
  EXPECT_EQ((*torn)->segments().size(), 2u);
  EXPECT_FALSE(exists(fs, path_join(dir, segment_file_name(12))));
  EXPECT_FALSE(exists(fs, path_join(dir, index_file_name(18))));
  expect_all_records(**torn, 9);
  ASSERT_OK(append_batch(**torn));
  ASSERT_OK((*torn)->close());
  EXPECT_EQ(**read_sync_mark(fs, dir), 6u);
}

TEST(LogSealSync, AlwaysRemovesTheMarkAfterSyncingWhatItDidNotCover) {
  strata::test::TempDir tmp;
  const std::string dir = tmp.sub("s");
  FileSystem& fs = posix_fs();
  {
    auto log = *StreamLog::open(dir, never_opts(fs));
    for (int i = 0; i < 5; ++i) ASSERT_OK(append_batch(*log));
    ASSERT_OK(log->close());
  }
  ASSERT_TRUE(read_sync_mark(fs, dir)->has_value());
  LogOptions o = never_opts(fs);
  o.fsync = FsyncPolicy::always;
  auto log = *StreamLog::open(dir, o);
  EXPECT_FALSE(exists(fs, path_join(dir, kSyncMarkName)));
  expect_all_records(*log, 15);
}

TEST(LogSealSync, AMalformedMarkIsANamedError) {
  strata::test::TempDir tmp;
  const std::string dir = tmp.sub("s");
  FileSystem& fs = posix_fs();
  { auto log = *StreamLog::open(dir, never_opts(fs)); }
  ASSERT_OK(write_file_atomic(fs, path_join(dir, kSyncMarkName), "garbage"));
  auto r = StreamLog::open(dir, never_opts(fs));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::corrupt);
  EXPECT_NE(r.error().to_string().find(kSyncMarkName), std::string::npos);
}

uint64_t allocated_bytes(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return uint64_t(st.st_blocks) * 512;
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return uint64_t(st.st_size);
}

// "Nothing reserved past the end" is below this (a few file system blocks):
// a full segment here ends less than one 64 KiB chunk before its bound, so
// a looser slack would not tell a freed reservation from a kept one.
constexpr int64_t kBlockSlack = 16 << 10;

// Space reserved past the end of `path`, give or take a file system block.
int64_t reserved_past_end(const std::string& path) {
  return int64_t(allocated_bytes(path)) - int64_t(file_size(path));
}

bool fs_reserves(const std::string& dir) {
  auto f = *posix_fs().open(path_join(dir, "probe"), OpenOptions::create_new());
  return f->reserve(0, 4096).ok();
}

// Records of 16 KiB, 4 to a batch: one 64 KiB chunk per append.
std::string big_record(uint64_t offset) {
  return std::string(16384, char('a' + offset % 26)) + std::to_string(offset);
}

Status append_big(StreamLog& log) {
  const uint64_t first = log.committed_next();
  std::vector<std::string> recs;
  for (uint64_t i = 0; i < 4; ++i) recs.push_back(big_record(first + i));
  auto r = log.append(test::views(recs));
  if (!r.ok()) return std::move(r).error();
  return Status::OK();
}

void expect_big_records(StreamLog& log, uint64_t next) {
  auto rb = test::read_all(log);
  ASSERT_OK(rb.status);
  ASSERT_EQ(rb.records.size(), next);
  for (size_t i = 0; i < rb.records.size(); ++i) {
    ASSERT_EQ(rb.records[i].second, big_record(i)) << "offset " << i;
  }
}

// `never` on the real file system, segments of at most 2 MiB.
LogOptions reserving_opts() {
  LogOptions o = never_opts(posix_fs());
  o.max_segment_chunks = 1000;
  o.max_segment_bytes = 2 << 20;
  return o;
}

TEST(LogReserve, NeverReservesAheadAndFreesTheRestAtSealAndClose) {
  strata::test::TempDir tmp;
  if (!fs_reserves(tmp.path())) GTEST_SKIP() << "this file system does not reserve space";
  const std::string dir = tmp.sub("s");
  const LogOptions o = reserving_opts();
  const std::string seg0 = path_join(dir, segment_file_name(0));
  auto log = *StreamLog::open(dir, o);
  // A write past the reserved end reserves as much again as the segment
  // holds (the chunks of 7 appends end at ~448 KiB: reserved to ~896 KiB),
  // invisible in the size.
  for (int i = 0; i < 7; ++i) ASSERT_OK(append_big(*log));
  EXPECT_EQ(file_size(seg0), log->segments().back().size_bytes);
  EXPECT_GE(reserved_past_end(seg0), 384 << 10);
  // Never past the segment's bound.
  while (log->segments().size() < 2) {
    ASSERT_OK(append_big(*log));
    EXPECT_LE(allocated_bytes(seg0), uint64_t(2 << 20) + kBlockSlack);
  }
  // The background seal freed what segment 0 did not use.
  ASSERT_TRUE(eventually([&] { return log->seal_syncs().completed == 1; }));
  EXPECT_LT(reserved_past_end(seg0), kBlockSlack);
  // The new segment holds one chunk; 6 more end at ~448 KiB as above.
  for (int i = 0; i < 6; ++i) ASSERT_OK(append_big(*log));
  const std::string active = log->segments().back().file;
  EXPECT_GE(reserved_past_end(active), 384 << 10);
  const uint64_t next = log->committed_next();
  ASSERT_OK(log->close());
  EXPECT_LT(reserved_past_end(active), kBlockSlack);
  auto again = *StreamLog::open(dir, o);
  expect_big_records(*again, next);
}

TEST(LogReserve, AlwaysAndAZeroReserveWriteWithoutReserving) {
  strata::test::TempDir tmp;
  if (!fs_reserves(tmp.path())) GTEST_SKIP() << "this file system does not reserve space";
  for (bool always : {true, false}) {
    SCOPED_TRACE(always ? "always" : "never, reserve_ahead_bytes 0");
    const std::string dir = tmp.sub(always ? "always" : "zero");
    LogOptions o = never_opts(posix_fs());
    if (always) {
      o.fsync = FsyncPolicy::always;
    } else {
      o.reserve_ahead_bytes = 0;
    }
    auto log = *StreamLog::open(dir, o);
    for (int i = 0; i < 8; ++i) ASSERT_OK(append_big(*log));
    EXPECT_LT(reserved_past_end(path_join(dir, segment_file_name(0))), kBlockSlack);
    expect_big_records(*log, log->committed_next());
  }
}

// The crash came between a write into reserved space and the seal: the
// reopened log recovers every record, writes on in the reserved space, and
// frees it when it seals the segment.
TEST(LogReserve, ReservedSpaceLeftByACrashIsUsedThenFreed) {
  strata::test::TempDir tmp;
  if (!fs_reserves(tmp.path())) GTEST_SKIP() << "this file system does not reserve space";
  const std::string dir = tmp.sub("s");
  const LogOptions o = reserving_opts();
  const std::string seg0 = path_join(dir, segment_file_name(0));
  // A child process appends and exits without closing the log: the files
  // stay as a kill -9 leaves them (the page cache holds every write).
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto log = StreamLog::open(dir, o);
    if (!log.ok()) ::_exit(1);
    for (int i = 0; i < 7; ++i) {
      if (!append_big(**log).ok()) ::_exit(2);
    }
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
  ASSERT_GE(reserved_past_end(seg0), 384 << 10);
  auto log = *StreamLog::open(dir, o);
  expect_big_records(*log, 28);
  while (log->segments().size() < 2) ASSERT_OK(append_big(*log));
  ASSERT_TRUE(eventually([&] { return log->seal_syncs().completed == 1; }));
  EXPECT_LT(reserved_past_end(seg0), kBlockSlack);
  const uint64_t next = log->committed_next();
  ASSERT_OK(log->close());
  auto again = *StreamLog::open(dir, o);
  expect_big_records(*again, next);
}

}  // namespace
}  // namespace strata::log
