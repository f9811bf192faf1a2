// Uploader: the per-stream shell around UploaderCore (replica_reader in the
// original). The single upload owner of a stream on its node.
//
//   log commit hook ─► chunk queue ─► FragmentAssembly ─► UploaderCore
//                                                         │ effects
//          governor ◄─ SubmitTransfer   StartPersist ─► PUT root, catalog CAS
//          PUT fragment (segment bytes, mapped)   Broadcast ─► ManifestCache
//          DeleteObjects (after a grace)   UpdateLocalRetention ─► log retention
//
// Everything the uploader decides runs on its own strand of the node's
// io_context (no thread per stream); blocking work (object-store requests,
// catalog writes, log reads) runs on the node's BlockingPool through
// run_task, so every task ends in exactly one event — success, failure,
// deadline, or cancellation — even when the job throws or hangs. Results
// are tagged with the core generation and the core's own tokens; a late or
// duplicate result is ignored, never applied twice.
//
// Tailing. The log's commit hook (on_commit) queues each committed chunk's
// location, bounded by max_queued_chunks; chunk bodies are not copied on the
// write path — a transfer maps the fragment's segment spans when it runs.
// Below the queue (at start, after a restart, after the queue overflowed
// while uploads were stalled) the uploader catches up by reading the log
// from the next offset it needs, then switches back to the queue; offsets
// are checked to be contiguous across the switch.
//
// Start (and reinitialize after a catalog conflict): read the catalog entry
// (create it if absent), take the stream over by raising its epoch (start
// only; a cluster owner, whose acquire raised it, adopts that epoch and is
// fenced if the catalog holds another), then load the persisted manifest — from the node's manifest cache
// when its revision is the catalog's, else by GETting the root. Any error,
// including a 404 of the root at revision > 0, is retried with backoff; it
// never reads as "empty". Then compare with the local log:
//   - remote next < local first: the offsets in between exist in neither
//     tier (a gap). Logged, counted (`gaps`), and the remote tier restarts
//     at the local first offset; the unreachable objects are left for GC.
//   - remote next > local next: the local log lost data the remote tier
//     has. Logged, counted (`remote_ahead`); the uploader stalls with that
//     error (the local log must be moved forward before appending reuses
//     those offsets).
// A catalog conflict from another writer, or a stale epoch, stops the
// uploader as `fenced`; it never touches the manifest afterwards.
//
// Thread safety: public methods may be called from any thread.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "catalog/catalog.h"
#include "common/blocking_pool.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/task.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "objstore/object_store.h"
#include "tier/fragment_assembly.h"
#include "tier/governor.h"
#include "tier/manifest_cache.h"
#include "tier/uploader_core.h"

