#include "tier/governor.h"

#include <vector>

namespace strata::tier {

Governor::Permit& Governor::Permit::operator=(Permit&& o) noexcept {
  if (this != &o) {
    release();
    gov_ = std::move(o.gov_);
  }
  return *this;
}

void Governor::Permit::release() {
  if (auto g = std::move(gov_)) g->released();
}

std::shared_ptr<Governor> Governor::make(asio::io_context& io, GovernorConfig cfg, Clock& clock) {
  auto g = std::make_shared<Governor>(io, cfg, clock);
  g->self_ = g;
  return g;
}

Governor::Governor(asio::io_context& io, GovernorConfig cfg, Clock& clock)
    : cfg_(cfg),
      clock_(clock),
      timer_(io),
      bucket_(cfg.rate_bytes_per_sec
                  ? TokenBucket::limited(*cfg.rate_bytes_per_sec, cfg.burst_bytes, clock.now_ms())
                  : TokenBucket::unlimited()) {
  if (cfg_.max_concurrent == 0) cfg_.max_concurrent = 1;
  st_.unlimited = bucket_.is_unlimited();
  st_.rate_bytes_per_sec = bucket_.rate();
}

void Governor::request(uint64_t owner, uint64_t bytes, Grant grant) {
  std::unique_lock l(mu_);
  auto& q = queues_[owner];
  if (q.empty()) ring_.push_back(owner);
  q.push_back(Request{bytes, std::move(grant)});
  st_.queued += 1;
  st_.queued_bytes += bytes;
  admit_locked(l);
}

void Governor::cancel(uint64_t owner) {
  std::deque<Request> dropped;
  {
    std::lock_guard l(mu_);
    auto it = queues_.find(owner);
    if (it == queues_.end()) return;
    dropped.swap(it->second);
    queues_.erase(it);
    for (auto r = ring_.begin(); r != ring_.end();) r = (*r == owner) ? ring_.erase(r) : r + 1;
    for (auto& r : dropped) {
      st_.queued -= 1;
      st_.queued_bytes -= r.bytes;
      st_.cancelled += 1;
    }
  }
  // Grants are destroyed outside the lock: their captures may do anything.
}

GovernorStats Governor::stats() const {
  std::lock_guard l(mu_);
  return st_;
}

void Governor::released() {
  std::unique_lock l(mu_);
  st_.in_flight -= 1;
  admit_locked(l);
}

// Admits what fits, round robin over owners, then runs the grants with the
// lock released. Called with the lock held; returns with it held.
void Governor::admit_locked(std::unique_lock<std::mutex>& l) {
  std::vector<std::pair<Grant, Permit>> grants;
  while (st_.in_flight < cfg_.max_concurrent && !ring_.empty()) {
    uint64_t owner = ring_.front();
    auto& q = queues_[owner];
    Request& head = q.front();
    if (!bucket_.is_unlimited()) {
      Admission a = bucket_.request(head.bytes, clock_.now_ms());
      if (!a.admitted) {
        st_.throttle_waits += 1;
        if (!timer_armed_) {
          timer_armed_ = true;
          timer_.expires_after(std::chrono::milliseconds(std::max<int64_t>(1, a.wait_ms)));
          timer_.async_wait([w = self_](const std::error_code& ec) {
            auto g = w.lock();
            if (!g || ec) return;
            std::unique_lock l2(g->mu_);
            g->timer_armed_ = false;
            g->admit_locked(l2);
          });
        }
        break;
      }
    }
    Request r = std::move(head);
    q.pop_front();
    ring_.pop_front();
    if (q.empty()) {
      queues_.erase(owner);
    } else {
      ring_.push_back(owner);
    }
    st_.queued -= 1;
    st_.queued_bytes -= r.bytes;
    st_.in_flight += 1;
    st_.granted += 1;
    st_.granted_bytes += r.bytes;
    grants.emplace_back(std::move(r.grant), Permit(self_.lock()));
  }
  if (grants.empty()) return;
  l.unlock();
  for (auto& [grant, permit] : grants) grant(std::move(permit));
  grants.clear();
  l.lock();
}

}  // namespace strata::tier
