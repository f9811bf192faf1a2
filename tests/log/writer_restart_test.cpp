// StreamLog::restart_writer: a fail-stopped log (a refused write, a failed
// fsync, a failed roll, a failed background seal) becomes writable again
// at its committed end without closing, readers carrying on; bytes that
// were never confirmed are cut; confirmed bytes that no longer verify keep
// it stopped.
#include <gtest/gtest.h>

#include "common/fault_fs.h"
#include "log/log_files.h"
#include "log/log_test_util.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "support/assertions.h"

namespace strata::log {
namespace {

using test::payload_for;
using test::read_all;

LogOptions restart_opts(FaultFileSystem& fs, FsyncPolicy p = FsyncPolicy::always) {
  LogOptions o;
  o.fs = &fs;
  o.fsync = p;
  o.create_if_missing = true;
  return o;
}

// One batch of `per` records whose payloads name their offsets.
Status restart_append(StreamLog& log, int per = 2) {
  const uint64_t first = log.committed_next();
  std::vector<std::string> recs;
  for (int i = 0; i < per; ++i) recs.push_back(payload_for(first + uint64_t(i)));
  auto r = log.append(test::views(recs));
  if (!r.ok()) return std::move(r).error();
  EXPECT_EQ(r->first_offset, first);
  return Status::OK();
}

// Every record from 0 to `next`, each where its payload says.
void expect_exactly(StreamLog& log, uint64_t next) {
  auto rb = read_all(log);
  ASSERT_TRUE(rb.status.ok()) << rb.status.to_string();
  ASSERT_EQ(rb.records.size(), next);
  for (size_t i = 0; i < rb.records.size(); ++i) {
    ASSERT_EQ(rb.records[i].first, i);
    ASSERT_EQ(rb.records[i].second, payload_for(i)) << "offset " << i;
  }
}

bool is_segment_write(const FaultOp& op) {
  return op.kind == FaultOp::Kind::write && op.path.ends_with(".segment");
}

TEST(LogWriterRestart, AHealthyLogHasNothingToRestart) {
  FaultFileSystem fs;
  auto log = *StreamLog::open("/s", restart_opts(fs));
  ASSERT_TRUE(restart_append(*log).ok());
  EXPECT_TRUE(log->restart_writer().ok());
  EXPECT_EQ(log->writer_restarts(), 0u);
  ASSERT_TRUE(log->close().ok());
  EXPECT_EQ(log->restart_writer().code(), Errc::closed);
}

// A full disk: writes are refused until space comes back. The restart
// itself needs no new space (it only cuts and rewrites what exists), so it
// succeeds while the disk is still full; the next append fails again.
TEST(LogWriterRestart, RefusedWritesThenSpaceFreed) {
  strata::test::QuietLogs quiet;
  FaultFileSystem fs;
  auto log = *StreamLog::open("/s", restart_opts(fs));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(restart_append(*log).ok());
  auto reader = *log->open_reader(OffsetSpec::first());
  fs.fail_when(is_segment_write);
  Status failed = restart_append(*log);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(log->health().code(), Errc::io);
  EXPECT_EQ(log->append({"x"}).code(), Errc::fail_stopped);
  ASSERT_TRUE(log->restart_writer().ok());
  EXPECT_TRUE(log->health().ok());
  EXPECT_FALSE(restart_append(*log).ok()) << "the disk is still full";
  fs.fail_when(nullptr);
  ASSERT_TRUE(log->restart_writer().ok());
  EXPECT_EQ(log->writer_restarts(), 2u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(restart_append(*log).ok());
  EXPECT_EQ(log->committed_next(), 12u);
  // The reader opened before the failure reads on across it.
  std::vector<Record> recs;
  uint64_t got = 0;
  while (got < 12) {
    auto n = reader->next_records(&recs);
    ASSERT_TRUE(n.ok()) << n.error().to_string();
    ASSERT_GT(*n, 0u);
    for (const auto& r : recs) EXPECT_EQ(r.value, payload_for(r.offset));
    got += *n;
  }
  expect_exactly(*log, 12);
  ASSERT_TRUE(log->close().ok());
  auto again = *StreamLog::open("/s", restart_opts(fs));
  EXPECT_TRUE(again->repairs().empty()) << again->repairs().front();
  expect_exactly(*again, 12);
}

// A failed fsync leaves the group's bytes in the file past the committed
// end: they were never confirmed and the restart cuts them, so the next
// append lands at the committed end and nothing unconfirmed ever appears.
TEST(LogWriterRestart, BytesPastTheCommittedEndAreCut) {
  strata::test::QuietLogs quiet;
  FaultFileSystem fs;
  auto log = *StreamLog::open("/s", restart_opts(fs));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(restart_append(*log).ok());
  const uint64_t size_before = log->segments().back().size_bytes;
  fs.fail_when([](const FaultOp& op) {
    return op.kind == FaultOp::Kind::sync && op.path.ends_with(".segment");
  });
  EXPECT_FALSE(log->append({"never confirmed"}).ok());
  fs.fail_when(nullptr);
  ASSERT_TRUE(log->restart_writer().ok());
  EXPECT_EQ(log->segments().back().size_bytes, size_before);
  ASSERT_TRUE(restart_append(*log).ok());
  expect_exactly(*log, 6);
  ASSERT_TRUE(log->close().ok());
  auto again = *StreamLog::open("/s", restart_opts(fs));
  expect_exactly(*again, 6);
}

// A roll that fails after creating the new segment's files leaves them
// past the committed end; the restart removes them and writes on in the
// old segment, which rolls again later.
TEST(LogWriterRestart, AFailedRollLeavesNothingBehind) {
  strata::test::QuietLogs quiet;
  for (const auto kind : {FaultOp::Kind::sync_dir, FaultOp::Kind::create}) {
    SCOPED_TRACE(kind == FaultOp::Kind::create ? "create fails" : "sync_dir fails");
    FaultFileSystem fs;
    LogOptions o = restart_opts(fs);
    o.max_segment_chunks = 2;
    auto log = *StreamLog::open("/s", o);
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(restart_append(*log).ok());
    fs.fail_when([kind](const FaultOp& op) { return op.kind == kind; });
    EXPECT_FALSE(restart_append(*log).ok());
    EXPECT_FALSE(log->health().ok());
    fs.fail_when(nullptr);
    ASSERT_TRUE(log->restart_writer().ok());
    EXPECT_EQ(log->segments().size(), 1u);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(restart_append(*log).ok());
    EXPECT_EQ(log->segments().size(), 3u);
    expect_exactly(*log, 10);
    ASSERT_TRUE(log->close().ok());
    auto again = *StreamLog::open("/s", o);
    EXPECT_TRUE(again->repairs().empty()) << again->repairs().front();
    expect_exactly(*again, 10);
  }
}

// fsync=never: a sealed segment's background sync fails. The restart syncs
// it (and every sealed segment above the mark) and the writer goes on.
TEST(LogWriterRestart, AFailedSealIsSyncedByTheRestart) {
  strata::test::QuietLogs quiet;
  FaultFileSystem fs;
  LogOptions o = restart_opts(fs, FsyncPolicy::never);
  o.max_segment_chunks = 2;
  o.max_pending_seal_syncs = 1;
  auto log = *StreamLog::open("/s", o);
  const std::string seg0 = "/s/" + segment_file_name(0);
  fs.fail_when(
      [&](const FaultOp& op) { return op.kind == FaultOp::Kind::sync && op.path == seg0; });
  Status failure;
  for (int i = 0; i < 8 && failure.ok(); ++i) failure = restart_append(*log);
  ASSERT_FALSE(failure.ok());
  const uint64_t committed = log->committed_next();
  EXPECT_EQ(log->restart_writer().code(), Errc::io) << "the seal's segment still cannot sync";
  EXPECT_FALSE(log->health().ok());
  fs.fail_when(nullptr);
  ASSERT_TRUE(log->restart_writer().ok());
  auto durable = fs.durable_contents(seg0);
  ASSERT_TRUE(durable.ok());
  EXPECT_EQ(durable->size(), log->segments().front().size_bytes) << "segment 0 was not synced";
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(restart_append(*log).ok());
  expect_exactly(*log, committed + 8);
  ASSERT_TRUE(log->close().ok());
  auto again = *StreamLog::open("/s", o);
  expect_exactly(*again, committed + 8);
}

// Confirmed bytes that no longer read back (a writeback error dropped
// them) keep the writer stopped: only a reopen's recovery may decide what
// is lost, and the restart says where.
TEST(LogWriterRestart, ConfirmedBytesThatNoLongerVerifyKeepItStopped) {
  strata::test::QuietLogs quiet;
  FaultFileSystem fs;
  auto log = *StreamLog::open("/s", restart_opts(fs));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(restart_append(*log).ok());
  const std::string seg0 = "/s/" + segment_file_name(0);
  fs.fail_when(is_segment_write);
  EXPECT_FALSE(restart_append(*log).ok());
  fs.fail_when(nullptr);
  {
    auto f = *fs.open(seg0, OpenOptions::read_write());
    const uint64_t end = *f->size();
    ASSERT_TRUE(f->write_at(end - 3, "XYZ").ok());
  }
  Status s = log->restart_writer();
  EXPECT_EQ(s.code(), Errc::corrupt);
  EXPECT_NE(s.to_string().find(seg0), std::string::npos) << s.to_string();
  EXPECT_EQ(log->append({"x"}).code(), Errc::fail_stopped);
  EXPECT_EQ(log->writer_restarts(), 0u);
}

}  // namespace
}  // namespace strata::log
