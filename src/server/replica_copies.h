// ReplicaCopies: the copiers of one node (cluster.replica_copies) — a
// ReplicaCopier (replica_copier.h) for each stream of the cluster's view
// that another node owns, started and stopped as the view changes (looked
// at every TTL/8): a stream this node comes to serve has its copy closed
// by the acquire, and a stream gone from the cluster has its copy removed
// from the disk. Every copier runs on the set's one strand.
#pragma once

#include <asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <string>

#include "cluster/ownership.h"
#include "server/replica_copier.h"
#include "server/served_streams.h"

namespace strata::server {

struct CopyCounters {
  std::atomic<uint64_t> copied_chunks{0};
  std::atomic<uint64_t> dropped_copies{0};
};

class ReplicaCopies;
// The copies' Prometheus families; every cluster node exposes them (zero
// when cluster.replica_copies is off: `copies` null).
std::string copies_metrics_text(const ReplicaCopies* copies);

class ReplicaCopies : public std::enable_shared_from_this<ReplicaCopies> {
 public:
  static std::shared_ptr<ReplicaCopies> start(ServedStreams& served, node::Node& node,
                                              cluster::Ownership& own, Strand strand,
                                              TaskContext tasks, std::chrono::milliseconds every);
  // Stops every copier (appends in flight finish). Idempotent; call
  // before the node closes.
  void stop();
  // Streams copied here now (for tests and /status).
  size_t copying() const { return running_.load(); }
  const CopyCounters& counters() const { return counters_; }

 private:
  ReplicaCopies(ServedStreams& served, node::Node& node, cluster::Ownership& own, Strand strand,
                TaskContext tasks, std::chrono::milliseconds every);
  void scan();

  ServedStreams& served_;
  node::Node& node_;
  cluster::Ownership& own_;
  Strand strand_;
  TaskContext tasks_;
  std::chrono::milliseconds every_;
  asio::steady_timer timer_;
  std::map<std::string, std::shared_ptr<ReplicaCopier>> copiers_;
  std::atomic<size_t> running_{0};
  bool stopped_ = false;
  CopyCounters counters_;
};

}  // namespace strata::server
