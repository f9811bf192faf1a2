// StreamReader: one reader over both tiers of a stream (log_reader +
// remote_reader in the original). Opened at an offset spec, it delivers
// committed chunks in offset order — from remote fragments while the offset
// is below the local log, then from local segments — and follows the
// committed offset like a local reader. No offset is skipped or repeated at
// the boundary, also while local retention and uploads move it.
//
// Resolution across tiers (remote = the node's cached persisted manifest
// [first, next); local = [local first, committed next)):
//   first        the remote first offset if the remote tier holds data below
//                the local log, else the local first chunk;
//   last, next   local (the newest data is always local);
//   offset N     N >= local first: local; remote first <= N < local first:
//                remote; below both: the oldest available;
//   timestamp T  the first chunk with timestamp >= T, searching the remote
//                tier (per-fragment timestamps, then the fragment's index)
//                when T is older than the first local chunk.
//
// Remote chunks come from ranged GETs of fragment objects: one GET of the
// fragment's index, then its chunk bytes in ranges of range_bytes, several
// ranges in flight ahead of the consumer within a byte budget
// (prefetch_bytes) — the reader's whole memory. Every remote chunk's header
// and data CRC are verified; a bad one is Errc::corrupt naming the object
// key and the offset.
//
// Fails closed: when the node has no loaded manifest for the stream (not yet
// loaded, or resynchronizing) a read that needs the remote tier fails with
// Errc::unavailable; an object-store failure is returned as a transient
// error; in both cases the reader has not moved, and calling again retries.
//
// A reader is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/blocking_pool.h"
#include "common/result.h"
#include "log/chunk.h"
#include "log/offset_spec.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "objstore/object_store.h"
#include "tier/manifest_cache.h"
#include "tier/object_keys.h"
#include "tier/remote_reader.h"

namespace strata::tier {

enum class Tier : uint8_t { local, remote };

// A chunk as delivered; `bytes` stays valid until the next call.
struct TieredChunk {
  log::ChunkHeader header;
  BytesView bytes;  // the whole chunk: header + data + trailer, verbatim
  Tier tier = Tier::local;
  // Local chunks: where the bytes live (a server may send them from the
  // file without copying them through user space).
  uint64_t segment_first_offset = 0;
  uint64_t position = 0;
  // Set only by next_chunk_location() for local chunks: the segment file
  // (`bytes` is then empty — the body was not read).
  std::shared_ptr<File> file;

  BytesView data() const { return bytes.substr(log::kChunkHeaderSize, header.data_len); }
};

struct StreamReaderOptions {
  uint64_t prefetch_bytes = 16ull << 20;  // remote bytes fetched ahead, at most
  uint64_t range_bytes = 4ull << 20;      // one ranged GET
  uint32_t max_ranges_in_flight = 4;
  bool verify_crc = true;
  // One ranged GET ends by then, or is given up and fetched again.
  std::chrono::milliseconds request_deadline{180'000};
  // Transient GET failures retried (with backoff) before next_chunk fails.
  uint32_t transient_retries = 4;
};

// What a reader needs from its node.
// Without a store or a cache the reader reads the local log only.
struct TierContext {
  std::string stream;  // the stream's name (its object keys derive from it)
  std::shared_ptr<objstore::ObjectStore> store;
  std::shared_ptr<ManifestCache> cache;
  std::string key_prefix;
  std::shared_ptr<BlockingPool> pool;  // runs the prefetching GETs (none: on the caller's thread)
  std::shared_ptr<RemoteReadCounters> reads;  // the stream's, on a node (none: not counted)
};

struct StreamReaderStats {
  uint64_t remote_chunks = 0;
  uint64_t remote_bytes = 0;
  uint64_t local_chunks = 0;
  uint64_t local_bytes = 0;
  uint64_t range_gets = 0;
  uint64_t range_retries = 0;  // transient GET failures retried (deadlines included)
  uint64_t group_reads = 0;
  uint64_t peak_buffered_bytes = 0;  // never above prefetch_bytes + one chunk
  uint64_t tier_switches = 0;
  // Offsets of a local stream that retention removed before this reader
  // reached them; it went on after them.
  uint64_t retention_skipped_offsets = 0;
};

// What a RemoteReader of this stream reads through, under these options
// (the node's store, pool and group cache). Also the replica feed's.
RemoteReaderDeps remote_reader_deps(const TierContext& ctx, const StreamReaderOptions& o,
                                    const ObjectKeys& keys);

class StreamReader {
 public:
  static Result<std::unique_ptr<StreamReader>> open(std::shared_ptr<log::StreamLog> log,
                                                    TierContext ctx, const log::OffsetSpec& spec,
                                                    StreamReaderOptions opts = {});
  ~StreamReader();

  // The next chunk, or nullopt at the committed end.
  Result<std::optional<TieredChunk>> next_chunk();
  // Like next_chunk, but a local chunk's body is not read: it comes back as
  // its header, `file` and `position` (log::Reader::next_chunk_location), so
  // a server can send it with sendfile(2). Remote chunks come as next_chunk
  // returns them (in memory, CRC verified).
  Result<std::optional<TieredChunk>> next_chunk_location();
  // The records of the next chunk at or after the start offset (like
  // log::Reader::next_records); 0 at the committed end.
  Result<size_t> next_records(std::vector<log::Record>* out);
  // Waits until more is committed (see log::Reader::wait).
  bool wait(std::chrono::milliseconds timeout);

  uint64_t next_offset() const;
  Tier tier() const;
  StreamReaderStats stats() const;

  class Impl;

 private:
  explicit StreamReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::tier
