// A node's life: streams created and reopened, uploads flushed, restarts
// that continue with no gap and no duplicate, many streams on few threads.
#include "node/node.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>
#include <future>
#include <thread>

#include "node/node_test_util.h"
#include "node/stream_handle.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

using strata::test::TempDir;
using namespace strata::node::test;

void expect_all(const RemoteView& v, uint64_t next) {
  for (const auto& e : v.errors) ADD_FAILURE() << e;
  ASSERT_EQ(v.records.size(), next);
  for (uint64_t i = 0; i < next; ++i) ASSERT_EQ(v.records.at(i), value_of(i)) << i;
}

int thread_count() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// A cluster node's lease end (Node::lease_fence, kept by the ownership
// shell) is checked by every append at that moment: once it has passed,
// nothing is written — a node resumed after a freeze past its lease, before
// its ownership shell has closed anything, appends nothing.
TEST(Node, NoAppendOnceTheLeaseHasEnded) {
  TempDir tmp;
  auto node = open_node(tmp.sub("n"));
  ASSERT_TRUE(node);
  ASSERT_OK(node->create_stream("fenced"));
  auto h = node->handle("fenced");
  ASSERT_OK(h);
  const std::string entry = std::string("\0\0\0\x01x", 5);
  log::EntryBatch b;
  b.entries = entry;
  b.num_entries = 1;
  b.num_records = 1;
  EXPECT_FALSE((*h)->lease_ended()) << "a single node's lease never ends";
  ASSERT_OK((*h)->append(b));
  // The lease ended a moment ago (steady clock ms).
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  node->lease_fence()->store(now - 1);
  EXPECT_TRUE((*h)->lease_ended());
  auto refused = (*h)->append(b);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), Errc::unavailable);
  EXPECT_NE(refused.error().message.find("cluster lease has ended"), std::string::npos);
  EXPECT_EQ((*h)->committed_next(), 1u) << "nothing written past the lease";
  // Renewed: writes again.
  node->lease_fence()->store(now + 60'000);
  ASSERT_OK((*h)->append(b));
  EXPECT_EQ((*h)->committed_next(), 2u);
  ASSERT_OK(node->close());
}

TEST(Node, CreateUploadFlushAndStatus) {
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  EXPECT_EQ(n->create_stream("s1").code(), Errc::already_exists);
  uint64_t next = append_values(**log, 100);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  expect_all(read_remote(n->store(), n->catalog(), "t", "s1"), next);
  auto st = n->status_json();
  EXPECT_EQ(st["streams"]["s1"]["tiering"]["state"], "running");
  EXPECT_EQ(st["streams"]["s1"]["tiering"]["remote_next_offset"], next);
  std::string m = n->metrics_text();
  EXPECT_NE(m.find("strata_tier_remote_next_offset{stream=\"s1\"} " + std::to_string(next)),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("strata_objstore_requests_total{op=\"put\"}"), std::string::npos);
  EXPECT_EQ(n->flush("nope", std::chrono::seconds(1)).code(), Errc::not_found);
  ASSERT_OK(n->close());
}

// A hand-over (cluster rebalancing) hides the stream before anything else,
// persists everything committed — also what is appended while it runs —
// and closes it; a stream that is not open is refused.
TEST(Node, HandOffPersistsEverythingCommittedThenClosesTheStream) {
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  uint64_t next = append_values(**log, 100);
  bool hidden_first = false;
  ASSERT_OK(n->hand_off_stream("s1", std::chrono::seconds(30), [&] {
    hidden_first = !n->stream("s1").ok();
    // An append still in flight when the server stopped taking new ones.
    next = append_values(**log, 20);
  }));
  EXPECT_TRUE(hidden_first) << "the stream was still served when the hand-over began";
  EXPECT_FALSE(n->stream("s1").ok());
  expect_all(read_remote(n->store(), n->catalog(), "t", "s1"), next);
  EXPECT_EQ(next, 1200u);
  EXPECT_EQ(n->hand_off_stream("s1", std::chrono::seconds(1), nullptr).code(), Errc::not_found);
  ASSERT_OK(n->close());
}

