// TrackedOffsets: consumer offsets as the offset room asks for them
// (room_services.h, ConsumerOffsets). A single node keeps them in files
// under <data_dir>/tracking (offset_store.h), for the streams it has; a
// cluster node in etcd (cluster_offsets.h), where they follow the stream:
// any node that knows the stream — serving it or seeing it in the catalog —
// takes a store and answers a query, not only its owner. A single node on
// the etcd catalog keeps them in both: etcd answers first, so that a node
// on a new disk answers as before; the files answer what was stored before
// etcd had it (a node upgraded to this rule).
//
// Thread safety: any thread.
#pragma once

#include "node/node.h"
#include "server/cluster_offsets.h"
#include "server/offset_store.h"
#include "server/room_services.h"
#include "server/served_streams.h"

namespace strata::server {

class TrackedOffsets final : public ConsumerOffsets {
 public:
  // `cluster` null: a single node, offsets in `local`. `local_too`: a
  // single node with offsets in `cluster` and `local` both.
  TrackedOffsets(node::Node& node, ServedStreams& served, OffsetStore& local,
                 ClusterOffsets* cluster, bool local_too = false);

  bool query_blocks() const override { return cluster_ != nullptr; }
  Status store(const std::string& stream, const std::string& reference, uint64_t offset) override;
  Result<std::optional<uint64_t>> query(const std::string& stream,
                                        const std::string& reference) override;

 private:
  // Whether `stream` is one this node takes offsets of.
  bool known(const std::string& stream);

  node::Node& node_;
  ServedStreams& served_;
  OffsetStore& local_;
  ClusterOffsets* const cluster_;
  const bool local_too_;
};

}  // namespace strata::server
