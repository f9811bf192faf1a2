// StreamLog: one stream's local log (osiris_log + osiris_writer in the
// original): a directory of segments of chunks with an index per segment,
// one writer, many readers.
//
// Writing. append() takes one batch of records and returns once the batch is
// committed. Concurrent appenders are coalesced (group commit): the first
// waiting appender becomes the leader, packs every queued batch into chunks
// (a batch never spans chunks), writes them with one write per segment,
// syncs once according to the fsync policy, advances the committed offset,
// notifies hooks and listeners, then releases the appenders. The committed
// offset never moves past data whose write or sync failed: on any I/O error
// the log fail-stops — that append and every later one fail, readers still
// see what was committed, and reopening (which runs recovery) is the way
// back.
//
// Reading. Readers (reader.h) see committed data only. resolve() turns an
// offset spec into a position; readers follow the committed offset with a
// condition variable (wait_for_commit), never by spinning.
//
// Durability invariants (tested by crashing, see tests/log/):
//  - every offset acknowledged under FsyncPolicy::always or ::interval
//    survives power loss; under ::never it survives a process crash;
//  - every segment except the newest was fsynced with its index and the
//    directory entry of its successor before the successor got data;
//  - recovery (recovery.h) needs nothing but the segment files.
//
// Thread safety: every public method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/file_lock.h"
#include "common/fs.h"
#include "log/hooks.h"
#include "log/log_files.h"
#include "log/log_options.h"
#include "log/offset_spec.h"
#include "log/recovery.h"

namespace strata::log {

class Reader;
struct ReaderOptions;

struct AppendResult {
  uint64_t first_offset = 0;  // offset of the batch's first record
  uint64_t next_offset = 0;   // first_offset + number of records
};

// Where a spec resolves to.
struct Resolution {
  // A hook claimed the spec (LogHooks::resolve_below_local): read from
  // claim.offset through the hook's owner; the fields below are unset.
  std::optional<BelowLocalClaim> claim;
  uint64_t segment_first_offset = 0;  // segment of the first chunk to read
  uint64_t position = 0;              // its file position (the committed end for `next`)
  uint64_t chunk_first_offset = 0;    // first offset of that chunk (== committed next at the end)
  uint64_t start_offset = 0;          // first record to deliver (records before it are skipped)
};

struct RetentionOutcome {
  std::vector<SegmentInfo> deleted;  // oldest first
  uint64_t bytes_deleted = 0;
  bool vetoed = false;        // a hook kept a segment the limits would have deleted
  uint64_t first_offset = 0;  // the log's first offset afterwards
};

class StreamLog : public std::enable_shared_from_this<StreamLog> {
 public:
  // Opens (running recovery) or, with create_if_missing, creates the log in
  // `dir`. In writer mode the directory is locked against other writers.
  static Result<std::shared_ptr<StreamLog>> open(const std::string& dir, LogOptions opts = {});

  ~StreamLog();
  StreamLog(const StreamLog&) = delete;
  StreamLog& operator=(const StreamLog&) = delete;

  // Appends one batch (1..65535 records, at most max_chunk_bytes of chunk
  // data) as part of a single chunk, so after a crash the batch is either
  // wholly present or wholly absent. Blocks until the batch is committed
  // under the fsync policy. Errors: invalid_argument (bad batch), closed,
  // fail_stopped (an earlier I/O failure), or the I/O error that stopped
  // the log during this append.
  Result<AppendResult> append(std::span<const BytesView> records);
  Result<AppendResult> append(std::initializer_list<BytesView> records) {
    return append(std::span<const BytesView>(records.begin(), records.size()));
  }

  // The offset after the last committed record (readers see [first, this)).
  uint64_t committed_next() const { return committed_next_.load(std::memory_order_acquire); }
  uint64_t first_offset() const;
  LocalRange local_range() const;
  std::vector<SegmentInfo> segments() const;
  uint64_t epoch() const { return epoch_; }
  const std::string& dir() const { return dir_; }
  const LogOptions& options() const { return opts_; }
  // What recovery repaired when this log was opened (also logged).
  const std::vector<std::string>& repairs() const { return repairs_; }
  // OK, or the failure that stopped the writer.
  Status health() const;
  bool read_only() const { return opts_.read_only; }

  // Resolution rules:
  //  first       the oldest local chunk, unless a hook claims `first`;
  //  last        the last committed chunk (next if the log is empty);
  //  next        the committed end;
  //  offset N    N >= committed next: the committed end; N below the local
  //              first offset: a hook's claim, else the oldest chunk;
  //              otherwise the chunk holding N (records before N skipped);
  //  timestamp T the first chunk with timestamp >= T; the committed end if
  //              none; T older than the first local chunk: a hook's claim,
  //              else the oldest chunk.
  Result<Resolution> resolve(const OffsetSpec& spec);
  // Opens a reader at a spec. A hook's claim is returned as Errc::out_of_range
  // naming the claimed offset (callers that route claims use resolve() and
  // open_reader_at()).
  Result<std::unique_ptr<Reader>> open_reader(const OffsetSpec& spec, const ReaderOptions& ro);
  Result<std::unique_ptr<Reader>> open_reader(const OffsetSpec& spec);
  // Opens a reader at a local resolution (claim unset).
  Result<std::unique_ptr<Reader>> open_reader_at(const Resolution& r, const ReaderOptions& ro);

