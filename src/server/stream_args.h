// The arguments of a Create (stream) command, checked. RabbitMQ's names:
//   max-length-bytes               retention by size (bytes)
//   max-age                        retention by age: N followed by Y, M, D, h, m or s
//   stream-max-segment-size-bytes  local segment size (bytes)
//   queue-leader-locator, initial-cluster-size   accepted, meaningless on one node
// and strata's own (tiering of this stream):
//   x-strata-fragment-target-bytes, x-strata-local-max-bytes,
//   x-strata-confirm               local | remote (node/node_config.h, ConfirmMode)
// Unknown or malformed arguments are refused (precondition failed in the
// protocol): a typo must not silently create a stream without retention.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "node/node_config.h"

namespace strata::server {

struct StreamArgs {
  std::optional<uint64_t> max_length_bytes;
  std::optional<int64_t> max_age_ms;
  std::optional<uint64_t> max_segment_size_bytes;
  std::optional<uint64_t> fragment_target_bytes;
  std::optional<uint64_t> local_max_bytes;
  std::optional<node::ConfirmMode> confirm;
};

// Errc::invalid_argument naming the argument and its value.
Result<StreamArgs> parse_stream_args(const std::vector<std::pair<std::string, std::string>>& args);

// "7D", "12h", "30m", "10s" (RabbitMQ's max-age) -> milliseconds.
Result<int64_t> parse_max_age(const std::string& text);

}  // namespace strata::server
