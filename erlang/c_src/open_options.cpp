#include "open_options.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>

#include "nif_atoms.h"

namespace strata::erl {

namespace {

class OptionReader {
 public:
  OptionReader(ErlNifEnv* env, std::string key, ERL_NIF_TERM value)
      : env_(env), key_(std::move(key)), value_(value) {}

  Result<uint64_t> u64(uint64_t min, uint64_t max) const {
    ErlNifUInt64 n;
    if (!enif_get_uint64(env_, value_, &n) || n < min || n > max) {
      return bad(fmt::format("an integer in {}..{}", min, max));
    }
    return uint64_t(n);
  }
  Result<uint32_t> u32(uint32_t min) const {
    STRATA_ASSIGN_OR_RETURN(uint64_t n, u64(min, std::numeric_limits<uint32_t>::max()));
    return uint32_t(n);
  }
  Result<bool> boolean() const {
    if (enif_is_identical(value_, atoms.true_)) return true;
    if (enif_is_identical(value_, atoms.false_)) return false;
    return bad("true or false");
  }
  Result<ErlNifPid> pid() const {
    ErlNifPid p;
    if (!enif_get_local_pid(env_, value_, &p)) return bad("a local pid");
    return p;
  }

 private:
  Error bad(const std::string& expected) const {
    return Error(Errc::invalid_argument, fmt::format("option {}: expected {}", key_, expected));
  }

  ErlNifEnv* env_;
  std::string key_;
  ERL_NIF_TERM value_;
};

Status apply_option(OpenRequest& req, const OptionReader& r, const std::string& key) {
  raftmeta::Options& o = req.options;
  constexpr uint64_t kMaxMs = 24ull * 3600 * 1000;
  if (key == "capacity") {
    STRATA_ASSIGN_OR_RETURN(o.store.capacity, r.u32(1));
  } else if (key == "node_names") {
    STRATA_ASSIGN_OR_RETURN(o.store.node_names, r.u32(1));
  } else if (key == "wal_bytes") {
    STRATA_ASSIGN_OR_RETURN(o.store.wal_bytes, r.u64(1, uint64_t(1) << 33));
  } else if (key == "max_id_bytes") {
    STRATA_ASSIGN_OR_RETURN(o.store.bounds.max_id_bytes, r.u32(1));
  } else if (key == "max_name_bytes") {
    STRATA_ASSIGN_OR_RETURN(o.store.bounds.max_name_bytes, r.u32(1));
  } else if (key == "max_node_bytes") {
    STRATA_ASSIGN_OR_RETURN(o.store.bounds.max_node_bytes, r.u32(1));
  } else if (key == "applied_sync_interval_ms") {
    STRATA_ASSIGN_OR_RETURN(uint64_t ms, r.u64(1, kMaxMs));
    o.applied_sync_interval = std::chrono::milliseconds(ms);
  } else if (key == "group_commit_window_us") {
    STRATA_ASSIGN_OR_RETURN(uint64_t us, r.u64(0, 1'000'000));
    o.group_commit_window = std::chrono::microseconds(us);
  } else if (key == "shutdown_compaction_budget_ms") {
    STRATA_ASSIGN_OR_RETURN(uint64_t ms, r.u64(0, kMaxMs));
    o.shutdown_compaction_budget = std::chrono::milliseconds(ms);
  } else if (key == "sync_timeout_ms") {
    STRATA_ASSIGN_OR_RETURN(uint64_t ms, r.u64(1, kMaxMs));
    req.sync_timeout = std::chrono::milliseconds(ms);
  } else if (key == "migrate_dets") {
    STRATA_ASSIGN_OR_RETURN(o.migrate_dets, r.boolean());
  } else if (key == "migration_progress") {
    STRATA_ASSIGN_OR_RETURN(ErlNifPid p, r.pid());
    req.progress_to = p;
  } else if (key == "fault_injection") {
    STRATA_ASSIGN_OR_RETURN(req.fault_injection, r.boolean());
  } else {
    return Error(Errc::invalid_argument, fmt::format("unknown option {}", key));
  }
  return Status::OK();
}

}  // namespace

Result<OpenRequest> parse_open_request(ErlNifEnv* env, ERL_NIF_TERM dir, ERL_NIF_TERM options) {
  OpenRequest req;
  ErlNifBinary b;
  if (!enif_inspect_binary(env, dir, &b) || b.size == 0) {
    return Error(Errc::invalid_argument, "the data directory must be a non-empty binary");
  }
  std::filesystem::path p(std::string(reinterpret_cast<const char*>(b.data), b.size));
  if (!p.is_absolute()) {
    return Error(Errc::invalid_argument,
                 fmt::format("the data directory {} is not an absolute path", p.string()));
  }
  req.dir = p.lexically_normal().string();
  while (req.dir.size() > 1 && req.dir.back() == '/') req.dir.pop_back();
  // Closing within Ra's 30 s shutdown budget leaves the supervisor no
  // reason to kill the process (which would leave the close to the
  // library's closer thread).
  req.options.shutdown_compaction_budget = std::chrono::milliseconds(25000);
  // Each store_sync counts as a sync caller (RaftMeta::store with a seq),
  // so raftmeta's group commit holds a synced batch, at most this long and
  // never longer than the last fsync took, for as many callers as the last
  // batch released: with a disk whose fsync takes a millisecond, batches
  // of 150-300 callers otherwise cost a fifth more CPU per call than
  // batches of 1 000.
  req.options.group_commit_window = std::chrono::microseconds(2000);

  if (!enif_is_map(env, options)) return Error(Errc::invalid_argument, "options must be a map");
  ErlNifMapIterator it;
  if (!enif_map_iterator_create(env, options, &it, ERL_NIF_MAP_ITERATOR_FIRST)) {
    return Error(Errc::invalid_argument, "options must be a map");
  }
  Status st;
  ERL_NIF_TERM key, value;
  while (st.ok() && enif_map_iterator_get_pair(env, &it, &key, &value)) {
    char name[64];
    if (enif_get_atom(env, key, name, sizeof name, ERL_NIF_LATIN1) <= 0) {
      st = Error(Errc::invalid_argument, "option keys must be atoms");
      break;
    }
    st = apply_option(req, OptionReader(env, name, value), name);
    enif_map_iterator_next(env, &it);
  }
  enif_map_iterator_destroy(env, &it);
  if (!st.ok()) return std::move(st).error();
  return req;
}

}  // namespace strata::erl
