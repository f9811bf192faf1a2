// ServedStreams: the streams this server serves, each with its shared state
// (served_stream.h: the node's handle, its appender, its watchers), opened
// on first use and retired when the stream is deleted, lost to another
// node, or handed over. It answers the connections' questions about streams
// (room_services.h: StreamDirectory, ReplicaSource).
//
// Thread safety: any thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/ownership.h"
#include "node/node.h"
#include "server/room_services.h"
#include "server/serve_config.h"
#include "server/server_counters.h"

namespace strata::server {

class TlsContexts;

class ServedStreams final : public StreamDirectory, public ReplicaSource {
 public:
  ServedStreams(node::Node& node, SuperStreams& supers, const ServeConfig& cfg,
                ServerCounters& counters);
  ~ServedStreams() override;

  // In a cluster: the node's stream ownership (before any connection);
  // with `peer_tls` (cluster.peer_tls), owners are dialled on their TLS
  // listeners with its current client context.
  void attach_cluster(cluster::Ownership* ownership, const TlsContexts* peer_tls = nullptr);

  // ---- StreamDirectory, ReplicaSource ----
  Result<std::shared_ptr<ServedStream>> served(const std::string& name) override;
  proto::ResponseCode missing_code(const std::string& name) override;
  std::optional<uint32_t> partition_index(const std::string& super,
                                          const std::string& stream) override;
  Result<ReplicaEnv> replica_env(const std::string& name) override;

  // A stream this node does not serve but the cluster has (its catalog
  // entry exists): clients are to ask Metadata for its leader.
  bool served_elsewhere(const std::string& name);
  // The stream as served now, if a client has used it since it was opened
  // here (null otherwise; never opens anything).
  std::shared_ptr<ServedStream> existing(const std::string& name);
  // Drops the served stream: appender stopped, its publishers and
  // consumers told (MetadataUpdate). With `drain`, first waits (at most
  // kRetireDrainWait) for the appends in flight: what a hand-over persists
  // must include them.
  void retire(const std::string& name, bool drain);
  // Every stream served now (the server's stop).
  std::vector<std::shared_ptr<ServedStream>> all();
  void clear();

 private:
  node::Node& node_;
  SuperStreams& supers_;
  const ServeConfig& cfg_;
  ServerCounters& counters_;
  // Set once by attach_cluster while ownership's callbacks may already run.
  std::atomic<cluster::Ownership*> ownership_{nullptr};
  std::atomic<const TlsContexts*> peer_tls_{nullptr};
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<ServedStream>> streams_;
};

}  // namespace strata::server
