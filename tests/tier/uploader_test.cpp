// The uploader shell against a real log and a real (directory) object
// store: the upload path end to end, and the rule that every task ends in
// exactly one event — when the worker throws, hangs, or is dropped.
#include "tier/uploader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <future>
#include <thread>

#include "common/mapped_range.h"
#include "log/stream_log.h"
#include "objstore/config.h"
#include "support/assertions.h"
#include "support/temp_dir.h"
#include "tier/fragment_object.h"
#include "tier/manifest_codec.h"
#include "tier/remote_audit.h"
#include "tier/shell_harness.h"
#include "tier/tiering_hooks.h"
#include "tier/upload_jobs.h"

namespace strata::tier::test {
namespace {

using strata::test::QuietLogs;
using strata::test::TempDir;

std::string record_value(uint64_t i) {
  std::string v = fmt::format("record-{:010}-", i);
  v.resize(200, char('a' + i % 26));
  return v;
}

std::shared_ptr<objstore::ObjectStore> fs_store(const std::string& root) {
  objstore::ObjectStoreConfig c;
  c.backend = objstore::ObjectStoreConfig::Backend::fs;
  c.fs.root = root;
  auto s = objstore::open_object_store(c);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return std::shared_ptr<objstore::ObjectStore>(std::move(s).value());
}

UploaderOptions small_options(const std::string& stream) {
  UploaderOptions o;
  o.stream = stream;
  o.key_prefix = "t";
  o.assembly.target_size = 16 << 10;
  o.assembly.max_age_ms = 200;
  o.persist_threshold = 3;
  o.persist_interval_ms = 100;
  o.request_timeout_ms = 2000;
  o.delete_grace_ms = 0;
  o.start_backoff = BackoffPolicy{true, 10, 200};
  o.fatal_backoff = BackoffPolicy{false, 20, 200};
  o.random_seed = 7;
  return o;
}

// A stream log opened with `hooks` (its uploader attached by Fixture::start).
struct TestLog {
  TestLog(const std::string& dir, std::shared_ptr<TieringHooks> h,
          uint64_t segment_bytes = 64 << 10, std::optional<uint64_t> local_max_bytes = std::nullopt)
      : hooks(std::move(h)) {
    log::LogOptions o;
    o.create_if_missing = true;
    o.fsync = log::FsyncPolicy::never;
    o.max_segment_bytes = segment_bytes;
    o.retention.max_bytes = local_max_bytes;
    o.retention_on_roll = false;
    o.hooks = hooks;
    auto l = log::StreamLog::open(dir, o);
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    log = std::move(l).value();
  }
  // Appends `batches` batches of `per` records; returns the next offset.
  uint64_t append(uint64_t batches, uint32_t per = 10) {
    uint64_t next = 0;
    for (uint64_t b = 0; b < batches; ++b) {
      std::vector<std::string> vals;
      uint64_t first = log->committed_next();
      for (uint32_t i = 0; i < per; ++i) vals.push_back(record_value(first + i));
      std::vector<BytesView> views(vals.begin(), vals.end());
      auto r = log->append(std::span<const BytesView>(views));
      EXPECT_TRUE(r.ok()) << r.error().to_string();
      next = r->next_offset;
    }
    return next;
  }
  std::shared_ptr<TieringHooks> hooks;
  std::shared_ptr<log::StreamLog> log;
};

Status await(Uploader& u, uint64_t offset,
             std::chrono::seconds timeout = std::chrono::seconds(30)) {
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  u.await_persisted(offset, [p](Status s) { p->set_value(s); });
  if (f.wait_for(timeout) != std::future_status::ready) {
    return Error(Errc::timeout, fmt::format("offset {} not persisted within {} s; status: {}",
                                            offset, timeout.count(), u.status().last_error));
  }
  return f.get();
}

// Every record in the remote tier, by offset, read back from the fragment
// objects the persisted manifest references; and the audit must be clean.
std::map<uint64_t, std::string> remote_records(objstore::ObjectStore& store,
                                               catalog::Catalog& catalog,
                                               const std::string& stream) {
  auto keys = ObjectKeys::make("t", stream);
  auto report = audit_stream(store, catalog, *keys);
  EXPECT_TRUE(report.ok()) << report.error().to_string();
  std::map<uint64_t, std::string> out;
  if (!report.ok()) return out;
  for (auto& p : report->problems) ADD_FAILURE() << p.kind << " " << p.key << ": " << p.detail;
  for (const auto& key : report->referenced) {
    auto parsed = keys->parse(key);
    if (!parsed.ok() || parsed->type != ObjectType::fragment) continue;
    auto body = store.get(key);
    EXPECT_TRUE(body.ok());
    auto f = decode_fragment(*body, key, true);
    EXPECT_TRUE(f.ok()) << f.error().to_string();
    for (size_t i = 0; i < f->index.size(); ++i) {
      uint64_t start = f->index[i].position;
      auto h = log::decode_chunk_header(f->data.substr(start), key);
      EXPECT_TRUE(h.ok());
      auto recs =
          log::parse_records(*h, f->data.substr(start + log::kChunkHeaderSize, h->data_len), key);
      EXPECT_TRUE(recs.ok());
      for (size_t j = 0; j < recs->size(); ++j) {
        EXPECT_TRUE(out.emplace(h->first_offset + j, std::string((*recs)[j])).second)
            << "offset " << h->first_offset + j << " twice";
      }
    }
  }
  return out;
}

void expect_records(const std::map<uint64_t, std::string>& got, uint64_t first, uint64_t next) {
  ASSERT_EQ(got.size(), next - first);
  for (uint64_t i = first; i < next; ++i) {
    auto it = got.find(i);
    ASSERT_NE(it, got.end()) << "offset " << i << " missing";
    ASSERT_EQ(it->second, record_value(i)) << "offset " << i;
  }
}

struct Fixture {
  explicit Fixture(GovernorConfig g = {})
      : real(fs_store(dir.sub("objects"))),
        faulty(std::make_shared<FaultyStore>(real)),
        env(faulty, g),
        hooks(std::make_shared<TieringHooks>()) {}
  std::shared_ptr<Uploader> start(UploaderOptions o, TestLog& l) {
    auto u = Uploader::start(env.env(), std::move(o), l.log);
    EXPECT_TRUE(u.ok()) << u.error().to_string();
    l.hooks->attach(*u, l.log);
    return std::move(u).value();
  }
  TempDir dir;
  std::shared_ptr<objstore::ObjectStore> real;
  std::shared_ptr<FaultyStore> faulty;
  ShellEnv env;
  std::shared_ptr<TieringHooks> hooks;
};

TEST(Uploader, PublishedDataReachesTheBucketAndLocalRetentionDropsIt) {
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks, 32 << 10, /*local_max_bytes=*/1);
  auto u = fx.start(small_options("s1"), l);
  uint64_t next = l.append(200);
  ASSERT_OK(await(*u, next));
  auto st = u->status();
  EXPECT_EQ(st.state, UploaderState::running);
  EXPECT_EQ(st.remote_first_offset, 0u);
  EXPECT_GE(st.remote_next_offset, next);
  EXPECT_GT(st.fragments_uploaded, 5u);
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
  // Local retention (max_bytes 1) may drop every sealed segment the remote
  // tier covers, and nothing else.
  ASSERT_TRUE(eventually([&] { return u->status().local_segments_deleted > 0; }));
  EXPECT_GT(l.log->first_offset(), 0u);
  EXPECT_LE(l.log->first_offset(), u->persisted_next());
  // The manifest cache holds the persisted manifest.
  auto cached = fx.env.cache->get("s1");
  ASSERT_OK(cached);
  EXPECT_EQ(cached->manifest->next_offset, u->status().remote_next_offset);
  u->close();
}

TEST(Uploader, LocalRetentionNeverDeletesWhatIsNotPersisted) {
  QuietLogs quiet;
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks, 16 << 10, /*local_max_bytes=*/1);
  // Every fragment PUT fails fatally: nothing is ever persisted.
  fx.faulty->set(Fault::fail_fatal, "/data/", -1);
  auto u = fx.start(small_options("s1"), l);
  l.append(100);
  ASSERT_TRUE(eventually([&] { return u->status().core.upload_stalled_offset.has_value(); }));
  auto r = l.log->apply_retention();
  ASSERT_OK(r);
  EXPECT_TRUE(r->deleted.empty());
  EXPECT_TRUE(r->vetoed);
  EXPECT_EQ(l.log->first_offset(), 0u);
  u->close();
}

