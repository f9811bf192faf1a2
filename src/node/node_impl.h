// Private to the node (node/*.cpp): the state behind node/node.h and the
// steps that change it, by file:
//   node.cpp            opening and closing the node; lookups; flush
//   stream_open.cpp     opening a stream (OpenMode): its settings, its log,
//                       alignment with the remote tier, its uploader
//   node_ownership.cpp  acquire / release / hand-over for cluster/ownership
//   node_deletion.cpp   the deletion queue: markers, runs, their waiters
//   node_status.cpp     /status and /metrics
//   stream_alter.cpp    changing a live stream's retention
// One mutex (mu) guards the stream table, the deletions and `closed_`; it
// is never held across I/O or a wait on anything but its own condition
// variables.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <variant>

#include "common/file_lock.h"
#include "log/registry.h"
#include "node/disk_watch.h"
#include "node/node.h"
#include "node/orphan_sweep.h"
#include "node/stream_deletion.h"
#include "node/stream_table.h"
#include "tier/governor.h"
#include "tier/manifest.h"
#include "tier/object_keys.h"

namespace strata::node {

// How a stream is opened (stream_open.cpp).
struct OpenExisting {};  // the stream on disk, with the settings of its file
struct CreateNew {       // a new stream with these settings
  StreamSettings settings;
  uint64_t first_offset = 0;  // where its log starts
};
struct TakeOver {  // a cluster owner's: its log created if absent, exact alignment
  // The settings kept in the catalog beside the stream (they replace the
  // file's); unset: the catalog keeps none, the file's apply.
  std::optional<StreamSettings> kept;
  AcquireOptions acquire;
  // The catalog epoch this acquire raised: the last owner's uploader's
  // (0: the stream had no catalog entry yet).
  uint64_t epoch_before = 0;
  // The epoch it raised it to: this tenure's. The uploader adopts it
  // instead of raising it again, and every chunk the log writes in this
  // tenure carries it, so a chunk names the tenure that wrote it (0: none).
  uint64_t epoch = 0;
};
using OpenMode = std::variant<OpenExisting, CreateNew, TakeOver>;

// The settings kept in the catalog beside `name` (catalog.h,
// create_with_settings); nullopt when the catalog keeps none for it
// (node_ownership.cpp).
Result<std::optional<StreamSettings>> catalog_kept_settings(catalog::Catalog& catalog,
                                                            const std::string& name);

class Node::Impl {
 public:
  explicit Impl(NodeConfig cfg) : cfg(std::move(cfg)) {}

  // ---- node.cpp ----
  Status start(std::shared_ptr<Runtime> rt);
  Status close();
  // The entry of an open stream, or why there is none (not_found, naming a
  // pending deletion; unavailable while it is being opened). mu held.
  Result<StreamEntry> lookup_locked(const std::string& name) const;
  Result<StreamEntry> lookup(const std::string& name) const;
  tier::TierContext tier_context(const std::string& name, bool tiered) const;
  std::shared_ptr<StreamHandle> handle_for(const std::string& name, const StreamEntry& e) const;

  // ---- stream_open.cpp ----
  Result<std::shared_ptr<log::StreamLog>> open_stream(const std::string& name,
                                                      const OpenMode& mode);
  // The rest of open_stream, for a name already marked as being opened.
  Result<std::shared_ptr<log::StreamLog>> open_marked(const std::string& name,
                                                      const OpenMode& mode);

  // ---- node_ownership.cpp ----
  Result<std::shared_ptr<log::StreamLog>> acquire(const std::string& name,
                                                  const AcquireOptions& opts);
  Status hand_off(const std::string& name, std::chrono::milliseconds timeout,
                  const std::function<void()>& hidden);

  // ---- node_deletion.cpp ----
  Status delete_stream(const std::string& name);
  Status await_deletions(std::chrono::milliseconds timeout);
  std::vector<std::string> pending_deletions() const;
  nlohmann::json deletions_json() const;
  Status scan_deletions();
  void start_background_locked();
  // The free-space alarm and the restarts of fail-stopped writers.
  void start_disk_watch_locked();

  // ---- node_status.cpp ----
  nlohmann::json status_json() const;
  Node::ProcessFigures process_figures() const;
  std::string metrics_text() const;

  const NodeConfig cfg;
  std::shared_ptr<Runtime> runtime;
  std::shared_ptr<objstore::ObjectStore> store;
  std::shared_ptr<catalog::Catalog> catalog;
  FileLock dir_lock;
  std::shared_ptr<log::StreamRegistry> registry;
  std::shared_ptr<tier::ManifestCache> cache;
  std::shared_ptr<tier::Governor> governor;
  std::shared_ptr<DiskWatch> disk;  // set once at start
  // Until when (steady clock, ms) this node may write and confirm: a
  // cluster node's lease (the ownership shell keeps it current); a single
  // node's never ends.
  std::shared_ptr<std::atomic<int64_t>> lease_until =
      std::make_shared<std::atomic<int64_t>>(std::numeric_limits<int64_t>::max());
  std::shared_ptr<OrphanSweep> orphans;  // set once at start when tiering is on
  int64_t started_ms = 0;
  std::atomic<uint64_t> local_resets{0};      // local logs restarted after the remote tier
  std::atomic<uint64_t> takeover_dropped{0};  // unuploaded offsets dropped at takeovers
  std::atomic<uint64_t> takeover_kept{0};     // unuploaded offsets kept: no owner between

