// slotstore: a crash-safe, fixed-capacity store of small typed records, one
// per key (the "shu" engine of Ra's ra_log_meta, redesigned). Users: raftmeta
// (Raft server id -> current_term, voted_for, last_applied) and the embedded
// catalog of the remote tier (stream -> epoch, revision, root key).
//
// One file holds: a header (format version, capacity, schema), a bounded
// table of interned strings, two checksummed copies of a record per slot, and
// a WAL in two halves. Every change (low or high frequency) is appended to
// the WAL as a checksummed, hash-chained entry; a background compaction folds
// a full WAL half into the record copies (always overwriting the older copy)
// and then reuses the half. docs/formats/slotstore.md has the
// format byte by byte and the argument why every crash point recovers.
//
// Semantics promised to callers:
//  - A put of one key is atomic: after any crash either all of its field
//    updates are visible or none are (term change + vote clear in one put).
//  - write_batch returns OK once the batch is in the WAL (in the OS page
//    cache: it survives a kill -9 of the process). If the batch is durable
//    (WriteOptions::sync, any low field set or cleared, or any erase), it has
//    also been fsynced, together with everything written before it.
//  - After a power loss, the store holds the state after some prefix of the
//    sequence of puts/erases, and that prefix includes every put/erase
//    acknowledged as durable. Nothing else is ever returned: a torn or
//    partial write anywhere is caught by a CRC and treated as never written.
//  - A batch is atomic per key, not across keys: after a crash, the unsynced
//    tail of the history may be cut between two keys of one batch. (Durable
//    batches are all-or-nothing only in the sense that they are entirely
//    present once acknowledged.)
//  - Any fsync failure, and any failed write to the WAL, makes the store
//    fail-stop: every later write, sync and read returns Errc::fail_stopped
//    and it never reports durability it does not have. Reopen to recover.
//  - Capacity (slots, interned strings, WAL bytes) is fixed at creation;
//    exhausting it is an error value and the batch is not applied.
//
// Thread safety: every method may be called from any thread. Concurrent
// write_batch calls are group-committed: one leader writes the queued
// batches with one WAL write and at most one fsync. Reads take a shared lock
// and never wait for I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/fs.h"
#include "slotstore/schema.h"

namespace strata::slotstore {

// Points where compaction calls Options::compaction_hook.
enum class CompactionPoint {
  started,       // on the compaction thread, before reading the sealed WAL half
  before_write,  // before writing a buffer of record copies / strings
  before_sync,   // after writing them, before the fsync that makes them durable
  finished,      // the sealed half has been released for reuse
};

struct Options {
  // ---- capacity: used when the file is created; an existing file keeps the
  // capacity in its header (info() reports it; migrate() changes it).
  uint32_t slots = 1024;           // keys that can exist at once (1..2^24)
  uint32_t strings = 256;          // interned strings, never freed (0..2^24)
  uint64_t wal_bytes = 16u << 20;  // both WAL halves together

  bool create_if_missing = true;
  bool error_if_exists = false;
  // Open for inspection: recover into memory, never write the file, no
  // compaction; write_batch/erase/sync return invalid_argument.
  bool read_only = false;
  // A writer (not read_only) on the real file system holds an exclusive
  // flock on <path>.lock while open, so a second writer, in this process or
  // another, gets Errc::conflict instead of corrupting the file. migrate()
  // turns it off for its temporary file (the source's lock guards both).
  bool lock = true;

  // Bound on the memory compaction uses for record images and strings
  // before it writes and fsyncs what it has and continues (a smaller bound
  // costs an extra fsync per filled buffer, on the compaction thread).
  size_t compaction_buffer_bytes = 1u << 20;
  // true: compaction runs on the store's own thread while writes continue in
  // the other WAL half. false: the writer that seals a half compacts it
  // before returning (deterministic tests and tools such as migrate).
  bool background_compaction = true;
  // Test hook, called at each CompactionPoint; blocking in it pauses the
  // compaction, returning an error aborts it there (at `finished` it is
  // only observed).
  std::function<Status(CompactionPoint)> compaction_hook;
};

struct WriteOptions {
  // fsync even if the batch touches only high-frequency fields.
  bool sync = false;
};

// A list of puts and erases applied in order by write_batch.
class WriteBatch {
 public:
  struct Op {
    Bytes key;
    bool erase = false;
    std::vector<FieldUpdate> updates;  // put only; order = application order
  };

  // Sets/clears the given fields of `key` in one atomic step, creating the
  // key (all fields absent) if it does not exist. Fields not listed keep
  // their values. An empty update list just creates the key.
  WriteBatch& put(BytesView key, std::vector<FieldUpdate> updates) {
    put(key) = std::move(updates);
    return *this;
  }
  // The same, for a caller that fills the (empty) update list in place: a
  // batch built again and again after clear() then reuses the memory of
  // its earlier ops' keys and lists (raftmeta's writer, once a batch).
  std::vector<FieldUpdate>& put(BytesView key) {
    Op& op = next_op();
    op.key.assign(key);
    op.erase = false;
    return op.updates;
  }
  // Deletes `key` (not_found if it does not exist at that point of the
  // batch). Makes the batch durable.
  WriteBatch& erase(BytesView key) {
    Op& op = next_op();
    op.key.assign(key);
    op.erase = true;
    return *this;
  }

