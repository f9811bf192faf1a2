#include "server/replica_acks.h"

#include <algorithm>
#include <functional>

namespace strata::server {

ReplicaAcks::ReplicaAcks(std::shared_ptr<node::StreamHandle> stream) : stream_(std::move(stream)) {}

size_t copies_needed(uint64_t cluster_size, size_t registered) {
  const uint64_t nodes = std::max<uint64_t>(cluster_size, registered);
  // A majority is nodes / 2 + 1; the owner's own log is one of them.
  return size_t(nodes / 2);
}

uint64_t ReplicaAcks::end_locked() const {
  // What a persisted manifest covers survives any node.
  const uint64_t persisted = stream_->persisted_next();
  if (!others_) return persisted;
  return std::max(std::min(stream_->committed_next(), copies_hold_), persisted);
}

// The needed-th furthest copy: that many copies hold what lies below. Kept
// up to date on each ack and set_copies, so that end() (asked on every
// confirm and every delivery) does not sort.
void ReplicaAcks::recount_locked() {
  if (needed_ == 0) {
    copies_hold_ = UINT64_MAX;
    return;
  }
  std::vector<uint64_t> acks;
  acks.reserve(others_->size());
  for (const std::string& n : *others_) {
    auto it = acked_.find(n);
    acks.push_back(it == acked_.end() ? 0 : it->second);
  }
  if (acks.size() < needed_) {
    copies_hold_ = 0;
    return;
  }
  std::nth_element(acks.begin(), acks.begin() + (needed_ - 1), acks.end(),
                   std::greater<uint64_t>());
  copies_hold_ = acks[needed_ - 1];
}

uint64_t ReplicaAcks::end() const {
  std::lock_guard l(mu_);
  return end_locked();
}

void ReplicaAcks::ack(const std::string& node, uint64_t next) {
  // An acknowledgement that arrives once this node's lease has ended counts
  // for nothing: a resumed owner still feeds its copies what it wrote
  // before a freeze, and a copy elected meanwhile stood without it. Counted,
  // it would let consumers here read offsets the new owner writes anew
  // (confirms are refused then anyway, stream_appender.cpp).
  if (stream_->lease_ended()) return;
  {
    std::lock_guard l(mu_);
    uint64_t& a = acked_[node];
    if (next <= a) return;
    a = next;
    if (others_) recount_locked();
  }
  wake();
}

void ReplicaAcks::set_copies(std::set<std::string> others, size_t needed) {
  {
    std::lock_guard l(mu_);
    others_ = std::move(others);
    needed_ = needed;
    recount_locked();
  }
  wake();
}

void ReplicaAcks::count_copies_of(const cluster::ClusterView& view, const std::string& self) {
  std::set<std::string> others;
  for (const auto& [id, addr] : view.nodes) {
    if (id != self) others.insert(id);
  }
  set_copies(std::move(others),
             copies_needed(stream_->effective().cluster_size, view.nodes.size()));
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

nlohmann::json ReplicaAcks::status() const {
  std::lock_guard l(mu_);
  nlohmann::json acked = nlohmann::json::object();
  if (others_) {
    for (const std::string& n : *others_) {
      auto it = acked_.find(n);
      acked[n] = it == acked_.end() ? 0 : it->second;
    }
  }
  return {{"copies_needed", needed_}, {"confirmed_next", end_locked()}, {"acked", acked}};
}

}  // namespace strata::server
