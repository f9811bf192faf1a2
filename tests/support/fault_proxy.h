// Fault-injecting proxies for tests, started on 127.0.0.1 in front of a
// real server (usually s3rver):
//  - FaultProxy runs tools/fault_proxy.js: records every request exactly as
//    sent (for the SigV4 oracle) and injects resets, hangs, truncated or
//    corrupted bodies, wrong Content-Length, dropped Range headers and
//    canned answers, chosen per request by rules (see the script's header).
//  - Haproxy runs Debian's haproxy with a test-supplied configuration
//    (status answers with or without a body, reject, tarpit, Lua latency).
// Both are stopped (SIGKILL) when destroyed; start() returns nullptr with
// a message when the proxy cannot start, and the test must then fail.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "support/process.h"

namespace strata::test {

class FaultProxy {
 public:
  // rules: JSON array as documented in tools/fault_proxy.js (may be empty).
  // record: write every request as one JSON line to dir/requests.jsonl.
  static std::unique_ptr<FaultProxy> start(const std::string& dir, int upstream_port,
                                           const nlohmann::json& rules, bool record,
                                           std::string* error);
  ~FaultProxy();

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The recorded requests so far (empty unless started with record).
  std::vector<nlohmann::json> recorded() const;
  const std::string& record_path() const { return record_path_; }
  std::string logs() const { return proc_.stdout_text() + proc_.stderr_text(); }

 private:
  FaultProxy() = default;
  Process proc_;
  int port_ = 0;
  std::string record_path_;
};

class Haproxy {
 public:
  // `config` is a complete haproxy configuration in which every "@PORT@"
  // is replaced by the frontend port and "@DIR@" by `dir`.
  static std::unique_ptr<Haproxy> start(const std::string& dir, const std::string& config,
                                        std::string* error);
  ~Haproxy();

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string logs() const { return proc_.stdout_text() + proc_.stderr_text(); }

 private:
  Haproxy() = default;
  Process proc_;
  int port_ = 0;
};

}  // namespace strata::test
