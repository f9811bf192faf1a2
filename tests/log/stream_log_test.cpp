// StreamLog: append and read back, segment roll, offset specs, group
// commit, epochs, fail-stop, following readers, read-only views, locking.
#include "log/stream_log.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <set>
#include <thread>

#include "common/fault_fs.h"
#include "log/log_test_util.h"
#include "log/reader.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

using test::payload_for;
using test::read_all;

LogOptions fault_opts(FaultFileSystem& fs, FsyncPolicy p = FsyncPolicy::always) {
  LogOptions o;
  o.fs = &fs;
  o.fsync = p;
  o.create_if_missing = true;
  return o;
}

std::shared_ptr<StreamLog> must_open(const std::string& dir, const LogOptions& o) {
  auto r = StreamLog::open(dir, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? *r : nullptr;
}

// Appends `batches` batches of `per` records with payload_for(offset).
void append_batches(StreamLog& log, int batches, int per) {
  for (int b = 0; b < batches; ++b) {
    uint64_t first = log.committed_next();
    std::vector<std::string> recs;
    for (int i = 0; i < per; ++i) recs.push_back(payload_for(first + i));
    auto r = log.append(test::views(recs));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->first_offset, first);
    ASSERT_EQ(r->next_offset, first + per);
  }
}

void expect_contiguous_payloads(const test::ReadBack& rb, uint64_t first, uint64_t next) {
  ASSERT_TRUE(rb.status.ok()) << rb.status.to_string();
  ASSERT_EQ(rb.records.size(), next - first);
  for (size_t i = 0; i < rb.records.size(); ++i) {
    ASSERT_EQ(rb.records[i].first, first + i);
    ASSERT_EQ(rb.records[i].second, payload_for(first + i)) << "offset " << first + i;
  }
}

TEST(LogBasic, AppendThenReadBackAndReopen) {
  strata::test::TempDir tmp;
  std::string dir = tmp.sub("s");
  LogOptions o;
  o.create_if_missing = true;
  {
    auto log = must_open(dir, o);
    EXPECT_EQ(log->committed_next(), 0u);
    append_batches(*log, 20, 7);
    EXPECT_EQ(log->committed_next(), 140u);
    expect_contiguous_payloads(read_all(*log), 0, 140);
    ASSERT_TRUE(log->close().ok());
  }
  auto log = must_open(dir, o);
  EXPECT_TRUE(log->repairs().empty());
  EXPECT_EQ(log->committed_next(), 140u);
  expect_contiguous_payloads(read_all(*log), 0, 140);
  append_batches(*log, 1, 3);
  expect_contiguous_payloads(read_all(*log), 0, 143);
}

TEST(LogBasic, SegmentsRollBySizeAndStayContiguous) {
  strata::test::TempDir tmp;
  std::string dir = tmp.sub("s");
  LogOptions o;
  o.create_if_missing = true;
  o.fsync = FsyncPolicy::never;
  o.max_segment_bytes = 2048;
  auto log = must_open(dir, o);
  append_batches(*log, 60, 5);
  auto segs = log->segments();
  ASSERT_GT(segs.size(), 5u);
  for (size_t i = 0; i < segs.size(); ++i) {
    EXPECT_LE(segs[i].size_bytes, 2048u + 400) << "a segment takes at most one oversize chunk";
    EXPECT_EQ(segs[i].active, i + 1 == segs.size());
    EXPECT_TRUE(exists(posix_fs(), path_join(dir, segment_file_name(segs[i].first_offset))));
    EXPECT_TRUE(exists(posix_fs(), path_join(dir, index_file_name(segs[i].first_offset))));
    if (i > 0) {
      EXPECT_EQ(segs[i].first_offset, segs[i - 1].next_offset);
    }
  }
  expect_contiguous_payloads(read_all(*log), 0, 300);
  ASSERT_TRUE(log->close().ok());
  log = must_open(dir, o);
  EXPECT_TRUE(log->repairs().empty()) << log->repairs().front();
  EXPECT_EQ(log->segments().size(), segs.size());
  expect_contiguous_payloads(read_all(*log), 0, 300);
}