  // What this node's uploader of a stream had reached when the stream was
  // released here (a cluster owner's close): the epoch it held, what was
  // persisted and where the local log ended. A takeover that finds the
  // catalog still at that epoch knows no other owner wrote since, so the
  // local tail past the remote tier is the stream's own and is kept; one
  // that finds a higher epoch knows exactly which offsets it drops.
  struct ReleasedAt {
    uint64_t epoch = 0;
    uint64_t persisted_next = 0;
    uint64_t local_next = 0;
  };
  std::mutex released_mu;
  std::map<std::string, ReleasedAt> released;  // guarded by released_mu

  // Replica copies (Node::open_copy), guarded by mu; never in `table`.
  std::map<std::string, std::shared_ptr<log::StreamLog>> copies;
  // Streams an acquire is opening (from before it closes the copy until it
  // returns): no copy is opened or dropped meanwhile, or the owner's log
  // would open the copy's object, or lose its directory. Guarded by mu.
  std::multiset<std::string> acquiring;
  // Copies being dropped (their directory removed): an acquire waits for
  // copies_cv until the drop is over. Guarded by mu.
  std::set<std::string> dropping;
  std::condition_variable copies_cv;
  // Whether a copy of `name` may be opened or dropped now (mu held).
  bool copy_allowed(const std::string& name) const;
  // Removes and closes the copy of `name` (outside mu).
  void close_copy(const std::string& name);
  nlohmann::json copies_json() const;
  void remember_release(const std::string& name, const StreamEntry& e);
  std::optional<ReleasedAt> released_at(const std::string& name);
  std::optional<uint64_t> own_epoch(const std::string& name, const ReleasedAt* left);

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

  // ---- stream_open.cpp ----
  // A catalog that outlives the node's disk (etcd) keeps every tiered
  // stream's settings beside its entry, so that a node on a fresh disk
  // serves the stream as it was created (recover_from_catalog).
  bool catalog_outlives_disk() const { return cfg.catalog_backend == "etcd"; }
  Status keep_settings_in_catalog(const std::string& name, const StreamSettings& s);
  // At open, after the local streams: every stream the catalog names that
  // has no local log here (a lost or replaced disk, an embedded catalog
  // rebuilt by `strata recover --from-bucket`), opened from the bucket
  // with the settings the catalog keeps (embedded: the node's).
  // `in_background` (`strata serve`): the streams are marked as being
  // opened here, and opened one by one on `recovery`, so that a slow bucket
  // does not hold the node's start; else opened before this returns.
  Status recover_from_catalog(bool in_background);
  std::thread recovery;
  // Everything an open does outside the lock: the entry, not yet published.
  Result<StreamEntry> build_entry(const std::string& name, const OpenMode& mode);
  Result<StreamSettings> settings_for(const std::string& name, const OpenMode& mode);
  Status start_uploader(const std::string& name, const OpenMode& mode, StreamEntry& e);
  Result<std::shared_ptr<log::StreamLog>> align_with_remote(const std::string& name,
                                                            std::shared_ptr<log::StreamLog> log,
                                                            log::LogOptions lo,
                                                            const StreamSettings& settings,
                                                            const TakeOver* owned);
  Result<std::shared_ptr<log::StreamLog>> restart_after_remote(const std::string& name,
                                                               log::LogOptions lo,
                                                               const StreamSettings& settings,
                                                               uint64_t remote_next);
  void seed_writers(const std::string& name, log::StreamLog& log, const tier::ObjectKeys& keys,
                    const tier::Manifest& manifest);
  tier::UploaderOptions uploader_options(const std::string& name,
                                         const EffectiveSettings& eff) const;

  // ---- node_deletion.cpp ----
  Status prepare_deletion(const std::string& name, StreamEntry e, int64_t requested_at_ms);
  Status await_gate(const std::string& name, const std::shared_ptr<StreamGate>& gate);
  void start_run_locked(const std::string& name, Deletion& d,
                        const std::shared_ptr<DeletionAttempt>& a);
  void end_attempt(const std::string& name, const std::shared_ptr<DeletionAttempt>& a, Status s);
  void end_attempt_locked(const std::string& name, const std::shared_ptr<DeletionAttempt>& a,
                          Status s);
  Result<DeletionTargets> deletion_targets(const std::string& name) const;
  void end_deletions_at_close();
  // Why `name` cannot be opened now; OK when no deletion is pending. mu held.
  Status deletion_blocks_open(const std::string& name, bool create) const;

  mutable std::mutex mu;
  // An open or a hand-over ended (opening / handing-off slots changed).
  std::condition_variable table_cv;
  StreamTable table;
  std::map<std::string, Deletion> deletions;
  std::deque<std::string> deletion_queue;  // markers found at open, run one at a time
  std::string background;                  // the stream whose queued run is in progress
  std::condition_variable deletions_cv;    // an attempt ended
  bool closed = false;
  // One alteration at a time (stream_alter.cpp): each reads the settings,
  // writes them where they are kept, then applies them; never held with mu.
  std::mutex alter_mu;
  // alter_stream, or adopt_catalog_settings (!in_catalog): node.h.
  Status alter(const std::string& name, const StreamSettings& to, bool in_catalog);
  // By stream: what readers (subscriptions, replica feeds) read from the
  // bucket since the node started, handed to every reader through
  // tier_context(). Its own mutex: taken by readers' opens, never with mu.
  mutable std::mutex reads_mu;
  mutable std::map<std::string, std::shared_ptr<tier::RemoteReadCounters>> reads;
  std::shared_ptr<tier::RemoteReadCounters> reads_of(const std::string& name) const;
};

}  // namespace strata::node
