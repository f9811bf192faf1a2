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
// No lock is held across I/O. Opening a stream (a creation, a takeover,
// the open at start) reads the catalog, the object store and perhaps a
// large part of the remote tier; meanwhile the stream is *being opened* — a
// state of its own in the table (node/stream_table.h) — so lookups of every
// other stream, and of this one, answer at once: an opening stream answers
// Errc::unavailable, and a second open of it waits for the first.
//
// What a consumer of a node (the protocol server) uses of a stream goes
// through StreamHandle (node/stream_handle.h) and RemoteStream
// (node/remote_stream.h): appends, readers across both tiers, remote
// durability, commits — not the log, the uploader or the tier directly.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "common/blocking_pool.h"
#include "log/offset_spec.h"
#include "log/stream_log.h"
#include "node/disk_guard.h"
#include "node/node_config.h"
#include "node/runtime.h"
#include "node/stream_handle.h"
#include "node/stream_settings.h"
#include "objstore/object_store.h"
#include "tier/manifest_cache.h"
#include "tier/stream_reader.h"

namespace strata::tier {
class Uploader;
}

namespace strata::node {

class RemoteStream;

// The runtime a node starts for itself from its configuration (threads.io,
// threads.blocking); `strata serve` starts the same for the whole process.
RuntimeOptions runtime_options(const NodeConfig& cfg);

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

struct LocalTail {
  uint64_t epoch = 0;
  uint64_t next = 0;
  bool operator==(const LocalTail&) const = default;
};

class Node {
 public:
  // Opens the data directory, the object store (checking it is reachable
  // and the bucket accessible), the catalog, and every stream with its
  // settings. Errors name the setting or component that failed; a stream
  // whose settings file cannot be read fails the open, naming the file (no
  // stream runs with retention it was not created with).
  // `runtime`: the process's event loop and pool, when the caller (`strata
  // serve`) runs more on it than the node; null: the node starts its own
  // from cfg.io_threads / cfg.blocking_threads. Either way close() stops it.
  static Result<std::unique_ptr<Node>> open(NodeConfig cfg,
                                            std::shared_ptr<Runtime> runtime = nullptr);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Creates a stream (already_exists if present, whatever its settings) and
  // starts its uploader. Its settings (node/stream_settings.h; invalid
  // ones: Errc::invalid_argument) are written into its directory before the
  // stream is visible, and apply from its first append on, and at every
  // open after. While a deletion of the name is pending: Errc::unavailable,
  // saying so (create it again once the deletion has finished).
  // `first_offset`: the offset its log starts at (an imported stream whose
  // older offsets its source had already deleted); 0 for a new stream.
  Result<std::shared_ptr<log::StreamLog>> create_stream(const std::string& name,
                                                        const StreamSettings& settings = {},
                                                        uint64_t first_offset = 0);
  // Changes the retention of an open stream while it runs (`to`: its
  // settings with max_bytes, max_age_ms and local_max_bytes as they are to
  // be; any other difference is Errc::invalid_argument naming it, as are
  // invalid values). Kept where the stream's settings are (the catalog
  // entry's when the catalog keeps them, and the settings file), then
  // applied: the log's retention and the uploader's remote retention,
  // evaluated at once. Errors: not_found / unavailable as stream(), the
  // store's, and nothing is applied then. Blocks on I/O.
  Status alter_stream(const std::string& name, const StreamSettings& to);
  // A cluster's alteration made on a node that does not serve the stream:
  // checked as alter_stream checks it, against the settings the catalog
  // keeps for it, and stored there only (not_found when it has none); the
  // owner applies it when it sees the change (adopt_catalog_settings).
  Status alter_catalog_stream(const std::string& name, const StreamSettings& to);
  // Applies settings the catalog already holds (another node stored them)
  // to the open stream: its settings file and retention, as alter_stream
  // does, without writing the catalog. not_found when it is not open here.
  Status adopt_catalog_settings(const std::string& name, const StreamSettings& to);
  // What an open stream was created with, and what it runs with.
  Result<StreamSettings> stream_settings(const std::string& name) const;
  Result<EffectiveSettings> effective_settings(const std::string& name) const;
  // An open stream; not_found if absent (or being deleted), unavailable
  // while it is being opened.
  Result<std::shared_ptr<log::StreamLog>> stream(const std::string& name);
  // The front door to an open stream (same errors as stream()).
  Result<std::shared_ptr<StreamHandle>> handle(const std::string& name);
  // Reading a stream another node owns straight from the remote tier
  // (replicas): not_found when tiering is disabled.
  Result<std::shared_ptr<RemoteStream>> remote_stream(const std::string& name);
  std::vector<std::string> streams() const;
  // The stream's uploader (null when tiering is disabled). It may be held
  // past the node's close or destruction: it shares ownership of the event
  // loop its strand and timers belong to, and after close it only answers
  // with its final state.
  std::shared_ptr<tier::Uploader> uploader(const std::string& name) const;