TEST(LogBasic, SegmentsRollByChunkCount) {
  FaultFileSystem fs;
  LogOptions o = fault_opts(fs);
  o.max_segment_chunks = 3;
  auto log = must_open("/s", o);
  append_batches(*log, 10, 2);
  auto segs = log->segments();
  ASSERT_EQ(segs.size(), 4u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(segs[i].chunks, 3u);
  EXPECT_EQ(segs[3].chunks, 1u);
  EXPECT_EQ(segs[2].first_offset, 12u);
}

TEST(LogBasic, BadBatchesAreRefusedAndWriteNothing) {
  FaultFileSystem fs;
  LogOptions o = fault_opts(fs);
  o.max_chunk_bytes = 1000;
  auto log = must_open("/s", o);
  std::vector<BytesView> none;
  EXPECT_EQ(log->append(none).code(), Errc::invalid_argument);
  std::vector<BytesView> many(70000, "x");
  EXPECT_EQ(log->append(many).code(), Errc::invalid_argument);
  std::string big(2000, 'b');
  auto r = log->append({big});
  EXPECT_EQ(r.code(), Errc::invalid_argument);
  EXPECT_NE(r.error().message.find("max_chunk_bytes"), std::string::npos);
  EXPECT_EQ(log->committed_next(), 0u);
  EXPECT_TRUE(log->health().ok());
  ASSERT_TRUE(log->append({"fine"}).ok());
}

TEST(LogBasic, EpochIsStampedAndCannotGoBack) {
  FaultFileSystem fs;
  LogOptions o = fault_opts(fs);
  o.epoch = 3;
  {
    auto log = must_open("/s", o);
    ASSERT_TRUE(log->append({"a"}).ok());
    auto r = log->open_reader(OffsetSpec::first());
    ASSERT_TRUE(r.ok());
    auto c = (*r)->next_chunk();
    ASSERT_TRUE(c.ok() && *c);
    EXPECT_EQ((*c)->header.epoch, 3u);
  }
  o.epoch = 2;
  auto stale = StreamLog::open("/s", o);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.code(), Errc::conflict);
  o.epoch.reset();
  auto log = must_open("/s", o);
  EXPECT_EQ(log->epoch(), 3u);
  o.epoch = 4;
  ASSERT_TRUE(log->close().ok());
  log = must_open("/s", o);
  EXPECT_EQ(log->epoch(), 4u);
}

TEST(LogBasic, ChunkTimestampsNeverGoBackwards) {
  FaultFileSystem fs;
  ManualClock clock(5000);
  LogOptions o = fault_opts(fs);
  o.clock = &clock;
  auto log = must_open("/s", o);
  ASSERT_TRUE(log->append({"a"}).ok());
  clock.set_ms(1000);  // wall clock stepped back
  ASSERT_TRUE(log->append({"b"}).ok());
  auto r = *log->open_reader(OffsetSpec::first());
  auto c1 = r->next_chunk();
  int64_t t1 = (*c1)->header.timestamp_ms;
  auto c2 = r->next_chunk();
  EXPECT_EQ(t1, 5000);
  EXPECT_EQ((*c2)->header.timestamp_ms, 5000);
}

// ------------------------------------------------------------ offset specs

struct LogSpec : ::testing::Test {
  FaultFileSystem fs;
  ManualClock clock{1'000'000};
  std::shared_ptr<StreamLog> log;

  // 10 chunks of 5 records, chunk k at time 1'000'000 + 100 k, 3 chunks per segment.
  void SetUp() override {
    LogOptions o = fault_opts(fs);
    o.clock = &clock;
    o.max_segment_chunks = 3;
    log = must_open("/s", o);
    for (int k = 0; k < 10; ++k) {
      append_batches(*log, 1, 5);
      clock.advance_ms(100);
    }
  }
  uint64_t first_record(OffsetSpec spec) {
    auto r = log->open_reader(spec);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    std::vector<Record> recs;
    auto n = (*r)->next_records(&recs);
    EXPECT_TRUE(n.ok());
    return recs.empty() ? UINT64_MAX : recs.front().offset;
  }
};

