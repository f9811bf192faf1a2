// The arguments of a Create (stream) command, checked. RabbitMQ's names:
//   max-length-bytes               retention by size (bytes)
//   max-age                        retention by age: N followed by Y, M, D, h, m or s
//   stream-max-segment-size-bytes  local segment size (bytes)
//   initial-cluster-size           nodes a replicated confirm counts a majority of
//   queue-leader-locator           accepted, meaningless: placement is strata's own
// and strata's own (tiering of this stream):
//   x-strata-tiering               true or false (false: this stream stays local)
//   x-strata-fragment-target-bytes, x-strata-fragment-max-age-ms, x-strata-local-max-bytes
//   x-strata-confirm               local | remote (docs/CONFIGURATION.md, "Confirm modes")
//   stream-filter-size-bytes       bytes of each chunk's Bloom filter, 16..255
// Malformed values are refused (precondition failed in the protocol).
// Unknown names are ignored, as RabbitMQ ignores them (clients send
// arguments meant for other versions), and listed in `ignored` for the log
// — except under strata's own prefix `x-strata-`, where an unknown name is
// a typo and refused. The arguments become the stream's node::StreamSettings
// (node/stream_settings.h says how each applies); `strata stream create` takes the same names as
// flags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "node/stream_settings.h"

namespace strata::server {

// Errc::invalid_argument naming the argument and its value.
Result<node::StreamSettings> parse_stream_args(
    const std::vector<std::pair<std::string, std::string>>& args,
    std::vector<std::string>* ignored = nullptr);

// The argument names parse_stream_args accepts, from the table it reads
// by (docs/CONFIGURATION.md, "Per-stream settings", documents each;
// tests/docs checks it).
std::vector<std::string> stream_arg_names();

// "7D", "12h", "30m", "10s" (RabbitMQ's max-age) -> milliseconds.
Result<int64_t> parse_max_age(const std::string& text);

}  // namespace strata::server
