// strata_ra_nif: the NIF library of the Erlang module strata_ra_nif
// (erlang/src/strata_ra_nif.erl), raftmeta's calls on a handle.
//
// Scheduling: every call that can wait for the disk runs on a dirty I/O
// scheduler (open, which migrates meta.dets; close; erase and erase_sync,
// which may wait for the writer when too many erases are pending; stats).
// store, store_sync, fetch and inject_sync_failure run on the calling
// process's normal scheduler and return in microseconds: RaftMeta::store
// only updates memory under a mutex the writer never holds across I/O,
// fetch takes no lock, and store_sync hands its wait to the store's
// SyncWaiter thread, which sends the caller {Ref, Result}.
//
// A handle is a resource owning an OpenStore. The process that opened it is
// its owner, monitored: when the owner dies (even killed), the store is
// closed on the StoreCloser's thread and its LOCK released; calls through a
// stale handle answer {error, closed} from the owner's death on (before
// the close has begun: they check that the owner is alive).
#include <erl_nif.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <new>

#include "nif_atoms.h"
#include "open_options.h"
#include "open_store.h"
#include "store_closer.h"
#include "store_registry.h"
#include "term_codec.h"
#include "vote_fetch.h"

namespace strata::erl {
namespace {

ErlNifResourceType* g_handle_type = nullptr;
StoreCloser* g_closer = nullptr;
StoreRegistry* g_registry = nullptr;

// How long open waits for the close of the same directory's previous store
// (a killed owner's) before trying anyway; the open then names the LOCK
// holder. Above the shutdown compaction budget, the longest a close runs.
constexpr std::chrono::milliseconds kWaitForPreviousClose{60'000};

// The resource behind an Erlang handle.
struct Handle {
  std::shared_ptr<OpenStore> store;
  ErlNifMonitor owner_monitor;
  bool monitoring = false;  // set before the handle is published, then read only
};

void handle_dtor(ErlNifEnv*, void* obj) {
  auto* h = static_cast<Handle*>(obj);
  // Garbage-collected while open (its owner still alive): close it, but not
  // on this scheduler.
  if (h->store && !h->store->closed() && g_closer) g_closer->close_later(std::move(h->store));
  h->~Handle();
}

void handle_down(ErlNifEnv*, void* obj, ErlNifPid*, ErlNifMonitor*) {
  auto* h = static_cast<Handle*>(obj);
  // The handle keeps its store: calls through it answer {error, closed}.
  if (h->store && !h->store->closed() && g_closer) g_closer->close_later(h->store);
}

// True once the store is closing, or its owner is dead or exiting (the
// closer may not have begun yet): the calls on it answer {error, closed}
// from the owner's death on, as Ra's calls find no process and no table.
// (strata_ra_log_meta's persistent_term may still hold a killed owner's
// handle.)
bool closed_for_callers(ErlNifEnv* env, const OpenStore& store) {
  if (store.closing()) return true;
  ErlNifPid owner = store.owner();
  return !enif_is_process_alive(env, &owner);
}

Handle* get_handle(ErlNifEnv* env, ERL_NIF_TERM t) {
  void* obj = nullptr;
  if (!enif_get_resource(env, t, g_handle_type, &obj)) return nullptr;
  return static_cast<Handle*>(obj);
}

ERL_NIF_TERM closed_tuple(ErlNifEnv* env) {
  return enif_make_tuple2(env, atoms.error, atoms.closed);
}

// The arguments shared by store and store_sync: handle, id, key, value.
struct StoreArgs {
  OpenStore* store = nullptr;
  BytesView id;
  raftmeta::Field field = raftmeta::Field::current_term;
  raftmeta::FieldValue value;
};

bool decode_store_args(ErlNifEnv* env, const ERL_NIF_TERM argv[], StoreArgs* a) {
  Handle* h = get_handle(env, argv[0]);
  if (h == nullptr) return false;
  a->store = h->store.get();
  return decode_id(env, argv[1], &a->id) && decode_field(argv[2], &a->field) &&
         decode_value(env, a->field, argv[3], &a->value);
}

// open(Dir, Options) -> {ok, Handle} | {error, Reason}. Dirty I/O.
ERL_NIF_TERM open_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  auto req = parse_open_request(env, argv[0], argv[1]);
  if (!req.ok()) {
    ErlNifBinary b;
    std::string dir;
    if (enif_inspect_binary(env, argv[0], &b)) dir.assign(reinterpret_cast<char*>(b.data), b.size);
    return error_tuple(env, req.error(), dir);
  }
  const std::string dir = req->dir;
  // The directory's previous store, if its owner died and its close is
  // still queued or running: wait for that close to release the LOCK.
  if (std::shared_ptr<OpenStore> prev = g_registry->unclosed(dir)) {
    ErlNifPid prev_owner = prev->owner();
    if (!enif_is_process_alive(env, &prev_owner) && !prev->wait_closed(kWaitForPreviousClose)) {
      spdlog::warn("strata_ra_nif {}: the previous store of this directory is still closing", dir);
    }
  }
  raftmeta::MigrationProgress progress;
  if (req->progress_to) {
    // Runs inside RaftMeta::open, on this dirty scheduler thread.
    progress = [env, to = *req->progress_to, dir](std::string_view phase, uint64_t done,
                                                  uint64_t total) {
      ErlNifEnv* msg_env = enif_alloc_env();
      ErlNifPid pid = to;
      const ERL_NIF_TERM msg =
          enif_make_tuple5(msg_env, atoms.migration_progress, make_binary(msg_env, dir),
                           enif_make_atom_len(msg_env, phase.data(), phase.size()),
                           enif_make_uint64(msg_env, done), enif_make_uint64(msg_env, total));
      (void)enif_send(env, &pid, msg_env, msg);
      enif_free_env(msg_env);
    };
  }
  auto opened = OpenStore::open(std::move(req).value(), std::move(progress));
  if (!opened.ok()) return error_tuple(env, opened.error(), dir);

  void* mem = enif_alloc_resource(g_handle_type, sizeof(Handle));
  auto* h = new (mem) Handle{std::move(opened).value(), {}, false};
  ErlNifPid self;
  if (enif_self(env, &self) == nullptr ||
      enif_monitor_process(env, h, &self, &h->owner_monitor) != 0) {
    // The owner died while the store opened: nobody can use or close it.
    (void)h->store->close();
    enif_release_resource(h);
    return closed_tuple(env);
  }
  h->monitoring = true;
  h->store->set_owner(self);
  fill_vote_atoms(env, h->store->meta(), h->store->vote_atoms());
  g_registry->add(h->store);
  const ERL_NIF_TERM handle = enif_make_resource(env, h);
  enif_release_resource(h);
  return enif_make_tuple2(env, atoms.ok, handle);
}

// close(Handle) -> ok | {error, Reason}. Dirty I/O. Idempotent.
ERL_NIF_TERM close_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  Handle* h = get_handle(env, argv[0]);
  if (h == nullptr) return enif_make_badarg(env);
  if (h->monitoring) (void)enif_demonitor_process(env, h, &h->owner_monitor);
  return status_term(env, h->store->close(), h->store->dir());
}

// store(Handle, Id, Key, Value) -> ok | {error, Reason}. Normal scheduler.
ERL_NIF_TERM store_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  StoreArgs a;
  if (!decode_store_args(env, argv, &a)) return enif_make_badarg(env);
  if (closed_for_callers(env, *a.store)) return closed_tuple(env);
  return status_term(env, a.store->meta().store(a.id, a.field, a.value), a.store->dir());
}

