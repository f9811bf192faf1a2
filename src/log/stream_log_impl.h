// StreamLog::Impl: the state behind StreamLog (stream_log.h states the
// contract) and the steps its methods are made of. Internal to src/log.
//
//   stream_log.cpp            opening, closing, state views, listeners, readers
//   stream_log_write.cpp      append: group commit, chunk packing, segment roll, fail-stop
//   stream_log_seal.cpp       seal syncs off the append path (fsync=never), the sync mark
//   stream_log_read.cpp       resolve (offset_resolution.h), read handles, walks and maps
//   stream_log_retention.cpp  apply_retention (the plan is retention.h)
//   stream_log_refresh.cpp    refresh of a read-only log
//   stream_log_restart.cpp    restart_writer: writable again after a fail-stop
//
// Locks (one at a time, except that mu_ and files_mu_ are taken while
// holding retention_mu_ or refresh_mu_):
//  - mu_: the segment list and every segment's committed view, the
//    committed offset's waiters, the appender queue, closed/failed, the
//    listeners;
//  - files_mu_: the read handles of every segment;
//  - retention_mu_ / refresh_mu_: one retention run / one refresh at a time;
//  - seal_mu_: the background seal syncs (taken alone; the sealer thread
//    takes mu_ only after releasing it).
// The writer state is touched only by the group-commit leader (or by close
// once the queue drained), so it needs no lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/file_lock.h"
#include "common/group_commit.h"
#include "log/recovery.h"
#include "log/stream_log.h"
#include "log/writer_sequences.h"

namespace strata::log {

// One segment of the list: its files, its committed view and read handles.
struct LogSegment {
  LogSegment(std::string p, std::string ip) : path(std::move(p)), index_path(std::move(ip)) {}

  SegmentBounds bounds() const {
    return {info.first_offset, info.next_offset,        info.chunks,
            info.size_bytes,   info.first_timestamp_ms, info.last_timestamp_ms};
  }

  const std::string path;        // segment file
  const std::string index_path;  // index file
  SegmentInfo info;              // committed view; guarded by mu_
  uint64_t last_epoch = 0;       // guarded by mu_
  // Read-only logs keep every chunk's record in memory (their index file may
  // lag and cannot be repaired); guarded by mu_.
  bool mem_indexed = false;
  std::vector<IndexRecord> records;
  // Read handles, guarded by files_mu_: the writer's handles while active,
  // otherwise a cache shared by readers for as long as one holds it.
  std::shared_ptr<File> pinned_file, pinned_index;
  std::weak_ptr<File> file_cache, index_cache;
};

class StreamLog::Impl {
 public:
  Impl(std::string dir, LogOptions opts);

  // stream_log.cpp
  // Locks the directory (writer mode), runs recovery, builds the state.
  Status open();
  Status close();
  bool closed() const;
  Status health() const;
  uint64_t committed_next() const { return committed_next_.load(std::memory_order_acquire); }
  bool closed_fast() const { return closed_flag_.load(std::memory_order_acquire); }
  uint64_t first_offset() const;
  LocalRange local_range() const;
  std::vector<SegmentInfo> segments() const;
  uint64_t subscribe(std::function<void(const CommittedChunk&)> listener);
  void unsubscribe(uint64_t id);
  bool wait_for_commit(uint64_t offset, std::chrono::milliseconds timeout);
  size_t commit_waiters() const;
  SealSyncStats seal_syncs() const;

  // stream_log_write.cpp
  Result<AppendResult> append(std::span<const BytesView> records);
  Result<AppendResult> append_entries(const EntryBatch& batch);
  // Several entry batches, committed together where the group bound allows
  // (StreamLog::append_copies).
  Result<AppendResult> append_entries_all(std::span<const EntryBatch> batches);
  std::optional<uint64_t> writer_sequence(std::string_view ref) const;
  bool seed_writer_sequences(const WriterSequences& writers);

