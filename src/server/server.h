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

#include "common/blocking_pool.h"
#include "common/task.h"
#include "node/node.h"
#include "server/serve_config.h"
#include "server/served_stream.h"

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
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> protocol_errors{0};
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
  asio::io_context& io() { return io_; }
  TaskContext tasks() { return TaskContext{pool_.get(), lifetime_}; }
  ServerCounters& counters() { return counters_; }

  // The stream's shared state, opened on first use; not_found if absent.
  Result<std::shared_ptr<ServedStream>> served(const std::string& name);
  // After a deletion: retire the stream and tell its watchers.
  void stream_deleted(const std::string& name);

  // Stored consumer offsets (reference, stream) — in memory in this build.
  void store_offset(const std::string& stream, const std::string& ref, uint64_t offset);
  std::optional<uint64_t> query_offset(const std::string& stream, const std::string& ref);

  void connection_closed(uint64_t id);

  std::string metrics_text() const;
  nlohmann::json status_json() const;

 private:
  explicit Server(ServeConfig cfg);
  void accept();

  const ServeConfig cfg_;
  std::unique_ptr<node::Node> node_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::vector<std::thread> threads_;
  std::shared_ptr<BlockingPool> pool_;
  std::shared_ptr<IoLifetime> lifetime_ = std::make_shared<IoLifetime>();
  std::string host_;
  uint16_t port_ = 0;
  ServerCounters counters_;

  mutable std::mutex mu_;
  std::condition_variable conn_cv_;  // a connection closed
  std::map<std::string, std::shared_ptr<ServedStream>> streams_;
  std::map<uint64_t, std::weak_ptr<Connection>> connections_;
  std::map<std::pair<std::string, std::string>, uint64_t> offsets_;
  uint64_t next_connection_id_ = 1;
  bool stopping_ = false;
  bool stopped_ = false;
  Status stop_status_;
};

}  // namespace strata::server
