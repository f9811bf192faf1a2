// AdminHttp: the node's operator endpoint over HTTP (cpp-httplib, two
// worker threads): GET /metrics (Prometheus text), GET /status (JSON), and
// the management API under /api (server/management_api.h), which
// authenticates each request itself. Loopback by default; it serves only
// what the callbacks return.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/result.h"
#include "server/management_api.h"

namespace strata::server {

struct AdminHandlers {
  std::function<std::string()> metrics;  // Prometheus text
  std::function<std::string()> status;   // a JSON document
  // /api/...: any method; unset: 404.
  std::function<ApiReply(const ApiRequest&)> api;
};

class AdminHttp {
 public:
  // Listens on "host:port" (port 0: a free one). Errors name the address.
  static Result<std::unique_ptr<AdminHttp>> start(const std::string& listen,
                                                  AdminHandlers handlers);
  ~AdminHttp();
  AdminHttp(const AdminHttp&) = delete;
  AdminHttp& operator=(const AdminHttp&) = delete;

  const std::string& host() const { return host_; }
  int port() const { return port_; }
  // http://host:port
  std::string url() const;
  void stop();

  struct Impl;

 private:
  AdminHttp() = default;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  std::string host_;
  int port_ = 0;
};

// GETs `path` from a node's admin endpoint ("http://127.0.0.1:9552");
// the body, or an error naming the URL.
Result<std::string> admin_get(const std::string& url, const std::string& path,
                              int timeout_ms = 5000);

// One management API call with HTTP Basic credentials: the status and the
// body, whatever the status; an error only when no answer came (naming the
// URL). `path` is sent as given (the caller encodes it).
struct ApiCall {
  std::string method, path, body;
  std::string user, password;
};
Result<ApiReply> api_request(const std::string& url, const ApiCall& call, int timeout_ms = 10000);

}  // namespace strata::server