TEST(Node, RestartContinuesWithNoGapAndNoDuplicate) {
  TempDir tmp;
  uint64_t next = 0;
  for (int round = 0; round < 3; ++round) {
    auto n = open_node(tmp.path());
    ASSERT_TRUE(n);
    auto log = round == 0 ? n->create_stream("s1") : n->stream("s1");
    ASSERT_OK(log);
    next = append_values(**log, 40);
    if (round == 1) {
      // Close without flushing: the tail is uploaded after the restart.
      ASSERT_OK(n->close());
      continue;
    }
    ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
    ASSERT_OK(n->close());
  }
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  expect_all(read_remote(n->store(), n->catalog(), "t", "s1"), next);
  auto e = n->catalog().get("s1");
  ASSERT_OK(e);
  EXPECT_EQ(e->epoch, 5u);  // created at 1; each of the four opens took it over
}

TEST(Node, ALostLocalLogRestartsAfterTheRemoteTierAndNeverReusesItsOffsets) {
  TempDir tmp;
  uint64_t next = 0;
  {
    auto n = open_node(tmp.path());
    ASSERT_TRUE(n);
    auto log = n->create_stream("s1");
    ASSERT_OK(log);
    next = append_values(**log, 50);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
    ASSERT_OK(n->close());
  }
  // The local log is lost; the catalog still names the stream, so the node
  // serves it again at open, from the bucket (no create needed).
  ASSERT_OK(remove_all(posix_fs(), tmp.sub("streams/s1")));
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  EXPECT_EQ(n->create_stream("s1").code(), Errc::already_exists);
  auto log = n->stream("s1");
  ASSERT_OK(log);
  EXPECT_EQ((*log)->first_offset(), next);
  uint64_t more = append_values(**log, 20);
  ASSERT_GT(more, next);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  expect_all(read_remote(n->store(), n->catalog(), "t", "s1"), more);
  EXPECT_EQ(n->status_json()["node"]["local_resets"], 1);
}

TEST(Node, FlushRightAfterOpenCutsTheBacklogWithoutWaitingForTheAgeBound) {
  // A backlog written with tiering off, then a node that flushes at once:
  // the uploader is still starting, so the cut must apply once the backlog
  // has been read, not wait for fragment_max_age (10 minutes here).
  TempDir tmp;
  auto doc = small_node_doc();
  doc["tiering"]["fragment_max_age_ms"] = 600'000;
  uint64_t next = 0;
  {
    auto off = doc;
    off["tiering"]["enabled"] = false;
    auto n = open_node(tmp.path(), off);
    ASSERT_TRUE(n);
    auto log = n->create_stream("s1");
    ASSERT_OK(log);
    next = append_values(**log, 40);
    ASSERT_OK(n->close());
  }
  auto n = open_node(tmp.path(), doc);
  ASSERT_TRUE(n);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  expect_all(read_remote(n->store(), n->catalog(), "t", "s1"), next);
}

TEST(Node, AnUploaderHeldPastTheNodeIsSafeToUseAndRelease) {
  TempDir tmp;
  std::shared_ptr<tier::Uploader> up;
  {
    auto n = open_node(tmp.path());
    ASSERT_TRUE(n);
    ASSERT_OK(n->create_stream("s1"));
    up = n->uploader("s1");
  }
  EXPECT_EQ(up->state(), tier::UploaderState::closed);
  up->force_cut();
  up->close();
  up.reset();  // the last reference: its strand and timers go with the event loop
}

TEST(Node, LocalRetentionKeepsOnlyWhatTheRemoteTierCovers) {
  TempDir tmp;
  auto doc = small_node_doc();
  doc["log"]["retention"] = {{"max_bytes", 1}};
  auto n = open_node(tmp.path(), doc);
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  uint64_t next = append_values(**log, 200);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  ASSERT_OK((*log)->apply_retention());
  EXPECT_GT((*log)->first_offset(), 0u);
  EXPECT_LE((*log)->first_offset(), n->uploader("s1")->persisted_next());
  expect_all(read_remote(n->store(), n->catalog(), "t", "s1"), next);
}

