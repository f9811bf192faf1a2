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
  // Back on its feet, or gone: forgotten (a restart in flight keeps its
  // entry until its outcome, so that no second one starts beside it).
  std::erase_if(stopped_,
                [&](const auto& kv) { return !kv.second.restarting && now.count(kv.first) == 0; });
  for (const auto& name : now) {
    auto [it, added] = stopped_.try_emplace(name);
    if (added) {
      it->second.stream = name;
      it->second.next_attempt_ms = s.now_ms;
    }
  }
  if (alarm_) return out;
  for (auto& [name, w] : stopped_) {
    if (w.restarting || s.now_ms < w.next_attempt_ms) continue;
    w.restarting = true;
    out.restart.push_back(name);
  }
  return out;
}

void DiskGuard::on_restart(const std::string& stream, const std::string& error, int64_t now_ms) {
  auto it = stopped_.find(stream);
  if (it == stopped_.end()) return;
  if (error.empty()) {
    stopped_.erase(it);
    return;
  }
  StoppedWriter& w = it->second;
  w.restarting = false;
  w.last_error = error;
  // first, 2×first, 4×first … up to the maximum.
  const uint32_t doublings = std::min<uint32_t>(w.failed_restarts, 30);
  const int64_t delay = std::min<int64_t>(
      opts_.max_retry_ms, opts_.first_retry_ms * (int64_t(1) << std::min(doublings, 20u)));
  w.failed_restarts += 1;
  w.next_attempt_ms = now_ms + delay;
}

std::vector<StoppedWriter> DiskGuard::stopped() const {
  std::vector<StoppedWriter> out;
  for (const auto& [name, w] : stopped_) out.push_back(w);
  return out;
}

}  // namespace strata::node
