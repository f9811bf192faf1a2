// The three stores compared by slotstore_bench, behind one interface, each
// holding raftmeta's record per key: current_term, voted_for (name, node),
// last_applied. "high" updates last_applied without fsync; "durable" sets a
// new term and clears the vote in one atomic write and returns after fsync.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace strata::bench {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  // Creates a fresh store in `dir` holding every key with all fields set,
  // durably.
  virtual Status create(const std::string& dir, const std::vector<std::string>& keys) = 0;
  // Opens the store in `dir` (recovery).
  virtual Status open(const std::string& dir) = 0;
  // Reads every record into memory, as a Raft node does at start-up;
  // returns how many.
  virtual Result<size_t> load_all() = 0;
  // Thread-safe.
  virtual Status high(const std::string& key, uint64_t applied) = 0;
  virtual Status durable(const std::string& key, uint64_t term) = 0;
  virtual Status close() = 0;
  // Engine-specific counters for the report ("" if none).
  virtual std::string stats() const { return ""; }
};

std::unique_ptr<Engine> make_slotstore();
// synchronous=FULL connection for durable writes, NORMAL for high ones (WAL
// mode); one mutex serializes writers (SQLite has one writer at a time; a
// mutex avoids its busy-wait sleeps).
std::unique_ptr<Engine> make_sqlite();
// One key per field; WriteOptions::sync only for durable writes (RocksDB
// group-commits concurrent writers itself).
std::unique_ptr<Engine> make_rocksdb();

}  // namespace strata::bench
