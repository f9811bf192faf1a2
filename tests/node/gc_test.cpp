// `strata gc` beside a real node: planted orphans (old unreferenced keys of
// a live stream and of a stream the catalog no longer holds) are deleted,
// young ones kept; and gc run in a loop with no grace at all while the node
// uploads and persists continuously never deletes an object a manifest
// references or a persist in flight will reference — afterwards scrub finds
// nothing missing and every record reads back exactly once. Directory
// store, and one case against s3rver.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <thread>

#include "common/clock.h"
#include "common/fs.h"
#include "common/name_component.h"
#include "node/node_s3_fixture.h"
#include "support/cli.h"
#include "tier/gc_run.h"
#include "tier/scrub_run.h"

namespace strata::node {
namespace {

using json = nlohmann::json;
using strata::test::strata_cli;
using strata::test::TempDir;
using namespace strata::node::test;

constexpr int64_t kHour = 3'600'000;

tier::ObjectKeys keys(const std::string& s) {
  return *tier::ObjectKeys::make(kPrefix, s);
}

// Sets the modification time of `key` in the directory store rooted at
// `root` to `age_ms` ago (the fs layout of docs/formats/objstore.md: directory
// segments d_<seg>, the object file f_<name>).
void backdate(const std::string& root, const std::string& key, int64_t age_ms) {
  std::string path = root;
  size_t start = 0;
  for (size_t slash; (slash = key.find('/', start)) != std::string::npos; start = slash + 1) {
    path += "/d_" + key.substr(start, slash - start);
  }
  path += "/f_" + key.substr(start);
  int64_t t = system_clock().now_ms() - age_ms;
  timespec ts[2];
  ts[0].tv_sec = ts[1].tv_sec = time_t(t / 1000);
  ts[0].tv_nsec = ts[1].tv_nsec = long(t % 1000) * 1'000'000;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), ts, 0), 0) << path << ": " << std::strerror(errno);
}

bool exists_in(objstore::ObjectStore& store, const std::string& key) {
  auto h = store.head(key);
  EXPECT_TRUE(h.ok() || h.retry() == objstore::RetryClass::not_found) << h.error().to_string();
  return h.ok();
}

std::set<std::string> key_set(const json& objects) {
  std::set<std::string> out;
  for (const auto& o : objects) out.insert(o["key"].get<std::string>());
  return out;
}

// The scrub of `stream` finds no damage: nothing a manifest references is
// missing, and (full) every fragment's bytes verify.
void expect_undamaged(objstore::ObjectStore& store, catalog::Catalog& catalog,
                      const std::string& stream) {
  tier::ScrubOptions o;
  o.full = true;
  auto r = tier::scrub_stream(store, tier::CatalogSource::live(catalog), keys(stream), o);
  ASSERT_OK(r);
  for (const auto& f : r->findings) {
    EXPECT_FALSE(tier::is_damage(f.kind))
        << stream << ": " << tier::finding_name(f.kind) << " " << f.key << ": " << f.detail;
  }
}

// A wall clock `offset_ms` ahead of the real one.
class AheadClock final : public Clock {
 public:
  explicit AheadClock(int64_t offset_ms) : offset_(offset_ms) {}
  int64_t now_ms() const override { return system_clock().now_ms() + offset_; }
  int64_t monotonic_ns() const override { return system_clock().monotonic_ns(); }

 private:
  int64_t offset_;
};

