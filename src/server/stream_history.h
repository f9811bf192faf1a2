// StreamHistory: the last hour of each served stream's figures as the web
// console charts them (messages, upload lag, largest consumer lag), sampled
// by the server every server.history_interval_ms, so that a page opened now
// shows the hour before it (GET /api/history). In memory only: a restart
// starts it again.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace strata::server {

struct HistorySample {
  int64_t t_ms = 0;  // wall clock, ms since the epoch
  uint64_t messages = 0;
  uint64_t upload_lag_bytes = 0;
  uint64_t upload_lag_offsets = 0;
  uint64_t consumer_max_lag = 0;
};

class StreamHistory {
 public:
  // Keeps samples no older than `window_ms` before the newest.
  explicit StreamHistory(int64_t window_ms) : window_ms_(window_ms) {}

  // One round: a sample per stream served now (streams absent from it are
  // forgotten), and their sum under the name "" (no stream has it).
  void record(int64_t t_ms, const std::map<std::string, HistorySample>& streams);
  // A stream's samples, oldest first ("" : the totals); nullopt for a
  // stream not sampled (not served here, or not yet).
  std::optional<std::vector<HistorySample>> of(const std::string& stream) const;

 private:
  const int64_t window_ms_;
  mutable std::mutex mu_;
  std::map<std::string, std::deque<HistorySample>> samples_;
};

// {"t", "messages", "upload_lag_bytes", "upload_lag_offsets", "consumer_max_lag"}.
nlohmann::json history_json(const std::vector<HistorySample>& samples);

}  // namespace strata::server
