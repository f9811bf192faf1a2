// `strata gc` over the etcd catalog beside serving nodes: gc reads the
// catalog from etcd (as scrub does) and runs with no grace at all while the
// owner keeps uploading and persisting. Planted orphans — an old fragment
// key of the live stream and a root of a stream no catalog entry names —
// are deleted; nothing a manifest references is: afterwards `strata scrub
// --full` finds the manifest intact and every confirmed message reads back
// exactly once. Real processes on 127.0.0.1 (support/serve_cluster.h).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/fs.h"
#include "objstore/fs_store.h"
#include "support/cli.h"
#include "support/numbered_stream.h"
#include "support/serve_cluster.h"
#include "support/temp_dir.h"
#include "tier/object_keys.h"

namespace strata::test {
namespace {

using namespace proto;

constexpr uint8_t kSub = 5;

TEST(ClusterGcTest, GcOverEtcdBesideAnUploadingOwnerDeletesOnlyOrphans) {
  TempDir dir;
  std::string err;
  auto cluster = ServeCluster::start(dir.path(), {.nodes = 2, .lease_ttl_ms = 2000}, &err);
  ASSERT_NE(cluster, nullptr) << err;
  const std::string stream = "gc-live";
  ASSERT_TRUE(cluster->create_stream(0, stream).ok());
  const int leader = cluster->await_agreed_leader(stream, 20s);
  ASSERT_GE(leader, 0);

  // Orphans, planted straight into the bucket the nodes share.
  auto store = objstore::FsObjectStore::open(posix_fs(), cluster->dir() + "/bucket", false);
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  // The nodes' key prefix: the default of node/node_config.h.
  auto live = tier::ObjectKeys::make("strata", stream);
  auto ghost = tier::ObjectKeys::make("strata", "gc-ghost");
  ASSERT_TRUE(live.ok() && ghost.ok());
  const std::vector<std::string> orphans = {live->fragment(900'000'000, 1, 0xdead0001),
                                            ghost->root(1, 0xdead0002)};
  for (const auto& k : orphans) {
    ASSERT_TRUE((*store)->put(k, BytesView("orphan")).ok()) << k;
  }

  // A publisher goes on (confirm = remote: each confirm is a persist) while
  // gc runs again and again with no grace.
  std::set<uint64_t> confirmed;
  uint64_t next = 1;
  ASSERT_TRUE(publish_on_leader(*cluster, 0, stream, &next, 200, &confirmed));
  std::atomic<bool> stop{false};
  std::atomic<bool> publish_failed{false};
  std::thread publisher([&] {
    while (!stop && !publish_failed) {
      if (!publish_on_leader(*cluster, 0, stream, &next, 50, &confirmed)) publish_failed = true;
    }
  });
  const std::string cfg = cluster->offline_config("gc.json");
  for (int run = 0; run < 6; ++run) {
    auto r = strata_cli({"gc", "--config", cfg, "--data-dir", dir.sub("gc-data"), "--grace", "0s"});
    EXPECT_EQ(r.status, 0) << r.out << r.err;
  }
  stop = true;
  publisher.join();
  EXPECT_FALSE(publish_failed) << "publishing failed beside gc";

  for (const auto& k : orphans) {
    EXPECT_EQ((*store)->head(k).retry(), objstore::RetryClass::not_found) << k << " survived gc";
  }
  auto scrub = strata_cli({"scrub", "--config", cfg, "--data-dir", dir.sub("scrub-data"),
                           "--stream", stream, "--full"});
  EXPECT_EQ(scrub.status, 0) << scrub.out << scrub.err;
  StreamClient c = subscribe_numbered(*cluster, leader, stream, {OffsetType::first, 0}, kSub);
  Received got;
  read_numbered_until(c, kSub, &got, 60s, [&](const Received& g) { return has_all(g, confirmed); });
  expect_exactly_once(got, confirmed);
  EXPECT_GT(confirmed.size(), 200u);
}

}  // namespace
}  // namespace strata::test
