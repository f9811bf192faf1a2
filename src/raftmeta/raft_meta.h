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
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/file_lock.h"
#include "common/fs.h"
#include "common/result.h"
#include "raftmeta/dets_migration.h"
#include "raftmeta/meta_change.h"
#include "raftmeta/server_meta.h"
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

// How far durability has got, for a caller that waits for many changes at
// once (RaftMeta::await_progress).
struct DurableProgress {
  uint64_t durable_seq = 0;  // every change <= this is fsynced
  uint64_t failures = 0;     // batches that failed (transiently) so far
  uint64_t failed_seq = 0;   // the last of them covered changes <= this ...
  Error failure;             // ... and failed with this
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

  // For a caller that answers many store_sync callers itself, without a
  // thread per caller (the Erlang binding's reply thread): store() and
  // erase() that also give the change's sequence number in *seq (the
  // latest change's if this one changed nothing). The change is durable
  // once DurableProgress::durable_seq >= *seq. Each such call counts as a
  // sync caller's (the writer is asked to fsync it, and group commit
  // counts it among the callers a synced batch may wait for).
  Status store(BytesView id, Field f, const FieldValue& v, uint64_t* seq);
  Status erase(BytesView id, uint64_t* seq);
  // Asks for every change <= `want` to be fsynced (as sync() does), then
  // waits until *p is out of date — durable_seq has moved beyond
  // p->durable_seq, or a batch failed since p->failures — and updates *p.
  // A batch that failed transiently fails the changes in (durable_seq,
  // failed_seq] (they are retried, as for a blocked store_sync). Returns
  // the store's fatal error (fail_stopped) or `closed` instead, after
  // which no change beyond p->durable_seq becomes durable. Returns OK with
  // *p unchanged at `deadline` (a caller that must answer its own callers
  // in time even while an fsync hangs). Blocks: not on a thread that must
  // not wait for the disk.
  Status await_progress(uint64_t want, DurableProgress* p,
                        std::chrono::steady_clock::time_point deadline =
                            std::chrono::steady_clock::time_point::max());

  // The value of a field, or nullopt if the server or the field is absent.
  std::optional<FieldValue> fetch(BytesView id, Field f) const;
  // ... or `default_value` (Ra: fetch/4).
  FieldValue fetch(BytesView id, Field f, const FieldValue& default_value) const;
  // The vote of `id` without building strings, lock-free as fetch: the
  // name's bytes go to `name_buf` (room for max_name_bytes) unless it is
  // null. nullopt if there is no such server.
  std::optional<VoteRead> fetch_vote(BytesView id, char* name_buf) const;
  // The node of a VoteRead; valid while the store is open.
  std::string_view node_name(uint32_t node) const;
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
  const std::string& path() const;

  // The state and the writer behind these methods (raft_meta_impl.h).
  class Impl;

 private:
  explicit RaftMeta(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::raftmeta
