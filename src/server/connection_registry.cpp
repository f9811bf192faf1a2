#include "server/connection_registry.h"

#include <spdlog/spdlog.h>

#include "common/assert.h"

namespace strata::server {

std::optional<uint64_t> ConnectionRegistry::reserve() {
  std::lock_guard l(mu_);
  if (stopping_) return std::nullopt;
  if (connections_.size() + reserved_ >= max_) {
    spdlog::warn("serve: refusing a connection: {} open", connections_.size());
    return std::nullopt;
  }
  reserved_ += 1;
  return next_id_++;
}

void ConnectionRegistry::add(const std::shared_ptr<Connection>& c) {
  std::lock_guard l(mu_);
  STRATA_ASSERT(reserved_ > 0, "a connection added without a reserved id");
  reserved_ -= 1;
  const bool fresh = connections_.emplace(c->id(), c).second;
  STRATA_ASSERT(fresh, "two connections with one id");
}

bool ConnectionRegistry::remove(uint64_t id) {
  std::lock_guard l(mu_);
  const bool was = connections_.erase(id) > 0;
  if (connections_.empty()) empty_cv_.notify_all();
  return was;
}

std::shared_ptr<Connection> ConnectionRegistry::find(uint64_t id) {
  std::lock_guard l(mu_);
  auto it = connections_.find(id);
  return it == connections_.end() ? nullptr : it->second.lock();
}

size_t ConnectionRegistry::size() {
  std::lock_guard l(mu_);
  return connections_.size();
}

std::vector<std::shared_ptr<Connection>> ConnectionRegistry::stop_accepting() {
  std::lock_guard l(mu_);
  stopping_ = true;
  std::vector<std::shared_ptr<Connection>> out;
  for (auto& [id, w] : connections_) {
    if (auto c = w.lock()) out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::shared_ptr<Connection>> ConnectionRegistry::all() {
  std::lock_guard l(mu_);
  std::vector<std::shared_ptr<Connection>> out;
  for (auto& [id, w] : connections_) {
    if (auto c = w.lock()) out.push_back(std::move(c));
  }
  return out;
}

bool ConnectionRegistry::await_empty(std::chrono::milliseconds timeout) {
  std::unique_lock l(mu_);
  if (empty_cv_.wait_for(l, timeout, [&] { return connections_.empty(); })) return true;
  spdlog::warn("serve: {} connection(s) still open at shutdown", connections_.size());
  return false;
}

}  // namespace strata::server