TEST_F(LogSpec, FirstLastNext) {
  EXPECT_EQ(first_record(OffsetSpec::first()), 0u);
  EXPECT_EQ(first_record(OffsetSpec::last()), 45u);
  EXPECT_EQ(first_record(OffsetSpec::next()), UINT64_MAX);
  auto r = *log->open_reader(OffsetSpec::next());
  EXPECT_EQ(r->next_offset(), 50u);
  append_batches(*log, 1, 2);
  std::vector<Record> recs;
  ASSERT_EQ(*r->next_records(&recs), 2u);
  EXPECT_EQ(recs[0].offset, 50u);
}

TEST_F(LogSpec, OffsetInsideChunkSkipsEarlierRecords) {
  for (uint64_t n : {0u, 1u, 4u, 5u, 17u, 31u, 49u}) {
    auto r = *log->open_reader(OffsetSpec::at_offset(n));
    std::vector<Record> recs;
    ASSERT_TRUE(r->next_records(&recs).ok());
    ASSERT_FALSE(recs.empty());
    EXPECT_EQ(recs.front().offset, n);
    EXPECT_EQ(recs.front().value, payload_for(n));
    EXPECT_EQ(recs.back().offset, (n / 5) * 5 + 4);
  }
}

TEST_F(LogSpec, OffsetPastTheEndIsNext) {
  auto r = *log->open_reader(OffsetSpec::at_offset(50));
  EXPECT_EQ(r->next_offset(), 50u);
  r = *log->open_reader(OffsetSpec::at_offset(1000));
  EXPECT_EQ(r->next_offset(), 50u);
  EXPECT_TRUE(r->at_end());
}

TEST_F(LogSpec, Timestamps) {
  EXPECT_EQ(first_record(OffsetSpec::at_timestamp(1'000'000)), 0u);
  EXPECT_EQ(first_record(OffsetSpec::at_timestamp(1'000'001)), 5u);
  EXPECT_EQ(first_record(OffsetSpec::at_timestamp(1'000'300)), 15u);
  EXPECT_EQ(first_record(OffsetSpec::at_timestamp(1'000'900)), 45u);
  // Older than everything: the oldest chunk. Newer than everything: next.
  EXPECT_EQ(first_record(OffsetSpec::at_timestamp(5)), 0u);
  auto r = *log->open_reader(OffsetSpec::at_timestamp(1'000'901));
  EXPECT_EQ(r->next_offset(), 50u);
}

TEST_F(LogSpec, BelowFirstOffsetAfterRetentionIsOldest) {
  LogOptions o = log->options();
  ASSERT_TRUE(log->close().ok());
  o.retention.max_bytes = 1;  // keep only the active segment
  log = must_open("/s", o);
  auto out = log->apply_retention();
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(out->deleted.size(), 3u);
  EXPECT_EQ(log->first_offset(), 45u);
  EXPECT_EQ(first_record(OffsetSpec::at_offset(3)), 45u);
  EXPECT_EQ(first_record(OffsetSpec::first()), 45u);
  EXPECT_EQ(first_record(OffsetSpec::at_timestamp(0)), 45u);
}

TEST(LogSpecEmpty, EmptyLogResolvesEverythingToNext) {
  FaultFileSystem fs;
  auto log = must_open("/s", fault_opts(fs));
  for (auto spec :
       {OffsetSpec::first(), OffsetSpec::last(), OffsetSpec::next(), OffsetSpec::at_offset(0),
        OffsetSpec::at_offset(9), OffsetSpec::at_timestamp(0)}) {
    auto r = log->open_reader(spec);
    ASSERT_TRUE(r.ok()) << to_string(spec) << ": " << r.error().to_string();
    EXPECT_EQ((*r)->next_offset(), 0u) << to_string(spec);
    auto c = (*r)->next_chunk();
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(*c);
  }
  // A reader opened on the empty log sees the first append.
  auto r = *log->open_reader(OffsetSpec::first());
  ASSERT_TRUE(log->append({"x"}).ok());
  std::vector<Record> recs;
  ASSERT_EQ(*r->next_records(&recs), 1u);
  EXPECT_EQ(recs[0].value, "x");
}

