// Connection: one client of `strata serve` — a frame channel
// (frame_channel.h: the socket, its frames, the write queue, heartbeat and
// close) and the command rooms that run what it reads, each reaching only
// the narrow part of the server it needs (room_services.h):
//   handshake_room.h     PeerProperties … Open, Close, Heartbeat, versions
//   stream_admin_room.h  Create, Delete, Metadata, StreamStats, super streams
//   publisher_room.h     publishers, Publish and its confirms
//   subscription_room.h  Subscribe, Credit, Unsubscribe, single active consumer
//   offset_room.h        StoreOffset, QueryOffset
// The connection decodes each frame, checks it against the handshake's
// state, and hands it to its room.
//
// Flow control both ways, never unbounded buffering:
//  - a publisher that sends faster than the log confirms is held back by
//    not reading its socket while its unconfirmed bytes exceed a budget;
//  - a consumer gets chunks only while it has credit, and none is read
//    for it while the connection's unsent bytes exceed a budget (a slow
//    reader of its socket stalls only itself).
//
// Thread safety: every method may be called from any thread; they post to
// the connection's strand.
#pragma once

#include <asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/task.h"
#include "server/client_tally.h"
#include "server/connection_quota.h"
#include "server/handshake_room.h"
#include "server/login_throttle.h"
#include "server/room_services.h"
#include "server/sac_coordinator.h"
#include "server/serve_config.h"
#include "server/server_counters.h"
#include "server/transport.h"

namespace strata::server {

// What a connection's rooms are given of the server.
struct ConnectionEnv {
  const ServerSettings* settings = nullptr;
  ServerCounters* counters = nullptr;
  TaskContext tasks;
  StreamDirectory* streams = nullptr;
  ReplicaSource* replicas = nullptr;
  StreamAdmin* admin = nullptr;
  ConsumerOffsets* offsets = nullptr;
  SacCoordinator* sac = nullptr;
  LoginThrottle* logins = nullptr;
  // Places per user and vhost (never null).
  ConnectionQuota* quota = nullptr;
  // Who may do what (never null).
  const AccessPolicy* access = nullptr;
  // The users the nodes of a cluster log in to each other as (empty: not
  // in a cluster; cluster.peer_users): their connections to "/" name every
  // vhost's streams by their stored names and may read them all
  // (vhost_names.h).
  std::vector<std::string> peer_users;
  // The connection closed (once): the server forgets it.
  std::function<void(uint64_t id)> on_closed;
};

class Connection {
 public:
  // `transport`: plain TCP or TLS (transport.h); `origin`: the listener it
  // came through.
  static std::shared_ptr<Connection> make(const ConnectionEnv& env, uint64_t id, Strand strand,
                                          std::unique_ptr<Transport> transport,
                                          ConnectionOrigin origin);
  virtual ~Connection() = default;

  virtual uint64_t id() const = 0;
  // Starts reading frames.
  virtual void start() = 0;
  // Closes the connection (server stopping): what is queued goes out first.
  virtual void shutdown() = 0;
  // A single-active-consumer effect for one of its subscriptions.
  virtual void sac_effect(const SacEffect& e) = 0;
  // The users were reloaded: a connection whose user is gone, or has lost
  // its vhost, is closed (8 or 12); the others go on under the new rules.
  virtual void recheck_access() = 0;
  // What the management API lists of it (peer, user, vhost, state, client
  // properties, TLS, its publishers and subscriptions), taken on its
  // strand and handed to `done` there.
  virtual void describe(std::function<void(nlohmann::json)> done) = 0;
  // Its publishers' and consumers' streams and lags (client_tally.h), the
  // same way.
  virtual void tally(std::function<void(ClientTally)> done) = 0;
  // An operator closes it (management API): logged with `why`, then
  // closed as at shutdown.
  virtual void close_by_operator(std::string why) = 0;
};

}  // namespace strata::server
