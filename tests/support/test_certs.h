// Certificates for TLS tests, made by the `openssl` program in a test's
// directory: a CA, and certificates it signs. Every file is PEM.
#pragma once

#include <string>

namespace strata::test {

struct TestCerts {
  std::string ca;           // the CA's certificate
  std::string server_cert;  // CN=localhost, SAN IP:127.0.0.1 and DNS:localhost
  std::string server_key;
  std::string server_combined;  // certificate then key, as haproxy takes them
  std::string client_cert;      // CN=`client_cn`, no SAN
  std::string client_key;
};

// Makes them under `dir` (prefixed by `prefix`); an error names the openssl
// step and its output.
bool make_test_certs(const std::string& dir, const std::string& client_cn, TestCerts* out,
                     std::string* error, const std::string& prefix = "");

}  // namespace strata::test
