// Consumer offsets of a cluster in etcd (server/cluster_offsets.h), two
// nodes' stores over one real etcd: stores coalesce into fewer writes and
// the latest wins; another node reads what one wrote; a store for a stream
// that does not exist is dropped; removing the stream from the catalog
// removes its offsets (a stream created again starts with none); a value
// that is not an offset is corrupt, naming its key.
#include "server/cluster_offsets.h"

#include <gtest/gtest.h>

#include "catalog/etcd_catalog.h"
#include "support/assertions.h"
#include "support/etcd_cluster.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

using namespace std::chrono_literals;

class ClusterOffsetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    etcd_ = test::EtcdCluster::start(dir_.path(), 1, &err);
    ASSERT_NE(etcd_, nullptr) << err;
    etcd::ClientOptions o;
    o.endpoints = etcd_->endpoints();
    auto c = etcd::EtcdClient::open(o);
    ASSERT_OK(c);
    client_ = std::shared_ptr<etcd::EtcdClient>(std::move(c).value());
    auto cat = catalog::EtcdCatalog::open(client_, {"co"});
    ASSERT_OK(cat);
    catalog_ = std::move(cat).value();
    a_ = ClusterOffsets::start(client_, {"co", 50ms});
    b_ = ClusterOffsets::start(client_, {"co", 50ms});
  }

  test::TempDir dir_;
  std::unique_ptr<test::EtcdCluster> etcd_;
  std::shared_ptr<etcd::EtcdClient> client_;
  std::unique_ptr<catalog::EtcdCatalog> catalog_;
  std::unique_ptr<ClusterOffsets> a_, b_;
};

TEST_F(ClusterOffsetsTest, TheLatestStoreWinsAndEveryNodeReadsIt) {
  ASSERT_OK(catalog_->create("s", 1));
  auto none = b_->query("s", "app");
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  const uint64_t n = 2000;
  for (uint64_t o = 1; o <= n; ++o) ASSERT_OK(a_->store("s", "app", o));
  // Not written yet or written: a itself answers the latest at once.
  EXPECT_EQ(a_->query("s", "app").value(), std::optional<uint64_t>(n));
  ASSERT_OK(a_->flush(10s));
  EXPECT_EQ(b_->query("s", "app").value(), std::optional<uint64_t>(n));
  auto st = a_->stats();
  EXPECT_EQ(st.stores, n);
  EXPECT_GE(st.writes, 1u);
  EXPECT_LT(st.writes, n) << "stores did not coalesce";
  EXPECT_EQ(client_->range("co/offsets/s/app")->kvs.at(0).value, std::to_string(n));
  // References are independent; a later store on b wins over a's.
  ASSERT_OK(b_->store("s", "app", n + 5));
  ASSERT_OK(b_->store("s", "other/ref", 3));
  ASSERT_OK(b_->flush(10s));
  EXPECT_EQ(a_->query("s", "app").value(), std::optional<uint64_t>(n + 5));
  EXPECT_EQ(a_->query("s", "other/ref").value(), std::optional<uint64_t>(3));
}

// A write applies only over the key's revision as last seen: a late
// attempt (what a put retried across an etcd leader election can be) does
// not overwrite a newer value, and a key another node wrote meanwhile is
// written again over its new revision — the latest store wins.
TEST_F(ClusterOffsetsTest, WritesCompareTheRevisionLastSeen) {
  ASSERT_OK(catalog_->create("s", 1));
  ASSERT_OK(a_->store("s", "app", 100));
  ASSERT_OK(a_->flush(10s));
  // Node b writes the key: a's revision is stale now.
  ASSERT_OK(b_->store("s", "app", 500));
  ASSERT_OK(b_->flush(10s));
  ASSERT_OK(a_->store("s", "app", 200));
  ASSERT_OK(a_->flush(10s));
  EXPECT_EQ(b_->query("s", "app").value(), std::optional<uint64_t>(200));
  EXPECT_EQ(a_->stats().conflicts, 1u);
  // A late attempt of a's first write — the same txn: the key did not
  // exist then (mod_revision 0) — changes nothing.
  etcd::TxnRequest late;
  late.compare.push_back(etcd::Compare::revision(
      "co/offsets/s/app", etcd::CompareTarget::mod_revision, etcd::CompareOp::equal, 0));
  late.success.push_back(etcd::PutOp{"co/offsets/s/app", "100", 0});
  auto r = client_->txn(late);
  ASSERT_OK(r);
  EXPECT_FALSE(r->succeeded);
  EXPECT_EQ(b_->query("s", "app").value(), std::optional<uint64_t>(200));
}

