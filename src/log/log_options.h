// Configuration of one stream log.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "common/clock.h"
#include "common/fs.h"
#include "common/result.h"
#include "log/hooks.h"

namespace strata::log {

// When appended chunks become durable, and therefore committed.
enum class FsyncPolicy {
  always,    // one fsync per group of coalesced appends, before the group commits
  interval,  // at most one fsync per fsync_interval_ms; appends wait for the next one
  never,     // no fsync: commit after the write (the page cache survives a process crash);
             // sealed segments are synced in the background (max_pending_seal_syncs)
};
std::string_view fsync_policy_name(FsyncPolicy p);
Result<FsyncPolicy> parse_fsync_policy(std::string_view text);

struct RetentionOptions {
  // Delete the oldest segments while the log is larger than this (bytes).
  std::optional<uint64_t> max_bytes;
  // Delete the oldest segments whose newest chunk is older than this (ms).
  std::optional<int64_t> max_age_ms;

  bool any() const { return max_bytes || max_age_ms; }
  bool operator==(const RetentionOptions&) const = default;
};

// Where FsyncPolicy::never reserves a segment's space to, once a write ends
// at `end` past what is reserved: as much again as the segment holds, at
// most `reserve_ahead` (LogOptions::reserve_ahead_bytes), not past
// `max_segment` unless the write itself is.
inline uint64_t reserve_ahead_to(uint64_t end, uint64_t reserve_ahead, uint64_t max_segment) {
  return std::max(end, std::min(end + std::min(reserve_ahead, end), max_segment));
}

struct LogOptions {
  FileSystem* fs = nullptr;  // nullptr: posix_fs()
  Clock* clock = nullptr;    // nullptr: system_clock(); chunk timestamps and retention ages

  FsyncPolicy fsync = FsyncPolicy::always;
  int64_t fsync_interval_ms = 100;  // for FsyncPolicy::interval
  // FsyncPolicy::never: at most this many sealed segments wait for their
  // background sync; an append that would seal one more waits (>= 1).
  size_t max_pending_seal_syncs = 2;

  // A segment is rolled before a chunk that would take it past either bound
  // (a segment always takes at least one chunk).
  uint64_t max_segment_bytes = 256ull << 20;
  uint64_t max_segment_chunks = 256000;
  // FsyncPolicy::never: the active segment's disk space is allocated ahead
  // of the writer (File::reserve, fallocate without changing the size) by as
  // much as the segment already holds, up to this many bytes. A write into
  // allocated space skips the file system's per-page block reservation,
  // ~25 % of an append into the page cache (docs/BENCHMARKS.md). A slow
  // stream reserves little; the unused rest is freed when the segment is
  // sealed and at close(). 0: off. (`always` and `interval` do not reserve:
  // their syncs then also convert the reserved extents, which cost more.)
  uint64_t reserve_ahead_bytes = 4ull << 20;

  // Bound on one chunk's data section. A batch larger than this is refused;
  // coalesced batches are packed into chunks up to this size.
  uint64_t max_chunk_bytes = 8ull << 20;

  // Bytes of the filter a chunk keeps of its messages' filter values
  // (log/chunk_filter.h; 16..255): the stream's stream-filter-size-bytes.
  uint32_t filter_size_bytes = 16;

  // Writer epoch stamped on new chunks. nullopt: the epoch of the last
  // chunk (1 for an empty log). An epoch lower than the last chunk's is
  // refused (a deposed writer must not append).
  std::optional<uint64_t> epoch;

  RetentionOptions retention;
  // Run retention after every segment roll (it can also be run explicitly).
  bool retention_on_roll = true;

  std::shared_ptr<LogHooks> hooks;  // optional

  // Open without modifying anything: no writer, no repair. A torn tail is
  // left alone and read as not-yet-written; refresh() picks up what another
  // process appends. For inspection and cross-process consumers.
  bool read_only = false;
  // Create the directory and an empty first segment if missing.
  bool create_if_missing = false;
  // The offset a newly created log starts at (create_if_missing, and
  // StreamRegistry::create). Non-zero when a stream's earlier offsets live
  // elsewhere: a node whose local disk was lost recreates the log after
  // what the remote tier holds, so new records never reuse those offsets.
  uint64_t first_offset = 0;
  // Also verify the body CRC of every chunk in sealed segments on open
  // (the active segment is always fully verified).
  bool verify_sealed_on_open = false;

  // A reader reads ahead this many bytes at most per read (its only buffer,
  // released when the reader catches up with the committed offset).
  size_t read_ahead_bytes = 1 << 20;
};

}  // namespace strata::log
