// What a cluster node follows beside ownership, through the ownership's
// one watch of <ns>/ (cluster/ownership.h, followed_dirs):
//   <ns>/settings/<stream>       a stream's settings: the node that serves
//                                the stream applies a change another node
//                                stored (an alteration made there) — read
//                                back from the catalog, so that changes in
//                                quick succession end with the latest
//   <ns>/super_streams/<name>    super streams (super_stream_store.h): every
//                                node routes with the set the cluster holds
// Applying settings blocks on the disk, so it runs on `pool`, one batch of
// streams per job; super streams are only held in memory and change at once.
#pragma once

#include <memory>

#include "cluster/ownership.h"
#include "common/blocking_pool.h"

namespace strata::node {
class Node;
}

namespace strata::server {

class SuperStreams;

// Sets oc.followed_dirs and oc.on_followed. `node`, `supers` and `pool`
// must outlive the ownership started with `oc`.
void follow_cluster_keys(cluster::OwnershipConfig& oc, node::Node& node, SuperStreams& supers,
                         std::shared_ptr<BlockingPool> pool);

}  // namespace strata::server