  // A reader of the stream over both tiers (tier/stream_reader.h): remote
  // fragments below the local log, then local segments. It may outlive the
  // node's close (its remote reads then fail, they never hang). The same as
  // handle(name)->open_reader(spec, opts).
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
  // (fragments, groups, roots, orphans) and its catalog entry; docs/formats/stream-deletion.md
  // gives the protocol. From the first call on, the
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

  // The disk alarm and the fail-stopped writers (node/disk_guard.h).
  DiskWatchSnapshot disk() const;
  // Until when (steady clock ms since its epoch) this node may write and
  // confirm. Never ending for a single node; a cluster node's ownership
  // shell (cluster/ownership.h) keeps its lease's end here, and every
  // append and local confirm checks it (StreamHandle::lease_ended), so a
  // node frozen past its lease writes and confirms nothing when it resumes.
  std::shared_ptr<std::atomic<int64_t>> lease_fence() const;
  nlohmann::json status_json() const;
  // Two of status_json()["node"]'s figures, without building the rest: the
  // process's resident memory and how long this node has run.
  struct ProcessFigures {
    uint64_t rss_bytes = 0;
    int64_t uptime_ms = 0;
  };
  ProcessFigures process_figures() const;
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
  // the open log if already open; while another call opens it, waits for
  // that one. Errors: what failed (nothing is left open); closed when the
  // stream was released or the node closed while it was being opened.
  Result<std::shared_ptr<log::StreamLog>> acquire_stream(const std::string& name,
                                                         const AcquireOptions& opts = {});
  // A cluster's create: only the catalog entry, with `settings` (invalid
  // ones: Errc::invalid_argument) kept beside it so that every owner runs
  // the stream with them (catalog.h, create_with_settings); the placement's
  // owner opens it. already_exists if present.
  Status create_catalog_stream(const std::string& name, const StreamSettings& settings);
  // The settings a cluster's stream was created with, from its catalog
  // entry; not_found when it has none.
  Result<StreamSettings> catalog_stream_settings(const std::string& name);
  // Stops writing and uploading `name` at once: no longer listed nor
  // writable, its uploader closed (in-flight requests are ignored; the
  // epoch fences their catalog writes), its log closed (in-flight appends
  // end first). Nothing on disk is removed. No-op if not open; a stream
  // being opened is closed as soon as its open ends.
  void release_stream(const std::string& name);
  // A replica's copy of `name` (a stream another node owns): its local log
  // in the directory an owner's would use, opened for
  // StreamLog::append_copy of the owner's chunks — no uploader, no
  // retention of its own — or created empty at `first_offset` (where the
  // remote tier ends) when there is none. The copy carries no settings of
  // its own: the catalog's (else the node's) are written beside it, as for
  // an owner. Returns the open copy if there is one. conflict when this
  // node serves the stream. acquire_stream closes the copy first and, when
  // its last chunk was written by the tenure it fences, keeps the tail
  // past the remote tier (docs/ARCHITECTURE.md, "Stream ownership").
  // `hooks` (may be null) decide which segments apply_retention may delete:
  // a copier trims what the remote tier holds.
  Result<std::shared_ptr<log::StreamLog>> open_copy(const std::string& name,
                                                    uint64_t first_offset,
                                                    std::shared_ptr<log::LogHooks> hooks = nullptr);
  // Closes the copy of `name`, if open (nothing on disk is removed).
  void close_copy(const std::string& name);
  // Closes the copy of `name` and removes its directory (a copy that no
  // longer lines up with its owner's log); conflict when this node serves
  // the stream, OK when there is none.
  Status drop_copy(const std::string& name);
  // What this node's disk holds of `name` beyond the remote tier: the
  // epoch of the last chunk of its copy (or of a log an earlier tenure
  // here left) and where it ends — both 0 when nothing lies past what the
  // remote tier holds, or there is no such log. What a node stands with
  // when the stream has no owner (cluster/ownership_core.h, "Electing the
  // most complete copy"). Reads only: an unopened log is read without
  // being opened for writing.
  Result<LocalTail> local_tail(const std::string& name);

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
  // beyond the pool's grace), closes the logs and the catalog, and stops
  // the runtime. Opens in progress end first (their streams are closed).
  // Idempotent.
  Status close();

  const NodeConfig& config() const;
  objstore::ObjectStore& store();
  catalog::Catalog& catalog();
  tier::ManifestCache& cache();
  // The process's event loop and blocking pool (node/runtime.h): the
  // node's own, or the one it was opened on.
  Runtime& runtime();

 private:
  class Impl;  // node_impl.h, which lists the files its steps live in
  explicit Node(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::node
