// kill -9 of a node while it deletes streams with many objects, at random
// instants, over several rounds (each round's child reopens the node, which
// resumes the pending deletion, and asks for the rest again). After every
// kill, read without opening a node, for each victim:
//  - no marker: either nothing was deleted (the stream is whole: its
//    directory, its catalog entry and a clean remote tier) or everything
//    is gone — the marker comes before the first destructive step and goes
//    after the last;
//  - the steps' order holds: no catalog entry left without the bucket
//    prefix and the directory gone first, no directory gone while objects
//    remain;
// and the bystander stream is whole. At the end a node opened on the
// directory finishes the deletions: nothing of the victims is left, the
// bystander is untouched, the names start over.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "catalog/embedded_catalog.h"
#include "node/deletion_marker.h"
#include "node/node.h"
#include "node/node_test_util.h"
#include "objstore/config.h"
#include "support/assertions.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

using strata::test::Process;
using strata::test::TempDir;
using namespace strata::node::test;

constexpr const char* kBystander = "bystander";
constexpr int kPageKeys = 4;

std::vector<std::string> victims() {
  std::vector<std::string> v;
  for (int i = 0; i < 8; ++i) v.push_back(fmt::format("victim{}", i));
  return v;
}

uint64_t append_values(log::StreamLog& log, uint64_t batches) {
  uint64_t next = log.committed_next();
  for (uint64_t b = 0; b < batches; ++b) {
    uint64_t first = log.committed_next();
    std::vector<std::string> vals;
    for (uint32_t i = 0; i < 10; ++i) vals.push_back(value_of(first + i));
    std::vector<BytesView> views(vals.begin(), vals.end());
    auto r = log.append(std::span<const BytesView>(views));
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    if (r.ok()) next = r->next_offset;
  }
  return next;
}

std::shared_ptr<objstore::ObjectStore> store_at(const std::string& dir) {
  objstore::ObjectStoreConfig c;
  c.fs.root = dir + "/objects";
  return std::shared_ptr<objstore::ObjectStore>(std::move(objstore::open_object_store(c)).value());
}

std::string prefix_of(const std::string& stream) {
  return tier::ObjectKeys::make("t", stream)->stream_prefix();
}

size_t object_count(objstore::ObjectStore& store, const std::string& stream) {
  auto all = objstore::list_all(store, prefix_of(stream));
  EXPECT_TRUE(all.ok()) << all.error().to_string();
  return all.ok() ? all->size() : 0;
}

// Every record of the stream's persisted remote tier is right and the
// audit is clean.
void expect_remote_whole(objstore::ObjectStore& store, catalog::Catalog& cat,
                         const std::string& stream) {
  auto view = read_remote(store, cat, "t", stream);
  for (const auto& e : view.errors) {
    // The junk keys planted under the prefix (deleted along with the rest)
    // are not the stream's damage.
    if (e.rfind("unparsable_key ", 0) == 0) continue;
    ADD_FAILURE() << stream << ": " << e;
  }
  for (const auto& [off, val] : view.records) ASSERT_EQ(val, value_of(off)) << stream << " " << off;
}

enum class State { untouched, mid_deletion, gone };

// A victim after a kill, read with a read-only catalog (the dead child's
// locks died with it) and a store straight on the directory.
State inspect(const std::string& dir, catalog::Catalog& cat, objstore::ObjectStore& store,
              const std::string& victim) {
  SCOPED_TRACE(victim);
  bool marker = exists(posix_fs(), deletion_marker_path(dir + "/deletions", victim));
  bool local = exists(posix_fs(), dir + "/streams/" + victim);
  auto e = cat.get(victim);
  EXPECT_TRUE(e.ok() || e.code() == Errc::not_found) << e.error().to_string();
  bool entry = e.ok();
  size_t objects = object_count(store, victim);
  if (marker) {
    // The order of the steps: the bucket prefix is emptied before the
    // directory goes, and both before the catalog entry.
    if (!local) {
      EXPECT_EQ(objects, 0u) << "the directory went while objects remain";
    }
    if (!entry) {
      EXPECT_EQ(objects, 0u) << "the catalog entry went while objects remain";
      EXPECT_FALSE(local) << "the catalog entry went before the directory";
    }
    return State::mid_deletion;
  }
  if (!local && !entry && objects == 0) return State::gone;
  // No marker and something left: the kill came before the marker, and
  // the stream must be whole.
  EXPECT_TRUE(local && entry && objects > 0)
      << "no marker, yet part of the stream is gone: directory " << local << ", catalog entry "
      << entry << ", objects " << objects;
  expect_remote_whole(store, cat, victim);
  return State::untouched;
}

