// StreamOps: creating, deleting and describing streams as the protocol does
// (room_services.h, StreamAdmin) — on a single node through its own node,
// in a cluster through the catalog and the stream's owner — keeping the
// server's per-stream state in step: a created stream starts without
// stored offsets, a deleted one stops its appends first and takes its
// offsets with it.
//
// Thread safety: any thread; the mutations block.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "cluster/ownership.h"
#include "node/node.h"
#include "server/cluster_offsets.h"
#include "server/handshake_room.h"
#include "server/offset_store.h"
#include "server/room_services.h"
#include "server/served_streams.h"
#include "server/super_streams.h"

namespace strata::server {

struct StreamOpsDeps {
  node::Node* node = nullptr;
  ServedStreams* served = nullptr;
  SuperStreams* supers = nullptr;
  OffsetStore* offsets = nullptr;
  int64_t lease_ttl_ms = 0;
  Advertised advertised;  // this node as a broker (single node)
  // Whether a stream of this stored name may be created now (its vhost's
  // max-queues limit); unset: always.
  std::function<Status(const std::string& name)> may_create;
  // Whether the vhost of this stored name exists now; unset: always. A
  // stream created while its vhost was being deleted is deleted again.
  std::function<bool(const std::string& name)> vhost_exists;
  // The same, read again from where the vhosts are kept (a cluster's
  // etcd), not from the rules this node last polled; unset: vhost_exists.
  // Asked once a stream is created: another node's deletion of the vhost
  // may not have reached this node's rules yet.
  std::function<bool(const std::string& name)> vhost_exists_now;
};

class StreamOps final : public StreamAdmin {
 public:
  explicit StreamOps(StreamOpsDeps deps);
  // In a cluster, once its ownership runs (before any connection): streams
  // are created through the catalog and deleted by their owner, offsets
  // kept in etcd. Until then (ownership's start may already remove a
  // stream served here) operations are local.
  void attach_cluster(cluster::Ownership* ownership, ClusterOffsets* offsets);
  // One node on the etcd catalog: its offsets are kept in etcd too (and go
  // with a deleted stream).
  void attach_offsets(ClusterOffsets* offsets);

  Status create_stream(const std::string& name, const node::StreamSettings& settings) override;
  // Appends stopped, the node's deletion, its stored offsets, its clients
  // told. Not served here in a cluster: forwarded through the catalog to
  // the node that serves it.
  Status delete_stream(const std::string& name) override;
  // Changes a stream's retention while it runs (node/node.h, alter_stream):
  // `to` is its settings as they are to be. In a cluster only the node that
  // serves the stream alters it (the catalog keeps the new settings for
  // its later owners); elsewhere Errc::unavailable naming that node.
  Status alter_stream(const std::string& name, const node::StreamSettings& to);
  // The settings `name` was created with (or last altered to): the
  // catalog's in a cluster, else the node's.
  Result<node::StreamSettings> stream_settings(const std::string& name);
  Status create_super_stream(const SuperStream& s, const node::StreamSettings& settings) override;
  Status delete_super_stream(const std::string& name) override;
  proto::MetadataResponse metadata(const std::vector<std::string>& streams,
                                   const Advertised& self) override;
  Result<std::vector<std::string>> route(const std::string& super,
                                         const std::string& routing_key) override;
  Result<std::vector<std::string>> partitions(const std::string& super) override;

 private:
  Status create_cluster_stream(const std::string& name, const node::StreamSettings& settings);
  Status already_exists_as(const std::string& name, const node::StreamSettings& settings,
                           Error exists);
  static Error vhost_gone(const std::string& name);
  proto::MetadataResponse cluster_metadata(const std::vector<std::string>& streams,
                                           const Advertised& self);

  const StreamOpsDeps d_;
  // Set once by attach_cluster while ownership's callbacks may already run.
  std::atomic<cluster::Ownership*> ownership_{nullptr};
  std::atomic<ClusterOffsets*> cluster_offsets_{nullptr};
};

}  // namespace strata::server
