// Configuration of a node: one JSON document (docs/CONFIGURATION.md, "The
// node's configuration file"), every setting optional, flags on top. Validation names
// the offending setting by its JSON path ("tiering.fragment_target_bytes")
// and value; unknown settings are errors (a typo must not silently fall
// back to a default).
//
//   {
//     "data_dir": "/var/lib/strata",
//     "objstore": { ... },                  objstore/config.h; default: fs at <data_dir>/objects
//     "catalog":  { "backend": "embedded", "capacity": 16384 },
//           or { "backend": "etcd", "endpoints": ["http://127.0.0.1:2379", ...],
//                "namespace": "strata", "request_timeout_ms": 5000, "attempt_timeout_ms": 1500 },
//     "log":      { "fsync": "always", "fsync_interval_ms": 100, "segment_bytes": ...,
//                   "retention": { "max_bytes": ..., "max_age_ms": ... } },     local disk
//     "tiering":  { "enabled": true, "key_prefix": "strata",
//                   "fragment_target_bytes": 67108864, "fragment_max_age_ms": 10000,
//                   "persist_threshold": 5, "persist_interval_ms": 2000,
//                   "request_timeout_ms": 45000, "delete_grace_ms": 30000,
//                   "confirm": "local", "remote_confirm_cut_ms": 100,
//                   "remote_confirm_timeout_ms": 30000,
//                   "retention": { "max_bytes": ..., "max_age_ms": ... } },     the whole stream
//     "governor": { "max_bytes_per_sec": 0, "burst_bytes": 0, "max_concurrent": 8 },
//     "threads":  { "io": 2, "blocking": 8 },
//     "http":     { "listen": "127.0.0.1:9552" }                               "" = off
//   }
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/json_config.h"
#include "common/result.h"
#include "log/log_options.h"
#include "node/deletion_core.h"
#include "objstore/config.h"
#include "tier/governor.h"
#include "tier/manifest_retention.h"

