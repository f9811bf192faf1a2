// ReplicaAcks: how far the replica copies of one stream served here hold
// the owner's log (`confirm = replicated`, cluster.replica_copies). Each
// other node's copier subscribes at the owner and grants one credit per
// chunk it has appended to its copy under its fsync policy
// (replica_copier.h): the owner's copy delivery turns each credit into an
// acknowledgement of the oldest chunk sent and not yet acknowledged
// (delivery.h, DeliveryOptions::on_copy_ack), and reports it here.
//
// end(): offsets below it are held by this node's log and by the copy of
// every node required (every other node registered in the cluster, as the
// ownership's view names them; set_required) — or are in a persisted
// manifest. Until the first set_required only the persisted manifest
// counts, so nothing is confirmed as replicated before the owner knows
// whom to wait for. A confirm under `replicated` waits for end() to pass
// the batch (stream_appender.h), and consumers read only below it
// (delivery_limit.h): so any node that takes the stream over with its copy
// (node/stream_open.cpp keeps a copy's tail written by the tenure it
// fences) holds every confirmed message, and no consumer reads a message a
// takeover could drop.
//
// Thread safety: any thread; callbacks run without the lock held.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "node/stream_handle.h"
#include "server/delivery_limit.h"

namespace strata::server {

class ReplicaAcks : public DeliveryLimit {
 public:
  explicit ReplicaAcks(std::shared_ptr<node::StreamHandle> stream);

  // `node`'s copy holds the owner's log below `next`.
  void ack(const std::string& node, uint64_t next);
  // The nodes whose copies a replicated confirm waits for.
  void set_required(std::set<std::string> nodes);
  // The stream is no longer served here: every wait ends with `why`.
  void fail_all(const Error& why);

  uint64_t end() const override;
  void await_beyond(uint64_t offset, std::function<void(Status)> done) override;
  // For /status: each node's acknowledged next offset.
  std::map<std::string, uint64_t> acked() const;

 private:
  uint64_t end_locked() const;
  // Calls the waits end() has passed; takes and releases mu_.
  void wake();

  const std::shared_ptr<node::StreamHandle> stream_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> acked_;
  std::optional<std::set<std::string>> required_;
  std::multimap<uint64_t, std::function<void(Status)>> waits_;  // by offset
  std::optional<Error> failed_;
};

}  // namespace strata::server