TEST(Uploader, FatalErrorStallsDropsNothingAndResumesWhenFixed) {
  QuietLogs quiet;
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  auto u = fx.start(small_options("s1"), l);
  uint64_t first_batch = l.append(20);
  ASSERT_OK(await(*u, first_batch));
  fx.faulty->set(Fault::fail_fatal, "/data/", -1);  // 403 on every fragment
  uint64_t next = l.append(60);
  ASSERT_TRUE(eventually([&] { return u->status().core.upload_stalled_offset.has_value(); }));
  auto st = u->status();
  EXPECT_EQ(*st.core.upload_stalled_offset, first_batch);
  EXPECT_EQ(st.remote_next_offset, first_batch);  // nothing after the stall applied
  EXPECT_GT(st.retries_fatal, 0u);
  EXPECT_GT(st.failures_by_class["fatal"], 0u);
  fx.faulty->clear();
  // Fatal retries back off up to 200 ms here (1 s to 30 s by default).
  ASSERT_OK(await(*u, next, std::chrono::seconds(60)));
  EXPECT_FALSE(u->status().core.upload_stalled_offset.has_value());
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
  u->close();
}

TEST(Uploader, WorkerThatThrowsEndsInAFailureEventAndIsRetried) {
  QuietLogs quiet;
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  fx.faulty->set(Fault::throw_exception, "/data/", 2);
  auto u = fx.start(small_options("s1"), l);
  uint64_t next = l.append(40);
  ASSERT_OK(await(*u, next, std::chrono::seconds(60)));
  auto st = u->status();
  EXPECT_EQ(st.task_throws, 2u);
  EXPECT_EQ(fx.faulty->faults_injected(), 2);
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
  u->close();
}

