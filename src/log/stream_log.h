// StreamLog: one stream's local log (osiris_log + osiris_writer in the
// original): a directory of segments of chunks with an index per segment,
// one writer, many readers.
//
// Writing. append() takes one batch of records and returns once the batch is
// committed. Concurrent appenders are coalesced (group commit,
// common/group_commit.h): the first waiting appender becomes the leader,
// packs every queued batch into chunks
// (a batch never spans chunks), writes them with one write per segment,
// syncs once according to the fsync policy, advances the committed offset,
// notifies the commit listeners, then releases the appenders. The committed
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
//    survives power loss; under ::never it survives a process crash (it is
//    in the page cache), not a power loss;
//  - under ::always and ::interval every segment except the newest was
//    fsynced with its index and the directory entry of its successor before
//    the successor got data;
//  - under ::never nothing on the append path syncs: a sealed segment, its
//    index and its successor's directory entry are synced in the background
//    by a thread the log owns (started at a roll, gone when idle), and then
//    the sync mark (sync_mark.h) moves past the segment. The sync starts
//    once the writer pauses (20 ms without a write), or when
//    max_pending_seal_syncs are pending, 1 s after the seal at the latest,
//    or at close(), so a burst is not slowed by the writeback of its own
//    first segment. Bounded: at most max_pending_seal_syncs sealed
//    segments (each at most max_segment_bytes) wait for their sync; the
//    append that would seal one more waits until the oldest is synced, and
//    close() waits for all. A failed background sync fail-stops the log
//    with its error;
//  - recovery (recovery.h) needs nothing but the segment files and the sync
//    mark.
//
// Thread safety: every public method may be called from any thread.
//
// The state and the steps behind these methods are StreamLog::Impl
// (stream_log_impl.h, which also lists the files they live in).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/fs.h"
#include "common/mapped_range.h"
#include "log/chunk_filter.h"
#include "log/hooks.h"
#include "log/log_files.h"
#include "log/log_options.h"
#include "log/offset_resolution.h"
#include "log/offset_spec.h"
#include "log/writer_sequences.h"

namespace strata::log {

class ChunkWalk;
class Reader;
struct ReaderOptions;

struct AppendResult {
  uint64_t first_offset = 0;  // offset of the batch's first record
  uint64_t next_offset = 0;   // first_offset + number of records
};

// A chunk brought in from another log (`strata import rabbitmq`): its batch
// becomes one chunk of its own, never packed with others, at exactly
// `first_offset` (which must be the log's committed end), stamped with the
// original timestamp and type — a tracking chunk (ChunkType 1, 2) keeps its
// offsets but is never delivered or read as records. `writers` (may be null)
// are the publishers' sequences the chunk raises (max), kept as the writer
// trailer of an append would keep them.
struct ImportedChunk {
  uint64_t first_offset = 0;
  int64_t timestamp_ms = 0;
  ChunkType type = ChunkType::user;
  const WriterSequences* writers = nullptr;
  // A copy of another strata log's chunk (append_copy): the epoch it was
  // written under (never below the log's last chunk's; the log's writer
  // epoch follows it) and its filter as stored (log/chunk_filter.h; empty:
  // none). Unset for an import.
  std::optional<uint64_t> epoch;
  BytesView filter;
};

// Osiris entries as they came off the wire (log/entries.h): simple and/or
// sub-batch entries, any compression, back to back; with an optional writer
// (publisher) reference and the highest publishing id in the batch, stored
// durably with the chunk (docs/formats/writer-sequences.md).
struct EntryBatch {
  BytesView entries;            // osiris entries back to back
  uint16_t num_entries = 0;     // entries in `entries`
  uint32_t num_records = 0;     // offsets they occupy (1 per simple entry, nrec per sub-batch)
  std::string_view writer_ref;  // empty: none (at most 255 bytes)
  uint64_t writer_seq = 0;      // highest publishing id in this batch
  // The messages' filter values (Publish v2), null when none has one; the
  // chunk that holds the batch keeps a filter of them (log/chunk_filter.h).
  // Read during the append only.
  const FilterValues* filter = nullptr;
  // Import only (ImportedChunk); null for every append of a live stream.
  // writer_ref must then be empty (the chunk's writers say it).
  const ImportedChunk* imported = nullptr;
};

// The background seal syncs of FsyncPolicy::never (for tests and metrics).
struct SealSyncStats {
  size_t pending = 0;           // sealed segments waiting for (or in) their sync
  uint64_t completed = 0;       // seal syncs done
  uint64_t waits = 0;           // times an append waited for room (backpressure)
  bool append_waiting = false;  // an append waits for room right now
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

