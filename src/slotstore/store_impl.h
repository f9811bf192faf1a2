// SlotStore::Impl: the shell around the format, the in-memory table and the
// compactor. It owns the file, the writer queue (group commit), the WAL
// write position and the compaction thread.
//
// Locks (never held while waiting for another of them, except as noted):
//  - queue_mu_: the writer queue; the writer at its front is the leader and
//    alone touches wal_ and mutates table_.
//  - mu_ (shared): table_. Readers share it; the leader takes it exclusively
//    only while applying ops in memory, never across I/O or waits.
//  - comp_mu_: job_, comp_state_ and the compaction counters. The leader
//    waits on comp_cv_ for the other WAL half (backpressure).
//  - fail_mu_: the fail-stop reason.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>

#include "common/file_lock.h"
#include "common/group_commit.h"
#include "slotstore/compactor.h"
#include "slotstore/format.h"
#include "slotstore/slot_table.h"
#include "slotstore/slotstore.h"
#include "slotstore/wal_reader.h"

namespace strata::slotstore {

// Takes `<path>.lock` for a writer of the store at `path` (Options::lock).
Result<FileLock> lock_store_file(const std::string& path);

// Bytes of the marker entry each opened store writes before its first change.
inline constexpr size_t kMarkerBytes = format::kEntryHeaderSize + 8;

class SlotStore::Impl {
 public:
  Impl(FileSystem& fs, std::string path, Options options, format::Layout layout,
       std::unique_ptr<File> file);
  ~Impl();

  // ---- store_open.cpp ----
  static Result<std::unique_ptr<Impl>> open(FileSystem& fs, const std::string& path,
                                            const Schema* schema, const Options& options);
  // Creates the file crash-atomically (temp file, fsync, rename, fsync dir).
  static Status create(FileSystem& fs, const std::string& path, const Schema& schema,
                       const Options& options);
  // create's body: every byte of a new file of layout `l` written to `tmp`,
  // then published as `path`.
  static Status write_new(FileSystem& fs, const std::string& tmp, const std::string& path,
                          const format::Layout& l);

  // ---- store_write.cpp ----
  Status write_batch(const WriteBatch& batch, const WriteOptions& options);

  // ---- store.cpp ----
  Result<Record> read(BytesView key) const;
  Status fold(const std::function<bool(BytesView, const Record&)>& fn) const;
  Status sync();
  Status close();
  Info info() const;
  const Schema& schema() const { return layout_.schema; }

 private:
  struct Writer;
  struct WalState {
    int active = 0;              // the half being appended to
    uint64_t seq = 0;            // its header's sequence number
    uint32_t seed = 0;           // its header's chain seed
    uint64_t written = 0;        // bytes of the active half already written to the file
    Bytes pending;               // bytes that follow `written`, not yet written
    uint32_t chain = 0;          // chain CRC of the last entry
    uint64_t next_lsn = 1;       // lsn of the next entry
    uint64_t half_last_lsn = 0;  // lsn of the active half's last entry (0 if none)
    bool marker_written = false;
    uint64_t unsynced = 0;  // bytes written since the last fsync
    // Every entry up to durable_lsn is on disk (an fsync completed after it
    // was written); entries up to claimed_lsn need no `durable` entry (one
    // records them, or they are that record). Recovery uses such records to
    // tell damage from a torn tail.
    uint64_t durable_lsn = 0;
    uint64_t claimed_lsn = 0;
  };
  enum class CompState { idle, running, failed };

  // store_open.cpp
  Status recover();
  Status load_strings();
  // The current copy of every slot; rec_lsn[s] is its lsn.
  Status load_records(std::vector<uint64_t>& rec_lsn, uint64_t* max_rec_lsn);
  Status check_string_references() const;
  Status start();

  // wal_replay.cpp
  // Replays the WAL over the loaded records and sets wal_ and job_.
  Status replay_wal(std::vector<uint64_t>& rec_lsn, uint64_t max_rec_lsn);
  Status replay_half(int half, std::vector<uint64_t>& rec_lsn, format::HalfHeader* header,
                     WalReader* reader, uint64_t* applied);
  Status apply_replayed(const format::Entry& e, std::vector<uint64_t>& rec_lsn, uint64_t* applied);
  Status check_active_end(int half, const format::HalfHeader& h, WalReader& reader);
  struct OlderHalf;
  Status check_older_half(const OlderHalf& b, int a, const format::HalfHeader& ha,
                          const WalReader& ra, uint64_t max_rec_lsn);

  // store_write.cpp
  Status write_internal(const WriteBatch& batch, const WriteOptions& options, bool closing);
  void commit_group(const std::vector<Writer*>& group);
  // Also gives, per op, its key's slot as validation found it (one lookup
  // per op instead of two): kLookUp where an earlier op of the batch
  // changed the key, kAbsent for a key not in the store before the batch.
  static constexpr uint32_t kLookUp = UINT32_MAX, kAbsent = UINT32_MAX - 1;
  Status validate(const WriteBatch& batch, bool* durable, std::vector<uint32_t>* slots) const;
  Status apply_batch(const WriteBatch& batch, bool* durable);
  // `slot`: validate's slot of the op's key.
  void encode_op(const WriteBatch::Op& op, uint32_t slot);
  void append_prelude(size_t op_bound);
  void append_durable();
  Status close_durable();
  uint32_t append(format::EntryType type, BytesView body);
  Status ensure_room(size_t bytes);
  Status switch_half();
  Status wait_half_free();
  Status flush_pending();

  // store.cpp
  Status sync_file();
  void fail_stop(const Error& e);
  Error fail_stopped_error() const;
  Status check_usable(bool writing) const;
  void run_compaction(std::unique_lock<std::mutex>& l);
  void compaction_main();

  FileSystem& fs_;
  const std::string path_;
  const Options opt_;
  const format::Layout layout_;
  std::unique_ptr<File> file_;
  FileLock lock_;  // held while open for writing (Options::lock)

  mutable std::shared_mutex mu_;
  SlotTable table_;

  WalState wal_;  // leader only (and open/close)
  // The leader's scratch, kept between batches (no allocation per op).
  std::vector<uint32_t> op_slots_;
  Bytes op_body_;

  std::mutex queue_mu_;
  GroupCommitQueue<Writer> writers_;

  mutable std::mutex comp_mu_;
  std::condition_variable comp_cv_;
  std::optional<CompactionJob> job_;  // the sealed half, if any (the other half is then busy)
  CompState comp_state_ = CompState::idle;
  bool stop_ = false;
  std::optional<Error> last_comp_error_;
  uint64_t compactions_ = 0;
  uint64_t compactions_failed_ = 0;
  uint64_t compaction_waits_ = 0;
  Compactor compactor_;
  std::thread thread_;

  std::atomic<bool> failed_{false};
  mutable std::mutex fail_mu_;
  std::string fail_reason_;
  std::atomic<bool> closed_{false};

  // Mirrors for info(), written by their owners.
  std::atomic<uint64_t> fsyncs_{0};
  std::atomic<uint64_t> stale_{0};
  std::atomic<uint64_t> active_used_{0};
  std::atomic<uint64_t> sealed_used_{0};
  std::atomic<uint64_t> unsynced_{0};
  std::atomic<uint64_t> last_lsn_{0};
  std::atomic<uint64_t> switches_{0};
};

}  // namespace strata::slotstore
