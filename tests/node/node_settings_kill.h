// Shared by node_settings_kill_test and its child: the node's configuration
// and the settings stream s<i> is created with.
#pragma once

#include <nlohmann/json.hpp>

#include "node/stream_settings.h"

namespace strata::node::test {

// Local streams only: the settings file is the node's, not the tier's, and
// a node without uploaders creates streams fastest (more kills land inside
// a create).
inline nlohmann::json settings_kill_doc() {
  return {{"log", {{"fsync", "always"}, {"segment_bytes", 64 << 10}}},
          {"tiering", {{"enabled", false}}},
          {"threads", {{"io", 1}, {"blocking", 2}}}};
}

inline StreamSettings settings_for(uint64_t i) {
  return StreamSettings{.max_bytes = 100'000 + i,
                        .max_age_ms = int64_t(1000 + i),
                        .segment_bytes = 4096 * (1 + i % 16)};
}

// Stream s0's settings after its k-th alteration: settings_for(0) with
// other retention (max_age_ms removed on odd k: a limit taken away).
inline StreamSettings altered_for(uint64_t k) {
  StreamSettings s = settings_for(0);
  s.max_bytes = 200'000 + k;
  s.max_age_ms = k % 2 ? std::nullopt : std::optional<int64_t>(5000 + int64_t(k));
  return s;
}

}  // namespace strata::node::test
