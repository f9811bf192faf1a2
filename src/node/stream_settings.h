// Per-stream settings: what a stream was created with (the protocol's
// stream arguments, `strata stream create` flags) where it differs from the
// node's configuration, and the settings a stream actually runs with. Pure:
// no I/O (the file they are kept in: node/stream_settings_file.h).
//
// Rules (docs/CONFIGURATION.md, "Per-stream settings"):
//  - an unset field means "the node's configuration", read at every open,
//    so a node's defaults still reach streams created before they changed;
//  - max_bytes / max_age_ms are the retention of the whole stream (RabbitMQ's
//    max-length-bytes and max-age). Without tiering they are the local log's
//    retention. With tiering they are the remote tier's retention, and they
//    also bound the local log (the local part is part of the stream), which
//    still only drops segments already persisted remotely;
//  - local_max_bytes (tiered streams only) replaces the node's local
//    retention by size: how much of a tiered stream stays on local disk;
//  - segment_bytes replaces the node's log.segment_bytes;
//  - tiering = false keeps a stream local on a tiered node; true on a node
//    without tiering is refused, as are the tiering knobs on a stream that
//    is not tiered (a setting that would silently do nothing);
//  - confirm (else the node's tiering.confirm) = remote needs a tiered
//    stream: a local stream on a node whose default is remote must say
//    confirm = local, so no stream is weakened silently.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "log/log_options.h"
#include "node/node_config.h"
#include "tier/manifest_retention.h"

namespace strata::node {

// Every field has an initializer so that designated initializers
// ({.max_bytes = N}) name only what they set (-Wmissing-field-initializers).
// A chunk's filter size when the stream's creator gave none, and the
// bounds of the argument (RabbitMQ's).
inline constexpr uint32_t kDefaultFilterSizeBytes = 16;
inline constexpr uint32_t kMinFilterSizeBytes = 16;
inline constexpr uint32_t kMaxFilterSizeBytes = 255;
// A tiered stream's local budget when neither log.retention nor the stream
// bounds its local log: this many segments (1 GiB at the default segment
// size) stay on local disk beyond what is not uploaded yet, which the
// tiering hook never lets go. Kafka's local.retention.* and Redpanda's
// retention.local.target.* play the same part.
inline constexpr uint64_t kDefaultLocalSegments = 4;

struct StreamSettings {
  std::optional<uint64_t> max_bytes = std::nullopt;              // max-length-bytes
  std::optional<int64_t> max_age_ms = std::nullopt;              // max-age
  std::optional<uint64_t> segment_bytes = std::nullopt;          // stream-max-segment-size-bytes
  std::optional<bool> tiering = std::nullopt;                    // x-strata-tiering
  std::optional<uint64_t> fragment_target_bytes = std::nullopt;  // x-strata-fragment-target-bytes
  std::optional<int64_t> fragment_max_age_ms = std::nullopt;     // x-strata-fragment-max-age-ms
  std::optional<uint64_t> local_max_bytes = std::nullopt;        // x-strata-local-max-bytes
  std::optional<ConfirmMode> confirm = std::nullopt;             // x-strata-confirm
  std::optional<uint64_t> filter_size_bytes = std::nullopt;      // stream-filter-size-bytes
  std::optional<uint64_t> initial_cluster_size = std::nullopt;   // initial-cluster-size

  // Nothing set: the stream runs with the node's configuration.
  bool empty() const { return *this == StreamSettings{}; }
  bool operator==(const StreamSettings&) const = default;
};

// What a stream runs with: its settings over the node's configuration.
struct EffectiveSettings {
  uint64_t segment_bytes = 0;
  log::RetentionOptions local_retention;
  bool tiering = false;
  // When a publish is confirmed (docs/CONFIGURATION.md, "Confirm modes"); remote only
  // on a tiered stream.
  ConfirmMode confirm = ConfirmMode::local;
  // Bytes of each chunk's Bloom filter of the filter values its messages
  // carry (16..255; osiris's default 16).
  uint32_t filter_size_bytes = kDefaultFilterSizeBytes;
  // The stream's nodes (owner and copies) a replicated confirm counts a
  // majority of (RabbitMQ's initial-cluster-size); 0: every node
  // registered in the cluster. Meaningful only under confirm = replicated.
  uint64_t cluster_size = 0;
  // Meaningful only when tiering.
  uint64_t fragment_target_bytes = 0;
  int64_t fragment_max_age_ms = 0;
  tier::RetentionSpec remote_retention;
};

// Errc::invalid_argument naming the setting, for combinations the node
// cannot honour (see the rules above) and values out of range.
Status validate_settings(const NodeConfig& cfg, const StreamSettings& s);

// The settings an operator may change while a stream runs (Node::
// alter_stream): its retention — max_bytes, max_age_ms, local_max_bytes —
// as a RabbitMQ policy changes max-age and max-length-bytes. Every other
// setting is fixed at creation: Errc::invalid_argument naming the first one
// that differs between `from` and `to`.
inline constexpr const char* kAlterableSettings[] = {"max_bytes", "max_age_ms",
                                                     "local_max_bytes"};
Status check_alteration(const StreamSettings& from, const StreamSettings& to);

// Requires validate_settings(cfg, s) to pass.
EffectiveSettings effective_settings(const NodeConfig& cfg, const StreamSettings& s);

// The fields that are set, by their names in the settings file
// ("max_bytes", ...), and back. from_json refuses unknown names and
// wrong types (Errc::corrupt naming the field).
nlohmann::json settings_to_json(const StreamSettings& s);
Result<StreamSettings> settings_from_json(const nlohmann::json& j);
// The names settings_from_json accepts, from the table it reads by
// (docs/CONFIGURATION.md documents each; tests/docs checks it).
std::vector<std::string> stream_settings_fields();

// For /status and `strata stream info`: every effective value (null for
// "no limit").
nlohmann::json effective_to_json(const EffectiveSettings& e);

}  // namespace strata::node
