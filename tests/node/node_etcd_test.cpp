// A node whose catalog is the etcd backend ("catalog": {"backend": "etcd"}):
// streams persist their roots to a real 3-member etcd cluster, a restarted
// node finds them there, and an unreachable cluster fails the open naming
// the endpoints. The config's etcd settings are checked in
// node_config_test.cpp.
#include <gtest/gtest.h>

#include "catalog/etcd_catalog.h"
#include "node/node_test_util.h"
#include "support/assertions.h"
#include "support/etcd_cluster.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

using namespace std::chrono_literals;

nlohmann::json etcd_doc(const std::vector<std::string>& endpoints) {
  auto doc = test::small_node_doc();
  doc["catalog"] = {{"backend", "etcd"},
                    {"endpoints", endpoints},
                    {"namespace", "nodetest"},
                    {"request_timeout_ms", 3000}};
  return doc;
}

TEST(NodeEtcd, StreamsPersistTheirRootsToEtcdAndARestartedNodeFindsThem) {
  strata::test::TempDir dir;
  std::string err;
  auto cluster = strata::test::EtcdCluster::start(dir.path(), 3, &err);
  ASSERT_NE(cluster, nullptr) << err;
  const auto doc = etcd_doc(cluster->endpoints());
  std::string root;
  {
    auto node = test::open_node(dir.sub("node"), doc);
    ASSERT_NE(node, nullptr);
    EXPECT_NE(node->catalog().describe().find("etcd:"), std::string::npos);
    auto log = node->create_stream("orders");
    ASSERT_OK(log);
    test::append_values(**log, 20);
    ASSERT_OK(node->flush("orders", 20s));
    auto e = node->catalog().get("orders");
    ASSERT_OK(e);
    EXPECT_FALSE(e->root_key.empty());
    root = e->root_key;
    ASSERT_OK(node->close());
  }
  // Another client of the cluster sees the same entry.
  etcd::ClientOptions o;
  o.endpoints = cluster->endpoints();
  auto client = etcd::EtcdClient::open(o);
  ASSERT_OK(client);
  auto other = catalog::EtcdCatalog::open(std::shared_ptr<etcd::EtcdClient>(std::move(*client)),
                                          {"nodetest"});
  ASSERT_OK(other);
  EXPECT_EQ((*other)->get("orders")->root_key, root);
  auto node = test::open_node(dir.sub("node"), doc);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->streams(), std::vector<std::string>{"orders"});
  ASSERT_OK(node->close());
}

// The disk is lost, the etcd catalog and the bucket are not: a node on an
// empty data directory serves every stream the catalog names, without a
// client creating it again — with the settings it was created with
// (kept beside its entry), its data from the bucket, and its publishers'
// sequences (deduplication goes on).
TEST(NodeEtcd, ANodeOnAnEmptyDiskServesEveryStreamTheCatalogNames) {
  strata::test::TempDir dir;
  std::string err;
  auto cluster = strata::test::EtcdCluster::start(dir.path(), 3, &err);
  ASSERT_NE(cluster, nullptr) << err;
  auto doc = etcd_doc(cluster->endpoints());
  // The bucket is on another disk than the one lost.
  doc["objstore"] = {{"fs", {{"root", dir.sub("bucket")}}}};
  StreamSettings settings;
  settings.max_age_ms = 7 * 86'400'000;
  settings.confirm = ConfirmMode::remote;
  uint64_t next = 0;
  {
    auto node = test::open_node(dir.sub("disk1"), doc);
    ASSERT_NE(node, nullptr);
    auto log = node->create_stream("kept", settings);
    ASSERT_OK(log);
    next = test::append_values(**log, 20);
    log::EntryBatch b;
    const std::string entry = std::string("\0\0\0\5hello", 9);
    b.entries = entry;
    b.num_entries = 1;
    b.num_records = 1;
    b.writer_ref = "app-1";
    b.writer_seq = 41;
    ASSERT_OK((*log)->append_entries(b));
    next += 1;
    ASSERT_OK(node->create_stream("plain"));
    ASSERT_OK(node->flush("kept", 20s));
    ASSERT_OK(node->close());
  }
  auto node = test::open_node(dir.sub("disk2"), doc);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->streams(), (std::vector<std::string>{"kept", "plain"}));
  auto s = node->stream_settings("kept");
  ASSERT_OK(s);
  EXPECT_EQ(*s, settings);
  EXPECT_EQ(node->effective_settings("kept")->confirm, ConfirmMode::remote);
  auto log = node->stream("kept");
  ASSERT_OK(log);
  EXPECT_EQ((*log)->committed_next(), next);
  EXPECT_EQ((*log)->writer_sequence("app-1"), 41u);
  // Every record, from the bucket.
  auto reader = node->open_reader("kept", log::OffsetSpec::first());
  ASSERT_OK(reader);
  uint64_t read = 0;
  while (read < next) {
    std::vector<log::Record> recs;
    auto n = (*reader)->next_records(&recs);
    ASSERT_OK(n);
    ASSERT_GT(*n, 0u);
    for (const auto& r : recs) {
      if (r.offset < next - 1) {
        EXPECT_EQ(r.value, test::value_of(r.offset));
      }
    }
    read += *n;
  }
  ASSERT_OK(node->close());
}

TEST(NodeEtcd, AnUnreachableClusterFailsTheOpenNamingTheEndpoints) {
  strata::test::TempDir dir;
  const std::string dead = "http://127.0.0.1:" + std::to_string(strata::test::free_port());
  auto doc = etcd_doc({dead});
  doc["catalog"]["request_timeout_ms"] = 300;
  auto cfg = load_node_config(doc, dir.sub("node"), objstore::process_env());
  ASSERT_OK(cfg);
  auto n = Node::open(*cfg);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("opening the etcd catalog"), std::string::npos)
      << n.error().message;
  EXPECT_NE(n.error().message.find(dead), std::string::npos) << n.error().message;
}

}  // namespace
}  // namespace strata::node