TEST(Uploader, WorkerThatHangsEndsAtItsDeadlineAndItsLateResultIsIgnored) {
  QuietLogs quiet;
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  fx.faulty->set(Fault::hang, "/data/", 1);
  auto o = small_options("s1");
  o.request_timeout_ms = 100;  // transfer deadline 400 ms
  auto u = fx.start(o, l);
  uint64_t next = l.append(40);
  ASSERT_TRUE(fx.faulty->wait_hung(1, std::chrono::seconds(20)));
  // The hung transfer's deadline fires, the fragment is re-uploaded under a
  // new key, and the stream persists past it while the worker still hangs.
  ASSERT_OK(await(*u, next, std::chrono::seconds(60)));
  EXPECT_EQ(fx.faulty->hung(), 1);
  EXPECT_GE(u->status().deadlines, 1u);
  // The pool grew a thread for the abandoned job.
  EXPECT_GE(fx.env.pool.stats().abandoned, 1u);
  // Let the hung worker finish: its PUT lands as an orphan, never in the
  // manifest, and nothing is applied twice.
  fx.faulty->release();
  ASSERT_TRUE(eventually([&] { return fx.env.pool.stats().abandoned == 0; }));
  auto keys = ObjectKeys::make("t", "s1");
  auto report = audit_stream(*fx.real, *fx.env.catalog, *keys);
  ASSERT_OK(report);
  EXPECT_FALSE(report->damaged());
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
  u->close();
}

