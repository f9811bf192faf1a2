// A real S3-compatible server for tests: s3rver (npm, pinned in
// tools/package-lock.json) on 127.0.0.1, a free port and a fresh data
// directory. Started with --openssl-legacy-provider (without it Node 20
// answers every truncated ListObjectsV2 with 500). It does not check SigV4
// signatures (tests/objstore/s3_signing_test.cpp proves signing with
// botocore instead). Stopped (SIGKILL) when destroyed.
//
// Tests must not skip when the server cannot start: start() returns nullptr
// with a message, and the caller fails the test with it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "support/process.h"

namespace strata::test {

struct S3rverOptions {
  std::string dir;                   // fresh directory for data and logs (must exist)
  std::vector<std::string> buckets;  // created at start
  // Virtual-hosted requests reach the bucket at <bucket>.s3.<service_endpoint>;
  // libcurl resolves *.localhost to 127.0.0.1 by itself.
  std::string service_endpoint = "localhost";
};

class S3rver {
 public:
  static std::unique_ptr<S3rver> start(const S3rverOptions& opts, std::string* error);
  ~S3rver();

  int port() const { return port_; }
  // http://127.0.0.1:<port> (path-style) and http://s3.localhost:<port>
  // (virtual-hosted: <bucket>.s3.localhost).
  std::string endpoint() const;
  std::string vhost_endpoint() const;
  bool running() { return proc_.running(); }
  int pid() const { return proc_.pid(); }  // e.g. to read its CPU time
  void stop();
  std::string logs() const;

  // Environment for awscli (and other AWS clients) against this server.
  static std::vector<std::string> aws_env();
  // The only credentials s3rver knows.
  static constexpr const char* kAccessKey = "S3RVER";
  static constexpr const char* kSecretKey = "S3RVER";

 private:
  S3rver() = default;
  Process proc_;
  int port_ = 0;
  std::string service_endpoint_;
};

// Path of a file under tools/ (STRATA_TOOLS_DIR).
std::string tools_path(const std::string& rel);

// Waits until something accepts TCP connections on 127.0.0.1:port.
bool wait_for_port(int port, std::chrono::milliseconds timeout);

// Parses the port from a line "... listening on 127.0.0.1:<port>".
int parse_listening_port(const std::string& output);

}  // namespace strata::test
