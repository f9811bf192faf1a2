// Node: one process's streams. Each stream is a local log (log/) with its
// uploader (tier/uploader.h) plugged in through the log's hooks; the node
// owns what they share — one object store, one catalog, one governor, one
// manifest cache, a small io_context (event loop: strands and timers) and a
// small BlockingPool for blocking I/O. No thread per stream: a stream costs
// its open files, its queues and a strand.
//
// Layout of the data directory:
//   <data_dir>/streams/<name>/   the stream logs (log/registry.h), each with its
//                                settings.json (node/stream_settings_file.h)
//   <data_dir>/catalog/          the embedded catalog (catalog/embedded_catalog.h)
//   <data_dir>/objects/          the directory object store, when so configured
//   <data_dir>/deletions/        markers of stream deletions not finished yet
//                                (node/deletion_marker.h)
//   <data_dir>/LOCK              held while the node is open: one process per
//                                data directory
//
// Opening a node opens every stream found with its settings and starts its
// uploader, which
// takes the stream over in the catalog (raising its epoch), loads the
// persisted manifest and catches up from the log. A stream with a deletion
// marker is not opened: its deletion is finished in the background, one
// stream at a time, so that a node with many pending deletions still opens
// at once (status lists them under "deletions").
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "catalog/catalog.h"
#include "common/blocking_pool.h"
#include "common/file_lock.h"
#include "common/task.h"
#include "log/registry.h"
#include "log/stream_log.h"
#include "node/node_config.h"
#include "node/stream_deletion.h"
#include "node/stream_gate.h"
#include "node/stream_settings.h"
#include "objstore/object_store.h"
#include "tier/governor.h"
#include "tier/manifest.h"
#include "tier/manifest_cache.h"
#include "tier/object_keys.h"
#include "tier/stream_reader.h"
#include "tier/tiering_hooks.h"
#include "tier/uploader.h"

namespace strata::node {

// How a cluster owner acquires a stream (Node::acquire_stream).
struct AcquireOptions {
  // The stream's owner key naming this node on its lease: every epoch bump
  // for the stream — the takeover and its uploader's — applies only while
  // it holds (catalog.h, OwnerCondition). Unset: unguarded.
  std::optional<catalog::OwnerCondition> owner;
  // Called when the stream's uploader stops by itself because another
  // writer holds a higher epoch (fenced) while the stream is still open
  // here; on the uploader's strand, must not block. The owner releases
  // and acquires the stream again (the fresh takeover raises the epoch).
  std::function<void(const std::string& stream, const std::string& why)> on_fenced;
};

class Node {
 public:
  // Opens the data directory, the object store (checking it is reachable
  // and the bucket accessible), the catalog, and every stream with its
  // settings. Errors name the setting or component that failed; a stream
  // whose settings file cannot be read fails the open, naming the file (no
  // stream runs with retention it was not created with).
  static Result<std::unique_ptr<Node>> open(NodeConfig cfg);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Creates a stream (already_exists if present, whatever its settings) and
  // starts its uploader. Its settings (node/stream_settings.h; invalid
  // ones: Errc::invalid_argument) are written into its directory before the
  // stream is visible, and apply from its first append on, and at every
  // open after. While a deletion of the name is pending: Errc::unavailable,
  // saying so (create it again once the deletion has finished).
  Result<std::shared_ptr<log::StreamLog>> create_stream(const std::string& name,
                                                        const StreamSettings& settings = {});
  // What an open stream was created with, and what it runs with.
  Result<StreamSettings> stream_settings(const std::string& name) const;
  Result<EffectiveSettings> effective_settings(const std::string& name) const;
  // An open stream; not_found if absent (or being deleted).
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

  // Deletes a stream: its local log, every object under its key prefix
  // (fragments, groups, roots, orphans) and its catalog entry; docs/FORMATS.md,
  // "Deleting a stream", gives the protocol. From the first call on, the
  // stream is neither listed nor openable nor creatable. Synchronous: returns
  // OK once everything is gone, or the error that stopped the deletion — it
  // then stays pending (its marker in place) and is finished by the next
  // delete_stream of the name or the next open of the node. A call while a
  // deletion of the name runs waits for that run's outcome.
  // Errors: not_found (no such stream, no deletion pending), closed, fatal
  // (an unreadable marker, or a step that cannot succeed: its error), the
  // error of the last attempt after repeated transient failures, timeout
  // (the stopped uploader's requests still in flight after their deadline).
  // Blocks: not to be called on the node's event loop.
  Status delete_stream(const std::string& name);
  // Streams whose deletion is pending (running, queued, failed or blocked).
  std::vector<std::string> pending_deletions() const;
  // Waits until no deletion runs or is queued. OK when none is pending any
  // more; else Errc::unavailable naming one still pending and its last
  // error (Errc::fatal for a blocked one); Errc::timeout if runs are still
  // going after `timeout`.
  Status await_deletions(std::chrono::milliseconds timeout);

  nlohmann::json status_json() const;
  // status_json()["deletions"]: per pending deletion its state (running,
  // stopping_writer, queued, failed, blocked), requested_at_ms, runs, step,
  // objects_removed, listings, transient_failures, last_error.
  nlohmann::json deletions_json() const;
  // Prometheus text format.
  std::string metrics_text() const;

