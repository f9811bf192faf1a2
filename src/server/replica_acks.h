// ReplicaAcks: how far the replica copies of one stream served here hold
// the owner's log (`confirm = replicated`, cluster.replica_copies). Each
// other node's copier subscribes at the owner and grants one credit per
// chunk it has appended to its copy under its fsync policy
// (replica_copier.h): the owner's copy delivery turns each credit into an
// acknowledgement of the oldest chunk sent and not yet acknowledged
// (delivery.h, DeliveryOptions::on_copy_ack), and reports it here.
//
// end(): offsets below it are held by this node's log and by the copies of
// a majority of the stream's nodes — or are in a persisted manifest. The
// stream's nodes are `cluster_size` of them (its initial-cluster-size), or
// every node registered in the cluster when that is 0; the owner is one,
// so copies_needed() of the other registered nodes' copies must hold an
// offset (set_copies). Until the first set_copies only the persisted
// manifest counts, so nothing is confirmed as replicated before the owner
// knows whom to count. A confirm under `replicated` waits for end() to
// pass the batch (stream_appender.h), and consumers read only below it
// (delivery_limit.h). A takeover goes to the node whose copy reaches
// furthest (cluster/ownership_core.h, "Electing the most complete copy"),
// which keeps its copy's tail (node/stream_open.cpp): so while fewer
// than a majority of the stream's nodes are lost, the new owner holds
// every confirmed message, and no consumer reads a message a takeover
// could drop.
//
// Thread safety: any thread; callbacks run without the lock held.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cluster/ownership.h"
#include "node/stream_handle.h"
#include "server/delivery_limit.h"

namespace strata::server {

// How many of the other nodes' copies a replicated confirm waits for: a
// majority of the stream's nodes less the owner's own log. The stream's
// nodes are its `cluster_size` (initial-cluster-size) or the `registered`
// nodes (this one included), whichever is more: every registered node
// keeps a copy and may be elected owner, and an election needs a majority
// of the nodes to stand (cluster/election.h), so only a confirm quorum of
// a majority of them all surely meets every election's. A smaller
// initial-cluster-size therefore does not lower it. It may exceed the
// other nodes registered now: then nothing is confirmed until enough come
// back, as a quorum that has lost its majority confirms nothing.
size_t copies_needed(uint64_t cluster_size, size_t registered);

class ReplicaAcks : public DeliveryLimit {
 public:
  explicit ReplicaAcks(std::shared_ptr<node::StreamHandle> stream);

  // `node`'s copy holds the owner's log below `next`. Ignored once this
  // node's cluster lease has ended (StreamHandle::lease_ended).
  void ack(const std::string& node, uint64_t next);
  // The other registered nodes, `needed` of whose copies must hold an
  // offset before it is confirmed (copies_needed()).
  void set_copies(std::set<std::string> others, size_t needed);
  // The same from the ownership's view, of which `self` is this node.
  void count_copies_of(const cluster::ClusterView& view, const std::string& self);
  // The stream is no longer served here: every wait ends with `why`.
  void fail_all(const Error& why);

  uint64_t end() const override;
  void await_beyond(uint64_t offset, std::function<void(Status)> done) override;
  // For /status: each node's acknowledged next offset.
  std::map<std::string, uint64_t> acked() const;
  // For /status: {"copies_needed", "confirmed_next" (end()), "acked": {node: next}}.
  nlohmann::json status() const;

 private:
  uint64_t end_locked() const;
  void recount_locked();
  // Calls the waits end() has passed; takes and releases mu_.
  void wake();

  const std::shared_ptr<node::StreamHandle> stream_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> acked_;
  std::optional<std::set<std::string>> others_;
  size_t needed_ = 0;
  // Below it `needed_` copies hold the log (recount_locked); UINT64_MAX
  // when none is needed.
  uint64_t copies_hold_ = 0;
  std::multimap<uint64_t, std::function<void(Status)>> waits_;  // by offset
  std::optional<Error> failed_;
};

}  // namespace strata::server