TEST(Uploader, RestartContinuesWithNoGapAndNoDuplicate) {
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  uint64_t next = 0;
  for (int round = 0; round < 3; ++round) {
    auto u = fx.start(small_options("s1"), l);
    next = l.append(30);
    ASSERT_OK(await(*u, next));
    fx.hooks->detach();
    u->close();
  }
  auto entry = fx.env.catalog->get("s1");
  ASSERT_OK(entry);
  EXPECT_EQ(entry->epoch, 4u);  // created at 1, each start took the stream over
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
}

TEST(Uploader, SecondUploaderFencesTheFirstAndTheManifestStaysIntact) {
  QuietLogs quiet;
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  auto a = fx.start(small_options("s1"), l);
  uint64_t mid = l.append(20);
  ASSERT_OK(await(*a, mid));
  // B takes the stream over (raises the epoch) and hears of commits through
  // a listener of its own; A, as a deposed owner would, keeps hearing of
  // them through the hooks.
  auto b = Uploader::start(fx.env.env(), small_options("s1"), l.log);
  ASSERT_OK(b);
  uint64_t unsubscribe =
      l.log->subscribe([&](const log::CommittedChunk& c) { (*b)->on_commit(c); });
  uint64_t next = l.append(40);
  ASSERT_OK(await(**b, next));
  ASSERT_TRUE(eventually([&] { return a->state() == UploaderState::fenced; }));
  EXPECT_EQ((*b)->state(), UploaderState::running);
  EXPECT_GT((*b)->status().epoch, a->status().epoch);
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
  // A, fenced, refuses waiters.
  EXPECT_EQ(await(*a, next + 1).code(), Errc::closed);
  l.log->unsubscribe(unsubscribe);
  (*b)->close();
}

// A cluster node raises the epoch itself when it acquires a stream; its
// uploader adopts that epoch rather than raising it again, and one started
// under an epoch the catalog no longer holds stops fenced, persisting
// nothing.
TEST(Uploader, AnAdoptedEpochIsNotRaisedAgainAndAStaleOneIsFenced) {
  QuietLogs quiet;
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  ASSERT_OK(fx.env.catalog->create("s1", 1));
  auto e = fx.env.catalog->get("s1");
  ASSERT_OK(e);
  ASSERT_OK(fx.env.catalog->bump_epoch("s1", e->revision, 0));
  UploaderOptions o = small_options("s1");
  o.adopt_epoch = 2;
  auto u = fx.start(o, l);
  uint64_t next = l.append(20);
  ASSERT_OK(await(*u, next));
  EXPECT_EQ(u->status().epoch, 2u);
  EXPECT_EQ(fx.env.catalog->get("s1")->epoch, 2u);
  fx.hooks->detach();
  u->close();

  // A later tenure raised it to 3: an uploader started under 2 is fenced.
  e = fx.env.catalog->get("s1");
  ASSERT_OK(fx.env.catalog->bump_epoch("s1", e->revision, 0));
  auto stale = fx.start(o, l);
  ASSERT_TRUE(eventually([&] { return stale->state() == UploaderState::fenced; }));
  EXPECT_EQ(fx.env.catalog->get("s1")->epoch, 3u);
  EXPECT_EQ(await(*stale, next + 1).code(), Errc::closed);
  fx.hooks->detach();
  stale->close();
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
}

TEST(Uploader, SlowStreamReachesRemoteWithinMaxAgePlusPersistIntervalPlusOneUpload) {
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  auto o = small_options("s1");
  o.assembly.target_size = 64 << 20;  // never cut by size
  o.assembly.max_age_ms = 300;
  o.persist_interval_ms = 200;
  o.persist_threshold = 100;
  auto u = fx.start(o, l);
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t next = l.append(1, 1);
    ASSERT_OK(await(*u, next));
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    // max_age + persist_interval + one upload (a local PUT: well under 1 s).
    EXPECT_LT(ms, 300 + 200 + 1000) << "record " << i;
    EXPECT_GE(ms, 250) << "cut before its max age";
  }
  auto st = u->status();
  EXPECT_EQ(st.time_to_remote.count, 5u);
  u->close();
}