// store_sync(Handle, Id, Key, Value, Ref) -> ok | {error, Reason}. Normal
// scheduler. ok: the change is applied and {Ref, ok | {error, Reason}}
// follows once it is durable.
ERL_NIF_TERM store_sync_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  StoreArgs a;
  if (!decode_store_args(env, argv, &a) || !enif_is_ref(env, argv[4])) {
    return enif_make_badarg(env);
  }
  if (closed_for_callers(env, *a.store)) return closed_tuple(env);
  uint64_t seq = 0;
  const Status s = a.store->meta().store(a.id, a.field, a.value, &seq);
  if (!s.ok()) return error_tuple(env, s.error(), a.store->dir());
  ErlNifPid self;
  enif_self(env, &self);
  if (!a.store->reply_when_durable(self, argv[4], seq)) return closed_tuple(env);
  return atoms.ok;
}

// erase(Handle, Id) -> ok | {error, Reason}. Dirty I/O.
ERL_NIF_TERM erase_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  Handle* h = get_handle(env, argv[0]);
  BytesView id;
  if (h == nullptr || !decode_id(env, argv[1], &id)) return enif_make_badarg(env);
  if (closed_for_callers(env, *h->store)) return closed_tuple(env);
  return status_term(env, h->store->meta().erase(id), h->store->dir());
}

