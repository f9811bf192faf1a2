// Private to the ownership shell (ownership.cpp, ownership_view.cpp,
// ownership_effects.cpp): the state behind cluster/ownership.h. The core,
// the watch generation and the tick are touched only on the strand; the
// view and the mirror of the core's state are shared with callers under mu_.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "cluster/node_registration.h"
#include "cluster/ownership.h"
#include "common/blocking_pool.h"
#include "common/metrics.h"
#include "common/task.h"

namespace strata::cluster {

class Ownership::Impl {
 public:
  Impl(OwnershipConfig cfg, std::shared_ptr<etcd::EtcdClient> client, node::Node* node);

  // Starts the strand's thread, the first read of the namespace, the first
  // lease grant and the tick.
  void begin();
  void stop();

  // ---- for callers, any thread (ownership.cpp) ----
  bool serving(const std::string& stream) const;
  std::string owner_address(const std::string& stream) const;
  ClusterView view() const;
  Result<std::string> await_owner(const std::string& stream, std::chrono::milliseconds timeout);
  Status request_deletion(const std::string& stream, std::chrono::milliseconds timeout);
  nlohmann::json status_json() const;
  std::string metrics_text() const;
  uint64_t fences() const;
  uint64_t writer_fences() const;
  uint64_t handoffs() const;
  const OwnershipConfig& config() const { return cfg_; }

 private:
  // ---- the strand: events in, effects out ----
  void post_event(Event e);
  void handle(const Event& e);
  bool stopped() const;
  void arm_tick();
  int64_t now_ms() const;
  std::chrono::milliseconds call_deadline() const;

  // ---- running the core's effects, one function each (ownership_effects.cpp) ----
  void execute(const Effects& fx);
  void close_stream(const effect::Close& e);
  void lease_given_up(const effect::LeaseGivenUp& e);
  void revoke(const effect::Revoke& e);
  void grant_lease();
  void keepalive(const effect::Keepalive& e);
  void register_node(const effect::Register& e);
  void acquire(const effect::Acquire& e);
  void remove(const effect::Remove& e);
  void hand_off(const effect::HandOff& e);
  void open(const effect::Open& e);
  void stand(const effect::Stand& e);
  void withdraw(const effect::Withdraw& e);
  std::string candidacy_key(const std::string& node, const std::string& stream) const;
  // Every task that writes under the lease (acquire, open, remove, hand
  // over, keep alive, register) is started under the lease the core holds.
  void require_current_lease(int64_t lease, const char* what) const;
  // Copies the core's state to what callers read, and wakes their waits.
  void publish();
  TaskContext tasks() const { return TaskContext{pool_.get(), lifetime_}; }

  // ---- following <ns>/ (ownership_view.cpp) ----
  void resync();
  void resync_later();
  void on_snapshot(uint64_t generation, const etcd::RangeResult& r);
  void on_watch(const std::vector<etcd::WatchEvent>& events);
  // Adds kv to `out` if it is under one of cfg_.followed_dirs.
  void follow(const etcd::KeyValue& kv, bool removed, std::vector<FollowedKey>* out) const;
  // Whether the view changed (nodes, owners, the set of streams).
  void warn_if_unreachable(const std::string& node, const NodeRegistration& r);
  bool apply_kv(const etcd::KeyValue& kv, bool removed);
  ev::View core_view() const;  // mu_ held

  const OwnershipConfig cfg_;
  std::shared_ptr<etcd::EtcdClient> client_;
  node::Node* node_;

  asio::io_context io_;
  Strand strand_{asio::make_strand(io_)};
  asio::steady_timer tick_{io_};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::shared_ptr<BlockingPool> pool_;
  std::shared_ptr<IoLifetime> lifetime_ = std::make_shared<IoLifetime>();

  OwnershipCore core_;  // on the strand
  std::unique_ptr<etcd::Watch> watch_;
  uint64_t watch_generation_ = 0;  // on the strand

  mutable std::mutex mu_;  // the view and the mirror of the core's state
  std::condition_variable cv_;
  ClusterView view_;
  // Peers already reported as registering no address this node can dial.
  std::set<std::string> unreachable_peers_;
  std::map<std::string, OwnershipCore::StreamState> owned_;
  int64_t lease_ = 0;
  uint64_t fences_ = 0;
  uint64_t writer_fences_ = 0;
  uint64_t handoffs_ = 0;
  // Streams this node began serving (acquired, or taken back) and stopped
  // serving (released, handed over, fenced), since it started.
  uint64_t streams_acquired_ = 0;
  uint64_t streams_released_ = 0;
  std::string last_fence_;
  // Round trips of lease keepalives that etcd answered (any answer).
  LatencyHistogram keepalive_rtt_;
  // Where an uploader's fenced report goes: it may come from the node's
  // event loop after stop(), so it checks `open` under its own lock.
  struct FenceSink {
    std::mutex mu;
    bool open = true;
  };
  std::shared_ptr<FenceSink> fence_sink_ = std::make_shared<FenceSink>();
  bool stopped_ = false;
};

}  // namespace strata::cluster