// ------------------------------------------------------------ group commit

TEST(LogGroupCommit, ConcurrentAppendersShareChunksAndFsyncs) {
  FaultFileSystem fs;
  std::atomic<int> segment_syncs{0};
  // Make fsync slow, as on a real disk, so appenders pile up behind it.
  fs.fail_when([&](const FaultOp& op) {
    if (op.kind == FaultOp::Kind::sync && op.path.ends_with(".segment")) {
      segment_syncs++;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  });
  auto log = must_open("/s", fault_opts(fs, FsyncPolicy::always));
  segment_syncs = 0;  // creating the first segment synced it once
  const int kThreads = 8, kBatches = 40;
  std::vector<std::thread> ts;
  std::mutex mu;
  std::vector<std::pair<AppendResult, std::vector<std::string>>> acked;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<std::string> recs;
        for (int i = 0; i <= b % 3; ++i) recs.push_back(fmt::format("t{}b{}r{}", t, b, i));
        auto r = log->append(test::views(recs));
        ASSERT_TRUE(r.ok()) << r.error().to_string();
        std::lock_guard<std::mutex> g(mu);
        acked.emplace_back(*r, recs);
      }
    });
  }
  for (auto& t : ts) t.join();
  fs.fail_when(nullptr);
  auto rb = read_all(*log);
  ASSERT_TRUE(rb.status.ok());
  // Every batch is where its acknowledgement says, in order, exactly once.
  std::set<uint64_t> seen;
  for (const auto& [res, recs] : acked) {
    ASSERT_EQ(res.next_offset - res.first_offset, recs.size());
    for (size_t i = 0; i < recs.size(); ++i) {
      ASSERT_TRUE(seen.insert(res.first_offset + i).second);
      EXPECT_EQ(rb.records[res.first_offset + i].second, recs[i]);
    }
  }
  EXPECT_EQ(seen.size(), rb.records.size());
  uint64_t chunks = log->segments().back().chunks;
  EXPECT_LT(chunks, uint64_t(kThreads * kBatches) / 2) << "appenders were not coalesced";
  // fsync=always: exactly one fsync per group (one chunk per group here).
  EXPECT_EQ(uint64_t(segment_syncs.load()), chunks);
}

TEST(LogGroupCommit, IntervalPolicyBoundsFsyncRate) {
  FaultFileSystem fs;
  std::atomic<int> segment_syncs{0};
  fs.fail_when([&](const FaultOp& op) {
    if (op.kind == FaultOp::Kind::sync && op.path.ends_with(".segment")) segment_syncs++;
    return false;
  });
  LogOptions o = fault_opts(fs, FsyncPolicy::interval);
  o.fsync_interval_ms = 40;
  auto log = must_open("/s", o);
  int before = segment_syncs.load();
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(log->append({"r"}).ok());
      }
    });
  }
  for (auto& t : ts) t.join();
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  int syncs = segment_syncs.load() - before;
  EXPECT_EQ(log->committed_next(), 24u);
  // At most one fsync per interval (plus the first, which is immediate).
  EXPECT_LE(syncs, int(ms / 40) + 2) << syncs << " fsyncs in " << ms << " ms";
  EXPECT_GE(ms, 40.0 * (syncs - 1) - 1);
}

// ------------------------------------------------------------ fail-stop

