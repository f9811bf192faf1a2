// RemoteReader: the remote half of a StreamReader. It walks one snapshot of
// a stream's persisted manifest from a start offset and delivers the chunks
// of its fragments in order, read by ranged GETs through a RangePrefetch.
//
// Ranges are plain byte ranges of a fragment's data (range_bytes each), not
// aligned to chunks: a chunk that straddles two ranges is copied into one
// buffer. Only the first fragment needs its index (to find the chunk where
// the reader starts); later fragments are read from data position 0.
//
// Checks, all naming the object key and the offset (Errc::corrupt): each
// chunk header and, if asked, its data CRC; each chunk starts where the
// previous one ended; a fragment's chunks end exactly at its manifest
// entry's next offset and size; a range returns the bytes asked for.
//
// Hand-over: next(stop_at) returns nullopt, at a fragment boundary, when
// the next fragment starts at or after `stop_at` (the local log has it) or
// the snapshot has no more fragments; refresh() continues in a newer one.
#pragma once

#include <cstdint>
#include <deque>
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "log/chunk.h"
#include "tier/fragment_iterator.h"
#include "tier/fragment_object.h"
#include "tier/object_keys.h"
#include "tier/range_prefetch.h"

namespace strata::tier {

struct RemoteStart {
  enum class Kind { offset, timestamp };
  Kind kind = Kind::offset;
  uint64_t offset = 0;    // offset: the chunk holding it
  int64_t timestamp = 0;  // timestamp: the first chunk with timestamp >= it
};

struct RemoteChunk {
  log::ChunkHeader header;
  BytesView bytes;  // header + data + trailer; valid until the next call
};

// Chunks and bytes read from the bucket, summed over every reader of one
// stream (the node's strata_tier_remote_read_*_total).
struct RemoteReadCounters {
  std::atomic<uint64_t> chunks{0};
  std::atomic<uint64_t> bytes{0};
};

struct RemoteReaderDeps {
  std::shared_ptr<objstore::ObjectStore> store;
  std::shared_ptr<BlockingPool> pool;
  GroupFetch groups;  // group objects (through the node's cache)
  uint64_t range_bytes = 4ull << 20;
  bool verify_crc = true;
  RangePrefetchOptions prefetch;
  std::shared_ptr<RemoteReadCounters> counters;  // none: not counted
};

class RemoteReader {
 public:
  // Positions the reader; `keys` must outlive it. Reads the first
  // fragment's index when the start is inside it.
  static Result<std::unique_ptr<RemoteReader>> open(RemoteReaderDeps deps, const ObjectKeys& keys,
                                                    std::shared_ptr<const Manifest> root,
                                                    const RemoteStart& start);

  Result<std::optional<RemoteChunk>> next(uint64_t stop_at);
  // The first offset of the next chunk.
  uint64_t cursor() const { return cursor_; }
  // Continues from cursor() in a newer snapshot of the same stream. Only
  // valid when next() has returned nullopt (at a fragment boundary).
  void refresh(std::shared_ptr<const Manifest> newer);

  uint64_t range_gets() const { return prefetch_.stats().gets + index_gets_; }
  uint64_t group_reads() const { return iter_.group_reads(); }
  RangePrefetchStats prefetch_stats() const { return prefetch_.stats(); }
  // Bytes held now: prefetched ranges plus the straddling-chunk buffer.
  uint64_t held_bytes() const { return prefetch_.held_bytes() + stitch_.capacity(); }

 private:
  // A fragment whose ranges are queued, from data position `pos` (where
  // the consumer is) to `size`.
  struct Planned {
    FragmentRef ref;
    std::string key;
    uint64_t pos = 0;      // consumer's data position
    uint64_t planned = 0;  // data position up to which ranges are queued
  };

  RemoteReader(RemoteReaderDeps deps, const ObjectKeys& keys, std::shared_ptr<const Manifest> root,
               uint64_t from);
  Result<std::pair<uint64_t, uint64_t>> locate_in_fragment(const FragmentRef& f,
                                                           const RemoteStart& start);
  // Queues ranges ahead within the budget; `need` more bytes of the front
  // fragment are queued regardless of the budget.
  Status plan(uint64_t stop_at, uint64_t need);
  Status copy_out(uint64_t n, char* dst);
  Result<BytesView> take(uint64_t n);
  Status check_range(size_t i, const Bytes& b);

  RemoteReaderDeps deps_;
  const ObjectKeys& keys_;
  FragmentIterator iter_;
  std::optional<FragmentRef> lookahead_;
  bool exhausted_ = false;
  std::deque<Planned> frags_;
  RangePrefetch prefetch_;
  uint64_t rpos_ = 0;  // consumer's position inside the front range
  Bytes stitch_;
  uint64_t cursor_ = 0;
  uint64_t first_start_pos_ = 0;  // data position of the start chunk in the first fragment
  uint64_t index_gets_ = 0;
  uint64_t delivered_ = 0;  // chunks returned so far
};

// Reads and decodes the index of fragment `f` (one ranged GET of the
// object's tail; its length is bounded by the smallest possible chunk).
Result<std::vector<ChunkIndexRecord>> read_fragment_index(objstore::ObjectStore& store,
                                                          const std::string& key,
                                                          const FragmentRef& f);

}  // namespace strata::tier
