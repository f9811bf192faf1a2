// OrphanSweep: a node cleans up after itself. Persists that a crash, a
// SIGTERM or a lost race interrupted leave objects no manifest references
// (fragments uploaded for a persist that never landed, roots whose catalog
// write lost); `strata gc` deletes them on demand, and this shell runs the
// same planner (tier/gc_plan.h: nothing a manifest references or a persist
// in flight will reference is ever a candidate) by itself: first
// `grace_ms` after the node opened — by then whatever the previous run of
// the node left is older than the grace — then every `interval_ms`. One
// run at a time, on the blocking pool, ended by its deadline (common/
// task.h); at most `max_deletes` objects per run, the rest left for the
// next one. Counted and logged (status, metrics).
//
// Thread safety: start/stop/stats from any thread.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "catalog/catalog.h"
#include "common/task.h"
#include "objstore/object_store.h"

namespace strata::node {

struct OrphanSweepOptions {
  std::string prefix;        // tiering.key_prefix
  int64_t grace_ms = 0;      // tiering.orphan_grace_ms
  int64_t interval_ms = 0;   // between runs
  uint64_t max_deletes = 0;  // per run
  int64_t deadline_ms = 0;   // of a run
};

struct OrphanSweepStats {
  uint64_t runs = 0;         // runs that completed
  uint64_t failed_runs = 0;  // runs that could not list or read the catalog, or hung
  uint64_t deleted = 0;      // objects deleted, over all runs
  uint64_t deleted_bytes = 0;
  uint64_t delete_failures = 0;  // removes that failed (tried again next run)
  uint64_t left = 0;             // candidates the last run left for the next (max_deletes)
  int64_t last_run_ms = 0;       // wall clock of the last run's end; 0: none yet
  std::string last_error;
};

class OrphanSweep : public std::enable_shared_from_this<OrphanSweep> {
 public:
  OrphanSweep(std::shared_ptr<asio::io_context> io, TaskContext tasks,
              std::shared_ptr<objstore::ObjectStore> store,
              std::shared_ptr<catalog::Catalog> catalog, OrphanSweepOptions opts);
  void start();
  void stop();
  OrphanSweepStats stats() const;

 private:
  void arm(int64_t delay_ms);
  void run();

  std::shared_ptr<asio::io_context> io_;
  TaskContext tasks_;
  std::shared_ptr<objstore::ObjectStore> store_;
  std::shared_ptr<catalog::Catalog> catalog_;
  const OrphanSweepOptions opts_;
  Strand strand_;
  asio::steady_timer timer_;
  std::atomic<bool> stopped_{false};
  mutable std::mutex mu_;
  OrphanSweepStats stats_;  // guarded by mu_
};

}  // namespace strata::node
