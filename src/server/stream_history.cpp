#include "server/stream_history.h"

#include <algorithm>
#include <iterator>

namespace strata::server {

using json = nlohmann::json;

namespace {

void trim(std::deque<HistorySample>* d, int64_t window_ms) {
  while (!d->empty() && d->front().t_ms < d->back().t_ms - window_ms) d->pop_front();
}

}  // namespace

void StreamHistory::record(int64_t t_ms, const std::map<std::string, HistorySample>& streams) {
  HistorySample total;
  total.t_ms = t_ms;
  std::lock_guard l(mu_);
  for (auto it = samples_.begin(); it != samples_.end();) {
    it = !it->first.empty() && !streams.count(it->first) ? samples_.erase(it) : std::next(it);
  }
  for (const auto& [name, s] : streams) {
    auto& d = samples_[name];
    d.push_back(s);
    d.back().t_ms = t_ms;
    trim(&d, window_ms_);
    total.messages += s.messages;
    total.upload_lag_bytes += s.upload_lag_bytes;
    total.upload_lag_offsets += s.upload_lag_offsets;
    total.consumer_max_lag = std::max(total.consumer_max_lag, s.consumer_max_lag);
  }
  auto& all = samples_[""];
  all.push_back(total);
  trim(&all, window_ms_);
}

std::optional<std::vector<HistorySample>> StreamHistory::of(const std::string& stream) const {
  std::lock_guard l(mu_);
  auto it = samples_.find(stream);
  if (it == samples_.end()) return std::nullopt;
  return std::vector<HistorySample>(it->second.begin(), it->second.end());
}

json history_json(const std::vector<HistorySample>& samples) {
  json out = json::array();
  for (const auto& s : samples) {
    out.push_back({{"t", s.t_ms},
                   {"messages", s.messages},
                   {"upload_lag_bytes", s.upload_lag_bytes},
                   {"upload_lag_offsets", s.upload_lag_offsets},
                   {"consumer_max_lag", s.consumer_max_lag}});
  }
  return out;
}

}  // namespace strata::server
