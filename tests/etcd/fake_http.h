// A tiny HTTP/1.1 server on 127.0.0.1 for tests of clients that must
// survive misbehaving servers: every request gets the reply a handler
// chooses (any status and body, optionally after a delay). One thread,
// one connection at a time; stopped when destroyed.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace strata::test {

struct FakeReply {
  int status = 200;
  std::string body;
  std::chrono::milliseconds delay{0};  // before answering
};

class FakeHttp {
 public:
  explicit FakeHttp(std::function<FakeReply(const std::string& path)> handler);
  ~FakeHttp();
  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }

 private:
  void run();
  std::function<FakeReply(const std::string&)> handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace strata::test