// Appends paced batches to `log` on a thread while `body` runs gc (and
// whatever else) in a loop; returns when both are done.
struct Uploading {
  std::atomic<bool> done{false};
  std::atomic<uint64_t> next{0};
  std::thread producer;
  Uploading(log::StreamLog& log, int batches) {
    producer = std::thread([this, &log, batches] {
      for (int b = 0; b < batches; ++b) {
        next = append_values(log, 1);
        // Pacing, not synchronisation: spreads the batches over many
        // fragment cuts and persists for gc to run between.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      done = true;
    });
  }
  ~Uploading() {
    if (producer.joinable()) producer.join();
  }
};

// Totals of many gc runs.
struct GcTotals {
  int runs = 0;
  uint64_t deleted = 0;
  uint64_t failed = 0;
  std::map<tier::GcVerdict, uint64_t> counts;
  std::set<std::string> deleted_keys;
  void add(const tier::GcResult& r) {
    runs += 1;
    deleted += r.deleted.size();
    failed += r.failed.size();
    for (auto [v, n] : r.counts) counts[v] += n;
    for (const auto& o : r.deleted) deleted_keys.insert(o.key);
  }
};

class Gc : public ::testing::Test {
 protected:
  void SetUp() override {
    doc_ = small_node_doc();
    // Old roots linger a while (the uploader deletes them after this), so
    // gc has something of its own to delete while the node runs.
    doc_["tiering"]["delete_grace_ms"] = 1500;
    doc_["data_dir"] = tmp_.sub("data");
    config_ = tmp_.sub("node.json");
    std::ofstream(config_) << doc_.dump();
    auto cfg = load_node_config(doc_, "", no_env());
    ASSERT_OK(cfg);
    objects_ = cfg->objstore.fs.root;
    auto n = Node::open(*cfg);
    ASSERT_OK(n);
    node_ = std::move(n).value();
  }
  void TearDown() override {
    if (node_) EXPECT_OK(node_->close());
  }

  void plant(const std::string& key, int64_t age_ms) {
    ASSERT_OK(node_->store().put(key, "planted " + key));
    if (age_ms > 0) {
      ASSERT_NO_FATAL_FAILURE(backdate(objects_, key, age_ms));
    }
  }

  tier::GcResult gc(int64_t grace_ms, const tier::CatalogSource& catalog, const Clock& clock) {
    tier::GcOptions o;
    o.prefix = kPrefix;
    o.grace_ms = grace_ms;
    o.clock = &clock;
    auto r = tier::run_gc(node_->store(), catalog, o);
    EXPECT_OK(r);
    return r.ok() ? *r : tier::GcResult{};
  }

