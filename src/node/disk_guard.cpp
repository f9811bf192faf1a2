#include "node/disk_guard.h"

#include <algorithm>
#include <set>

namespace strata::node {

DiskEffects DiskGuard::on(const DiskSample& s) {
  DiskEffects out;
  if (s.free_bytes && opts_.free_limit_bytes > 0) {
    const bool below = *s.free_bytes < opts_.free_limit_bytes;
    if (below != alarm_) {
      alarm_ = below;
      out.alarm = below ? AlarmChange::raised : AlarmChange::cleared;
      if (below) ++raised_;
    }
  }
  const std::set<std::string> now(s.stopped.begin(), s.stopped.end());
  // Up for long enough after a restart, or gone (closed, deleted, never
  // restarted): forgotten. A restart in flight keeps its entry until its
  // outcome, so that no second one starts beside it.
  std::erase_if(stopped_, [&](const auto& kv) {
    const StoppedWriter& w = kv.second;
    if (w.restarting || now.count(kv.first)) return false;
    return !w.up_since_ms || s.now_ms - *w.up_since_ms >= opts_.max_retry_ms;
  });
  for (const auto& name : now) {
    auto [it, added] = stopped_.try_emplace(name);
    StoppedWriter& w = it->second;
    if (added) {
      w.stream = name;
      w.next_attempt_ms = s.now_ms + opts_.first_retry_ms;
    } else if (w.up_since_ms) {
      // Restarted, and stopped again before it had been up for long.
      w.up_since_ms.reset();
      w.last_error = "stopped again after a restart";
      backoff(w, s.now_ms);
    }
  }
  if (alarm_) return out;
  for (auto& [name, w] : stopped_) {
    if (w.restarting || w.up_since_ms || s.now_ms < w.next_attempt_ms) continue;
    w.restarting = true;
    out.restart.push_back(name);
  }
  return out;
}

void DiskGuard::on_restart(const std::string& stream, const std::string& error, int64_t now_ms) {
  auto it = stopped_.find(stream);
  if (it == stopped_.end()) return;
  StoppedWriter& w = it->second;
  w.restarting = false;
  if (error.empty()) {
    w.up_since_ms = now_ms;
    return;
  }
  w.last_error = error;
  backoff(w, now_ms);
}

void DiskGuard::backoff(StoppedWriter& w, int64_t now_ms) const {
  // first, 2×first, 4×first … up to the maximum.
  const uint32_t doublings = std::min<uint32_t>(w.failed_restarts, 20);
  const int64_t delay =
      std::min<int64_t>(opts_.max_retry_ms, opts_.first_retry_ms * (int64_t(1) << doublings));
  w.failed_restarts += 1;
  w.next_attempt_ms = now_ms + delay;
}

std::vector<StoppedWriter> DiskGuard::stopped() const {
  std::vector<StoppedWriter> out;
  for (const auto& [name, w] : stopped_) {
    if (!w.up_since_ms) out.push_back(w);
  }
  return out;
}

}  // namespace strata::node
