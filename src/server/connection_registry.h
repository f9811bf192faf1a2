// ConnectionRegistry: the connections a server has open, by id — bounded by
// server.max_connections, looked up to hand single-active-consumer effects
// to, and waited on at shutdown.
//
// Thread safety: any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "server/connection.h"

namespace strata::server {

class ConnectionRegistry {
 public:
  explicit ConnectionRegistry(size_t max_connections) : max_(max_connections) {}

  // A new id for a connection about to be made, or nullopt when the server
  // is full or stopping.
  std::optional<uint64_t> reserve();
  // Registers the connection made with a reserved id.
  void add(const std::shared_ptr<Connection>& c);
  // The connection closed: forgotten. Whether it was there.
  bool remove(uint64_t id);
  std::shared_ptr<Connection> find(uint64_t id);
  size_t size();
  // No connection is accepted from now on; the ones open.
  std::vector<std::shared_ptr<Connection>> stop_accepting();
  // The connections open now.
  std::vector<std::shared_ptr<Connection>> all();
  // Waits until every connection is gone; whether they are.
  bool await_empty(std::chrono::milliseconds timeout);

 private:
  const size_t max_;
  std::mutex mu_;
  std::condition_variable empty_cv_;
  std::map<uint64_t, std::weak_ptr<Connection>> connections_;
  size_t reserved_ = 0;  // ids handed out, not added yet
  uint64_t next_id_ = 1;
  bool stopping_ = false;
};

}  // namespace strata::server
