// Private to raftmeta (raft_meta.cpp, raft_meta_writer.cpp): the state
// behind raftmeta/raft_meta.h — the server table callers read without a
// lock, what is pending for the writer thread, and the durability
// sequence numbers its callers wait on (under mu_).
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "raftmeta/raft_meta.h"
#include "raftmeta/server_table.h"

namespace strata::raftmeta {

class RaftMeta::Impl {
 public:
  Impl(FileSystem& fs, std::string dir, const Options& options);

  // The calls of raft_meta.h, same contracts.
  Status store(BytesView id, Field f, const FieldValue& v, uint64_t* seq = nullptr) {
    return change(id, f, v, false, seq);
  }
  Status store_sync(BytesView id, Field f, const FieldValue& v) {
    return change(id, f, v, true, nullptr);
  }
  Status erase(BytesView id, uint64_t* seq = nullptr) { return remove(id, false, seq); }
  Status erase_sync(BytesView id) { return remove(id, true, nullptr); }
  Status sync();
  Status await_progress(uint64_t want, DurableProgress* p,
                        std::chrono::steady_clock::time_point deadline);
  std::optional<FieldValue> fetch(BytesView id, Field f) const;
  std::optional<ServerMeta> fetch_all(BytesView id) const;
  std::optional<VoteRead> fetch_vote(BytesView id, char* name_buf) const {
    return table_->read_vote(id, name_buf);
  }
  std::string_view node_name(uint32_t node) const { return table_->node_name(node); }
  std::vector<std::pair<Bytes, ServerMeta>> list() const;
  Status close();
  Stats stats() const;
  const std::string& path() const { return path_; }

  // open(): takes over the directory's lock, then loads the store and
  // starts the writer.
  void hold_dir_lock(FileLock lock) { dir_lock_ = std::move(lock); }
  Status load(const MigrationReport& migration);

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

  // `seq` (if set) gets the change's sequence number (see raft_meta.h).
  Status change(BytesView id, Field f, const FieldValue& v, bool sync, uint64_t* seq);
  Status remove(BytesView id, bool sync, uint64_t* seq);
  // Asks the writer to fsync every change <= seq (under mu_); a
  // `new_caller` counts for group commit.
  void request_sync_locked(uint64_t seq, bool new_caller = true);
  // store/erase with a seq: gives it, and asks for its fsync as a sync
  // caller would (under mu_).
  void answer_later_locked(uint64_t* seq);
  Status usable_locked() const;
  Status wait_durable(std::unique_lock<std::mutex>& l, uint64_t seq);
  void mark_dirty(uint32_t e, FieldMask mask);
  void wake_writer();
  int64_t now_ns() const;

  void writer_main();
  bool has_work_locked(int64_t now) const;
  // Fills `snap` (the previous round's, reset) with everything pending.
  void take_snapshot_locked(int64_t now, Snapshot& snap);
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
