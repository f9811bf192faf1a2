#include "server/replica_acks.h"

#include <algorithm>

namespace strata::server {

ReplicaAcks::ReplicaAcks(std::shared_ptr<node::StreamHandle> stream) : stream_(std::move(stream)) {}

uint64_t ReplicaAcks::end_locked() const {
  // What a persisted manifest covers survives any node.
  const uint64_t persisted = stream_->persisted_next();
  if (!required_) return persisted;
  uint64_t held = stream_->committed_next();
  for (const std::string& n : *required_) {
    auto it = acked_.find(n);
    held = std::min(held, it == acked_.end() ? 0 : it->second);
  }
  return std::max(held, persisted);
}

uint64_t ReplicaAcks::end() const {
  std::lock_guard l(mu_);
  return end_locked();
}

void ReplicaAcks::ack(const std::string& node, uint64_t next) {
  {
    std::lock_guard l(mu_);
    uint64_t& a = acked_[node];
    a = std::max(a, next);
  }
  wake();
}

void ReplicaAcks::set_required(std::set<std::string> nodes) {
  {
    std::lock_guard l(mu_);
    required_ = std::move(nodes);
  }
  wake();
}

void ReplicaAcks::fail_all(const Error& why) {
  std::multimap<uint64_t, std::function<void(Status)>> waits;
  {
    std::lock_guard l(mu_);
    failed_ = why;
    waits.swap(waits_);
  }
  for (auto& [o, done] : waits) done(why);
}

void ReplicaAcks::await_beyond(uint64_t offset, std::function<void(Status)> done) {
  Status now;
  {
    std::lock_guard l(mu_);
    if (failed_) {
      now = *failed_;
    } else if (end_locked() <= offset) {
      waits_.emplace(offset, std::move(done));
      return;
    }
  }
  done(now);
}

void ReplicaAcks::wake() {
  std::vector<std::function<void(Status)>> ready;
  {
    std::lock_guard l(mu_);
    const uint64_t e = end_locked();
    // Waits for offsets below end() are answered: end() > offset.
    auto stop = waits_.lower_bound(e);
    for (auto it = waits_.begin(); it != stop; ++it) ready.push_back(std::move(it->second));
    waits_.erase(waits_.begin(), stop);
  }
  for (auto& done : ready) done(Status::OK());
}

std::map<std::string, uint64_t> ReplicaAcks::acked() const {
  std::lock_guard l(mu_);
  return acked_;
}

}  // namespace strata::server