// erase_sync(Handle, Id, Ref) -> ok | {error, Reason}, then {Ref, Result}
// as store_sync. Dirty I/O.
ERL_NIF_TERM erase_sync_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  Handle* h = get_handle(env, argv[0]);
  BytesView id;
  if (h == nullptr || !decode_id(env, argv[1], &id) || !enif_is_ref(env, argv[2])) {
    return enif_make_badarg(env);
  }
  if (closed_for_callers(env, *h->store)) return closed_tuple(env);
  uint64_t seq = 0;
  const Status s = h->store->meta().erase(id, &seq);
  if (!s.ok()) return error_tuple(env, s.error(), h->store->dir());
  ErlNifPid self;
  enif_self(env, &self);
  if (!h->store->reply_when_durable(self, argv[2], seq)) return closed_tuple(env);
  return atoms.ok;
}

// fetch(Handle, Id, Key) -> Value | undefined | {error, closed}. Normal
// scheduler, lock-free: never waits for a write in flight.
ERL_NIF_TERM fetch_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  Handle* h = get_handle(env, argv[0]);
  BytesView id;
  raftmeta::Field f;
  if (h == nullptr || !decode_id(env, argv[1], &id) || !decode_field(argv[2], &f)) {
    return enif_make_badarg(env);
  }
  if (closed_for_callers(env, *h->store)) return closed_tuple(env);
  if (f == raftmeta::Field::voted_for) {
    return fetch_vote(env, h->store->meta(), h->store->vote_atoms(), id);
  }
  std::optional<raftmeta::FieldValue> v = h->store->meta().fetch(id, f);
  return v ? encode_value(env, *v) : atoms.undefined;
}

class MapBuilder {
 public:
  explicit MapBuilder(ErlNifEnv* env) : env_(env), map_(enif_make_new_map(env)) {}
  MapBuilder& put(const char* key, ERL_NIF_TERM v) {
    (void)enif_make_map_put(env_, map_, enif_make_atom(env_, key), v, &map_);
    return *this;
  }
  MapBuilder& u64(const char* key, uint64_t v) { return put(key, enif_make_uint64(env_, v)); }
  MapBuilder& flag(const char* key, bool v) { return put(key, v ? atoms.true_ : atoms.false_); }
  MapBuilder& str(const char* key, std::string_view v) { return put(key, make_binary(env_, v)); }
  ERL_NIF_TERM map() const { return map_; }

 private:
  ErlNifEnv* env_;
  ERL_NIF_TERM map_;
};

// stats(Handle) -> map() | {error, closed}. Dirty I/O (the slotstore's
// counters take its locks).
ERL_NIF_TERM stats_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  Handle* h = get_handle(env, argv[0]);
  if (h == nullptr) return enif_make_badarg(env);
  if (h->store->closed()) return closed_tuple(env);
  const raftmeta::Stats s = h->store->meta().stats();
  const auto& st = s.store;
  const auto& mig = s.migration;
  MapBuilder migration(env);
  migration
      .put("action", enif_make_atom(env, std::string(raftmeta::action_name(mig.action)).c_str()))
      .str("source", mig.source)
      .u64("rows", mig.rows)
      .u64("removed_leftovers", mig.removed_leftovers.size());
  MapBuilder m(env);
  m.str("dir", h->store->dir())
      .str("path", h->store->meta().path())
      .u64("servers", s.servers)
      .u64("capacity", s.capacity)
      .u64("node_names", s.node_names)
      .u64("node_capacity", s.node_capacity)
      .u64("changes", s.changes)
      .u64("batches", s.batches)
      .u64("ops_written", s.ops_written)
      .u64("largest_batch", s.largest_batch)
      .u64("synced_batches", s.synced_batches)
      .u64("periodic_syncs", s.periodic_syncs)
      .u64("group_commit_holds", s.group_commit_holds)
      .u64("failed_batches", s.failed_batches)
      .u64("capacity_errors", s.capacity_errors)
      .u64("sync_rounds", h->store->waiter().rounds())
      .u64("sync_replies", h->store->waiter().replies())
      .u64("sync_timeouts", h->store->waiter().timeouts())
      .u64("wal_bytes_total", st.wal_bytes_total)
      .u64("wal_bytes_used", st.wal_bytes_used)
      .u64("wal_switches", st.wal_switches)
      .u64("compactions", st.compactions)
      .u64("compactions_failed", st.compactions_failed)
      .u64("compaction_waits", st.compaction_waits)
      .u64("fsyncs", st.fsyncs)
      .flag("fail_stopped", st.fail_stopped)
      .str("fail_stop_reason", st.fail_stop_reason)
      .put("migration", migration.map());
  return m.map();
}

