// etcd over TLS with client certificates: a real etcd member serving
// https with a certificate of a CA the `openssl` program makes here, and
// --client-cert-auth. The client's calls and its watch carry the CA and the
// client certificate (ClientOptions::tls); without either they fail with
// an error that says so.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "etcd/etcd_client.h"
#include "support/etcd_cluster.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

namespace strata::etcd {
namespace {

class EtcdTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    ASSERT_TRUE(test::make_test_certs(dir_.path(), "strata-node", &certs_, &err)) << err;
    cluster_ = test::EtcdCluster::start(
        dir_.path(), 1, &err, test::EtcdTls{certs_.server_cert, certs_.server_key, certs_.ca});
    ASSERT_TRUE(cluster_) << err;
  }
  ClientOptions options(TlsFiles tls) {
    ClientOptions o;
    o.endpoints = cluster_->endpoints();
    o.request_timeout = std::chrono::milliseconds(3000);
    o.tls = std::move(tls);
    return o;
  }
  test::TempDir dir_;
  test::TestCerts certs_;
  std::unique_ptr<test::EtcdCluster> cluster_;
};

TEST_F(EtcdTlsTest, CallsAndWatchesCarryTheCaAndTheClientCertificate) {
  ASSERT_EQ(cluster_->endpoint(0).rfind("https://", 0), 0u);
  auto c = EtcdClient::open(options({certs_.ca, certs_.client_cert, certs_.client_key}));
  ASSERT_TRUE(c.ok()) << c.error().message;
  std::atomic<int> seen{0};
  auto w = (*c)->watch(
      {"tls/", prefix_end("tls/"), 0},
      [&](const std::vector<WatchEvent>& evs) { seen += int(evs.size()); }, [](const Error&) {});
  ASSERT_TRUE((*c)->put("tls/a", "1").ok());
  auto r = (*c)->range("tls/a");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->kvs.size(), 1u);
  EXPECT_EQ(r->kvs[0].value, "1");
  for (int i = 0; i < 100 && seen.load() == 0; ++i) {
    ASSERT_TRUE((*c)->put("tls/b", std::to_string(i)).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GT(seen.load(), 0) << "the watch over TLS saw nothing";
}

TEST_F(EtcdTlsTest, WithoutTheClientCertificateOrTheCaCallsFail) {
  auto no_cert = EtcdClient::open(options({certs_.ca, "", ""}));
  ASSERT_TRUE(no_cert.ok());
  auto r = (*no_cert)->range("tls/a");
  ASSERT_FALSE(r.ok()) << "a client without a certificate was served";
  EXPECT_NE(r.error().message.find(cluster_->endpoint(0)), std::string::npos) << r.error().message;
  auto no_ca = EtcdClient::open(options({"", certs_.client_cert, certs_.client_key}));
  ASSERT_TRUE(no_ca.ok());
  auto r2 = (*no_ca)->range("tls/a");
  ASSERT_FALSE(r2.ok()) << "a member's certificate of an unknown CA was trusted";
  EXPECT_NE(r2.error().message.find("certificate"), std::string::npos) << r2.error().message;
}

}  // namespace
}  // namespace strata::etcd
