// etcd's own authentication (`etcdctl auth enable`) against a real member
// whose tokens expire after 1 s idle: the client authenticates as the
// configured user, sends the token with calls and watches, authenticates
// again when a member says the token is invalid, and names etcd's refusal
// when the user or password is wrong or the role does not cover a key.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "etcd/etcd_client.h"
#include "support/etcd_cluster.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::etcd {
namespace {

using namespace std::chrono_literals;

class EtcdAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    cluster_ = test::EtcdCluster::start(dir_.path(), 1, &err, std::nullopt,
                                        {"--auth-token", "simple", "--auth-token-ttl", "1"});
    ASSERT_TRUE(cluster_) << err;
    const std::string ep = cluster_->endpoint(0);
    // root, auth on, and a user whose role reads and writes auth/ only.
    for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
             {"user", "add", "root:rootpw"},
             {"user", "grant-role", "root", "root"},
             {"auth", "enable"},
             {"--user", "root:rootpw", "role", "add", "strata"},
             {"--user", "root:rootpw", "role", "grant-permission", "strata", "--prefix=true",
              "readwrite", "auth/"},
             {"--user", "root:rootpw", "user", "add", "strata:s3cret"},
             {"--user", "root:rootpw", "user", "grant-role", "strata", "strata"}}) {
      args.insert(args.begin(), {"etcdctl", "--endpoints", ep});
      auto r = test::run(args, {"ETCDCTL_API=3"});
      ASSERT_EQ(r.status, 0) << args[3] << ": " << r.output;
    }
  }
  std::unique_ptr<EtcdClient> client(const std::string& user, const std::string& password) {
    ClientOptions o;
    o.endpoints = cluster_->endpoints();
    o.request_timeout = 3000ms;
    o.user = user;
    o.password = password;
    auto c = EtcdClient::open(o);
    EXPECT_TRUE(c.ok()) << c.error().message;
    return c.ok() ? std::move(c).value() : nullptr;
  }
  test::TempDir dir_;
  std::unique_ptr<test::EtcdCluster> cluster_;
};

TEST_F(EtcdAuthTest, CallsAndWatchesCarryTheTokenAndOutliveItsExpiry) {
  auto c = client("strata", "s3cret");
  ASSERT_TRUE(c);
  std::atomic<int> seen{0};
  std::atomic<bool> failed{false};
  auto w = c->watch(
      {"auth/", prefix_end("auth/"), 0},
      [&](const std::vector<WatchEvent>& evs) { seen += int(evs.size()); },
      [&](const Error& e) {
        ADD_FAILURE() << e.message;
        failed = true;
      });
  ASSERT_TRUE(c->put("auth/a", "1").ok());
  TxnRequest t;
  t.compare.push_back(
      Compare::revision("auth/b", CompareTarget::create_revision, CompareOp::equal, 0));
  t.success.push_back(PutOp{"auth/b", "2", 0});
  auto tr = c->txn(t);
  ASSERT_TRUE(tr.ok()) << tr.error().message;
  EXPECT_TRUE(tr->succeeded);
  // Idle past the token's TTL: the next call authenticates again.
  std::this_thread::sleep_for(2500ms);
  auto r = c->range("auth/a");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->kvs.size(), 1u);
  EXPECT_EQ(r->kvs[0].value, "1");
  auto lease = c->lease_grant(10);
  ASSERT_TRUE(lease.ok()) << lease.error().message;
  // A keepalive after the token expired (its refusal comes in a streamed
  // reply's body) renews too.
  std::this_thread::sleep_for(2500ms);
  auto kept = c->lease_keepalive(lease->id);
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_GT(*kept, 0);
  for (int i = 0; i < 100 && seen.load() < 3; ++i) {
    ASSERT_TRUE(c->put("auth/c", std::to_string(i)).ok());
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_GE(seen.load(), 3) << "the watch saw too little";
  EXPECT_FALSE(failed.load());
}

TEST_F(EtcdAuthTest, RefusalsNameTheUserAndEtcdsReason) {
  auto none = client("", "");
  ASSERT_TRUE(none);
  auto r = none->range("auth/a");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("user name is empty"), std::string::npos) << r.error().message;

  auto wrong = client("strata", "nope");
  ASSERT_TRUE(wrong);
  r = wrong->range("auth/a");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("etcd authentication as user 'strata'"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("invalid user ID or password"), std::string::npos)
      << r.error().message;

  auto ok = client("strata", "s3cret");
  ASSERT_TRUE(ok);
  auto outside = ok->put("other/x", "1");
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("permission denied"), std::string::npos)
      << outside.error().message;
}

}  // namespace
}  // namespace strata::etcd
