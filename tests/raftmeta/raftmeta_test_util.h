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

#define ASSERT_OK(expr)                                                 \
  do {                                                                  \
    auto&& assert_ok_s_ = (expr);                                       \
    ASSERT_TRUE(assert_ok_s_.ok()) << assert_ok_s_.error().to_string(); \
  } while (0)
#define EXPECT_OK(expr)                                                 \
  do {                                                                  \
    auto&& expect_ok_s_ = (expr);                                       \
    EXPECT_TRUE(expect_ok_s_.ok()) << expect_ok_s_.error().to_string(); \
  } while (0)

namespace strata::raftmeta::test {

// Silences logging for its lifetime (tests that crash on purpose).
class QuietLogs {
 public:
  QuietLogs() : level_(spdlog::get_level()) { spdlog::set_level(spdlog::level::off); }
  ~QuietLogs() { spdlog::set_level(level_); }

 private:
  spdlog::level::level_enum level_;
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
  std::string halted;    // 600 rows, VM halted without dets:close
  std::string fixed;     // hand-picked rows, incl. an empty and a 300-byte uid
  // The rows each file holds, as dets_gen's sorted row lines.
  std::vector<std::string> ra_rows, ra_small_rows, halted_rows;
};
const DetsFixtures& dets_fixtures();

// Copies the real file `from` into `fs` at `to`, fsynced, its directory
// entry too.
void copy_into(FileSystem& fs, const std::string& from, const std::string& to);
// The bytes of a file in `fs` ("" if absent).
Bytes file_bytes(FileSystem& fs, const std::string& path);

// The servers of a store as dets_gen row lines, sorted (absent counters
// are "undefined", as Ra wrote them).
std::vector<std::string> row_lines(const std::vector<std::pair<Bytes, ServerMeta>>& servers);

}  // namespace strata::raftmeta::test