TEST(Uploader, RemoteConfirmIsCutAndPersistedWithinTheShortBoundNotTheDebounce) {
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  auto o = small_options("s1");
  o.assembly.target_size = 64 << 20;  // never cut by size
  o.assembly.max_age_ms = 60'000;     // nor by the ordinary age bound
  o.assembly.hurry_max_age_ms = 50;   // but by the remote-confirm bound
  o.persist_interval_ms = 60'000;     // and no persist debounce either
  o.persist_threshold = 1000;
  auto u = fx.start(o, l);
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t next = l.append(1, 1);
    auto p = std::make_shared<std::promise<Status>>();
    auto f = p->get_future();
    u->await_remote(next, [p](Status s) { p->set_value(s); });
    ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready)
        << "remote wait for offset " << next << " never answered: " << u->status().last_error;
    ASSERT_OK(f.get());
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    // hurry bound + one upload + one persist (local files): far below 60 s.
    EXPECT_LT(ms, 50 + 5000) << "record " << i;
    EXPECT_GE(u->persisted_next(), next);
  }
  // Without a remote waiter the ordinary bounds are back: nothing is cut.
  uint64_t next = l.append(1, 1);
  EXPECT_FALSE(u->status().core.fragments_cut > 5);
  EXPECT_LT(u->persisted_next(), next);
  u->close();
}

// The file pages in this process's resident set (kB), /proc/self/status.
uint64_t rss_file_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssFile:", 0) == 0) return std::stoull(line.substr(8));
  }
  ADD_FAILURE() << "no RssFile in /proc/self/status";
  return 0;
}