  // Blocks until committed_next() > offset, the timeout passes, or the log
  // is closed or fail-stopped. Returns true if committed_next() > offset.
  bool wait_for_commit(uint64_t offset, std::chrono::milliseconds timeout);

  // Raw access for upload. Both read committed bytes only and name the
  // segment file and position in errors; a segment removed by retention is
  // Errc::not_found.
  //  read_raw_chunk: the whole chunk at (segment, position) byte for byte,
  //  header verified, body CRC verified if asked.
  Result<Bytes> read_raw_chunk(uint64_t segment_first_offset, uint64_t position, bool verify_crc);
  //  read_segment_range: [position, position+length) of a segment file.
  //  With verify_crc the range must hold whole chunks, each verified.
  Result<Bytes> read_segment_range(uint64_t segment_first_offset, uint64_t position,
                                   uint64_t length, bool verify_crc);

  // Deletes the oldest segments beyond the retention limits (never the
  // active segment; LogHooks::may_delete_segment can veto). Runs after each
  // segment roll when retention_on_roll is set.
  Result<RetentionOutcome> apply_retention();

  // Commit listeners: called like LogHooks::on_commit (same thread, same
  // order), for as long as subscribed.
  uint64_t subscribe(std::function<void(const CommittedChunk&)> listener);
  void unsubscribe(uint64_t id);

  // Read-only logs: picks up chunks (and segments) another process has
  // appended since, up to the last complete chunk, and wakes readers.
  // Returns the new committed next offset.
  Result<uint64_t> refresh();

  // Waits for in-flight appends, syncs (writer mode), releases the writer
  // lock. Later appends fail with Errc::closed; readers see Errc::closed.
  // Idempotent.
  Status close();
  bool closed() const;

 private:
  friend class Reader;
  struct Segment {
    Segment(std::string p, std::string ip) : path(std::move(p)), index_path(std::move(ip)) {}

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
  struct PendingAppend;
  struct WrittenChunk;

  StreamLog(std::string dir, LogOptions opts);

  Status init(RecoveryResult&& rec);
  // Leader work for one group (requires mu_ held via l; releases it for I/O).
  void lead(std::unique_lock<std::mutex>& l);
  Status write_group(const std::vector<PendingAppend*>& group, std::vector<WrittenChunk>* out);
  Status flush_buffers();
  Status roll();
  void fail_stop_locked(const Error& e);
  void notify_commit(const std::vector<WrittenChunk>& chunks);

  std::shared_ptr<Segment> find_segment_locked(uint64_t first_offset) const;
  std::shared_ptr<Segment> segment_for_offset_locked(uint64_t offset) const;
  Result<std::shared_ptr<File>> segment_file(const std::shared_ptr<Segment>& seg);
  Result<std::shared_ptr<File>> index_file(const std::shared_ptr<Segment>& seg);
  Result<IndexRecord> lookup_offset(const std::shared_ptr<Segment>& seg, uint64_t chunks,
                                    uint64_t offset);
  Result<std::optional<IndexRecord>> lookup_timestamp(const std::shared_ptr<Segment>& seg,
                                                      uint64_t chunks, int64_t ts);
  Status refresh_segment_locked_io(const std::shared_ptr<Segment>& seg, bool* complete);

  const std::string dir_;
  const LogOptions opts_;
  FileSystem& fs_;
  Clock& clock_;
  uint64_t epoch_ = 1;
  std::vector<std::string> repairs_;
  FileLock lock_;

  mutable std::mutex mu_;
  // Oldest first; the last one is the active segment. Guarded by mu_.
  std::deque<std::shared_ptr<Segment>> segments_;
  std::atomic<uint64_t> committed_next_{0};
  std::deque<PendingAppend*> queue_;  // waiting appenders; the front one leads
  std::optional<Error> failed_;
  bool closed_ = false;
  std::atomic<bool> closed_flag_{false};  // closed_, readable without mu_
  std::condition_variable commit_cv_;     // committed offset moved, or closed/failed
  std::condition_variable leader_cv_;     // wakes a leader sleeping out an fsync interval
  std::condition_variable idle_cv_;       // queue drained (close waits on it)
  std::map<uint64_t, std::function<void(const CommittedChunk&)>> listeners_;
  uint64_t next_listener_id_ = 1;

  std::mutex files_mu_;      // the read-handle caches in Segment
  std::mutex retention_mu_;  // one retention run at a time
  std::mutex refresh_mu_;    // one refresh at a time (read-only mode)

  // Writer state: touched only by the current leader (or close after the
  // queue drained), so no lock.
  std::shared_ptr<Segment> active_seg_;
  std::shared_ptr<File> active_file_;
  std::shared_ptr<File> active_index_;
  uint64_t write_next_ = 0;    // next offset to assign
  uint64_t write_pos_ = 0;     // end of the active segment as written
  uint64_t write_chunks_ = 0;  // chunks in the active segment as written
  int64_t last_ts_ = 0;        // chunk timestamps never go backwards
  Bytes seg_buf_;              // chunks not yet written to the active segment
  Bytes idx_buf_;              // their index records
  std::chrono::steady_clock::time_point last_sync_{};
  bool rolled_ = false;  // this group rolled a segment (retention follows)
};

}  // namespace strata::log
