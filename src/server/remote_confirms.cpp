#include "server/remote_confirms.h"

#include <fmt/format.h>

#include <algorithm>

namespace strata::server {

RemoteConfirms::RemoteConfirms(int64_t timeout_ms, size_t max_waits)
    : timeout_ms_(timeout_ms), max_waits_(max_waits == 0 ? 1 : max_waits) {}

std::optional<uint64_t> RemoteConfirms::add(uint64_t group, uint64_t through, bool needs_wait,
                                            int64_t now_ms) {
  Group g;
  g.id = group;
  g.through = through;
  g.deadline = now_ms + timeout_ms_;
  if (!needs_wait || through <= persisted_) g.result = Status::OK();
  groups_.push_back(std::move(g));
  return maybe_wait();
}

std::optional<uint64_t> RemoteConfirms::on_wait(uint64_t through, const Status& s, int64_t,
                                                uint64_t persisted_next) {
  if (auto it = waits_.find(through); it != waits_.end()) {
    if (--it->second == 0) waits_.erase(it);
  }
  if (s.ok()) {
    persisted_ = std::max({persisted_, through, persisted_next});
    for (Group& g : groups_) {
      if (!g.result && g.through <= persisted_) g.result = Status::OK();
    }
  } else {
    for (Group& g : groups_) {
      if (!g.result && g.through <= through) g.result = s;
    }
  }
  return maybe_wait();
}

std::optional<uint64_t> RemoteConfirms::maybe_wait() {
  if (outstanding_waits() >= max_waits_) return std::nullopt;
  // Throughs never decrease along the queue: the last unresolved group has
  // the highest one.
  for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
    if (it->result) continue;
    if (!waits_.empty() && waits_.rbegin()->first >= it->through) return std::nullopt;
    waits_[it->through] += 1;
    return it->through;
  }
  return std::nullopt;
}

std::vector<RemoteConfirms::Release> RemoteConfirms::take_ready(int64_t now_ms) {
  for (Group& g : groups_) {
    if (g.result || now_ms < g.deadline) continue;
    g.result = Error(Errc::timeout,
                     fmt::format("offsets below {} were not in a persisted manifest within {} ms "
                                 "(persisted below {} so far)",
                                 g.through, timeout_ms_, persisted_));
  }
  std::vector<Release> out;
  while (!groups_.empty() && groups_.front().result) {
    out.push_back(Release{groups_.front().id, std::move(*groups_.front().result)});
    groups_.pop_front();
  }
  return out;
}

void RemoteConfirms::fail_all(const Error& error) {
  for (Group& g : groups_) {
    if (!g.result) g.result = Status(error);
  }
}

std::optional<int64_t> RemoteConfirms::next_deadline() const {
  std::optional<int64_t> at;
  for (const Group& g : groups_) {
    if (!g.result) at = at ? std::min(*at, g.deadline) : g.deadline;
  }
  return at;
}

size_t RemoteConfirms::outstanding_waits() const {
  size_t n = 0;
  for (const auto& [offset, count] : waits_) n += count;
  return n;
}

}  // namespace strata::server
