// Shared helpers for raftmeta's tests: assertions on Status/Result, small
// store options, polling for the writer, DETS fixtures written once per
// test binary by Erlang (erl/dets_gen.erl), and copying files into a
// FileSystem (the real one or a FaultFileSystem).
#pragma once

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "raftmeta/raft_meta.h"
#include "support/assertions.h"

namespace strata::raftmeta::test {

using strata::test::QuietLogs;

// A server's state in a crash or kill test's history: absent, or its
// metadata.
using State = std::optional<ServerMeta>;

inline std::string show(const State& s) {
  return s ? s->to_string() : std::string("absent");
}

// The states one server went through, in order (the last is the current
// one); states[acked..] are what a crash may leave.
struct History {
  std::vector<State> states;
  size_t acked = 0;
};

// A small store: `capacity` servers, `nodes` node names, `wal` WAL bytes.
inline Options small_options(uint32_t capacity = 64, uint32_t nodes = 16,
                             uint64_t wal = 64 * 1024) {
  Options o;
  o.store.capacity = capacity;
  o.store.node_names = nodes;
  o.store.wal_bytes = wal;
  o.store.bounds = Bounds{32, 128, 64};
  return o;
}

// Polls `cond` every millisecond for up to `limit`; true if it held.
inline bool eventually(const std::function<bool()>& cond,
                       std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

inline std::optional<uint64_t> u64(const std::optional<FieldValue>& v) {
  if (!v) return std::nullopt;
  return std::get<uint64_t>(*v);
}
inline std::optional<VotedFor> vote(const std::optional<FieldValue>& v) {
  if (!v) return std::nullopt;
  return std::get<VotedFor>(*v);
}

// Real DETS files written by Erlang/OTP when the tests are built (target
// raftmeta_dets_fixtures), read-only. Tests copy them into their own
// directory.
struct DetsFixtures {
  std::string error;     // why generation failed ("" if it did not)
  std::string ra;        // 5000 generated rows, churned (updates, deletes)
  std::string ra_small;  // 400 rows
  std::string ra_1417;   // 1417 rows: the size of issue 12's damaged-WAL report
  std::string halted;    // 600 rows, VM halted without dets:close
  std::string fixed;     // hand-picked rows, incl. an empty and a 300-byte uid
  // The rows each file holds, as dets_gen's sorted row lines.
  std::vector<std::string> ra_rows, ra_small_rows, ra_1417_rows, halted_rows;
};
const DetsFixtures& dets_fixtures();

// Copies the real file `from` into `fs` at `to`, fsynced, its directory
// entry too.
void copy_into(FileSystem& fs, const std::string& from, const std::string& to);
// The bytes of a file in `fs` ("" if absent).
Bytes file_bytes(FileSystem& fs, const std::string& path);

// Flips one bit inside the put entry in the middle of the live WAL half of
// the store file `path` (durably, as a disk's damage would be) and returns
// that entry's offset in the file: where recovery must report the damage.
uint64_t damage_middle_of_live_wal(FileSystem& fs, const std::string& path);

// The servers of a store as dets_gen row lines, sorted (absent counters
// are "undefined", as Ra wrote them).
std::vector<std::string> row_lines(const std::vector<std::pair<Bytes, ServerMeta>>& servers);

}  // namespace strata::raftmeta::test