TEST(LogFailStop, FsyncFailureNeverAdvancesCommitted) {
  FaultFileSystem fs;
  auto log = must_open("/s", fault_opts(fs));
  append_batches(*log, 3, 2);
  ASSERT_EQ(log->committed_next(), 6u);
  fs.fail_when([](const FaultOp& op) {
    return op.kind == FaultOp::Kind::sync && op.path.ends_with(".segment");
  });
  auto r = log->append({"lost?"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::io);
  EXPECT_EQ(log->committed_next(), 6u);
  EXPECT_FALSE(log->health().ok());
  // Later appends are refused even though the fault is gone.
  fs.fail_when(nullptr);
  auto r2 = log->append({"after"});
  EXPECT_EQ(r2.code(), Errc::fail_stopped);
  EXPECT_NE(r2.error().message.find("injected failure"), std::string::npos);
  // Readers still see exactly the committed data.
  expect_contiguous_payloads(read_all(*log), 0, 6);
  ASSERT_TRUE(log->close().ok());
  // Reopening recovers; the unsynced batch may or may not be there.
  auto again = must_open("/s", fault_opts(fs));
  EXPECT_TRUE(again->health().ok());
  auto rb = read_all(*again);
  ASSERT_TRUE(rb.status.ok());
  ASSERT_GE(rb.records.size(), 6u);
  ASSERT_TRUE(again->append({"works"}).ok());
}

TEST(LogFailStop, QueuedAppendersLearnTheLogStopped) {
  FaultFileSystem fs;
  std::atomic<bool> fail{false};
  fs.fail_when([&](const FaultOp& op) {
    if (op.kind == FaultOp::Kind::sync && op.path.ends_with(".segment")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return fail.load();
    }
    return false;
  });
  auto log = must_open("/s", fault_opts(fs));
  fail = true;
  std::vector<std::thread> ts;
  std::atomic<int> errors{0}, oks{0};
  for (int t = 0; t < 6; ++t) {
    ts.emplace_back([&] {
      auto r = log->append({"x"});
      (r.ok() ? oks : errors)++;
      if (!r.ok()) {
        EXPECT_TRUE(r.code() == Errc::io || r.code() == Errc::fail_stopped);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(oks.load(), 0);
  EXPECT_EQ(errors.load(), 6);
  EXPECT_EQ(log->committed_next(), 0u);
}

TEST(LogFailStop, WriteFailureDuringRollStopsTheWriter) {
  FaultFileSystem fs;
  LogOptions o = fault_opts(fs);
  o.max_segment_chunks = 2;
  auto log = must_open("/s", o);
  append_batches(*log, 2, 1);
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::create; });
  auto r = log->append({"needs a new segment"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(log->committed_next(), 2u);
  fs.fail_when(nullptr);
  EXPECT_EQ(log->append({"x"}).code(), Errc::fail_stopped);
}

// ------------------------------------------------------------ following

double thread_cpu_ms() {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
         ru.ru_stime.tv_usec / 1e3;
}

// Returns once a thread is blocked in log.wait_for_commit (a handshake, not
// a sleep: the test then knows its append or close reaches a waiter).
void await_commit_waiter(const StreamLog& log) {
  while (log.commit_waiters() == 0) std::this_thread::yield();
}

TEST(LogFollow, WaitingReaderUsesNoCpuAndWakesOnCommit) {
  FaultFileSystem fs;
  auto log = must_open("/s", fault_opts(fs));
  auto reader = *log->open_reader(OffsetSpec::next());
  double idle_cpu = 0;
  bool idle_timed_out = false, woke = false;
  std::atomic<bool> second_wait{false};
  std::chrono::steady_clock::duration waited{};
  std::thread t([&] {
    // Nothing to read for 300 ms: the wait times out without burning CPU.
    double c0 = thread_cpu_ms();
    idle_timed_out = !reader->wait(std::chrono::milliseconds(300));
    idle_cpu = thread_cpu_ms() - c0;
    // Then a wait that a commit ends.
    second_wait = true;
    auto t0 = std::chrono::steady_clock::now();
    woke = reader->wait(std::chrono::seconds(30));
    waited = std::chrono::steady_clock::now() - t0;
  });
  while (!second_wait) std::this_thread::yield();
  await_commit_waiter(*log);  // the second wait has begun (the first one ended)
  ASSERT_TRUE(log->append({"wake up"}).ok());
  t.join();
  EXPECT_TRUE(idle_timed_out);
  EXPECT_LT(idle_cpu, 30.0) << "the waiting reader burned CPU";
  EXPECT_TRUE(woke);
  EXPECT_LT(waited, std::chrono::seconds(5));
  std::vector<Record> recs;
  ASSERT_EQ(*reader->next_records(&recs), 1u);
  EXPECT_EQ(recs[0].value, "wake up");
}

TEST(LogFollow, WaitTimesOutAndCloseWakesWaiters) {
  FaultFileSystem fs;
  auto log = must_open("/s", fault_opts(fs));
  auto reader = *log->open_reader(OffsetSpec::next());
  EXPECT_FALSE(reader->wait(std::chrono::milliseconds(30)));
  std::thread t([&] { EXPECT_FALSE(reader->wait(std::chrono::seconds(30))); });
  await_commit_waiter(*log);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(log->close().ok());
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(reader->next_chunk().code(), Errc::closed);
  EXPECT_EQ(log->append({"x"}).code(), Errc::closed);
}

TEST(LogFollow, ReaderFollowsAcrossSegmentRolls) {
  FaultFileSystem fs;
  LogOptions o = fault_opts(fs, FsyncPolicy::never);
  o.max_segment_chunks = 2;
  auto log = must_open("/s", o);
  auto reader = *log->open_reader(OffsetSpec::next());
  std::thread writer([&] { append_batches(*log, 25, 3); });
  uint64_t expect = 0;
  std::vector<Record> recs;
  while (expect < 75) {
    if (!reader->wait(std::chrono::seconds(10))) break;
    recs.clear();
    auto n = reader->next_records(&recs);
    ASSERT_TRUE(n.ok()) << n.error().to_string();
    for (const auto& r : recs) {
      ASSERT_EQ(r.offset, expect);
      ASSERT_EQ(r.value, payload_for(expect));
      ++expect;
    }
  }
  writer.join();
  EXPECT_EQ(expect, 75u);
}

// ------------------------------------------------------------ read-only, locking

TEST(LogReadOnly, SeesCommittedDataAndRefreshesAcrossRolls) {
  strata::test::TempDir tmp;
  std::string dir = tmp.sub("s");
  LogOptions wo;
  wo.create_if_missing = true;
  wo.fsync = FsyncPolicy::never;
  wo.max_segment_chunks = 4;
  auto writer = must_open(dir, wo);
  append_batches(*writer, 6, 2);
  LogOptions ro;
  ro.read_only = true;
  auto view = must_open(dir, ro);
  EXPECT_EQ(view->committed_next(), 12u);
  expect_contiguous_payloads(read_all(*view), 0, 12);
  EXPECT_EQ(view->append({"x"}).code(), Errc::invalid_argument);
  append_batches(*writer, 10, 2);
  auto n = view->refresh();
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(*n, 32u);
  expect_contiguous_payloads(read_all(*view), 0, 32);
  EXPECT_EQ(view->segments().size(), writer->segments().size());
  // A reader of the read-only view follows by polling the files.
  auto ro_reader = view->open_reader(OffsetSpec::next());
  ASSERT_TRUE(ro_reader.ok()) << ro_reader.error().to_string();
  auto& r = *ro_reader;
  bool woke = false;
  std::thread t([&] { woke = r->wait(std::chrono::seconds(10)); });
  await_commit_waiter(*view);  // the reader polls the files now
  append_batches(*writer, 1, 1);
  t.join();
  EXPECT_TRUE(woke);
  std::vector<Record> recs;
  auto got = r->next_records(&recs);
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  ASSERT_EQ(*got, 1u);
  EXPECT_EQ(recs[0].offset, 32u);
}

TEST(LogLocking, SecondWriterIsRefusedReadOnlyIsNot) {
  strata::test::TempDir tmp;
  std::string dir = tmp.sub("s");
  LogOptions o;
  o.create_if_missing = true;
  auto first = must_open(dir, o);
  auto second = StreamLog::open(dir, o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), Errc::conflict);
  EXPECT_NE(second.error().message.find("already open"), std::string::npos);
  LogOptions ro;
  ro.read_only = true;
  EXPECT_TRUE(StreamLog::open(dir, ro).ok());
  ASSERT_TRUE(first->close().ok());
  EXPECT_TRUE(StreamLog::open(dir, o).ok());
}

TEST(LogBasic, MissingDirectoryIsANamedError) {
  strata::test::TempDir tmp;
  auto r = StreamLog::open(tmp.sub("nope"), LogOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::not_found);
  EXPECT_NE(r.error().message.find("nope"), std::string::npos);
}

}  // namespace
}  // namespace strata::log