  // Appends one batch of osiris entries verbatim, like append(): a single
  // chunk, all or nothing, blocks until committed under the fsync policy.
  // The entries are checked (framing, and num_entries / num_records must
  // match them): invalid_argument naming the entry. With a writer_ref, the
  // writer's sequence becomes max(its sequence, writer_seq) once committed,
  // and survives reopening (writer_sequence).
  Result<AppendResult> append_entries(const EntryBatch& batch);

  // Appends a chunk of another strata log — the whole stored chunk
  // (header, data, trailer) as its reader returned it (ChunkView::bytes) —
  // at the same offsets, with the same epoch, timestamp, type, entries,
  // filter and publishers' sequences: a replica's copy of its owner's log.
  // The header and body are verified first (corrupt, naming `where`); the
  // chunk must start at the log's committed end (invalid_argument) and its
  // epoch be at least the log's last chunk's (conflict): a copy never goes
  // back to an older writer. Only the trailer's framing may differ from
  // the original (a segment's first chunk carries every writer's
  // sequence). Blocks until committed under the fsync policy, like append.
  Result<AppendResult> append_copy(BytesView stored_chunk, const std::string& where);
  // append_copy of several chunks in order, committed together (one
  // write and one fsync under `always`, as far as a group's bound allows):
  // a copier catching up pays one fsync per batch, not one per chunk. The
  // range they occupy, or the first failure (chunks before it are
  // committed, none after it).
  Result<AppendResult> append_copies(std::span<const Bytes> stored_chunks,
                                     const std::string& where);

  // Highest sequence committed for a writer reference; nullopt if never
  // seen. Rebuilt at open from the newest segment holding a chunk; a
  // read-only log reports the sequences as of its open.
  std::optional<uint64_t> writer_sequence(std::string_view ref) const;
  // Adopts `writers` as the committed writer sequences of a log that holds
  // no record and has no append in progress — one started after a remote
  // tier that has them (tier/writer_recovery.h); its first chunk's snapshot
  // then stores them. False, changing nothing, otherwise.
  bool seed_writer_sequences(const WriterSequences& writers);

  // The offset after the last committed record (readers see [first, this)).
  uint64_t committed_next() const;
  uint64_t first_offset() const;
  LocalRange local_range() const;
  std::vector<SegmentInfo> segments() const;
  // The epoch new chunks are stamped with (LogOptions::epoch).
  uint64_t epoch() const;
  // The epoch of the last committed chunk; 0 when the log holds none.
  uint64_t last_chunk_epoch() const;
  const std::string& dir() const;
  // What the log was opened with; its retention may have changed since
  // (retention()).
  const LogOptions& options() const;
  // What recovery repaired when this log was opened (also logged).
  const std::vector<std::string>& repairs() const;
  // OK, or the failure that stopped the writer.
  Status health() const;
  // After a fail-stop (a full disk, an I/O error), makes the log writable
  // again at its committed end without closing it: readers, listeners and
  // the uploader carry on with this log. Waits for the failed append group
  // and the background seal syncs to end, removes what a roll that failed
  // left past the committed end, cuts the active segment back to its
  // committed end (the bytes past it were never confirmed), verifies its
  // committed chunks (CRCs) and rewrites its index from them, syncs the
  // segment, the index and any sealed segment a failed seal left unsynced,
  // then accepts appends again. OK at once when not stopped. Errors:
  // closed; unsupported (read-only); the I/O error that keeps it stopped
  // (retry later); corrupt when committed bytes no longer verify (it
  // stays stopped: only a reopen's recovery may drop them). Blocks on I/O.
  Status restart_writer();
  // Times restart_writer brought the writer back since the log was opened.
  uint64_t writer_restarts() const;
  bool read_only() const;

