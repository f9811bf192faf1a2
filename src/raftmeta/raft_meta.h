// RaftMeta: the per-node store of every Raft server's current_term,
// voted_for and last_applied (Ra's ra_log_meta), on a slotstore, with
// migration from Ra's meta.dets.
//
// Contract:
//  - Servers are keyed by id (1..Bounds::max_id_bytes bytes). A server
//    exists from its first store until it is erased; a new server has every
//    field absent.
//  - store() applies the change in memory and returns; a single writer
//    thread persists it later. store_sync() returns only once the change,
//    and every change made before it by any caller, is fsynced — whatever
//    the field. erase() / erase_sync() (Ra's delete / delete_sync) likewise;
//    an erased server never comes back after a restart and its slot is
//    reused safely.
//  - fetch() returns the latest stored value (also one not yet durable, as
//    Ra's ETS table does; act on a value only after store_sync). Readers
//    take no lock and never wait for the writer or the disk.
//  - Storing a current_term different from the current one clears
//    voted_for in the same atomic write; after any crash the store never
//    pairs a term with a vote cast in an earlier term.
//  - The writer merges every change pending when it wakes into one batch,
//    one write per server holding only the fields that changed; all
//    store_sync callers waiting share its one fsync (group commit). A batch
//    of only last_applied changes is written to the WAL without an fsync;
//    it is fsynced at most `applied_sync_interval` later, or by any sync
//    call, whichever comes first.
//  - Running out of capacity (servers, node names) is an error value
//    (store_full, string_table_full) returned to the caller and logged;
//    the store goes on. Values too long for the store's bounds are
//    invalid_argument / key_too_long.
//  - A failed compaction is aborted by the slotstore and the store goes on;
//    a writer that needs the WAL half being compacted waits (backpressure).
//    If a write fails without stopping the store (e.g. the WAL is full and
//    its compaction failed), waiting store_sync callers get that error, and
//    the writer retries the changes with backoff.
//  - An fsync or WAL write failure is fatal: every later call (and every
//    waiting store_sync) returns Errc::fail_stopped; nothing is ever
//    acknowledged as durable without a successful fsync. Reopen to recover.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/file_lock.h"
#include "common/fs.h"
#include "common/result.h"
#include "raftmeta/dets_migration.h"
#include "raftmeta/meta_change.h"
#include "raftmeta/server_meta.h"
#include "raftmeta/server_table.h"
#include "raftmeta/store_options.h"
#include "slotstore/slotstore.h"

namespace strata::raftmeta {

struct Options {
  // Capacity of a store created by open() (an existing store keeps its own;
  // a migration raises it to fit the DETS rows).
  StoreOptions store;
  // last_applied written without an fsync is fsynced at most this long
  // after (Ra's DETS auto_save was 5 s).
  std::chrono::milliseconds applied_sync_interval{5000};
  // close() lets a compaction still running after the final fsync go on
  // for at most this long, then aborts it (its WAL half stays and is
  // compacted at the next open). Ra: shutdown => 30000.
  std::chrono::milliseconds shutdown_compaction_budget{30000};
  // Longest a synced batch waits for more sync callers to join it (see
  // GroupCommit); 0 starts every synced batch at once.
  std::chrono::microseconds group_commit_window{2000};
  // Compaction on the slotstore's own thread (false: inline, for tests).
  bool background_compaction = true;
  // Migrate <dir>/meta.dets when opening (see migrate_dets).
  bool migrate_dets = true;
  MigrationProgress migration_progress;
  // Tests: passed to the slotstore (block to slow compaction, or return an
  // error to make it fail).
  std::function<Status(slotstore::CompactionPoint)> compaction_hook;
};

struct Stats {
  uint32_t servers = 0;
  uint32_t capacity = 0;
  uint32_t node_names = 0;     // distinct vote nodes known
  uint32_t node_capacity = 0;  // the most there can be
  Bounds bounds;
  uint64_t changes = 0;             // store/erase calls that changed something
  uint64_t batches = 0;             // write_batch calls by the writer
  uint64_t ops_written = 0;         // puts and erases in them (after merging)
  uint64_t largest_batch = 0;       // most ops in one of them
  uint64_t synced_batches = 0;      // batches fsynced (sync calls, low fields, erases)
  uint64_t periodic_syncs = 0;      // fsyncs due to applied_sync_interval
  uint64_t group_commit_holds = 0;  // synced batches held for more callers
  uint64_t failed_batches = 0;      // batches that failed and were retried
  uint64_t capacity_errors = 0;     // store_full / string_table_full returned
  slotstore::Info store;            // the slotstore's counters
  MigrationReport migration;        // what open() found and did
};

// Takes <dir>/LOCK: one process at a time may write a node's Raft metadata
// (open and migration both hold it; Errc::conflict names the directory if
// another does). On a FileSystem other than the real one (tests) it returns
// a lock that holds nothing.
Result<FileLock> lock_store_dir(FileSystem& fs, const std::string& dir);

class RaftMeta {
 public:
  // Opens (creating if needed) the store in `dir`, first migrating
  // <dir>/meta.dets if options.migrate_dets (see migrate_dets). Errors from
  // the migration name the DETS file and leave it untouched.
  static Result<std::unique_ptr<RaftMeta>> open(FileSystem& fs, const std::string& dir,
                                                const Options& options = {});
  // close(), logging its error.
  ~RaftMeta();
  RaftMeta(const RaftMeta&) = delete;
  RaftMeta& operator=(const RaftMeta&) = delete;