  // Cluster ownership (cluster/ownership.h). acquire_stream: this node now
  // owns `name`; fence every older writer (raise the catalog epoch when the
  // stream exists), take the stream's settings from the catalog when it
  // keeps them (else the settings file), open or create the local log, restart it at the remote
  // next offset unless it ends exactly there (another owner may have
  // written past our old tail; our unuploaded tail is dropped, see
  // docs/ARCHITECTURE.md, "Stream ownership"), start the uploader. Returns
  // the open log if already open. Errors: what failed; nothing is left open.
  Result<std::shared_ptr<log::StreamLog>> acquire_stream(const std::string& name,
                                                         const AcquireOptions& opts = {});
  // A cluster's create: only the catalog entry, with `settings` (invalid
  // ones: Errc::invalid_argument) kept beside it so that every owner runs
  // the stream with them (catalog.h, create_with_settings); the placement's
  // owner opens it. already_exists if present.
  Status create_catalog_stream(const std::string& name, const StreamSettings& settings);
  // Stops writing and uploading `name` at once: no longer listed nor
  // writable, its uploader closed (in-flight requests are ignored; the
  // epoch fences their catalog writes), its log closed (in-flight appends
  // end first). Nothing on disk is removed. No-op if not open.
  void release_stream(const std::string& name);
  // Hands `name` over to another node (cluster rebalancing) without losing
  // anything committed, whatever its confirm mode: hides it (stream()
  // answers not_found, so nothing new is served), calls `hidden` (the
  // server stops its appends and waits for those in flight), persists
  // everything committed — again until a persist finds nothing newer — and
  // closes it. If that does not finish within `timeout` the stream is put
  // back, served as before, and the error returned; not_found if not open.
  Status hand_off_stream(const std::string& name, std::chrono::milliseconds timeout,
                         const std::function<void()>& hidden);

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
    // What the uploader reaches the object store and catalog through, so
    // that a deletion can wait until its last request has ended.
    std::shared_ptr<StreamGate> gate;
    StreamSettings settings;
    EffectiveSettings effective;
  };
  // One attempt at a stream's deletion: its preparation (marker, stopping
  // the writer) and its run. Callers of delete_stream wait for `ended`.
  struct DeletionAttempt {
    bool ended = false;
    Status status;
    std::shared_ptr<StreamDeletion> run;
  };
  // A pending deletion: from its first request (or its marker found at
  // open) until its marker is removed.
  struct Deletion {
    int64_t requested_at_ms = 0;
    std::shared_ptr<StreamGate> gate;          // of the stopped uploader, until it is idle
    std::shared_ptr<DeletionAttempt> attempt;  // in progress; null when idle
    std::string blocked;  // an unreadable marker: nothing runs until an operator acts
    uint64_t runs = 0;
    std::string last_error;     // of the last attempt that failed
    DeletionProgress progress;  // of the last run
  };
  explicit Node(NodeConfig cfg);
  Status start();
  // `create`: a new stream with `settings`; else the stream on disk with
  // the settings of its file, unless `settings_given` (a cluster owner's,
  // from the catalog: they replace the file's). `owned` (non-null): a cluster owner's
  // takeover (no local log: one is created; the remote tier must be
  // readable; bumps guarded by its owner key).
  Result<std::shared_ptr<log::StreamLog>> open_stream_locked(const std::string& name, bool create,
                                                             const StreamSettings& settings = {},
                                                             const AcquireOptions* owned = nullptr,
                                                             bool settings_given = false);
  tier::UploaderOptions uploader_options(const std::string& name,
                                         const EffectiveSettings& eff) const;
  Status prepare_deletion(const std::string& name, StreamEntry e, int64_t requested_at_ms);
  Status await_gate(const std::string& name, const std::shared_ptr<StreamGate>& gate);
  void start_run_locked(const std::string& name, Deletion& d,
                        const std::shared_ptr<DeletionAttempt>& a);
  void end_attempt(const std::string& name, const std::shared_ptr<DeletionAttempt>& a, Status s);
  void end_attempt_locked(const std::string& name, const std::shared_ptr<DeletionAttempt>& a,
                          Status s);
  void start_background_locked();
  Result<DeletionTargets> deletion_targets(const std::string& name) const;
  Status scan_deletions();
  void seed_writers(const std::string& name, log::StreamLog& log, const tier::ObjectKeys& keys,
                    const tier::Manifest& manifest);
  Result<std::shared_ptr<log::StreamLog>> align_with_remote(const std::string& name,
                                                            std::shared_ptr<log::StreamLog> log,
                                                            log::LogOptions lo,
                                                            const StreamSettings& settings,
                                                            bool exact = false);

  const NodeConfig cfg_;
  std::shared_ptr<objstore::ObjectStore> store_;
  std::shared_ptr<catalog::Catalog> catalog_;
  FileLock dir_lock_;
  std::shared_ptr<log::StreamRegistry> registry_;
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
  // Streams being handed over (hand_off_stream): hidden from streams_, but
  // close() still stops their uploaders and waits for the hand-over to end.
  std::map<std::string, StreamEntry> handing_off_;
  std::condition_variable handoff_cv_;  // a hand-over ended
  std::map<std::string, Deletion> deletions_;
  std::deque<std::string> deletion_queue_;  // markers found at open, run one at a time
  std::string background_;                  // the stream whose queued run is in progress
  std::condition_variable deletions_cv_;    // an attempt ended
  bool closed_ = false;
  int64_t started_ms_ = 0;
  std::atomic<uint64_t> local_resets_{0};      // local logs restarted after the remote tier
  std::atomic<uint64_t> takeover_dropped_{0};  // unuploaded offsets dropped at takeovers
};

}  // namespace strata::node
