// Server: `strata serve` — a node (node/node.h) behind the RabbitMQ Stream
// protocol. One event loop run by a small fixed set of threads carries
// every connection (each on its own strand; no thread per connection), and
// whatever blocks (appends, opening readers, creating and deleting streams)
// runs as tasks on one blocking pool and comes back as one event
// (common/task.h) — the node's runtime (node/runtime.h), shared with its
// uploaders: one of each per process.
//
// The pieces, by file:
//   listener.h             the TCP listener
//   connection_registry.h  the connections open, bounded, waited on at stop
//   connection.h           one client: a frame channel and its command rooms
//   served_streams.h       the streams served here and their shared state
//   stream_ops.h           creating, deleting and describing streams
//   tracked_offsets.h      consumer offsets (files, or etcd in a cluster)
//   sac_coordinator.h      single-active-consumer groups
//   server_limits.h        the fixed limits of all of them
//
// Thread safety: every public method may be called from any thread.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "server/management_api.h"
#include "server/serve_config.h"

namespace strata::server {

class Server {
 public:
  // Opens the node, binds the listener and starts accepting.
  static Result<std::unique_ptr<Server>> start(ServeConfig cfg);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound address ("127.0.0.1", the real port when 0 was asked for).
  const std::string& host() const;
  uint16_t port() const;
  // The TLS listener's port (0: none).
  uint16_t tls_port() const;

  // Graceful stop: stop accepting, let appends in flight finish and their
  // confirms go out, close every connection, close the node (manifests
  // persisted by its uploaders' close). Idempotent.
  Status stop();
  // Which step of stop() runs now ("" before it starts, "done" after): what
  // a watchdog names when a stop takes too long.
  const char* stop_stage() const;

  // New users, vhosts and permissions, in force for the next login and the
  // next command of every connection; the connections of a user that is
  // gone, or has lost its vhost, are closed. The node's own peer login
  // stays as it started.
  void reload_users(const UserSettings& users);
  // A new TLS certificate, key, CA and rules for the next TLS connections
  // (open ones keep theirs). An error (a file that does not load) changes
  // nothing; without a TLS listener there is nothing to reload.
  Status reload_tls(const TlsSettings& s);

  // The management API (server/management_api.h); from any thread.
  ApiReply api(const ApiRequest& r);

  std::string metrics_text() const;
  nlohmann::json status_json() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