  // Sets field `f` of server `id` to `v` (a u64 for current_term and
  // last_applied, a VotedFor for voted_for), creating the server if new.
  Status store(BytesView id, Field f, const FieldValue& v);
  // store, then waits until it and everything before it is fsynced.
  Status store_sync(BytesView id, Field f, const FieldValue& v);
  // Removes server `id` (no error if there is none).
  Status erase(BytesView id);
  Status erase_sync(BytesView id);
  // Waits until everything stored so far is fsynced.
  Status sync();

  // The value of a field, or nullopt if the server or the field is absent.
  std::optional<FieldValue> fetch(BytesView id, Field f) const;
  // ... or `default_value` (Ra: fetch/4).
  FieldValue fetch(BytesView id, Field f, const FieldValue& default_value) const;
  // Every field of a server, consistent with each other.
  std::optional<ServerMeta> fetch_all(BytesView id) const;
  // Every server (each consistent; servers changed meanwhile may or may
  // not be seen), in no particular order.
  std::vector<std::pair<Bytes, ServerMeta>> list() const;

  // Persists everything pending (fsynced), stops the writer and closes the
  // store, giving a running compaction shutdown_compaction_budget. Later
  // calls return Errc::closed (fetch still answers). Idempotent.
  Status close();

  Stats stats() const;
  const std::string& path() const { return path_; }

 private:
  // A server's pending put, copied under mu_: its id (in Snapshot::ids)
  // and the values of the fields in `mask` (others left default).
  struct PendingPut {
    uint32_t entry;
    uint32_t id_offset;
    uint32_t id_size;
    FieldMask mask;
    bool create;
    ServerMeta values;
    BytesView id(const Bytes& ids) const { return BytesView(ids).substr(id_offset, id_size); }
  };
  // Everything pending when the writer woke, as one slotstore batch.
  struct Snapshot {
    uint64_t seq = 0;              // covers every change <= seq
    bool sync = false;             // fsync it (a waiter, close, periodic)
    bool periodic = false;         // the sync is the periodic one
    std::vector<Bytes> erased;     // all pending erases (requeued on failure)
    std::vector<PendingPut> puts;  // all pending puts
    Bytes ids;                     // the puts' ids, back to back
    slotstore::WriteBatch batch;   // erases of ids in the store, then the puts
    FieldMask fields = 0;          // union of the puts' masks
    bool erases = false;           // the batch erases something
    uint64_t waiters = 0;          // sync callers waiting when it was taken
  };
  struct Gate;
  // Dirty-mask bit beside the field bits: the server is new and must be
  // created even if no field is set.
  static constexpr uint8_t kCreate = 0x80;

  RaftMeta(FileSystem& fs, std::string dir, const Options& options);
  Status load(const MigrationReport& migration);
  Status change(BytesView id, Field f, const FieldValue& v, bool sync);
  Status remove(BytesView id, bool sync);
  Status usable_locked() const;
  Status wait_durable(std::unique_lock<std::mutex>& l, uint64_t seq);
  void mark_dirty(uint32_t e, FieldMask mask);
  void wake_writer();
  int64_t now_ns() const;

  void writer_main();
  bool has_work_locked(int64_t now) const;
  Snapshot take_snapshot_locked(int64_t now);
  // Builds snap.batch; runs without mu_ (only the writer touches the store).
  void build_batch(Snapshot& snap);
  void requeue_locked(Snapshot& snap);

  FileSystem& fs_;
  const std::string dir_;
  // <dir>/LOCK, held from before the DETS migration until close: one
  // process at a time owns a node's Raft metadata (the real file system
  // only).
  FileLock dir_lock_;
  const std::string path_;
  const Options opt_;
  std::shared_ptr<Gate> gate_;
  std::unique_ptr<slotstore::SlotStore> store_;
  Bounds bounds_;
  MigrationReport migration_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the writer waits for work
  std::condition_variable done_cv_;  // callers wait for durability / room
  std::unique_ptr<ServerTable> table_;
  std::vector<uint8_t> dirty_mask_;  // per entry: fields to write (+ kCreate)
  std::vector<uint32_t> dirty_;      // entries with a non-zero mask (maybe stale)
  std::vector<Bytes> erased_;        // ids to erase from the store
  uint64_t seq_ = 0;                 // changes so far
  uint64_t want_sync_seq_ = 0;       // a waiter needs everything <= this fsynced
  uint64_t durable_seq_ = 0;         // every change <= this is fsynced
  uint64_t failures_ = 0;            // batches that failed (transiently)
  uint64_t failed_seq_ = 0;          // the last failed batch covered changes <= this
  Error failure_;                    // its error
  std::optional<Error> fatal_;       // set once: the store stopped
  bool stopping_ = false;
  bool writer_idle_ = false;
  // Node names that may still be added: the store's string table minus
  // strings it holds that no server refers to (it never frees strings).
  uint32_t node_limit_ = 0;
  PeriodicSync periodic_;
  GroupCommit group_commit_;
  uint64_t sync_arrivals_ = 0;  // callers that began waiting since the last snapshot
  bool holding_ = false;        // the writer holds a synced batch for more callers
  int64_t retry_at_ns_ = 0;
  int64_t backoff_ns_ = 0;
  std::thread writer_;
  Status close_status_;
  bool closed_ = false;
  std::mutex close_mu_;

  // Counters (under mu_).
  uint64_t changes_ = 0, batches_ = 0, ops_written_ = 0, largest_batch_ = 0, synced_batches_ = 0,
           periodic_syncs_ = 0, capacity_errors_ = 0, group_commit_holds_ = 0;
};

}  // namespace strata::raftmeta