TEST_F(ClusterOffsetsTest, OffsetsGoWithTheStreamAndNeverOutliveIt) {
  // No stream: the write's existence compare fails, the value is dropped.
  ASSERT_OK(a_->store("ghost", "app", 9));
  ASSERT_OK(a_->flush(10s));
  EXPECT_EQ(a_->stats().dropped, 1u);
  EXPECT_FALSE(b_->query("ghost", "app").value().has_value());
  EXPECT_TRUE(
      client_->range("co/offsets/ghost/", etcd::prefix_end("co/offsets/ghost/"))->kvs.empty());

  auto e = catalog_->create("s", 1);
  ASSERT_OK(e);
  // A neighbour whose name extends "s" keeps its offsets.
  ASSERT_OK(catalog_->create("s.x", 1));
  ASSERT_OK(a_->store("s", "app", 40));
  ASSERT_OK(a_->store("s", "bpp", 41));
  ASSERT_OK(a_->store("s.x", "app", 42));
  ASSERT_OK(a_->flush(10s));
  ASSERT_OK(catalog_->remove("s", e->revision));
  a_->stream_removed("s");
  EXPECT_FALSE(b_->query("s", "app").value().has_value());
  EXPECT_FALSE(a_->query("s", "bpp").value().has_value());
  EXPECT_EQ(b_->query("s.x", "app").value(), std::optional<uint64_t>(42));
  // Created again: no offsets inherited.
  ASSERT_OK(catalog_->create("s", 1));
  EXPECT_FALSE(b_->query("s", "app").value().has_value());
}

// A '/' in a stream name does not make its offsets another stream's: the
// stream is one key segment (its component, "a%2Fb"), so stream "a" with
// reference "b/c" and stream "a/b" with reference "c" are two keys, and
// removing stream "a" leaves the offsets of "a/b" alone.
TEST_F(ClusterOffsetsTest, NamesWithASlashKeepTheirOffsetsApart) {
  auto a = catalog_->create("a", 1);
  ASSERT_OK(a);
  ASSERT_OK(catalog_->create("a/b", 1));
  ASSERT_OK(a_->store("a", "b/c", 1));
  ASSERT_OK(a_->store("a/b", "c", 2));
  ASSERT_OK(a_->flush(10s));
  EXPECT_EQ(b_->query("a", "b/c").value(), std::optional<uint64_t>(1));
  EXPECT_EQ(b_->query("a/b", "c").value(), std::optional<uint64_t>(2));
  EXPECT_EQ(client_->range("co/offsets/a%2Fb/c")->kvs.at(0).value, "2");
  ASSERT_OK(catalog_->remove("a", a->revision));
  a_->stream_removed("a");
  b_->stream_removed("a");
  EXPECT_FALSE(b_->query("a", "b/c").value().has_value());
  EXPECT_EQ(b_->query("a/b", "c").value(), std::optional<uint64_t>(2));
}

TEST_F(ClusterOffsetsTest, BadInputIsRefusedOrReportedNamingTheKey) {
  EXPECT_EQ(a_->store("s", "", 1).code(), Errc::invalid_argument);
  EXPECT_EQ(a_->store("s", std::string(256, 'r'), 1).code(), Errc::invalid_argument);
  EXPECT_EQ(a_->store("amq.name", "app", 1).code(), Errc::invalid_argument);
  ASSERT_OK(client_->put("co/offsets/s/app", "12x"));
  auto q = a_->query("s", "app");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.code(), Errc::corrupt);
  EXPECT_NE(q.error().message.find("co/offsets/s/app"), std::string::npos) << q.error().message;
  // After close nothing more is taken.
  a_->close();
  EXPECT_EQ(a_->store("s", "app", 1).code(), Errc::closed);
}

}  // namespace
}  // namespace strata::server