TEST(Uploader, PutFragmentKeepsAWindowOfTheFragmentResidentNotAllOfIt) {
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks, /*segment_bytes=*/16 << 20);
  // ~48 MiB in three segments: 240 batches of 1 000 records of 200 B.
  const uint64_t next = l.append(240, 1000);
  auto t = l.log->walk_chunks(0);
  ASSERT_OK(t);
  auto b = (*t)->next(UINT64_MAX);
  ASSERT_OK(b);
  FragmentAssembly a(AssemblyConfig{1ull << 30, 0, 0}, 0);
  for (const log::CommittedChunk& c : b->chunks) ASSERT_OK(a.add(c, 0));
  auto plan = a.cut();
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->meta.next_offset, next);
  ASSERT_GE(plan->spans.size(), 3u);
  const uint64_t fragment_kib = plan->meta.size >> 10;
  ASSERT_GT(fragment_kib, 40u << 10);
  // The file pages resident while the verification and the store's passes
  // run: sampled every millisecond beside the put. Mapped spans whose
  // pages were all kept until the map went would add the whole fragment.
  const uint64_t before = rss_file_kib();
  std::atomic<bool> done{false};
  std::atomic<uint64_t> peak{before};
  std::thread sampler([&] {
    while (!done.load()) {
      peak.store(std::max(peak.load(), rss_file_kib()));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  auto put = put_fragment(*fx.real, *l.log, *plan, 1, "t/whole-fragment");
  done.store(true);
  sampler.join();
  ASSERT_TRUE(put.ok()) << put.error().message;
  EXPECT_EQ(*put, fx.real->head("t/whole-fragment")->size);
  EXPECT_LT(peak.load() - before, fragment_kib / 3)
      << "RssFile rose from " << before << " to " << peak.load() << " kB during the PUT of a "
      << fragment_kib << " kB fragment";
  // And what was stored is the whole fragment, every chunk checked.
  auto body = fx.real->get("t/whole-fragment");
  ASSERT_OK(body);
  auto f = decode_fragment(*body, "t/whole-fragment", true);
  ASSERT_OK(f);
  EXPECT_EQ(f->index.size(), b->chunks.size());
}

// The hooks subscribe the attached uploader to the log's commits and
// detaching unsubscribes it: commits made while detached reach no uploader
// (nothing new is uploaded), and once attached again the next commit shows
// the gap and the uploader reads it from the log.
TEST(Uploader, TieringHooksFeedCommitsToTheUploaderOnlyWhileAttached) {
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  auto u = fx.start(small_options("s1"), l);
  const uint64_t first = l.append(10);
  ASSERT_OK(await(*u, first));
  fx.hooks->detach();
  const uint64_t quiet = l.append(10);
  // Far longer than max_age (200 ms) + persist interval (100 ms) + a local
  // upload: an uploader that heard of these commits would have them remote.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(u->persisted_next(), first) << "a detached uploader heard of commits";
  fx.hooks->attach(u, l.log);
  const uint64_t next = l.append(1);
  ASSERT_GT(next, quiet);
  ASSERT_OK(await(*u, next));
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
  u->close();
}

TEST(Uploader, QueueOverflowFallsBackToReadingTheLog) {
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  auto o = small_options("s1");
  o.max_queued_chunks = 4;
  fx.faulty->set(Fault::hang, "/data/", 1);
  auto u = fx.start(o, l);
  uint64_t next = l.append(100);  // far more chunks than the queue holds
  fx.faulty->release();
  ASSERT_OK(await(*u, next));
  EXPECT_GE(u->status().catchup_reads, 2u);
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
  u->close();
}

TEST(Uploader, DataWrittenBeforeTheUploaderStartsIsUploaded) {
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  uint64_t before = l.append(50);
  auto u = fx.start(small_options("s1"), l);
  uint64_t next = l.append(10);
  ASSERT_GT(next, before);
  ASSERT_OK(await(*u, next));
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
  u->close();
}

TEST(Uploader, CatalogFailuresAtStartAreRetriedNeverReadAsEmpty) {
  QuietLogs quiet;
  Fixture fx;
  TestLog l(fx.dir.sub("log"), fx.hooks);
  {
    auto u = fx.start(small_options("s1"), l);
    ASSERT_OK(await(*u, l.append(20)));
    fx.hooks->detach();
    u->close();
  }
  // Delete the root the catalog points at: the next start must not treat
  // the stream as empty; it retries until the root is back.
  auto entry = fx.env.catalog->get("s1");
  ASSERT_OK(entry);
  auto root = fx.real->get(entry->root_key);
  ASSERT_OK(root);
  ASSERT_OK(fx.real->remove(entry->root_key));
  fx.env.catalog->fail_next("get", 2);
  // A fresh manifest cache, as after a node restart (a cached manifest at
  // the catalog's revision would be trusted without reading the root).
  fx.env.cache = std::make_shared<ManifestCache>();
  auto u = fx.start(small_options("s1"), l);
  ASSERT_TRUE(eventually([&] { return u->status().failures_by_class["start"] >= 3; }));
  EXPECT_EQ(u->state(), UploaderState::starting);
  ASSERT_OK(fx.real->put(entry->root_key, *root));
  uint64_t next = l.append(10);
  ASSERT_OK(await(*u, next));
  expect_records(remote_records(*fx.real, *fx.env.catalog, "s1"), 0, next);
  u->close();
}

TEST(Uploader, CloseWithTransfersQueuedInTheGovernorReturnsAndCancelsThem) {
  QuietLogs quiet;
  GovernorConfig g;
  g.max_concurrent = 1;
  Fixture fx(g);
  TestLog l(fx.dir.sub("log"), fx.hooks);
  fx.faulty->set(Fault::hang, "/data/", 1);
  auto u = fx.start(small_options("s1"), l);
  l.append(100);
  ASSERT_TRUE(fx.faulty->wait_hung(1, std::chrono::seconds(20)));
  ASSERT_TRUE(eventually([&] { return fx.env.governor->stats().queued > 0; }));
  auto p = std::make_shared<std::promise<Status>>();
  u->await_persisted(l.log->committed_next(), [p](Status s) { p->set_value(s); });
  fx.hooks->detach();
  u->close();
  auto f = p->get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(f.get().code(), Errc::closed);
  ASSERT_TRUE(eventually([&] { return fx.env.governor->stats().queued == 0; }));
  EXPECT_GT(fx.env.governor->stats().cancelled, 0u);
  fx.faulty->release();
}

}  // namespace
}  // namespace strata::tier::test
