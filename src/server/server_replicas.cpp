// Server::replica_env: what a replica subscription (replica_feed.h) of a
// stream this node does not own reads through — the stream's persisted
// manifest from the catalog and the bucket, fragments through the node's
// group cache, and the owner's address from the cluster's view.
#include <fmt/format.h>

#include <algorithm>

#include "server/server.h"

namespace strata::server {

Result<ReplicaEnv> Server::replica_env(const std::string& name) {
  if (!ownership_ || !served_elsewhere(name)) {
    return Error(Errc::not_found, fmt::format("stream {} is not in the cluster", name));
  }
  ReplicaEnv env;
  env.stream = name;
  if (node_->config().tiering.enabled) {
    STRATA_ASSIGN_OR_RETURN(env.remote, node_->remote_stream(name));
  }
  cluster::Ownership* own = ownership_.get();
  env.owner = [own, name]() {
    OwnerLookup o;
    auto v = own->view();
    auto it = v.owners.find(name);
    if (it == v.owners.end()) {
      bool listed = std::find(v.streams.begin(), v.streams.end(), name) != v.streams.end();
      o.kind = listed ? OwnerLookup::Kind::ownerless : OwnerLookup::Kind::gone;
      return o;
    }
    auto addr = v.nodes.find(it->second.node_id);
    auto hp = addr == v.nodes.end() ? Result<std::pair<std::string, uint16_t>>(
                                          Error(Errc::not_found, "owner not registered"))
                                    : parse_host_port("node " + addr->first, addr->second);
    if (!hp.ok()) return o;  // ownerless for now: its registration is not seen yet
    o.kind = OwnerLookup::Kind::owned;
    o.node_id = it->second.node_id;
    o.host = hp->first;
    o.port = hp->second;
    return o;
  };
  // Every node of a cluster runs one configuration: its first user is
  // what nodes log in to each other as.
  if (!cfg_.server.users.empty()) {
    env.user = cfg_.server.users.front().name;
    env.password = cfg_.server.users.front().password;
  }
  // A takeover takes a lease TTL plus the new owner's recovery; past three
  // TTLs and a margin the consumer is better told to look again.
  env.reconnect_limit = std::chrono::milliseconds(3 * cfg_.cluster.lease_ttl_ms + 5000);
  env.owner_check = std::chrono::milliseconds(std::max<int64_t>(cfg_.cluster.lease_ttl_ms / 8, 50));
  env.remote_chunks = &counters_.replica_remote_chunks;
  env.forwarded_chunks = &counters_.replica_forwarded_chunks;
  env.links = &counters_.replica_links;
  return env;
}

}  // namespace strata::server