  TempDir tmp_;
  json doc_;
  std::string config_;
  std::string objects_;
  std::unique_ptr<Node> node_;
};

TEST_F(Gc, DeletesOldOrphansOfLiveAndDeletedStreamsAndKeepsYoungOnes) {
  auto log = node_->create_stream("s1");
  ASSERT_OK(log);
  uint64_t next = append_values(**log, 30);
  ASSERT_OK(node_->flush("s1", std::chrono::seconds(30)));
  auto entry = node_->catalog().get("s1");
  ASSERT_OK(entry);
  ASSERT_GE(entry->epoch, 2u);

  // Old: an upload of an earlier epoch, an old root, and a deleted
  // stream's fragment, root and group.
  const std::set<std::string> old = {
      keys("s1").fragment(0, 1, 0xdead0001),    keys("s1").root(1, 0xdead0002),
      keys("ghost").fragment(0, 1, 0xdead0003), keys("ghost").root(1, 0xdead0004),
      keys("ghost").group(0, 0xdead0005, 1),
  };
  // Young: the same kinds of objects, just written.
  const std::set<std::string> young = {keys("s1").fragment(0, 1, 0xbeef0001),
                                       keys("ghost").fragment(0, 1, 0xbeef0002)};
  // Never gc's to delete: not tier keys.
  const std::set<std::string> foreign = {std::string(kPrefix) + "/notes.txt",
                                         keys("s1").stream_prefix() + "data/notes.txt"};
  for (const auto& k : old) plant(k, 2 * kHour);
  for (const auto& k : young) plant(k, 0);
  for (const auto& k : foreign) plant(k, 2 * kHour);

  // The dry run plans exactly the old ones and deletes nothing.
  auto dry = strata_cli({"--json", "gc", "--config", config_, "--dry-run"});
  ASSERT_EQ(dry.status, 0) << dry.out << dry.err;
  json d = strata::test::last_json(dry.out);
  ASSERT_TRUE(d.is_object()) << dry.out;
  EXPECT_EQ(key_set(d["would_delete"]), old) << dry.out;
  EXPECT_EQ(d["grace_ms"], kHour);
  for (const auto& k : old) EXPECT_TRUE(exists_in(node_->store(), k)) << k;
  std::set<std::string> kept = key_set(d["kept"]);
  for (const auto& k : young) EXPECT_TRUE(kept.count(k)) << k << " " << d["kept"];
  for (const auto& k : foreign) EXPECT_TRUE(kept.count(k)) << k << " " << d["kept"];

  // The real run, beside the running node (its catalog opened read-only).
  auto run = strata_cli({"--json", "gc", "--config", config_});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  json r = strata::test::last_json(run.out);
  EXPECT_EQ(key_set(r["deleted"]), old) << run.out;
  EXPECT_EQ(r["failed"].size(), 0u);
  for (const auto& k : old) EXPECT_FALSE(exists_in(node_->store(), k)) << k;
  for (const auto& k : young) EXPECT_TRUE(exists_in(node_->store(), k)) << k;
  for (const auto& k : foreign) EXPECT_TRUE(exists_in(node_->store(), k)) << k;
  EXPECT_GT(r["counts"]["referenced"].get<int>(), 3);

  // Everything the catalog references is still there and reads back (the
  // foreign key under the stream's prefix is damage to scrub: it goes first).
  ASSERT_OK(node_->store().remove(keys("s1").stream_prefix() + "data/notes.txt"));
  ASSERT_NO_FATAL_FAILURE(expect_undamaged(node_->store(), node_->catalog(), "s1"));
  ASSERT_NO_FATAL_FAILURE(
      expect_exactly_once(read_remote(node_->store(), node_->catalog(), kPrefix, "s1"), next));

  // Text output, and a bad grace named.
  auto text = strata_cli({"gc", "--config", config_, "--dry-run", "--grace", "90m"});
  EXPECT_EQ(text.status, 0) << text.out << text.err;
  EXPECT_TRUE(strata::test::contains(text.out, "gc (dry run)")) << text.out;
  auto bad = strata_cli({"gc", "--config", config_, "--grace", "soon"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_TRUE(strata::test::contains(bad.err, "--grace 'soon'")) << bad.err;
}

// GC knows a stream by its key segment (docs/formats/stream-names.md): a
// live stream with a long name (a hashed segment) keeps what its manifest
// references; a deleted stream's old objects are deleted, under a hashed
// segment (no name can be decoded from it) or an escaped one; and a live
// stream named exactly like the deleted one's hashed segment is another
// stream, whose objects stay.
TEST_F(Gc, StreamsOfAnyNameAreToldApartByTheirKeySegment) {
  const std::string live = std::string(255, 'L');
  const std::string ghost = std::string(255, 'G');
  const std::string twin = name_component(ghost);  // a valid name too
  const std::string odd_ghost = "orders 2026/Q1 \xe2\x82\xac";
  std::map<std::string, uint64_t> next;
  for (const auto& name : {live, twin}) {
    auto log = node_->create_stream(name);
    ASSERT_OK(log);
    next[name] = append_values(**log, 20);
    ASSERT_OK(node_->flush(name, std::chrono::seconds(30)));
  }
  const std::set<std::string> old = {
      keys(live).fragment(0, 1, 0xdead0001), keys(ghost).fragment(0, 1, 0xdead0002),
      keys(ghost).root(1, 0xdead0003),       keys(odd_ghost).fragment(0, 1, 0xdead0004),
      keys(twin).fragment(0, 1, 0xdead0005),
  };
  for (const auto& k : old) plant(k, 2 * kHour);
  auto run = strata_cli({"--json", "gc", "--config", config_});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  json r = strata::test::last_json(run.out);
  EXPECT_EQ(key_set(r["deleted"]), old) << run.out;
  std::map<std::string, std::string> stream_of;
  for (const auto& o : r["deleted"]) stream_of[o["key"]] = o["stream"];
  EXPECT_EQ(stream_of[keys(live).fragment(0, 1, 0xdead0001)], live);
  EXPECT_EQ(stream_of[keys(ghost).root(1, 0xdead0003)], twin) << "the deleted stream's segment";
  EXPECT_EQ(stream_of[keys(odd_ghost).fragment(0, 1, 0xdead0004)], odd_ghost);
  EXPECT_EQ(stream_of[keys(twin).fragment(0, 1, 0xdead0005)], twin);
  for (const auto& name : {live, twin}) {
    ASSERT_NO_FATAL_FAILURE(expect_undamaged(node_->store(), node_->catalog(), name));
    ASSERT_NO_FATAL_FAILURE(expect_exactly_once(
        read_remote(node_->store(), node_->catalog(), kPrefix, name), next[name]));
  }
}

TEST_F(Gc, InALoopWithNoGraceBesideAnUploadingNodeItNeverDeletesWhatAManifestNeeds) {
  auto live = node_->create_stream("live");
  ASSERT_OK(live);
  auto idle = node_->create_stream("idle");
  ASSERT_OK(idle);
  uint64_t idle_next = append_values(**idle, 20);
  ASSERT_OK(node_->flush("idle", std::chrono::seconds(30)));
  const std::set<std::string> orphans = {keys("live").fragment(0, 1, 0xdead0001),
                                         keys("ghost").fragment(0, 1, 0xdead0002),
                                         keys("ghost").root(1, 0xdead0003)};
  for (const auto& k : orphans) plant(k, 0);

  GcTotals totals;
  int scrubs = 0;
  {
    // A floor under the scaled count: the hazard needs uploads to race.
    Uploading up(**live, std::max(strata::test::scaled(1500), 500));
    auto catalog = tier::CatalogSource::live(node_->catalog());
    while (!up.done || totals.runs < 12) {
      totals.add(gc(0, catalog, system_clock()));
      // Scrub beside the uploads: a root replaced (and deleted) mid-scrub
      // is read again, never reported missing.
      if (totals.runs % 5 == 0) {
        ASSERT_NO_FATAL_FAILURE(expect_undamaged(node_->store(), node_->catalog(), "live"));
        scrubs += 1;
      }
    }
  }
  ASSERT_OK(node_->flush("live", std::chrono::seconds(30)));
  uint64_t next = (*live)->committed_next();
  totals.add(gc(0, tier::CatalogSource::live(node_->catalog()), system_clock()));

  EXPECT_GT(totals.runs, 10) << "gc must have raced many persists";
  EXPECT_GT(scrubs, 1);
  EXPECT_EQ(totals.failed, 0u);
  // gc did delete: the planted orphans and roots the uploader had not yet
  // deleted; and it saw fragments of persists in flight and kept them.
  for (const auto& k : orphans) EXPECT_TRUE(totals.deleted_keys.count(k)) << k;
  EXPECT_GT(totals.counts[tier::GcVerdict::pending_fragment], 0u)
      << "no gc run saw an upload between its PUT and its persist: the hazard was not exercised";
  ASSERT_NO_FATAL_FAILURE(expect_undamaged(node_->store(), node_->catalog(), "live"));
  ASSERT_NO_FATAL_FAILURE(expect_undamaged(node_->store(), node_->catalog(), "idle"));
  ASSERT_NO_FATAL_FAILURE(
      expect_exactly_once(read_remote(node_->store(), node_->catalog(), kPrefix, "live"), next));
  ASSERT_NO_FATAL_FAILURE(expect_exactly_once(
      read_remote(node_->store(), node_->catalog(), kPrefix, "idle"), idle_next));
}

TEST_F(Gc, AStreamCreatedWhilePlanningKeepsItsObjects) {
  // Objects of a stream the catalog does not hold when gc first reads it,
  // but does when gc reads it again: a stream being created. Its objects
  // must survive, however old.
  const std::set<std::string> planted = {keys("born").fragment(0, 1, 0x00000001),
                                         keys("born").root(1, 0x00000002)};
  for (const auto& k : planted) plant(k, 2 * kHour);
  tier::CatalogSource live = tier::CatalogSource::live(node_->catalog());
  tier::CatalogSource racing = live;
  int lists = 0;
  racing.list = [&]() -> Result<std::vector<catalog::StreamEntry>> {
    if (++lists == 2) {
      // Between gc's two reads of the catalog, the stream appears.
      auto c = node_->catalog().create("born", 1);
      if (!c.ok()) return std::move(c).error();
    }
    return live.list();
  };
  tier::GcResult r = gc(kHour, racing, system_clock());
  EXPECT_EQ(lists, 2);
  EXPECT_TRUE(r.deleted.empty()) << r.deleted.front().key;
  for (const auto& k : planted) EXPECT_TRUE(exists_in(node_->store(), k)) << k;
  EXPECT_GE(r.rounds, 2) << "the changed stream is planned again";
  // Planned again, as a stream in the catalog with nothing persisted: its
  // fragment (its epoch, above offset 0) and its root may be a first
  // persist in flight.
  EXPECT_EQ(r.counts[tier::GcVerdict::pending_fragment], 1u);
  EXPECT_EQ(r.counts[tier::GcVerdict::pending_meta], 1u);
}

TEST_F(NodeS3, GcInALoopBesideAnUploadingNodeKeepsEveryReferencedObject) {
  auto n = open_node(s3_doc(server_->endpoint()));
  ASSERT_TRUE(n);
  auto log = n->create_stream("live");
  ASSERT_OK(log);
  // Planted now, but gc's clock runs two hours ahead: to gc every object
  // is old, so only the rules about references and persists in flight
  // keep the stream's objects.
  const std::set<std::string> orphans = {keys("live").fragment(0, 1, 0xdead0001),
                                         keys("ghost").fragment(0, 1, 0xdead0002)};
  for (const auto& k : orphans) ASSERT_OK(n->store().put(k, "planted"));
  AheadClock ahead(2 * kHour);
  GcTotals totals;
  {
    Uploading up(**log, std::max(strata::test::scaled(500), 300));
    // s3rver removes a directory a delete leaves empty, racing a PUT that
    // has just created it (the server dies with ENOENT). Before the first
    // upload the planted orphan is alone in the stream's data directory, so
    // gc starts once an uploaded fragment (which gc keeps) is beside it.
    const std::string data_dir = keys("live").stream_prefix() + "data/";
    ASSERT_TRUE(wait_until(
        [&] {
          auto page = direct_->list(objstore::ListRequest{data_dir, "", 10});
          return page.ok() && page->objects.size() >= 2;
        },
        std::chrono::seconds(30)))
        << "no fragment uploaded in 30 s";
    auto catalog = tier::CatalogSource::live(n->catalog());
    while (!up.done || totals.runs < 4) {
      tier::GcOptions o;
      o.prefix = kPrefix;
      o.grace_ms = kHour;
      o.clock = &ahead;
      auto r = tier::run_gc(n->store(), catalog, o);
      ASSERT_OK(r);
      totals.add(*r);
    }
  }
  ASSERT_OK(n->flush("live", std::chrono::seconds(30)));
  uint64_t next = (*log)->committed_next();
  EXPECT_GT(totals.runs, 3);
  for (const auto& k : orphans) EXPECT_TRUE(totals.deleted_keys.count(k)) << k;
  EXPECT_GT(totals.counts[tier::GcVerdict::pending_fragment], 0u);
  ASSERT_NO_FATAL_FAILURE(expect_undamaged(*direct_, n->catalog(), "live"));
  RemoteView v = remote(*n, "live");
  ASSERT_NO_FATAL_FAILURE(expect_exactly_once(v, next));
  ASSERT_OK(n->close());
}

}  // namespace
}  // namespace strata::node