  const std::vector<Op>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }
  // Keeps the ops' memory for the next puts and erases.
  void clear() {
    for (Op& op : ops_) spare_.push_back(std::move(op));
    ops_.clear();
  }

 private:
  // A new op at the end, from a cleared one's memory if there is one.
  Op& next_op() {
    if (spare_.empty()) return ops_.emplace_back();
    ops_.push_back(std::move(spare_.back()));
    spare_.pop_back();
    ops_.back().updates.clear();
    return ops_.back();
  }

  std::vector<Op> ops_;
  std::vector<Op> spare_;  // cleared ops, their key and list memory kept
};

struct Info {
  std::string path;
  uint32_t format_version = 0;
  uint32_t slots_total = 0;
  uint32_t slots_used = 0;
  uint32_t strings_total = 0;
  uint32_t strings_used = 0;
  uint32_t record_size = 0;  // bytes of one record copy on disk
  uint64_t file_size = 0;
  uint64_t wal_bytes_total = 0;        // both halves
  uint64_t wal_bytes_used = 0;         // active half + a sealed half awaiting compaction
  uint64_t unsynced_bytes = 0;         // WAL bytes written but not yet fsynced
  uint64_t last_lsn = 0;               // sequence number of the last WAL entry
  uint64_t wal_switches = 0;           // WAL halves sealed since open (each starts a compaction)
  bool compacting = false;             // a compaction is running now
  uint64_t compactions = 0;            // completed since open
  uint64_t compactions_failed = 0;     // aborted since open (the store went on)
  std::string last_compaction_error;   // of the most recent aborted compaction
  uint64_t compaction_waits = 0;       // times a writer waited for compaction (backpressure)
  uint64_t fsyncs = 0;                 // fsyncs of the store file since open
  uint64_t stale_entries_skipped = 0;  // WAL entries whose slot generation did not match
  bool fail_stopped = false;
  std::string fail_stop_reason;
};

class SlotStore {
 public:
  // Opens `path` (creating it with `schema` and the capacity in `options` if
  // it is missing and options.create_if_missing), recovering from the WAL.
  // Errors: not_found (missing, !create_if_missing), already_exists
  // (error_if_exists), unsupported_version, schema_mismatch (the file's
  // schema differs from `schema`), corrupt (a damaged header, or a slot
  // whose both record copies fail their CRC), invalid_argument (bad schema
  // or capacity), io.
  static Result<std::unique_ptr<SlotStore>> open(FileSystem& fs, const std::string& path,
                                                 const Schema& schema, const Options& options = {});
  // Opens an existing file with the schema stored in it (CLI, migrate).
  static Result<std::unique_ptr<SlotStore>> open_existing(FileSystem& fs, const std::string& path,
                                                          const Options& options = {});

  // Rewrites the closed store at `path` with schema `to` and the capacity in
  // `to_options`, crash-atomically: builds `path.migrating`, fsyncs it,
  // renames it over `path` and fsyncs the directory. Fields are matched by
  // name; a field of `to` missing from the old schema starts absent, a field
  // no longer in `to` is dropped; a matched field must have the same element
  // kinds (a bounded length may change). Only strings still referenced are
  // carried over. Any error (store_full, string_table_full, a value longer
  // than its new bound, io) leaves `path` untouched and removes the temp file.
  static Status migrate(FileSystem& fs, const std::string& path, const Schema& to,
                        const Options& to_options);

  // Closes if not closed (errors are logged; call close() to see them).
  ~SlotStore();
  SlotStore(const SlotStore&) = delete;
  SlotStore& operator=(const SlotStore&) = delete;

  // Applies the batch's ops in order. Validation happens first: if any op
  // is invalid (key_too_long, invalid_argument for an empty key or a value
  // of the wrong type or length, unknown_field, not_found for erase,
  // store_full, string_table_full) nothing is applied and the first such
  // error is returned, naming the op index, key and field. A batch larger
  // than the free WAL space is written in steps with compaction between;
  // if that compaction fails, the ops written so far stay applied and the
  // compaction error is returned. fail_stopped / closed as described above.
  Status write_batch(const WriteBatch& batch, const WriteOptions& options = {});
  // Convenience: one put.
  Status put(BytesView key, std::vector<FieldUpdate> updates, const WriteOptions& options = {});
  // Durable delete of one key; not_found if absent. The slot is reused by a
  // later new key, which starts with all fields absent.
  Status erase(BytesView key);
  // Makes everything written so far durable. Waits for an in-flight
  // compaction to finish first.
  Status sync();
  // Waits for compaction, fsyncs anything unsynced, closes the file. Later
  // calls return Errc::closed. Idempotent.
  Status close();

  // The current record of `key` (including values not yet durable), or
  // not_found.
  Result<Record> read(BytesView key) const;
  // Every live key with its record, in slot order.
  Result<std::vector<std::pair<Bytes, Record>>> read_all() const;
  // Calls fn for every live key in slot order until it returns false. fn
  // runs without the store's lock held, so it may call the store; keys
  // written meanwhile may or may not be visited.
  Status fold(const std::function<bool(BytesView key, const Record& record)>& fn) const;

  Info info() const;
  const Schema& schema() const;

  class Impl;

 private:
  explicit SlotStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::slotstore