namespace strata::tier {

// What a node shares with every uploader.
struct UploaderEnv {
  // Shared: an uploader's strand and timers may outlive the node that made
  // them (a caller still holding the uploader), and must not outlive the
  // io_context they belong to. First member, so destroyed last.
  std::shared_ptr<asio::io_context> io;
  TaskContext tasks;  // the node's BlockingPool and io lifetime
  std::shared_ptr<Governor> governor;
  std::shared_ptr<objstore::ObjectStore> store;
  std::shared_ptr<catalog::Catalog> catalog;
  std::shared_ptr<ManifestCache> cache;
  Clock* clock = nullptr;
};

enum class UploaderState : uint8_t;

struct UploaderOptions {
  std::string stream;
  std::string key_prefix;
  AssemblyConfig assembly;
  uint32_t persist_threshold = 5;
  int64_t persist_interval_ms = 2000;
  RebalancePolicy rebalance;
  RetentionSpec retention;  // the user's retention, applied to the remote tier
  // Per-request timeout of the object store; a transfer's deadline is four
  // times this, other tasks' deadlines are derived from it too.
  int64_t request_timeout_ms = 45'000;
  // Old roots and objects dropped by retention are deleted this long after
  // the persist that stopped referencing them (readers holding the previous
  // manifest finish first).
  int64_t delete_grace_ms = 30'000;
  // Chunks queued by the commit hook before the uploader switches to
  // reading the log (catch-up) instead.
  size_t max_queued_chunks = 65'536;
  // Bytes read from the log per catch-up task.
  uint64_t catchup_batch_bytes = 64ull << 20;
  uint32_t max_unpersisted_fragments = 4096;
  // Retry delays of failed transfers (the core's rules: transient fast,
  // fatal slow), and of start-up / reinitialize (catalog or root GET
  // failures).
  BackoffPolicy transient_backoff = BackoffPolicy::transient();
  BackoffPolicy fatal_backoff = BackoffPolicy::fatal();
  BackoffPolicy start_backoff = BackoffPolicy::fatal();
  bool take_over = true;  // raise the catalog epoch at start (fence older writers)
  // Set: the epoch was raised already (a cluster node's acquire,
  // node/node_ownership.cpp) and the uploader adopts it instead of raising
  // it again — fenced at start when the catalog holds another; take_over
  // is then ignored.
  std::optional<uint64_t> adopt_epoch;
  // Called once, on the uploader's strand, when it stops by itself (stalled,
  // fenced, deleted; not at close()), so that its owner can act — a cluster
  // node that still owns the stream re-acquires it. Must not block.
  std::function<void(UploaderState state, const std::string& why)> on_stopped;
  // Called on the uploader's strand each time it starts running, with the
  // epoch it writes under (after its take-over: the catalog's). Must not
  // block. A node records it beside the log (node/owner_epoch_file.h).
  std::function<void(uint64_t epoch)> on_running;
  uint64_t random_seed = 0;  // 0: from the clock
};

enum class UploaderState : uint8_t {
  starting,  // loading the catalog entry and the persisted manifest
  running,
  stalled,  // cannot go on until an operator acts (remote ahead of local)
  fenced,   // another writer owns the stream (conflict or stale epoch)
  deleted,  // the catalog entry disappeared (stream deleted)
  closed,
};
std::string_view uploader_state_name(UploaderState s);

struct UploaderStatus {
  std::string stream;
  UploaderState state = UploaderState::starting;
  std::string last_error;  // the most recent failure, for operators
  // Failures since the last request that succeeded (an upload, a group,
  // a persist, a start): 0 when the last one did.
  uint64_t consecutive_failures = 0;
  uint64_t epoch = 0;
  uint64_t revision = 0;
  std::string root_key;
  uint64_t remote_first_offset = 0;  // persisted
  uint64_t remote_next_offset = 0;   // persisted
  uint64_t remote_bytes = 0;         // persisted
  uint64_t local_first_offset = 0;
  uint64_t local_next_offset = 0;
  uint64_t assembly_bytes = 0;  // chunks waiting for their fragment's cut
  uint64_t assembly_chunks = 0;
  bool catching_up = false;
  UploaderMetrics core;
  int64_t last_persist_ms = -1;  // wall clock; -1 never
  // Shell counters.
  uint64_t fragments_uploaded = 0;
  uint64_t bytes_uploaded = 0;
  uint64_t retries_transient = 0;
  uint64_t retries_fatal = 0;
  uint64_t deadlines = 0;
  uint64_t task_throws = 0;
  uint64_t objects_deleted = 0;
  uint64_t delete_failures = 0;
  uint64_t catchup_reads = 0;
  uint64_t queue_overflows = 0;
  uint64_t restarts = 0;  // start + reinitializations
  uint64_t gaps = 0;
  uint64_t remote_ahead = 0;
  uint64_t local_segments_deleted = 0;
  std::map<std::string, uint64_t> failures_by_class;  // "transient", "fatal", "deadline", ...
  LatencyHistogram::Snapshot time_to_remote;          // commit -> persisted, per fragment
};

class Uploader {
 public:
  // Starts the uploader (its first step, loading the persisted state, runs
  // at once on the pool). Errors: invalid_argument for bad options.
  static Result<std::shared_ptr<Uploader>> start(UploaderEnv env, UploaderOptions opts,
                                                 std::shared_ptr<log::StreamLog> log);
  // Closes.
  ~Uploader();
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  // The log's commit hook: cheap, any thread, in offset order.
  void on_commit(const log::CommittedChunk& c);
  // The persisted remote next offset: local segments wholly below it may be
  // deleted (the local retention veto reads this). 0 until loaded.
  uint64_t persisted_next() const;
  // Calls `done` (on the uploader's strand) once offsets below `offset` are
  // in a persisted manifest, or with an error if the uploader stops first.
  // `urgent` (a flush): persist as soon as they are uploaded instead of
  // after persist_threshold fragments or persist_interval.
  void await_persisted(uint64_t offset, std::function<void(Status)> done, bool urgent = false);
  // A remote-durable confirm (`confirm = remote`): an urgent
  // await_persisted that also hurries the fragment cut — while it waits,
  // the pending fragment is cut assembly.hurry_max_age_ms after its first
  // chunk instead of fragment_max_age_ms. It has no deadline of its own:
  // the caller bounds its wait (an uploader that cannot persist keeps the
  // waiter until it can, or until it stops: Errc::closed).
  void await_remote(uint64_t offset, std::function<void(Status)> done);
  // Cuts everything committed now into fragments without waiting for the
  // size or age bound (shutdown flush, operator command): the pending
  // fragment at once, or, while the uploader is starting or catching up,
  // as soon as the chunks committed before this call have been read.
  void force_cut();
  // Asks the core to evaluate remote retention now.
  void request_retention();
  // Applies `spec` as the remote tier's retention from now on (an operator
  // altered the stream's retention) and evaluates it at once.
  void set_retention(const RetentionSpec& spec);
  UploaderStatus status() const;
  UploaderState state() const;
  // Stops: queued transfers are cancelled, in-flight tasks finish on their
  // own and are ignored, waiters get Errc::closed. Idempotent; returns at
  // once.
  void close();

  class Impl;

 private:
  explicit Uploader(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace strata::tier
