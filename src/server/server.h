// Server: `strata serve` — a node (node/node.h) behind the RabbitMQ Stream
// protocol. One Asio io_context run by a small fixed set of threads carries
// every connection (each on its own strand; no thread per connection);
// whatever blocks (appends, opening readers, creating and deleting streams)
// runs as tasks on a blocking pool and comes back as one event
// (common/task.h). Connections are in connection.h; the per-stream state
// they share in served_stream.h.
//
// Thread safety: every public method may be called from any thread.
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/ownership.h"
#include "common/blocking_pool.h"
#include "common/task.h"
#include "node/node.h"
#include "server/cluster_offsets.h"
#include "server/offset_store.h"
#include "server/replica_feed.h"
#include "server/sac_group.h"
#include "server/serve_config.h"
#include "server/served_stream.h"
#include "server/super_streams.h"

namespace strata::server {

class Connection;

struct ServerCounters {
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> publishers{0};
  std::atomic<uint64_t> consumers{0};
  std::atomic<uint64_t> messages_in{0};
  std::atomic<uint64_t> messages_confirmed{0};
  std::atomic<uint64_t> chunks_out{0};
  std::atomic<uint64_t> chunks_joined{0};  // stored chunks sent inside another's Deliver
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> protocol_errors{0};
  // Replica subscriptions (replica_feed.h): chunks read from the bucket and
  // forwarded from owners, and subscriptions made at owners.
  std::atomic<uint64_t> replica_remote_chunks{0};
  std::atomic<uint64_t> replica_forwarded_chunks{0};
  std::atomic<uint64_t> replica_links{0};
};

class Server {
 public:
  // Opens the node, binds the listener and starts accepting.
  static Result<std::unique_ptr<Server>> start(ServeConfig cfg);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound address ("127.0.0.1", the real port when 0 was asked for).
  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  // What clients are told to connect to (Open, Metadata).
  std::string advertised_host() const;
  uint32_t advertised_port() const;

  // Graceful stop: stop accepting, let appends in flight finish and their
  // confirms go out, close every connection, close the node (manifests
  // persisted by its uploaders' close). Idempotent.
  Status stop();

  node::Node& node() { return *node_; }
  const ServeConfig& config() const { return cfg_; }
  asio::io_context& io() { return runtime_->io(); }
  TaskContext tasks() { return runtime_->tasks(); }
  ServerCounters& counters() { return counters_; }

  // The stream's shared state, opened on first use; not_found if absent.
  Result<std::shared_ptr<ServedStream>> served(const std::string& name);
  // After a deletion: retire the stream and tell its watchers.
  void stream_deleted(const std::string& name);

  // Consumer offsets (StoreOffset / QueryOffset), under <data_dir>/tracking.
  OffsetStore& offsets() { return *offsets_; }
  // In a cluster they are kept in etcd instead (cluster_offsets.h); null
  // for a single node.
  ClusterOffsets* cluster_offsets() { return cluster_offsets_.get(); }
  // Super streams, under <data_dir>/super_streams.
  SuperStreams& supers() { return *supers_; }
  // Creates a stream the way the protocol's Create does: the node's stream,
  // with no stored offsets (a deleted stream's are not inherited). Blocks.
  Status create_stream(const std::string& name, const node::StreamSettings& settings = {});
  // Deletes a stream the way the protocol's Delete does: appends stopped,
  // the node's deletion, its stored offsets, watchers told. Blocks.
  Status delete_stream(const std::string& name);

  // Cluster mode (serve_config.h, "cluster"): the node's stream ownership;
  // null for a single node.
  cluster::Ownership* ownership() { return ownership_.get(); }
  // A stream this node does not serve but the cluster has (its catalog
  // entry exists): clients are to ask Metadata for its leader.
  bool served_elsewhere(const std::string& name);
  // This node lost `name` (cluster): retire it and tell its publishers and
  // consumers (MetadataUpdate), so they re-query Metadata.
  void stream_lost(const std::string& name);
  // A stream this node hands over to another (cluster rebalancing): its
  // publishers and consumers are dropped with a MetadataUpdate and the
  // appends in flight end before this returns (blocking, at most 10 s).
  void stream_handing_off(const std::string& name);

  // What a replica subscription of `name` needs (server_replicas.cpp):
  // not_found unless this node is in a cluster and another node serves
  // `name` (or will, after a takeover).
  Result<ReplicaEnv> replica_env(const std::string& name);

  void connection_closed(uint64_t id);

  // One step of the single-active-consumer groups (sac_group.h), under
  // their lock, given the time now; the effects go to the connections they
  // name. The groups' next answer deadline is then (re)armed on a timer
  // whose expiry is a step of its own (SacGroups::expire).
  void sac(const std::function<std::vector<SacEffect>(SacGroups&, SacTime)>& step);

  std::string metrics_text() const;
  nlohmann::json status_json() const;

 private:
  // Drops the served stream (appender stopped, clients told with a
  // MetadataUpdate); with `drain`, first waits (at most 10 s) for the
  // appends in flight.
  void retire_served(const std::string& name, bool drain);
  explicit Server(ServeConfig cfg);
  void accept();
  // Under sac_mu_: sends `effects` and arms sac_timer_ for the groups' next
  // deadline.
  void sac_apply(const std::vector<SacEffect>& effects);
  void on_sac_timer();
  Status create_cluster_stream(const std::string& name, const node::StreamSettings& settings);

  const ServeConfig cfg_;
  // Declared first: destroyed last, after everything holding its strands
  // and timers.
  std::shared_ptr<node::Runtime> runtime_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<OffsetStore> offsets_;
  std::unique_ptr<ClusterOffsets> cluster_offsets_;
  std::unique_ptr<SuperStreams> supers_;
  std::unique_ptr<cluster::Ownership> ownership_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::string host_;
  uint16_t port_ = 0;
  ServerCounters counters_;

  mutable std::mutex mu_;
  std::condition_variable conn_cv_;  // a connection closed
  std::map<std::string, std::shared_ptr<ServedStream>> streams_;
  std::map<uint64_t, std::weak_ptr<Connection>> connections_;
  uint64_t next_connection_id_ = 1;
  std::mutex sac_mu_;  // taken before mu_, never after
  SacGroups sac_;
  // Fires at sac_'s next answer deadline; used under sac_mu_ only.
  std::optional<asio::steady_timer> sac_timer_;
  std::optional<SacTime> sac_armed_;  // the deadline it is armed for
  bool stopping_ = false;
  bool stopped_ = false;
  Status stop_status_;
};

}  // namespace strata::server
