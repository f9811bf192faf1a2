#include "support/test_certs.h"

#include <cstdlib>
#include <fstream>
#include <vector>

#include "support/process.h"

namespace strata::test {
namespace {

bool openssl(std::vector<std::string> args, std::string* error) {
  args.insert(args.begin(), "openssl");
  auto r = run(args);
  if (r.status == 0) return true;
  *error = "openssl " + args[1] + " failed: " + r.output;
  return false;
}

// `openssl req` arguments for a new key: RSA-2048, or with
// STRATA_TEST_CERT_EC set a P-256 key, which takes milliseconds where an
// RSA key takes seconds (tests/vm/ktls_vm_test.sh runs tests on an
// emulated CPU).
std::vector<std::string> new_key_args() {
  if (std::getenv("STRATA_TEST_CERT_EC") != nullptr) {
    return {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"};
  }
  return {"-newkey", "rsa:2048"};
}

// `openssl req` with a new key.
bool openssl_req(std::vector<std::string> args, std::string* error) {
  const std::vector<std::string> key = new_key_args();
  args.insert(args.begin(), key.begin(), key.end());
  args.insert(args.begin(), "req");
  return openssl(std::move(args), error);
}

// A new key and a signing request for `subject`: <base>.key, <base>.csr.
bool key_and_request(const std::string& base, const std::string& subject, std::string* error) {
  return openssl_req({"-nodes", "-subj", subject, "-keyout", base + ".key", "-out", base + ".csr"},
                     error);
}

}  // namespace

bool make_test_certs(const std::string& dir, const std::string& client_cn, TestCerts* out,
                     std::string* error, const std::string& prefix) {
  const std::string p = dir + "/" + prefix;
  out->ca = p + "ca.pem";
  const std::string ca_key = p + "ca.key";
  if (!openssl_req({"-x509", "-nodes", "-days", "1", "-subj", "/CN=strata test CA", "-keyout",
                    ca_key, "-out", out->ca},
                   error)) {
    return false;
  }
  const std::string ext = p + "server.ext";
  std::ofstream(ext) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  auto sign = [&](const std::string& base, const std::string& subject, bool san) {
    if (!key_and_request(base, subject, error)) return false;
    std::vector<std::string> args = {"x509",  "-req",   "-in",        base + ".csr",     "-CA",
                                     out->ca, "-CAkey", ca_key,       "-CAcreateserial", "-days",
                                     "1",     "-out",   base + ".pem"};
    if (san) {
      args.push_back("-extfile");
      args.push_back(ext);
    }
    return openssl(args, error);
  };
  if (!sign(p + "server", "/CN=localhost", true)) return false;
  if (!sign(p + "client", "/CN=" + client_cn, false)) return false;
  out->server_cert = p + "server.pem";
  out->server_key = p + "server.key";
  out->client_cert = p + "client.pem";
  out->client_key = p + "client.key";
  out->server_combined = p + "server-combined.pem";
  std::ofstream combined(out->server_combined);
  combined << std::ifstream(out->server_cert).rdbuf() << std::ifstream(out->server_key).rdbuf();
  return bool(combined);
}

}  // namespace strata::test