TEST(NodeDeleteKill, KilledWhileDeletingFinishesOnTheNextOpenAndTouchesNothingElse) {
  TempDir tmp;
  const std::string dir = tmp.sub("node");
  const uint64_t seed = strata::test::test_seed(std::random_device{}());
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);

  // Streams with data in both tiers; the victims also have objects nothing
  // references (an interrupted upload's leftovers look the same).
  uint64_t bystander_next = 0;
  {
    auto cfg = load_node_config(small_node_doc(), dir, objstore::process_env());
    ASSERT_OK(cfg);
    auto n = Node::open(*cfg);
    ASSERT_OK(n);
    auto b = (*n)->create_stream(kBystander);
    ASSERT_OK(b);
    bystander_next = append_values(**b, 100);
    ASSERT_OK((*n)->flush(kBystander, std::chrono::seconds(60)));
    for (const auto& v : victims()) {
      auto log = (*n)->create_stream(v);
      ASSERT_OK(log);
      append_values(**log, 150);
      ASSERT_OK((*n)->flush(v, std::chrono::seconds(60)));
      append_values(**log, 10);  // local only
      for (int i = 0; i < 60; ++i) {
        ASSERT_OK((*n)->store().put(prefix_of(v) + fmt::format("data/junk{:04}", i), "x"));
      }
      ASSERT_GE(object_count((*n)->store(), v), 80u);
    }
    ASSERT_OK((*n)->close());
  }

  // Each round's child deletes the victims in order (resuming a pending
  // one first) until it is killed at a random instant: in a marker's
  // write, while an uploader stops, between a listing and its removal, in
  // a directory's, a catalog entry's or a marker's removal.
  std::vector<std::string> argv = {NODE_DELETE_CHILD, dir, std::to_string(kPageKeys)};
  for (const auto& v : victims()) argv.push_back(v);
  const int rounds = std::max(4, strata::test::scaled(12));
  int mid_deletion = 0, untouched = 0, gone = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(fmt::format("round {}", round));
    std::string logs = tmp.sub(fmt::format("logs{}", round));
    ASSERT_OK(create_dirs(posix_fs(), logs));
    Process p = Process::spawn(argv, logs);
    ASSERT_TRUE(p.wait_for_output("opened", std::chrono::seconds(30)).has_value())
        << p.stderr_text();
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 150'000));
    p.kill(9);
    auto st = p.wait();
    ASSERT_TRUE(st.has_value());
    EXPECT_TRUE(*st == 128 + 9 || *st == 0) << "exit " << *st << ": " << p.stderr_text();
    const std::string out = p.stdout_text();

    catalog::EmbeddedCatalogOptions co;
    co.read_only = true;
    auto cat = catalog::EmbeddedCatalog::open(posix_fs(), dir + "/catalog", co);
    ASSERT_OK(cat);
    auto store = store_at(dir);
    for (const auto& v : victims()) {
      State s = inspect(dir, **cat, *store, v);
      mid_deletion += s == State::mid_deletion;
      untouched += s == State::untouched;
      gone += s == State::gone;
      if (out.find("deleted " + v + "\n") != std::string::npos ||
          out.find("gone " + v + "\n") != std::string::npos) {
        EXPECT_EQ(s, State::gone) << v << ": the child said it was done";
      }
    }
    expect_remote_whole(*store, **cat, kBystander);
    EXPECT_TRUE(exists(posix_fs(), dir + "/streams/" + kBystander));
  }
  RecordProperty("mid_deletion", mid_deletion);
  RecordProperty("untouched", untouched);
  RecordProperty("gone", gone);

  // The last open finishes whatever is pending; what no kill reached is
  // deleted now.
  auto cfg = load_node_config(small_node_doc(), dir, objstore::process_env());
  ASSERT_OK(cfg);
  auto n = Node::open(*cfg);
  ASSERT_OK(n);
  auto pending = (*n)->pending_deletions();
  for (const auto& name : (*n)->streams()) {
    EXPECT_TRUE(std::find(pending.begin(), pending.end(), name) == pending.end())
        << name << " is being deleted and listed";
  }
  ASSERT_OK((*n)->await_deletions(std::chrono::seconds(120)));
  for (const auto& v : victims()) {
    if ((*n)->stream(v).ok()) ASSERT_OK((*n)->delete_stream(v));
  }
  for (const auto& v : victims()) {
    SCOPED_TRACE(v);
    EXPECT_EQ(object_count((*n)->store(), v), 0u);
    EXPECT_FALSE(exists(posix_fs(), dir + "/streams/" + v));
    EXPECT_EQ((*n)->catalog().get(v).code(), Errc::not_found);
    EXPECT_FALSE(exists(posix_fs(), deletion_marker_path(dir + "/deletions", v)));
  }
  auto names = posix_fs().list_dir(dir + "/streams");
  ASSERT_OK(names);
  for (const auto& nm : *names) EXPECT_FALSE(nm.starts_with(".deleting-")) << nm;
  EXPECT_EQ((*n)->streams(), std::vector<std::string>{kBystander});
  // The bystander: every record, both tiers.
  auto b = (*n)->stream(kBystander);
  ASSERT_OK(b);
  EXPECT_EQ((*b)->committed_next(), bystander_next);
  ASSERT_OK((*n)->flush(kBystander, std::chrono::seconds(60)));
  auto view = read_remote((*n)->store(), (*n)->catalog(), "t", kBystander);
  for (const auto& e : view.errors) ADD_FAILURE() << e;
  ASSERT_EQ(view.records.size(), bystander_next);
  for (const auto& [off, val] : view.records) ASSERT_EQ(val, value_of(off)) << off;
  // The names start over.
  auto fresh = (*n)->create_stream(victims()[0]);
  ASSERT_OK(fresh);
  EXPECT_EQ((*fresh)->committed_next(), 0u);
  ASSERT_OK((*n)->close());
}

}  // namespace
}  // namespace strata::node
