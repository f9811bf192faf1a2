// S3 over TLS with a private CA: s3rver behind haproxy terminating TLS with
// a certificate of a CA the `openssl` program makes here.
//   strata -> haproxy (https, 127.0.0.1) -> s3rver
// objstore.s3.ca_file verifies the endpoint against that CA; without it the
// system's CAs refuse the certificate (a fatal error naming it); tls_verify false accepts it
// unverified.
#include <gtest/gtest.h>

#include "backends.h"
#include "objstore/config.h"
#include "support/fault_proxy.h"
#include "support/test_certs.h"

namespace strata::objstore {
namespace {

const char* kHaproxyTls = R"(
global
  nbthread 1
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:@PORT@ ssl crt @DIR@/server-combined.pem
  default_backend s3
backend s3
  server s1 127.0.0.1:@S3PORT@
)";

class S3Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(test::have_program("openssl")) << "the openssl program is needed";
    std::string err;
    server_ = test::S3rver::start({dir_.path(), {testing::kBucket}}, &err);
    ASSERT_TRUE(server_) << err;
    ASSERT_TRUE(test::make_test_certs(dir_.path(), "client", &certs_, &err)) << err;
    std::string cfg = kHaproxyTls;
    cfg.replace(cfg.find("@S3PORT@"), 8, std::to_string(server_->port()));
    haproxy_ = test::Haproxy::start(dir_.path(), cfg, &err);
    ASSERT_TRUE(haproxy_) << err;
  }
  S3Config https_config() {
    S3Config c = testing::local_s3_config("https://127.0.0.1:" + std::to_string(haproxy_->port()));
    c.request_timeout_ms = 5000;
    return c;
  }
  std::unique_ptr<ObjectStore> open(const S3Config& c) {
    auto s = S3ObjectStore::open(c, 64 << 20);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  test::TempDir dir_;
  test::TestCerts certs_;
  std::unique_ptr<test::S3rver> server_;
  std::unique_ptr<test::Haproxy> haproxy_;
};

TEST_F(S3Tls, APrivateCaVerifiesTheEndpoint) {
  S3Config c = https_config();
  c.ca_file = certs_.ca;
  auto store = open(c);
  ASSERT_TRUE(store);
  const std::string body(200000, 't');
  ASSERT_TRUE(store->put("tls/obj", body).ok());
  auto got = store->get("tls/obj");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, body);
  ListRequest lr;
  lr.prefix = "tls/";
  auto page = store->list(lr);
  ASSERT_TRUE(page.ok()) << page.error().message;
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_TRUE(store->remove("tls/obj").ok());
}

TEST_F(S3Tls, WithoutTheCaTheCertificateIsRefusedUnlessVerificationIsOff) {
  auto store = open(https_config());
  ASSERT_TRUE(store);
  auto put = store->put("tls/refused", "x");
  ASSERT_FALSE(put.ok());
  // A rejected certificate is fatal: retrying unchanged cannot succeed.
  EXPECT_EQ(put.retry(), RetryClass::fatal) << put.error().message;
  EXPECT_NE(put.error().message.find("certificate"), std::string::npos) << put.error().message;
  S3Config off = https_config();
  off.tls_verify = false;
  auto unverified = open(off);
  ASSERT_TRUE(unverified);
  EXPECT_TRUE(unverified->put("tls/unverified", "x").ok());
}

TEST_F(S3Tls, AnUnreadableCaFileIsAConfigurationError) {
  nlohmann::json doc = {{"objstore",
                         {{"backend", "s3"},
                          {"s3",
                           {{"endpoint", "https://127.0.0.1:1"},
                            {"bucket", "b-ok"},
                            {"access_key_id", "a"},
                            {"secret_access_key", "s"},
                            {"ca_file", dir_.sub("nope.pem")}}}}}};
  auto r = load_config(doc, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("objstore.s3.ca_file"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("nope.pem"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace strata::objstore