// send_replies(Handle) -> done | more. Normal scheduler: the owner, told
// `strata_ra_replies`, sends decided store_sync replies from its process
// (sync_waiter.h), at most kRepliesPerCall per call.
ERL_NIF_TERM send_replies_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  constexpr size_t kRepliesPerCall = 256;
  Handle* h = get_handle(env, argv[0]);
  if (h == nullptr) return enif_make_badarg(env);
  const bool more = h->store->waiter().send_ready(env, kRepliesPerCall);
  // About 0.5 us a reply: 256 of them are a tenth of a time slice.
  (void)enif_consume_timeslice(env, 10);
  return more ? atoms.more : atoms.done;
}

// inject_sync_failure(Handle) -> ok | {error, Reason}. Tests only.
ERL_NIF_TERM inject_sync_failure_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  Handle* h = get_handle(env, argv[0]);
  if (h == nullptr) return enif_make_badarg(env);
  return status_term(env, h->store->fail_syncs(), h->store->dir());
}

// inject_sync_hang(Handle, Hang) -> ok | {error, Reason}. Tests only:
// while Hang is true, the store's fsyncs block. Normal scheduler (it only
// sets a flag).
ERL_NIF_TERM inject_sync_hang_nif(ErlNifEnv* env, int, const ERL_NIF_TERM argv[]) {
  Handle* h = get_handle(env, argv[0]);
  const bool hang = enif_is_identical(argv[1], atoms.true_);
  if (h == nullptr || (!hang && !enif_is_identical(argv[1], atoms.false_))) {
    return enif_make_badarg(env);
  }
  return status_term(env, h->store->hang_syncs(hang), h->store->dir());
}

int load(ErlNifEnv* env, void**, ERL_NIF_TERM) {
  make_atoms(env);
  ErlNifResourceTypeInit init{};
  init.dtor = handle_dtor;
  init.down = handle_down;
  g_handle_type =
      enif_open_resource_type_x(env, "strata_ra_handle", &init, ERL_NIF_RT_CREATE, nullptr);
  if (g_handle_type == nullptr) return 1;
  // A closer of an earlier load of this library may still be referenced by
  // resources of that load: it is left (shut down), not freed.
  g_closer = new StoreCloser();
  if (g_registry == nullptr) g_registry = new StoreRegistry();
  // raftmeta logs with spdlog, whose default logger writes to stdout — the
  // BEAM's console. Its messages go to stderr instead.
  if (!spdlog::get("strata_ra_nif")) {
    spdlog::set_default_logger(spdlog::stderr_color_mt("strata_ra_nif"));
  }
  return 0;
}

void unload(ErlNifEnv*, void*) {
  if (g_closer) g_closer->shutdown();
}

ErlNifFunc nif_funcs[] = {
    {"open", 2, open_nif, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"close", 1, close_nif, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"store", 4, store_nif, 0},
    {"store_sync", 5, store_sync_nif, 0},
    {"erase", 2, erase_nif, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"erase_sync", 3, erase_sync_nif, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"fetch", 3, fetch_nif, 0},
    {"stats", 1, stats_nif, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"inject_sync_failure", 1, inject_sync_failure_nif, 0},
    {"inject_sync_hang", 2, inject_sync_hang_nif, 0},
    {"send_replies", 1, send_replies_nif, 0},
};

}  // namespace
}  // namespace strata::erl

using strata::erl::load;
using strata::erl::nif_funcs;
using strata::erl::unload;

ERL_NIF_INIT(strata_ra_nif, nif_funcs, load, nullptr, nullptr, unload)
