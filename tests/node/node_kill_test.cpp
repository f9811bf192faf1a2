// kill -9 of a node during uploads and persists, at random instants, many
// rounds. After every kill the bucket must agree with the persisted
// manifest (every referenced object present, its size and CRCs right, no
// gap, no overlap; unreferenced objects are allowed: an upload or a persist
// the kill cut short), and the persisted range must never shrink. At the
// end, a node reopened on the same directory uploads everything that was
// ever acknowledged: every record exactly once, byte for byte.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <thread>

#include "catalog/embedded_catalog.h"
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

struct ChildLog {
  uint64_t acked = 0;
  uint64_t persisted = 0;
  bool started = false;
};

// Complete lines only: the kill may cut the last one short.
ChildLog parse(const std::string& out) {
  ChildLog c;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline: cut by the kill
    uint64_t v = 0;
    if (line == "started") c.started = true;
    if (std::sscanf(line.c_str(), "ack %lu", &v) == 1) c.acked = std::max(c.acked, v);
    if (std::sscanf(line.c_str(), "persisted %lu", &v) == 1) c.persisted = std::max(c.persisted, v);
  }
  return c;
}

std::shared_ptr<objstore::ObjectStore> store_at(const std::string& dir) {
  objstore::ObjectStoreConfig c;
  c.fs.root = dir + "/objects";
  return std::shared_ptr<objstore::ObjectStore>(std::move(objstore::open_object_store(c)).value());
}

TEST(NodeKill, KilledDuringUploadsAndPersistsLosesNothingPersistedOrAcknowledged) {
  TempDir tmp;
  std::string dir = tmp.sub("node");
  uint64_t seed = strata::test::test_seed(std::random_device{}());
  std::mt19937_64 rng(seed);
  int rounds = strata::test::scaled(12);
  if (rounds < 2) rounds = 2;
  uint64_t max_acked = 0, max_persisted = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(fmt::format("seed {} round {}", seed, round));
    std::string logs = tmp.sub(fmt::format("logs{}", round));
    ASSERT_OK(create_dirs(posix_fs(), logs));
    Process p = Process::spawn({NODE_CHILD, dir, "s1"}, logs);
    ASSERT_TRUE(p.wait_for_output("started", std::chrono::seconds(30)).has_value())
        << p.stderr_text();
    // A random instant within the first 0.6 s of uploading: with 8 KiB
    // fragments and persists every fragment, kills land in transfers, in
    // root PUTs, between the root PUT and the catalog CAS, and in deletes.
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 600));
    p.kill(9);
    p.wait();
    ChildLog c = parse(p.stdout_text());
    ASSERT_TRUE(c.started);
    EXPECT_GE(c.acked, max_acked) << "acknowledged records vanished from the local log";
    max_acked = std::max(max_acked, c.acked);
    max_persisted = std::max(max_persisted, c.persisted);

    // The bucket against the persisted manifest, read with a read-only
    // catalog (the dead child's lock died with it).
    catalog::EmbeddedCatalogOptions co;
    co.read_only = true;
    auto cat = catalog::EmbeddedCatalog::open(posix_fs(), dir + "/catalog", co);
    ASSERT_OK(cat);
    auto store = store_at(dir);
    auto view = read_remote(*store, **cat, "t", "s1");
    for (const auto& e : view.errors) ADD_FAILURE() << e;
    EXPECT_GE(view.audit.manifest.next_offset, max_persisted) << "the persisted range shrank";
    for (const auto& [off, val] : view.records) ASSERT_EQ(val, value_of(off)) << off;
  }
  // Reopen: everything acknowledged reaches the remote tier, once.
  auto cfg = load_node_config(small_node_doc(), dir, objstore::process_env());
  ASSERT_OK(cfg);
  auto n = Node::open(*cfg);
  ASSERT_OK(n);
  ASSERT_OK((*n)->flush("s1", std::chrono::seconds(60)));
  auto view = read_remote((*n)->store(), (*n)->catalog(), "t", "s1");
  for (const auto& e : view.errors) ADD_FAILURE() << e;
  ASSERT_GE(view.records.size(), max_acked);
  for (uint64_t i = 0; i < view.records.size(); ++i) {
    auto it = view.records.find(i);
    ASSERT_NE(it, view.records.end()) << "offset " << i << " missing (seed " << seed << ")";
    ASSERT_EQ(it->second, value_of(i)) << i;
  }
  RecordProperty("rounds", rounds);
  RecordProperty("acked", std::to_string(max_acked));
}

}  // namespace
}  // namespace strata::node
