// Node: one process's streams. Each stream is a local log (log/) with its
// uploader (tier/uploader.h) plugged in through the log's hooks; the node
// owns what they share — one object store, one catalog, one governor, one
// manifest cache, a small io_context (event loop: strands and timers) and a
// small BlockingPool for blocking I/O. No thread per stream: a stream costs
// its open files, its queues and a strand.
//
// Layout of the data directory:
//   <data_dir>/streams/<name>/   the stream logs (log/registry.h)
//   <data_dir>/catalog/          the embedded catalog (catalog/embedded_catalog.h)
//   <data_dir>/objects/          the directory object store, when so configured
//
// Opening a node opens every stream found and starts its uploader, which
// takes the stream over in the catalog (raising its epoch), loads the
// persisted manifest and catches up from the log.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "catalog/catalog.h"
#include "common/blocking_pool.h"
#include "common/task.h"
#include "log/registry.h"
#include "log/stream_log.h"
#include "node/node_config.h"
#include "objstore/object_store.h"
#include "tier/governor.h"
#include "tier/manifest_cache.h"
#include "tier/stream_reader.h"
#include "tier/tiering_hooks.h"
#include "tier/uploader.h"

namespace strata::node {

// Per-stream settings that differ from the node's (none yet beyond the
// node's configuration; the protocol's stream arguments will land here).
struct StreamSettings {};

class Node {
 public:
  // Opens the data directory, the object store (checking it is reachable
  // and the bucket accessible), the catalog, and every stream. Errors name
  // the setting or component that failed.
  static Result<std::unique_ptr<Node>> open(NodeConfig cfg);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Creates a stream (already_exists if present) and starts its uploader.
  Result<std::shared_ptr<log::StreamLog>> create_stream(const std::string& name);
  // An open stream; not_found if absent.
  Result<std::shared_ptr<log::StreamLog>> stream(const std::string& name);
  std::vector<std::string> streams() const;
  // The stream's uploader (null when tiering is disabled). It may be held
  // past the node's close or destruction: it shares ownership of the event
  // loop its strand and timers belong to, and after close it only answers
  // with its final state.
  std::shared_ptr<tier::Uploader> uploader(const std::string& name) const;

  // A reader of the stream over both tiers (tier/stream_reader.h): remote
  // fragments below the local log, then local segments. It may outlive the
  // node's close (its remote reads then fail, they never hang).
  Result<std::unique_ptr<tier::StreamReader>> open_reader(const std::string& name,
                                                          const log::OffsetSpec& spec,
                                                          tier::StreamReaderOptions opts = {});
  // What a reader of `name` needs from this node (tiering off: local only).
  tier::TierContext tier_context(const std::string& name) const;

  // Cuts the stream's pending fragment and waits until everything committed
  // now is in a persisted manifest (persisted as soon as it is uploaded: no
  // persist debounce). Errors: not_found, unavailable (tiering disabled),
  // timeout, or why the uploader stopped.
  Status flush(const std::string& name, std::chrono::milliseconds timeout);

  nlohmann::json status_json() const;
  // Prometheus text format.
  std::string metrics_text() const;

  // Stops every uploader (in-flight tasks are abandoned, never waited for
  // beyond the pool's grace), closes the logs and the catalog. Idempotent.
  Status close();

  const NodeConfig& config() const { return cfg_; }
  objstore::ObjectStore& store() { return *store_; }
  catalog::Catalog& catalog() { return *catalog_; }
  tier::ManifestCache& cache() { return *cache_; }
  BlockingPoolStats pool_stats() const { return pool_->stats(); }

 private:
  struct StreamEntry {
    std::shared_ptr<log::StreamLog> log;
    std::shared_ptr<tier::TieringHooks> hooks;
    std::shared_ptr<tier::Uploader> uploader;
  };
  explicit Node(NodeConfig cfg);
  Status start();
  Result<std::shared_ptr<log::StreamLog>> open_stream_locked(const std::string& name, bool create);
  tier::UploaderOptions uploader_options(const std::string& name) const;
  Result<std::shared_ptr<log::StreamLog>> align_with_remote(const std::string& name,
                                                            std::shared_ptr<log::StreamLog> log,
                                                            log::LogOptions lo);

  const NodeConfig cfg_;
  std::shared_ptr<objstore::ObjectStore> store_;
  std::shared_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<log::StreamRegistry> registry_;
  std::shared_ptr<tier::ManifestCache> cache_;

  // An io_context whose shutdown (destroying every handler still queued)
  // close() may call: handlers own uploaders, which own the io_context.
  struct EventLoop : asio::io_context {
    using asio::io_context::shutdown;
  };
  std::shared_ptr<EventLoop> io_ = std::make_shared<EventLoop>();
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> io_threads_;
  std::shared_ptr<BlockingPool> pool_;
  std::shared_ptr<IoLifetime> lifetime_;
  std::shared_ptr<tier::Governor> governor_;

  mutable std::mutex mu_;
  std::map<std::string, StreamEntry> streams_;
  bool closed_ = false;
  int64_t started_ms_ = 0;
  std::atomic<uint64_t> local_resets_{0};  // local logs restarted after the remote tier
};

}  // namespace strata::node
