// What the reading benchmarks (read, first, memory) share: a stream on a
// running node whose older part is in the remote tier only, the fragments
// that part consists of, and the ranged GETs a reader makes of them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_env.h"
#include "tier/fragment_ref.h"
#include "tier/manifest.h"
#include "tier/object_keys.h"
#include "tier/range_prefetch.h"
#include "tier/stream_reader.h"

namespace strata::bench {

// How the stream is written.
struct TieredStreamSpec {
  double mib = 512;                       // record payload written
  size_t batch = 100;                     // records per append (one chunk each)
  size_t record = 1024;                   // bytes per record
  uint64_t segment_bytes = 32ull << 20;   // local segments
  uint64_t fragment_bytes = 64ull << 20;  // fragment_target_bytes
  uint32_t persist_threshold = 5;
  // Where to hard-link the stream's directory before local retention
  // removes the uploaded segments ("" for no copy): a log that still has
  // every segment, sharing their pages with the node's.
  std::string local_copy_dir;
};

// Written with fsync never by one producer (so every append is one chunk),
// flushed (everything uploaded and persisted), then the node is reopened
// with local retention max_bytes = 1 and retention applied: every segment
// below the active one is gone from local disk, so offsets
// [remote_first, local_first) are in the remote tier only.
struct TieredStream {
  std::string data_dir;
  StoreUnderTest::Place place;
  std::unique_ptr<node::Node> node;
  std::shared_ptr<log::StreamLog> log;
  std::shared_ptr<const tier::Manifest> manifest;  // the persisted one
  uint64_t remote_first = 0;
  uint64_t local_first = 0;
  uint64_t next = 0;
  double write_seconds = 0;
  double upload_seconds = 0;  // from the last append to flush's return

  ~TieredStream();
  // The fragments a reader from remote_first reads before it reaches the
  // local log: those starting below local_first (fetching groups through
  // the node's cache).
  std::vector<tier::FragmentRef> remote_fragments() const;
  tier::ObjectKeys keys() const;
  // Stops the node and removes what the run stored.
  void finish(StoreUnderTest& store);
};

inline const std::string kReadStream = "s";

std::unique_ptr<TieredStream> make_tiered_stream(StoreUnderTest& store, const std::string& base,
                                                 const std::string& name,
                                                 const TieredStreamSpec& spec);

// The ranges a reader starting at the first chunk of `frags` fetches, in
// the order it fetches them: each fragment's data in pieces of
// range_bytes (remote_reader.h).
std::vector<tier::ObjectRange> reader_ranges(const tier::ObjectKeys& keys,
                                             const std::vector<tier::FragmentRef>& frags,
                                             uint64_t range_bytes);

// GETs every range with `threads` threads on one client, each taking the
// next range (the raw peer of a reader with that many ranges in flight).
// Returns the wall seconds.
double raw_ranged_gets(objstore::ObjectStore& store, const std::vector<tier::ObjectRange>& ranges,
                       int threads);

// The consumer's work on a chunk: splitting it into its records.
void consume_records(const log::ChunkHeader& h, BytesView data);

}  // namespace strata::bench