TEST(Node, UserRetentionTrimsTheRemoteTierAndDeletesOnlyAfterThePersist) {
  TempDir tmp;
  auto doc = small_node_doc();
  doc["tiering"]["retention"] = {{"max_bytes", 64 << 10}};
  auto n = open_node(tmp.path(), doc);
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  uint64_t next = append_values(**log, 300);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  auto up = n->uploader("s1");
  up->request_retention();
  // Retention persists truncated manifests (a plan at a time) until the
  // remote tier is within one fragment of the limit, then deletes what it
  // dropped.
  const uint64_t bound = (64u << 10) + (20u << 10);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (up->status().remote_bytes > bound && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto st = up->status();
  ASSERT_GT(st.remote_first_offset, 0u);
  EXPECT_EQ(st.remote_next_offset, next);
  EXPECT_LE(st.remote_bytes, bound);
  until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  RemoteView v;
  do {
    v = read_remote(n->store(), n->catalog(), "t", "s1");
  } while (!v.audit.orphans.empty() && std::chrono::steady_clock::now() < until);
  for (const auto& e : v.errors) ADD_FAILURE() << e;
  EXPECT_TRUE(v.audit.orphans.empty()) << v.audit.orphans.size() << " objects not deleted";
  // What remains is exactly the retained suffix, every record once.
  ASSERT_FALSE(v.records.empty());
  EXPECT_LE(v.records.begin()->first, st.remote_first_offset);
  for (uint64_t i = st.remote_first_offset; i < next; ++i) ASSERT_EQ(v.records.at(i), value_of(i));
}

TEST(Node, ManyIdleStreamsShareAFewThreads) {
  TempDir tmp;
  int before = thread_count();
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  const int streams = 200;
  for (int i = 0; i < streams; ++i) ASSERT_OK(n->create_stream(fmt::format("s{}", i)));
  // Every uploader has started (taken its stream over in the catalog).
  for (int i = 0; i < streams; ++i) {
    auto u = n->uploader(fmt::format("s{}", i));
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (u->state() != tier::UploaderState::running && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(u->state(), tier::UploaderState::running) << i;
  }
  // io threads + blocking pool + the catalog's compaction thread, whatever
  // the number of streams.
  int used = thread_count() - before;
  EXPECT_LE(used, 2 + 4 + 2) << used << " threads for " << streams << " streams";
}

TEST(Node, IdleStreamsUseNoCpuAfterTheirLastPersist) {
  // An uploader whose persist timer had fired kept re-arming its wake-up
  // for a time already past: each idle stream spun on the event loop.
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  for (int i = 0; i < 20; ++i) {
    std::string name = "s" + std::to_string(i);
    auto log = n->create_stream(name);
    ASSERT_OK(log);
    uint64_t next = append_values(**log, 3);
    // Not a flush (which persists at once): the persist comes from the
    // persist_interval timer, as for any stream that goes quiet.
    std::promise<Status> persisted;
    n->uploader(name)->await_persisted(next, [&](Status s) { persisted.set_value(s); });
    n->uploader(name)->force_cut();
    auto f = persisted.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    ASSERT_OK(f.get());
  }
  // Everything is persisted and nothing is pending: the process must stay
  // (almost) idle. The window is measured, not waited on for a condition.
  auto cpu = [] {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  };
  double before = cpu();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  double used = cpu() - before;
  EXPECT_LT(used, 0.1) << used << " CPU seconds in one idle second";
  ASSERT_OK(n->close());
}

TEST(Node, UnreachableObjectStoreFailsOpenNamingIt) {
  TempDir tmp;
  auto doc = small_node_doc();
  doc["objstore"] = {{"backend", "s3"},
                     {"s3",
                      {{"endpoint", "http://127.0.0.1:1"},
                       {"bucket", "bkt"},
                       {"access_key_id", "k"},
                       {"secret_access_key", "s"},
                       {"connect_timeout_ms", 500},
                       {"request_timeout_ms", 1000}}}};
  auto cfg = load_node_config(doc, tmp.path(), objstore::process_env());
  ASSERT_OK(cfg);
  auto n = Node::open(*cfg);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("object store"), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("127.0.0.1:1"), std::string::npos) << n.error().message;
}

}  // namespace
}  // namespace strata::node