  // stream_log_read.cpp
  Result<Resolution> resolve(const OffsetSpec& spec);
  Result<MappedRange> map_committed(uint64_t segment_first_offset, uint64_t position,
                                    uint64_t length);
  // A chunk walk's start: the segment and file position of the chunk that
  // starts at `offset` (or of the committed end).
  struct WalkStart {
    std::shared_ptr<LogSegment> segment;
    uint64_t position = 0;
  };
  Result<WalkStart> walk_start(uint64_t offset);
  // Walks and maps need the segment files on the POSIX file system
  // (unsupported otherwise).
  Status expect_mappable() const;
  // A reader's start: the segment of a local resolution and its file.
  struct ReadStart {
    std::shared_ptr<LogSegment> segment;
    std::shared_ptr<File> file;
  };
  Result<ReadStart> read_start(const Resolution& r);
  // A reader's view of `seg` now: its committed end and next offset, or, if
  // `chunk_offset` is past them, the segment that starts there (segments are
  // contiguous). out_of_range if retention removed it.
  struct SegmentView {
    std::shared_ptr<LogSegment> segment;
    uint64_t end = 0;
    uint64_t next = 0;
    bool moved = false;
  };
  Result<SegmentView> segment_view(const std::shared_ptr<LogSegment>& seg, uint64_t chunk_offset);
  Result<std::shared_ptr<File>> segment_file(const std::shared_ptr<LogSegment>& seg);

  // stream_log_retention.cpp
  Result<RetentionOutcome> apply_retention();
  RetentionOptions retention() const;
  void set_retention(const RetentionOptions& r);

  // stream_log_refresh.cpp
  Result<uint64_t> refresh();

  // stream_log_restart.cpp
  Status restart_writer();
  uint64_t writer_restarts() const { return writer_restarts_.load(std::memory_order_relaxed); }

  const std::string& dir() const { return dir_; }
  const LogOptions& options() const { return opts_; }
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  uint64_t last_chunk_epoch() const;
  const std::vector<std::string>& repairs() const { return repairs_; }

 private:
  struct PendingAppend;
  struct WrittenChunk;
  // The active segment as the leader writes it.
  struct WriterState {
    std::shared_ptr<LogSegment> seg;
    std::shared_ptr<File> file;
    std::shared_ptr<File> index;
    uint64_t next = 0;    // next offset to assign
    uint64_t pos = 0;     // end of the active segment as written
    uint64_t chunks = 0;  // chunks in the active segment as written
    // The active segment's space is reserved up to here (reserve_ahead);
    // `reserving` false once the file layer refused, until the next segment.
    uint64_t reserved_end = 0;
    bool reserving = true;
    int64_t last_ts = 0;  // chunk timestamps never go backwards
    Bytes seg_buf;        // chunks not yet written to the active segment
    Bytes idx_buf;        // their index records
    std::chrono::steady_clock::time_point last_sync{};
    bool rolled = false;  // this group rolled a segment (retention follows)
    // Writer sequences as written (committed or about to be): the snapshot
    // a segment's first chunk carries.
    WriterSequences writers;
    Bytes trailer;  // the trailer of the chunk being built
    Bytes filter;   // its filter section (empty: none)
  };

  // A sealed segment waiting for its background sync (fsync=never).
  struct SealJob {
    std::shared_ptr<File> file;   // the sealed segment
    std::shared_ptr<File> index;  // its index
    uint64_t successor_first = 0;
    std::chrono::steady_clock::time_point sealed_at;
  };

  // stream_log.cpp
  Status init(RecoveryResult&& rec);
  Status load_writers();
  std::vector<SegmentBounds> snapshot_locked() const;

  // stream_log_write.cpp
  Status check_batch(std::span<const BytesView> records, PendingAppend* w) const;
  Status check_entry_batch(const EntryBatch& b, PendingAppend* w) const;
  // Queues a checked batch and waits for its outcome (leading a group if
  // first in the queue).
  Result<AppendResult> enqueue(PendingAppend& w);
  // Queues checked batches back to back and waits for them all: a leader
  // takes as many as its group bound allows (one write, one fsync). The
  // first failure, or the range they occupy.
  Result<AppendResult> enqueue_all(std::span<PendingAppend> ws);
  // Leader work for one group (requires mu_ held via l; releases it for I/O).
  void lead(std::unique_lock<std::mutex>& l);
  void publish_locked(const std::vector<WrittenChunk>& written);
  Status write_group(const std::vector<PendingAppend*>& group, std::vector<WrittenChunk>* out);
  Status flush_buffers();
  // Reserves the active segment's space ahead of a write ending at `end`.
  void reserve_ahead(uint64_t end);
  Status roll();
  void fail_stop_locked(const Error& e);
  void notify_commit(const std::vector<WrittenChunk>& chunks);