namespace strata::node {

// When a publish is confirmed (docs/CONFIGURATION.md, "Confirm modes"): `local` once
// it is committed to the local log; `remote` once, in addition, a persisted
// manifest covers it (it survives the loss of the node's disk).
// local: this node's log holds it; remote: a persisted manifest covers it;
// replicated: the owner's log and every other registered node's replica
// copy hold it (a cluster only, server/replica_acks.h).
enum class ConfirmMode : uint8_t { local, remote, replicated };
std::string_view confirm_mode_name(ConfirmMode m);
// "local" | "remote" | "replicated"; anything else is nullopt.
std::optional<ConfirmMode> parse_confirm_mode(std::string_view text);

struct TieringSettings {
  bool enabled = true;
  std::string key_prefix = "strata";
  uint64_t fragment_target_bytes = 64ull << 20;
  int64_t fragment_max_age_ms = 10'000;
  uint32_t persist_threshold = 5;
  int64_t persist_interval_ms = 2'000;
  int64_t request_timeout_ms = 45'000;
  int64_t delete_grace_ms = 30'000;
  // The node's own cleanup of objects no manifest references (node/
  // orphan_sweep.h): first this long after it opened, then as often; only
  // objects older than this. 0: off (`strata gc` only).
  int64_t orphan_grace_ms = 3'600'000;
  // Group objects cached for readers and lookups (LRU by bytes).
  uint64_t group_cache_bytes = 64ull << 20;
  // The user's retention of the whole stream, applied to the remote tier.
  tier::RetentionSpec retention;
  // The node's default confirm mode (a stream's x-strata-confirm argument
  // overrides it). `remote` requires tiering.enabled.
  ConfirmMode confirm = ConfirmMode::local;
  // While remote confirms wait, the pending fragment is cut this long after
  // its first chunk (instead of fragment_max_age_ms), then persisted at
  // once: the bound on what a remote confirm waits before its upload.
  int64_t remote_confirm_cut_ms = 100;
  // A remote confirm not persisted by then is answered with an error
  // (PublishError, stream_not_available): the remote tier is not taking
  // writes. The message stays in the local log and may still be uploaded.
  int64_t remote_confirm_timeout_ms = 30'000;
};

// How stream deletions run (node/stream_deletion.h). Not part of the JSON
// document: the defaults suit S3; tests and tools set them in code.
struct DeletionSettings {
  // Keys listed, then removed in one batch, per round (1..1000).
  int list_page_keys = 1000;
  DeletionCoreOptions core;  // retries of transient failures
};

// The etcd catalog backend (catalog/etcd_catalog.h).
struct EtcdCatalogSettings {
  std::vector<std::string> endpoints;
  std::string ns = "strata";
  int64_t request_timeout_ms = 5'000;
  int64_t attempt_timeout_ms = 1'500;
  // https endpoints: the CA file, and the client certificate and key for
  // members that verify clients (etcd's --client-cert-auth).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // etcd's own authentication: the user, and its password read from
  // password_file at load (a file its owner alone may read).
  std::string user;
  std::string password_file;
  std::string password;
};

struct NodeConfig {
  std::string data_dir;
  objstore::ObjectStoreConfig objstore;
  std::string catalog_backend = "embedded";  // or "etcd"
  uint32_t catalog_capacity = 16384;         // embedded
  EtcdCatalogSettings catalog_etcd;          // etcd
  // Local log settings of every stream (fsync, segment size, and the local
  // retention: how much of the stream stays on local disk once uploaded).
  log::FsyncPolicy fsync = log::FsyncPolicy::always;
  int64_t fsync_interval_ms = 100;
  uint64_t segment_bytes = 256ull << 20;
  log::RetentionOptions local_retention;
  TieringSettings tiering;
  tier::GovernorConfig governor;
  uint32_t io_threads = 2;
  uint32_t blocking_threads = 8;
  std::string http_listen;  // host:port; empty: no HTTP endpoint
  DeletionSettings deletion;
  // The disk alarm (node/disk_guard.h): below this many free bytes on the
  // data directory's file system publishing is refused (0: never);
  // RabbitMQ's default disk_free_limit. Checked every check_interval_ms,
  // which is also how soon a fail-stopped writer is first restarted.
  uint64_t disk_free_limit_bytes = 50'000'000;
  int64_t disk_check_interval_ms = 1'000;
  // Not part of the JSON document: a cluster node (cluster/ownership.h)
  // opens no stream at start; it opens each stream it comes to own
  // (Node::acquire_stream) and closes each it loses (Node::release_stream).
  bool open_streams_at_start = true;
  // Not part of the JSON document either: streams the catalog names with no
  // local log are recovered from the bucket in the background after the
  // open (`strata serve`: a slow bucket does not hold its start), answering
  // unavailable meanwhile; otherwise before Node::open returns.
  bool recover_in_background = false;

  // The log options every stream of the node is opened with (hooks unset).
  log::LogOptions log_options() const;
};

// Builds and validates the configuration from a parsed document (null for
// none). `data_dir`, if not empty, overrides the document's. Errors name
// the setting.
Result<NodeConfig> load_node_config(
    const nlohmann::json& document, const std::string& data_dir, const objstore::EnvLookup& env,
    const std::vector<objstore::ConfigOverride>& objstore_flags = {});
// Every setting path load_node_config accepts, as the reader asks for
// them (for either catalog backend), the object store's under "objstore.",
// and the sections holding them ("tiering", "tiering.retention", ...).
// docs/CONFIGURATION.md documents each (tests/docs checks it).
SettingsRead node_config_settings();
// Reads the JSON file (empty path: no file) and calls load_node_config.
Result<NodeConfig> load_node_config_file(
    const std::string& path, const std::string& data_dir, const objstore::EnvLookup& env,
    const std::vector<objstore::ConfigOverride>& objstore_flags = {});

// The configuration as JSON (secrets masked), for status and logs.
nlohmann::json describe_node_config(const NodeConfig& c);

}  // namespace strata::node
