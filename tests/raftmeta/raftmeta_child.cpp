// raftmeta_child: the process the kill -9 tests kill.
//
//   raftmeta_child migrate <dir> <wal_bytes>
//     Opens the raftmeta store in <dir>, migrating <dir>/meta.dets; prints
//     "progress <phase> <done> <total>" lines, then "done <action> <rows>".
//
//   raftmeta_child write <dir> <seed>
//     Opens (recovering) the store and runs random stores forever on
//     servers s0..s15. Before each call it prints the intended change,
//     after a store_sync/erase_sync/sync returns OK it prints
//     "ack <n>": everything printed before it is durable.
//       op <n> T <id> <term>      store term (async) + store_sync vote c<n>@node<n%3>
//       op <n> A <id> <applied>   store last_applied (async)
//       op <n> S <id> <applied>   store_sync last_applied
//       op <n> E <id>             erase_sync
// Lines go out with one write(2) each, so a kill cuts at most the last.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/random.h"
#include "raftmeta/raft_meta.h"
#include "support/child_output.h"

using namespace strata;
using namespace strata::raftmeta;

namespace {

using strata::test::emit_line;

int fail(const Error& e) {
  std::fprintf(stderr, "raftmeta_child: %s\n", e.to_string().c_str());
  return 1;
}

int migrate(const std::string& dir, uint64_t wal) {
  Options o;
  o.store.wal_bytes = wal;
  o.store.capacity = 64;
  o.migration_progress = [](std::string_view phase, uint64_t done, uint64_t total) {
    emit_line("progress " + std::string(phase) + " " + std::to_string(done) + " " +
              std::to_string(total));
  };
  auto m = RaftMeta::open(posix_fs(), dir, o);
  if (!m.ok()) return fail(m.error());
  const auto st = (*m)->stats();
  emit_line("done " + std::string(action_name(st.migration.action)) + " " +
            std::to_string(st.migration.rows));
  Status s = (*m)->close();
  return s.ok() ? 0 : fail(s.error());
}

int write(const std::string& dir, uint64_t seed) {
  Options o;
  o.store.capacity = 32;
  o.store.wal_bytes = 16 * 1024;  // compactions all the time
  auto opened = RaftMeta::open(posix_fs(), dir, o);
  if (!opened.ok()) return fail(opened.error());
  RaftMeta& m = **opened;
  Random rng(seed);
  for (uint64_t n = seed * 1'000'000;; ++n) {
    const std::string id = "s" + std::to_string(rng.uniform(16));
    const uint64_t kind = rng.uniform(10);
    Status s;
    if (kind < 2) {
      emit_line("op " + std::to_string(n) + " T " + id + " " + std::to_string(n));
      s = m.store(id, Field::current_term, n);
      if (s.ok()) {
        s = m.store_sync(id, Field::voted_for,
                         VotedFor::server("c" + std::to_string(n), "node" + std::to_string(n % 3)));
      }
      if (s.ok()) emit_line("ack " + std::to_string(n));
    } else if (kind < 8) {
      emit_line("op " + std::to_string(n) + " A " + id + " " + std::to_string(n));
      s = m.store(id, Field::last_applied, n);
    } else if (kind < 9) {
      emit_line("op " + std::to_string(n) + " S " + id + " " + std::to_string(n));
      s = m.store_sync(id, Field::last_applied, n);
      if (s.ok()) emit_line("ack " + std::to_string(n));
    } else {
      emit_line("op " + std::to_string(n) + " E " + id);
      s = m.erase_sync(id);
      if (s.ok()) emit_line("ack " + std::to_string(n));
    }
    if (!s.ok()) return fail(s.error());
  }
}

}  // namespace

int main(int argc, char** argv) {
  // stdout carries the protocol; logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("raftmeta_child"));
  if (argc == 4 && std::string(argv[1]) == "migrate") {
    return migrate(argv[2], std::strtoull(argv[3], nullptr, 0));
  }
  if (argc == 4 && std::string(argv[1]) == "write") {
    return write(argv[2], std::strtoull(argv[3], nullptr, 0));
  }
  std::fprintf(stderr, "usage: %s migrate <dir> <wal_bytes> | write <dir> <seed>\n", argv[0]);
  return 2;
}