  // stream_log_seal.cpp
  // At open (writer): syncs the sealed segments the mark does not cover,
  // then sets the mark (never) or removes it (always, interval).
  Status settle_sync_mark(std::optional<uint64_t> mark);
  // Backpressure: waits until fewer than max_pending_seal_syncs seals are
  // pending; the error of a failed seal sync, if any.
  Status wait_for_seal_room();
  void seal_in_background(SealJob job);
  void seal_loop();
  // Waits (seal_mu_ held in `l`) until the front seal should start its sync.
  void wait_for_seal_start(std::unique_lock<std::mutex>& l);
  Status run_seal(const SealJob& job);
  void seal_failed(const Error& e);
  // The error of a failed seal sync, if any (cheap when there is none).
  Status seal_status();
  // close(): waits for the pending seals and the sealer thread.
  Status drain_seals();
  // Frees the space reserve_ahead allocated past a segment's end; a failure
  // only costs disk space, so it is logged (naming the file), not returned.
  void release_reserved(File& f);

  // stream_log_read.cpp
  std::shared_ptr<LogSegment> find_segment_locked(uint64_t first_offset) const;
  // The segment that starts at `first_offset` and its committed end, or
  // not_found (removed by retention).
  Result<std::pair<std::shared_ptr<LogSegment>, uint64_t>> committed_segment(
      uint64_t segment_first_offset);
  Result<std::shared_ptr<File>> index_file(const std::shared_ptr<LogSegment>& seg);
  Result<std::optional<IndexRecord>> lookup(const ResolutionPlan& plan,
                                            const std::shared_ptr<LogSegment>& seg,
                                            const OffsetSpec& spec);

  // stream_log_restart.cpp
  // Waits for every pending seal and the sealer thread, then forgets a
  // failed seal's error (the restart syncs what it left).
  Status quiesce_seals();

  // stream_log_refresh.cpp
  void drop_removed_segments();
  // Appends the chunks written to the newest segment since; true if it was
  // read to its end (the writer may have rolled past it).
  Result<bool> refresh_newest();
  // Adds the newest segment's successor if the writer created it.
  Result<bool> add_successor();

  const std::string dir_;
  const LogOptions opts_;
  FileSystem& fs_;
  Clock& clock_;
  // Written by the group leader (a copied chunk's epoch), read anywhere.
  std::atomic<uint64_t> epoch_{1};
  std::vector<std::string> repairs_;
  FileLock lock_;

  mutable std::mutex mu_;
  // Oldest first; the last one is the active segment. Guarded by mu_.
  std::deque<std::shared_ptr<LogSegment>> segments_;
  std::atomic<uint64_t> committed_next_{0};
  GroupCommitQueue<PendingAppend> queue_;  // waiting appenders; the front one leads
  std::optional<Error> failed_;
  bool closed_ = false;
  std::atomic<bool> closed_flag_{false};  // closed_, readable without mu_
  size_t commit_waiters_ = 0;             // threads in wait_for_commit
  std::condition_variable commit_cv_;     // committed offset moved, or closed/failed
  std::condition_variable leader_cv_;     // wakes a leader sleeping out an fsync interval
  std::condition_variable idle_cv_;       // queue drained (close waits on it)
  std::map<uint64_t, std::function<void(const CommittedChunk&)>> listeners_;
  WriterSequences writers_;  // committed writer sequences; guarded by mu_
  uint64_t next_listener_id_ = 1;

  std::mutex files_mu_;      // the read handles in LogSegment
  std::mutex retention_mu_;  // one retention run at a time
  // The limits in force (set_retention); guarded by limits_mu_, which is
  // held only to copy them.
  mutable std::mutex limits_mu_;
  RetentionOptions limits_;
  std::mutex refresh_mu_;  // one refresh at a time (read-only mode)
  // One restart_writer at a time, never beside close(); taken before mu_.
  std::mutex restart_mu_;
  std::atomic<uint64_t> writer_restarts_{0};

  WriterState w_;  // the leader's (see above)

  // Background seal syncs (fsync=never), guarded by seal_mu_.
  mutable std::mutex seal_mu_;
  std::condition_variable seal_cv_;  // a seal finished (or failed)
  // A seal was queued, or close() wants every pending seal now.
  std::condition_variable seal_start_cv_;
  bool seal_now_ = false;  // close(): sync pending seals without waiting
  // steady_clock nanoseconds of the last group written: the sealer waits
  // for the writer to pause (see wait_for_seal_start).
  std::atomic<int64_t> last_write_ns_{0};
  std::deque<SealJob> seals_;  // pending, oldest first; the front one is syncing
  std::optional<Error> seal_error_;
  std::atomic<bool> seal_failed_{false};  // seal_error_ is set, readable without seal_mu_
  bool sealer_active_ = false;            // sealer_ runs seal_loop
  std::thread sealer_;
  uint64_t seals_completed_ = 0;
  uint64_t seal_waits_ = 0;
  bool seal_waiting_ = false;
};

}  // namespace strata::log