  // Where a reader opened at `spec` starts: the rules of offset_resolution.h
  // over the committed segments (a spec below the local log resolves to its
  // oldest chunk).
  Result<Resolution> resolve(const OffsetSpec& spec);
  // Opens a reader at a spec.
  Result<std::unique_ptr<Reader>> open_reader(const OffsetSpec& spec, const ReaderOptions& ro);
  Result<std::unique_ptr<Reader>> open_reader(const OffsetSpec& spec);
  // Opens a reader at a resolution of this log.
  Result<std::unique_ptr<Reader>> open_reader_at(const Resolution& r, const ReaderOptions& ro);

  // Blocks until committed_next() > offset, the timeout passes, or the log
  // is closed or fail-stopped. Returns true if committed_next() > offset.
  bool wait_for_commit(uint64_t offset, std::chrono::milliseconds timeout);
  // Threads blocked in wait_for_commit right now (for tests and metrics: a
  // test knows a reader waits before it appends, without sleeping).
  size_t commit_waiters() const;
  SealSyncStats seal_syncs() const;

  // What an uploader reads, without copying (the log's one reading contract
  // beside Reader; a segment is named by its first offset, as a
  // CommittedChunk names it).
  //  walk_chunks: a cursor over the committed chunks' headers from `offset`,
  //  which must be the first offset of a chunk or the committed end (chunk_walk.h).
  //  Errors: out_of_range when `offset` is not in [first_offset(),
  //  committed_next()] (retention removed it, or not written yet), corrupt
  //  when it falls inside a chunk, unsupported as for map_committed (a walk
  //  maps the segments too).
  Result<std::unique_ptr<ChunkWalk>> walk_chunks(uint64_t offset);
  //  map_committed: a read-only memory map of [position, position+length) of
  //  the segment's committed bytes, straight from the page cache (no copy);
  //  it stays valid if retention deletes the segment meanwhile. The caller
  //  verifies what it reads (chunk CRCs) and keeps its resident set small
  //  with MappedRange::drop_before. Errors: not_found (retention removed the
  //  segment), out_of_range (past the committed end), unsupported (the log's
  //  FileSystem is not the POSIX one: nothing to map).
  Result<MappedRange> map_committed(uint64_t segment_first_offset, uint64_t position,
                                    uint64_t length);

  // Deletes the oldest segments beyond the retention limits (never the
  // active segment; LogHooks::may_delete_segment can veto). Runs after each
  // segment roll when retention_on_roll is set.
  Result<RetentionOutcome> apply_retention();
  // The limits apply_retention enforces: options().retention until
  // set_retention replaces them (an operator altering a live stream's
  // retention). The next apply_retention, and every roll after, uses them.
  RetentionOptions retention() const;
  void set_retention(const RetentionOptions& r);

  // Commit listeners, the one way to observe commits (the tier's uploader
  // through tier::TieringHooks, the server's deliveries and served streams
  // through node::StreamHandle): `listener` is called once per committed
  // chunk, in offset order, after the committed offset covers it and before
  // the appenders of that chunk are told, on the thread that commits it
  // (the group-commit leader), for as long as subscribed. It must be quick (queue work, don't do
  // it), must not call back into this log's append/close/subscribe, and must not throw. A listener
  // registered after a commit never hears of it (read the log for what came before). Returns the id
  // unsubscribe() takes.
  uint64_t subscribe(std::function<void(const CommittedChunk&)> listener);
  // After it returns, the listener is no longer called, except by a commit
  // already being notified on the writer's thread.
  void unsubscribe(uint64_t id);

  // Read-only logs: picks up chunks (and segments) another process has
  // appended since, up to the last complete chunk, and wakes readers.
  // Returns the new committed next offset.
  Result<uint64_t> refresh();

  // Waits for in-flight appends and for pending seal syncs, syncs (writer
  // mode), releases the writer lock. Returns the error of a seal sync that
  // failed, if one did. Later appends fail with Errc::closed; readers see
  // Errc::closed. Idempotent.
  Status close();
  bool closed() const;

 private:
  friend class Reader;
  friend class ChunkWalk;
  class Impl;  // stream_log_impl.h

  StreamLog(std::string dir, LogOptions opts);

  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::log
