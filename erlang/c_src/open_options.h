// What open/2 is asked for: the store's directory and the options map the
// Erlang side passes (strata_ra_log_meta's `strata_ra_log_meta` key of Ra's
// system config, erlang/README.md).
//
// Options, every key optional (a new store's capacity is fixed when it is
// created; an existing store keeps its own):
//   capacity                       servers a new store holds (16384)
//   node_names                     distinct voted_for nodes a new store holds (256)
//   wal_bytes                      a new store's WAL, both halves (16 MiB)
//   max_id_bytes                   longest server id (uid) of a new store (64, at most 255)
//   max_name_bytes, max_node_bytes longest voted_for name / node of a new store (255)
//   applied_sync_interval_ms       how late an unsynced last_applied is fsynced (5000)
//   group_commit_window_us         longest hold of a synced batch for more store_sync
//                                  callers, never longer than the last fsync (2000)
//   shutdown_compaction_budget_ms  how long close lets a compaction run (25000, below the
//                                  30 s shutdown budget Ra's supervisor gives the process)
//   sync_timeout_ms                how long store_sync / delete_sync wait for durability
//                                  before their callers exit with timeout (30000, Ra's
//                                  call timeout; SyncWaiter answers it, sync_waiter.h)
//   migrate_dets                   migrate <dir>/meta.dets when opening (true)
//   migration_progress             a pid that receives {strata_ra_migration_progress,
//                                  Dir, Phase, Done, Total} while a migration runs
//   fault_injection                tests only: the store lives in memory (no LOCK) and
//                                  inject_sync_failure/1 makes its fsyncs fail (false)
// An unknown key or a value of the wrong type is an invalid_argument error
// naming it.
#pragma once

#include <erl_nif.h>

#include <chrono>
#include <optional>
#include <string>

#include "common/result.h"
#include "raftmeta/raft_meta.h"

namespace strata::erl {

struct OpenRequest {
  std::string dir;  // absolute, without a trailing slash
  raftmeta::Options options;
  std::optional<ErlNifPid> progress_to;
  std::chrono::milliseconds sync_timeout{30000};
  bool fault_injection = false;
};

// `dir` is a binary (UTF-8 path), `options` a map.
Result<OpenRequest> parse_open_request(ErlNifEnv* env, ERL_NIF_TERM dir, ERL_NIF_TERM options);

}  // namespace strata::erl
