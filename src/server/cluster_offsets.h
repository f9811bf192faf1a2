// ClusterOffsets: consumer offsets (StoreOffset / QueryOffset) of a cluster
// node, kept in etcd so that they follow the stream from owner to owner:
//   <ns>/offsets/<stream>/<reference>  = the offset, decimal
// (docs/formats/server-state.md, "In a cluster"). Deleting the stream deletes them, in
// the catalog's remove transaction (catalog/etcd_catalog.h).
//
// Writing. store() only records the value in memory; one writer thread
// writes each key that has a newer value than etcd, one key at a time, so
// at most one write per key is in flight and stores that arrive meanwhile
// coalesce into the next write: the latest wins, a consumer storing after
// every message costs one etcd write per round trip, not per store. A
// write is a txn `If create_revision(<ns>/streams/<stream>) > 0 and
// mod_revision(key) == <as last seen> Then put`: no offset is left for a
// stream deleted meanwhile, and an attempt etcd applies late (retried
// across a leader election) cannot overwrite a newer value. A key written
// meanwhile by another node is written again over its new revision (the
// latest store wins, as before). A failed write is retried after `retry`
// with the value current then.
//
// Reading. query() answers this node's newest value if it is not written
// yet, else reads the key (a linearizable etcd read): so any node answers
// the latest value stored anywhere once it is written.
//
// What a crash loses: the values stored on the crashed node and not yet
// written (at most the latest per key, stored within about one etcd round
// trip before the crash, or longer while etcd is unreachable); queries
// then answer the previously written value — the consumer resumes a little
// earlier (at-least-once, as with the single-node store).
//
// Thread safety: every method may be called from any thread; store() never
// waits for I/O, query() does (run it on a pool).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "etcd/etcd_client.h"

namespace strata::server {

struct ClusterOffsetsOptions {
  std::string ns = "strata";             // catalog.namespace
  std::chrono::milliseconds retry{250};  // after a failed write
};

struct ClusterOffsetsStats {
  uint64_t stores = 0;
  uint64_t writes = 0;          // etcd writes that succeeded
  uint64_t write_failures = 0;  // retried
  uint64_t dropped = 0;         // values of streams that no longer exist
  uint64_t conflicts = 0;       // the key moved on since last seen: written again over it
};

class ClusterOffsets {
 public:
  static std::unique_ptr<ClusterOffsets> start(std::shared_ptr<etcd::EtcdClient> client,
                                               ClusterOffsetsOptions opts);
  // close().
  ~ClusterOffsets();
  ClusterOffsets(const ClusterOffsets&) = delete;
  ClusterOffsets& operator=(const ClusterOffsets&) = delete;

  // Records `offset` for (stream, reference), written soon. invalid_argument:
  // empty or oversized reference; closed after close().
  Status store(std::string_view stream, std::string_view reference, uint64_t offset);
  // The latest offset (see above); nullopt when none is stored. Blocks on
  // etcd. Errors: etcd's (unavailable, timeout), corrupt for a value that
  // is not a decimal offset (naming the key).
  Result<std::optional<uint64_t>> query(std::string_view stream, std::string_view reference);
  // Waits until every value stored before the call is written (or dropped);
  // timeout otherwise.
  Status flush(std::chrono::milliseconds timeout);
  // The stream was deleted: its values not written yet are dropped (etcd's
  // are gone with the catalog entry).
  void stream_removed(std::string_view stream);
  // Writes what is pending (within `grace`), then stops the writer. Idempotent.
  void close(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  ClusterOffsetsStats stats() const;

 private:
  struct Impl;  // cluster_offsets.cpp: the pending values, the writer thread
  explicit ClusterOffsets(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
