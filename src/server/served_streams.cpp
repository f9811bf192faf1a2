#include "server/served_streams.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "common/assert.h"
#include "server/server_limits.h"
#include "server/tls_context.h"

namespace strata::server {

ServedStreams::ServedStreams(node::Node& node, SuperStreams& supers, const ServeConfig& cfg,
                             ServerCounters& counters)
    : node_(node), supers_(supers), cfg_(cfg), counters_(counters) {}

ServedStreams::~ServedStreams() = default;

void ServedStreams::attach_cluster(cluster::Ownership* ownership, const TlsContexts* peer_tls) {
  STRATA_ASSERT(ownership_.load() == nullptr, "a server joins one cluster, once");
  peer_tls_ = peer_tls;
  ownership_ = ownership;
}

Result<std::shared_ptr<ServedStream>> ServedStreams::served(const std::string& name) {
  {
    std::lock_guard l(mu_);
    auto it = streams_.find(name);
    if (it != streams_.end() && !it->second->retired()) return it->second;
  }
  // Built without the lock: the ownership's view takes its own.
  // A lookup in the node's table: answers at once, whatever other streams'
  // opens are waiting for (node/stream_table.h).
  STRATA_ASSIGN_OR_RETURN(auto stream, node_.handle(name));
  AppenderOptions ao;
  ao.remote_timeout_ms = node_.config().tiering.remote_confirm_timeout_ms;
  // Appends under `fsync = never` take microseconds: without a linger each
  // Publish frame would be a chunk of its own under load.
  if (node_.config().fsync == log::FsyncPolicy::never) {
    ao.linger = std::chrono::microseconds(cfg_.server.append_linger_us);
  }
  // Consumers of a remote-confirmed stream read only what is persisted. The
  // confirm mode comes from the handle only: the stream's setting, else the
  // node's default (node/stream_settings.h).
  // Consumers of a cluster's locally confirmed stream read only while this
  // node's lease holds.
  // A replicated stream in a cluster confirms, and delivers, what a
  // majority of its nodes hold (replica_acks.h); on a single node it is
  // local.
  std::shared_ptr<ReplicaAcks> replicas;
  if (stream->confirm() == node::ConfirmMode::replicated && ownership_.load()) {
    replicas = std::make_shared<ReplicaAcks>(stream);
    ao.replicas = replicas;
    // Kept current by the copies' scan (replica_copies.h).
    cluster::Ownership* own = ownership_.load();
    replicas->count_copies_of(own->view(), own->config().node_id);
  }
  std::shared_ptr<DeliveryLimit> limit = replicas ? replicas
                                         : stream->confirm() == node::ConfirmMode::remote
                                             ? persisted_limit(stream)
                                         : ownership_.load() ? lease_limit(stream)
                                                             : nullptr;
  auto appender = std::make_shared<StreamAppender>(stream, node_.runtime().io(),
                                                   node_.runtime().tasks(), std::move(ao));
  auto s = std::make_shared<ServedStream>(std::move(stream), std::move(appender), std::move(limit),
                                          std::move(replicas));
  std::lock_guard l(mu_);
  // Another connection served it meanwhile: theirs is the one.
  auto it = streams_.find(name);
  if (it != streams_.end() && !it->second->retired()) {
    s->retire();
    return it->second;
  }
  streams_[name] = s;
  return s;
}

std::shared_ptr<ServedStream> ServedStreams::existing(const std::string& name) {
  std::lock_guard l(mu_);
  auto it = streams_.find(name);
  if (it == streams_.end() || it->second->retired()) return nullptr;
  return it->second;
}

bool ServedStreams::served_elsewhere(const std::string& name) {
  cluster::Ownership* own = ownership_.load();
  if (!own) return false;
  auto v = own->view();
  if (v.owners.count(name)) return true;
  return std::find(v.streams.begin(), v.streams.end(), name) != v.streams.end();
}

proto::ResponseCode ServedStreams::missing_code(const std::string& name) {
  // Being opened here (recovered from the bucket, taken over): not yet.
  if (auto s = node_.stream(name); !s.ok() && s.code() == Errc::unavailable) {
    return proto::ResponseCode::stream_not_available;
  }
  return served_elsewhere(name) ? proto::ResponseCode::stream_not_available
                                : proto::ResponseCode::stream_does_not_exist;
}

std::optional<uint32_t> ServedStreams::partition_index(const std::string& super,
                                                       const std::string& stream) {
  auto parts = supers_.partitions(super);
  if (!parts.ok()) return std::nullopt;
  for (size_t i = 0; i < parts->size(); ++i) {
    if ((*parts)[i] == stream) return uint32_t(i);
  }
  return std::nullopt;
}

void ServedStreams::retire(const std::string& name, bool drain) {
  std::shared_ptr<ServedStream> s;
  {
    std::lock_guard l(mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) return;
    s = it->second;
    streams_.erase(it);
  }
  s->retire();
  if (drain && !s->appender().wait_idle(kRetireDrainWait)) {
    spdlog::warn("serve: stream {}: appends still running {} s after it was retired", name,
                 kRetireDrainWait.count());
  }
  for (auto& w : s->watchers()) w->stream_gone(name);
}

std::vector<std::shared_ptr<ServedStream>> ServedStreams::all() {
  std::lock_guard l(mu_);
  std::vector<std::shared_ptr<ServedStream>> out;
  for (auto& [n, s] : streams_) out.push_back(s);
  return out;
}

void ServedStreams::clear() {
  std::lock_guard l(mu_);
  streams_.clear();
}

// What a replica subscription of a stream this node does not own reads
// through: the stream's remote tier (its persisted manifest from the
// catalog and the bucket, fragments through the node's group cache) and the
// owner's address from the cluster's view.
Result<ReplicaEnv> ServedStreams::replica_env(const std::string& name) {
  cluster::Ownership* own = ownership_.load();
  if (!own || !served_elsewhere(name)) {
    return Error(Errc::not_found, fmt::format("stream {} is not in the cluster", name));
  }
  ReplicaEnv env;
  env.stream = name;
  if (node_.config().tiering.enabled) {
    STRATA_ASSIGN_OR_RETURN(env.remote, node_.remote_stream(name));
  }
  const TlsContexts* tls = peer_tls_.load();
  env.owner = [own, name, tls]() {
    OwnerLookup o;
    auto v = own->view();
    auto it = v.owners.find(name);
    if (it == v.owners.end()) {
      bool listed = std::find(v.streams.begin(), v.streams.end(), name) != v.streams.end();
      o.kind = listed ? OwnerLookup::Kind::ownerless : OwnerLookup::Kind::gone;
      return o;
    }
    // Over TLS, the owner's TLS listener; a node that registered none
    // (not configured for it) is not reachable from here.
    const auto& addresses = v.addresses(tls != nullptr);
    auto addr = addresses.find(it->second.node_id);
    auto hp = addr == addresses.end() ? Result<std::pair<std::string, uint16_t>>(
                                            Error(Errc::not_found, "owner not registered"))
                                      : parse_host_port("node " + addr->first, addr->second);
    if (!hp.ok()) return o;  // ownerless for now: its registration is not seen yet
    o.kind = OwnerLookup::Kind::owned;
    o.node_id = it->second.node_id;
    o.host = hp->first;
    o.port = hp->second;
    return o;
  };
  // Every node of a cluster runs one configuration: its first user with a
  // cleartext password is what nodes log in to each other as.
  env.user = cfg_.server.users.peer.user;
  env.password = cfg_.server.users.peer.password;
  env.mechanism = cfg_.server.users.peer.mechanism;
  if (tls) {
    // The context of the moment: a reload (SIGHUP) applies to later links.
    env.peer_tls = tls->current().client;
    env.peer_tls_verify_host = cfg_.cluster.peer_tls_verify_host;
  }
  // A takeover takes a lease TTL plus the new owner's recovery; past three
  // TTLs and a margin the consumer is better told to look again.
  env.reconnect_limit =
      std::chrono::milliseconds(3 * cfg_.cluster.lease_ttl_ms) + kReplicaReconnectMargin;
  env.owner_check = std::chrono::milliseconds(
      std::max<int64_t>(cfg_.cluster.lease_ttl_ms / 8, kReplicaOwnerCheckMin.count()));
  env.remote_chunks = &counters_.replica_remote_chunks;
  env.forwarded_chunks = &counters_.replica_forwarded_chunks;
  env.links = &counters_.replica_links;
  return env;
}

}  // namespace strata::server
