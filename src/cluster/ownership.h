// Ownership: the shell of cluster stream ownership (the decisions are
// cluster/ownership_core.h). It holds the node's etcd lease, registers
// <ns>/nodes/<id> = {"address": "<advertised host:port>", "tls_address": …}
// on it, follows
// <ns>/ (streams, nodes, owners) with one watch — no polling — and runs the
// core's effects: lease grant / keepalive / revoke, the acquire txn
// (If create_revision(<ns>/owners/<stream>) == 0 Then put it = <id> with
// the lease), Node::acquire_stream to open a won stream and
// Node::release_stream to stop one. Every etcd call and every open runs as
// a task with a deadline (common/task.h) on its own small pool and comes
// back to one strand as exactly one event; a timer ticks the core's clock
// check independently of any task, so a hung call cannot delay the stop.
// Where: the effects run in ownership_effects.cpp (one function each), the
// watch of <ns>/ in ownership_view.cpp, the state in ownership_impl.h.
//
// Keys (docs/formats/catalog.md, "etcd backend", has them all):
//   <ns>/nodes/<id>       {"address": "host:port", "tls_address": "host:port"}
//                         (each only when that listener exists), on the
//                         node's lease
//   <ns>/owners/<stream>  "<id>", on the owner's lease
//   <ns>/deletions/<stream> "<id>" of the node that requested the deletion
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cluster/ownership_core.h"
#include "common/result.h"
#include "etcd/etcd_client.h"

namespace strata::node {
class Node;
}

namespace strata::cluster {

// A followed key (OwnershipConfig::followed_dirs) as the watch saw it.
struct FollowedKey {
  std::string key;                   // without "<ns>/", e.g. "settings/s1"
  std::optional<std::string> value;  // unset: deleted
};

struct OwnershipConfig {
  std::string node_id;        // [A-Za-z0-9._-]{1,128}
  std::string advertise;      // host:port clients reach this node at; "": no plain listener
  std::string tls_advertise;  // host:port TLS clients reach it at; "": no TLS listener
  // This node dials its peers on their TLS addresses (cluster.peer_tls),
  // else on their plain ones: a peer that registers none of that kind is
  // unreachable from here, which is logged as the mistake it is.
  bool peer_tls = false;
  std::string ns = "strata";
  OwnershipTiming timing;
  int64_t tick_ms = 0;  // 0: lease_ttl_ms / 20 (at least 10)
  // Called on the ownership's strand right after a stream this node served
  // was closed because it lost it (not at stop()), so that the server can
  // tell its clients; must not block.
  std::function<void(const std::string& stream)> on_release;
  // Deletes a stream this node serves whose deletion another node requested
  // (request_deletion); blocking, run as a task. Unset: such requests wait
  // for a node that has it.
  std::function<Status(const std::string& stream)> on_remove;
  // Before a stream is handed over to its first choice (rebalancing,
  // ownership_core.h): stop taking writes for it and wait for the appends
  // in flight; blocking, run in the hand-off's task, after the node hid the
  // stream. on_release follows once it is closed.
  std::function<void(const std::string& stream)> on_handoff;
  // How long a hand-off may take to persist what is committed; past it the
  // stream is served again and handed over later.
  std::chrono::milliseconds handoff_timeout{30000};
  // Keys under <ns>/ that ownership does not decide on but its user
  // follows through the same watch (a stream's settings, super streams):
  // those under one of `followed_dirs` (e.g. "settings/"). on_followed
  // gets them with `snapshot` false as they change, in revision order, and
  // with `snapshot` true as the whole followed set read when the watch
  // starts or starts over (a key missing from it is gone). Called on the
  // watch's thread or the ownership's strand: must not block.
  std::vector<std::string> followed_dirs;
  // Where the shell keeps the end of this node's lease (steady clock ms
  // since its epoch; 0 without one), current after every event: the node's
  // append and confirm paths read it (node::Node::lease_fence). Optional.
  std::shared_ptr<std::atomic<int64_t>> lease_valid_until;
  std::function<void(const std::vector<FollowedKey>& keys, bool snapshot)> on_followed;
};

// invalid_argument naming the setting.
Status validate(const OwnershipConfig& c);

// What the shell saw last (for status, the server's Metadata and tests).
struct ClusterView {
  int64_t revision = 0;
  std::map<std::string, std::string> nodes;      // id -> advertised address ("": none)
  std::map<std::string, std::string> tls_nodes;  // id -> TLS address, for nodes with one
  // The nodes' addresses of one kind: a TLS client's or link's, or plain.
  const std::map<std::string, std::string>& addresses(bool tls) const {
    return tls ? tls_nodes : nodes;
  }
  std::map<std::string, OwnerRecord> owners;     // stream -> owner
  std::vector<std::string> streams;              // catalog streams
  std::map<std::string, std::string> deletions;  // stream -> node that requested it
  // Ownerless streams' candidacies: stream -> node -> what it stood with.
  std::map<std::string, std::map<std::string, Candidacy>> candidacies;
};

class Ownership {
 public:
  // Starts following the cluster and competing for streams. `node` must
  // outlive the Ownership (stop() before closing the node).
  static Result<std::unique_ptr<Ownership>> start(OwnershipConfig cfg,
                                                  std::shared_ptr<etcd::EtcdClient> client,
                                                  node::Node* node);
  ~Ownership();
  Ownership(const Ownership&) = delete;
  Ownership& operator=(const Ownership&) = delete;

  // Closes every owned stream, revokes the lease (owner keys go with it:
  // other nodes take over at once), stops. Idempotent.
  void stop();

  // Whether this node serves `stream` now (owner key ours and open).
  bool serving(const std::string& stream) const;
  // The advertised address of the stream's owner; "" when ownerless.
  std::string owner_address(const std::string& stream) const;
  ClusterView view() const;
  // Waits until `stream` has an owner serving it that this node can see
  // (this node: serving; another: its key present); its node id, or
  // Errc::timeout.
  Result<std::string> await_owner(const std::string& stream, std::chrono::milliseconds timeout);
  // Deletes `stream` from a node that does not serve it: requests the
  // deletion in the catalog (<ns>/deletions/<stream> = this node's id, only
  // while the stream exists) and waits until the entry is gone — deleted by
  // its owner, or, ownerless, by this node once it has taken it. Errors:
  // not_found (no such stream), timeout (the request stays; its owner
  // finishes it), etcd's.
  Status request_deletion(const std::string& stream, std::chrono::milliseconds timeout);
  nlohmann::json status_json() const;
  // The cluster's part of /metrics (docs/METRICS.md, "Cluster").
  std::string metrics_text() const;
  uint64_t fences() const;
  // Served streams re-acquired after their writer was fenced (core's writer_fences).
  uint64_t writer_fences() const;
  // Streams handed over to their first choice (core's handoffs).
  uint64_t handoffs() const;
  const OwnershipConfig& config() const;

  // The state and the steps behind these methods (ownership_impl.h).
  class Impl;

 private:
  explicit Ownership(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::cluster
