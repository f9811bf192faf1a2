// A cluster of `strata serve` children for tests, all on 127.0.0.1: a
// 3-member etcd cluster (support/etcd_cluster.h), one directory object store
// shared by every node, and N serve children with distinct data directories,
// ports and node ids, cluster mode on, confirm = remote.
//
// Nodes can be stopped (SIGTERM), killed (-9), frozen (SIGSTOP), thawed
// (SIGCONT) and restarted on their data (a restarted node listens on a new
// port); etcd members through etcd() or the all-member restart below. The
// client helpers find a stream's leader the way a client does: Metadata.
//
// Used by tests/cluster (serve_cluster_test, history_test) and the failover
// benchmark; it links the stream-protocol test client of tests/server.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/stream_client.h"
#include "support/etcd_cluster.h"
#include "support/eventually.h"

namespace strata::test {

struct ServeClusterOptions {
  int nodes = 3;
  int etcd_members = 3;
  int64_t lease_ttl_ms = 2000;
  // Merged (JSON merge patch, RFC 7386) into every node's document, after
  // the defaults of node_doc.
  nlohmann::json patch = nlohmann::json::object();

  // Two nodes over a one-member etcd, each with an HTTP endpoint on a free
  // port (ServeProcess::http_url): the management API's tests.
  static ServeClusterOptions two_with_http() {
    ServeClusterOptions o;
    o.nodes = 2;
    o.etcd_members = 1;
    o.patch = {{"http", {{"listen", "127.0.0.1:0"}}}};
    return o;
  }
};

class ServeCluster {
 public:
  // `dir` must exist and outlive the cluster. nullptr with *error when etcd
  // or a node does not start.
  static std::unique_ptr<ServeCluster> start(const std::string& dir,
                                             const ServeClusterOptions& options,
                                             std::string* error);
  // Thaws and stops (SIGTERM) every running node; etcd is killed after.
  ~ServeCluster();

  int size() const { return int(nodes_.size()); }
  EtcdCluster& etcd() { return *etcd_; }
  const std::string& dir() const { return dir_; }
  int64_t lease_ttl_ms() const { return options_.lease_ttl_ms; }

  // --- nodes ---
  // Thread safety: port() and the client helpers may be called from any
  // thread (workload threads) while one thread starts, stops and restarts
  // nodes; everything else from that one thread.
  int port(int i) const;
  ServeProcess& node(int i) { return nodes_[size_t(i)]; }
  bool running(int i);
  void kill(int i);    // SIGKILL and reap
  void freeze(int i);  // SIGSTOP; returns once every thread of it is stopped
  void thaw(int i);    // SIGCONT
  // SIGTERM (after a SIGCONT) and wait; the exit status. A node that does
  // not exit in time has its threads' stacks taken (gdb, for logs()) and is
  // killed.
  std::optional<int> stop(int i, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Starts a node that is not running (killed or stopped) again on its data
  // directory and configuration; false with *error if it does not listen.
  bool restart(int i, std::string* error);
  // Node i's stderr (the last 4000 bytes), and the stacks of a hung stop.
  std::string logs(int i);

  // --- etcd ---
  // Kills every member (-9).
  void kill_all_etcd();
  // Starts every member again on its data and waits until all are healthy;
  // false with *error otherwise.
  bool start_all_etcd(std::string* error);
  // Both.
  bool restart_all_etcd(std::string* error);

  // --- configuration ---
  std::string data_dir(int i) const;
  std::string config_path(int i) const;
  // Node i's document; without the serve section (cluster) for the offline
  // tools, which take a node configuration only.
  nlohmann::json node_doc(int i, bool serve) const;
  // Writes node_doc(0, false) to <dir>/<name> for offline tools (scrub);
  // its path.
  std::string offline_config(const std::string& name) const;

  // --- clients ---
  // Connected and handshaken to node i. A node this harness froze, killed
  // or stopped is refused at once (Errc::unavailable) — as a client with a
  // short connect timeout would — instead of hanging in the handshake.
  Result<StreamClient> client(int i);
  // Creates `stream` through node i (restating the nodes' confirm mode as
  // its argument); an error naming the response code otherwise.
  Status create_stream(int i, const std::string& stream);
  // The leader's port as node i's Metadata names it; 0 when none (or node i
  // does not answer).
  int leader_port(int i, const std::string& stream);
  // The node listening on `port`; -1 if none.
  int index_of_port(int port) const;
  // The leader's index as node `ask`'s Metadata names it; -1 when none.
  int leader(int ask, const std::string& stream);
  // A node other than `old` that Metadata (asked of node `ask`) names leader
  // of `stream`; -1 if none within `timeout`. old = -1: any leader.
  int await_leader(int ask, int old, const std::string& stream, std::chrono::milliseconds timeout);
  // Waits until every running node's Metadata names the same leader; its
  // index, or -1 after `timeout`.
  int await_agreed_leader(const std::string& stream, std::chrono::milliseconds timeout);

 private:
  ServeCluster() = default;
  bool spawn_node(int i, std::string* error);

  std::string dir_;
  ServeClusterOptions options_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::vector<ServeProcess> nodes_;
  enum class State : uint8_t { up, frozen, down };
  void set_state(int i, State s);
  State state(int i) const;

  mutable std::mutex mu_;  // nodes_[i] reassigned at a restart; states_
  std::vector<State> states_;
  std::string hang_stacks_;
};

}  // namespace strata::test
