// TLS contexts (server/tls_context.h) from certificates the `openssl`
// program makes: what loads, and errors that name the setting, the file and
// OpenSSL's reason; a reload that fails keeps the context in force.
#include "server/tls_context.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <fstream>

#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

class TlsContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(test::have_program("openssl"))
        << "the openssl program is needed (scripts/setup.sh)";
    make_pair("a");
    make_pair("b");
  }
  // A self-signed certificate and its key: <name>.pem, <name>.key.
  void make_pair(const std::string& name) {
    auto r = test::run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=" + name, "-keyout", dir_.sub(name + ".key"), "-out",
                        dir_.sub(name + ".pem")});
    ASSERT_EQ(r.status, 0) << r.output;
  }
  TlsSettings settings(const std::string& cert, const std::string& key) {
    TlsSettings s;
    s.listen = "127.0.0.1:0";
    s.cert_file = dir_.sub(cert);
    s.key_file = dir_.sub(key);
    return s;
  }
  test::TempDir dir_;
};

TEST_F(TlsContextTest, LoadsAndRefusesWithReasons) {
  auto ok = make_tls_context(settings("a.pem", "a.key"));
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  // TLS 1.2 and 1.3 only, whatever OpenSSL's defaults.
  EXPECT_EQ(SSL_CTX_get_min_proto_version((*ok)->native_handle()), TLS1_2_VERSION);
  EXPECT_EQ(SSL_CTX_get_max_proto_version((*ok)->native_handle()), TLS1_3_VERSION);
  TlsSettings only13 = settings("a.pem", "a.key");
  only13.versions = {"tlsv1.3"};
  auto t13 = make_tls_context(only13);
  ASSERT_TRUE(t13.ok()) << t13.error().message;
  EXPECT_EQ(SSL_CTX_get_min_proto_version((*t13)->native_handle()), TLS1_3_VERSION);

  struct Case {
    TlsSettings s;
    std::vector<std::string> needles;
  };
  std::ofstream(dir_.sub("junk.pem")) << "not a certificate\n";
  TlsSettings ciphers = settings("a.pem", "a.key");
  ciphers.ciphers = "NO-SUCH-CIPHER";
  TlsSettings suites = settings("a.pem", "a.key");
  suites.ciphersuites = "TLS_NO_SUCH_SUITE";
  TlsSettings ca = settings("a.pem", "a.key");
  ca.ca_file = dir_.sub("missing-ca.pem");
  std::vector<Case> cases = {
      {settings("missing.pem", "a.key"), {"tls.cert_file", "missing.pem", "cannot load"}},
      {settings("junk.pem", "a.key"), {"tls.cert_file", "junk.pem"}},
      {settings("a.pem", "missing.key"), {"tls.key_file", "missing.key"}},
      {settings("a.pem", "b.key"), {"tls.key_file", "b.key", "does not match", "a.pem"}},
      {ciphers, {"tls.ciphers", "NO-SUCH-CIPHER"}},
      {suites, {"tls.ciphersuites", "TLS_NO_SUCH_SUITE"}},
      {ca, {"tls.ca_file", "missing-ca.pem"}},
  };
  for (const auto& c : cases) {
    auto r = make_tls_context(c.s);
    ASSERT_FALSE(r.ok()) << c.needles[0];
    for (const auto& n : c.needles) {
      EXPECT_NE(r.error().message.find(n), std::string::npos) << r.error().message;
    }
  }
}

TEST_F(TlsContextTest, AFailedReloadKeepsTheContextInForce) {
  auto t = TlsContexts::make(settings("a.pem", "a.key"));
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto first = (*t)->current();
  auto bad = (*t)->reload(settings("a.pem", "b.key"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ((*t)->current().context, first.context);
  EXPECT_EQ((*t)->reloads(), 0u);
  ASSERT_TRUE((*t)->reload(settings("b.pem", "b.key")).ok());
  EXPECT_NE((*t)->current().context, first.context);
  EXPECT_EQ((*t)->current().settings->cert_file, dir_.sub("b.pem"));
  EXPECT_EQ((*t)->reloads(), 1u);
  // A connection holding the old context keeps a usable one.
  EXPECT_NE(SSL_CTX_get0_certificate(first.context->native_handle()), nullptr);
}

}  // namespace
}  // namespace strata::server
