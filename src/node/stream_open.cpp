// Node: opening a stream (node_impl.h, OpenMode). The table marks it
// `opening` under the lock; everything that does I/O — reading its
// settings, opening or creating its log, aligning it with the remote tier
// (a catalog read, a root GET, reading publishers' sequences from up to
// kWriterRecoveryBytes of fragments), starting its uploader — runs outside
// it; then the entry is published, or closed if the stream was released or
// the node closed meanwhile.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "catalog/owner_guarded_catalog.h"
#include "common/overloaded.h"
#include "common/stream_name.h"
#include "node/node_impl.h"
#include "node/node_limits.h"
#include "node/owner_epoch_file.h"
#include "node/stream_settings_file.h"
#include "tier/upload_jobs.h"
#include "tier/writer_recovery.h"

namespace strata::node {

namespace {

bool creates(const OpenMode& m) {
  return std::holds_alternative<CreateNew>(m);
}

const TakeOver* take_over(const OpenMode& m) {
  return std::get_if<TakeOver>(&m);
}

// Valid when created; the node's configuration may have changed since
// (tiering turned off): what cannot apply any more is ignored, and said.
void warn_if_inapplicable(const NodeConfig& cfg, const std::string& name, const StreamSettings& s) {
  if (Status v = validate_settings(cfg, s); !v.ok()) {
    spdlog::warn("node: stream {}: {}; ignored under this node's configuration",
                 printable_stream(name), v.error().message);
  }
}

}  // namespace

Status Node::Impl::deletion_blocks_open(const std::string& name, bool create) const {
  auto d = deletions.find(name);
  if (d == deletions.end()) return Status::OK();
  std::string why = d->second.blocked.empty() ? d->second.last_error : d->second.blocked;
  return Error(create ? Errc::unavailable : Errc::not_found,
               fmt::format("stream {} is being deleted{}{}", name,
                           create ? "; create it again once its deletion has finished" : "",
                           why.empty() ? "" : " (last error: " + why + ")"));
}

Result<std::shared_ptr<log::StreamLog>> Node::Impl::open_stream(const std::string& name,
                                                                const OpenMode& mode) {
  const bool create = creates(mode);
  {
    std::unique_lock l(mu);
    for (;;) {
      if (closed) return Error(Errc::closed, "node is closed");
      STRATA_TRY(deletion_blocks_open(name, create));
      const StreamTable::State st = table.state(name);
      if (st == StreamTable::State::absent) break;
      if (create) return Error(Errc::already_exists, fmt::format("stream {} exists", name));
      if (st == StreamTable::State::open) return table.find(name)->log;
      // Being opened (or handed over) by another call: its outcome decides.
      table_cv.wait(l);
    }
    table.begin_open(name);
  }
  return open_marked(name, mode);
}

Result<std::shared_ptr<log::StreamLog>> Node::Impl::open_marked(const std::string& name,
                                                                const OpenMode& mode) {
  auto built = build_entry(name, mode);
  bool publish = false;
  {
    std::lock_guard l(mu);
    publish = built.ok() && !closed && !table.release_requested(name);
    if (publish) {
      table.finish_open(name, *built);
    } else if (!built.ok()) {
      table.abort_open(name);
    }
  }
  // Released, or the node closed, meanwhile: closed before the slot goes,
  // since the node's close waits for it.
  if (built.ok() && !publish) {
    built->close(name);
    std::lock_guard l(mu);
    table.abort_open(name);
  }
  table_cv.notify_all();
  if (!built.ok()) return std::move(built).error();
  if (!publish) {
    return Error(Errc::closed, fmt::format("stream {} was released (or the node closed) while it "
                                           "was being opened",
                                           name));
  }
  return built->log;
}

Result<StreamSettings> Node::Impl::settings_for(const std::string& name, const OpenMode& mode) {
  FileSystem& fs = registry->fs();
  const std::string dir = registry->dir_of(name);
  // A directory without the file runs with the node's configuration.
  auto from_file = [&]() -> Result<StreamSettings> {
    STRATA_ASSIGN_OR_RETURN(StreamSettings s, read_settings_file(fs, dir));
    warn_if_inapplicable(cfg, name, s);
    return s;
  };
  return std::visit(Overloaded{
                        [&](const CreateNew& c) -> Result<StreamSettings> {
                          STRATA_TRY(validate_settings(cfg, c.settings));
                          return c.settings;
                        },
                        [&](const OpenExisting&) -> Result<StreamSettings> { return from_file(); },
                        [&](const TakeOver& t) -> Result<StreamSettings> {
                          if (!t.kept) return from_file();
                          warn_if_inapplicable(cfg, name, *t.kept);
                          // A local log left from an earlier ownership carries the
                          // settings the catalog holds, so local tools read what the
                          // stream runs with.
                          if (exists(fs, dir)) {
                            auto cur = read_settings_file(fs, dir);
                            if (!cur.ok() || *cur != *t.kept)
                              STRATA_TRY(write_settings_file(fs, dir, *t.kept));
                          }
                          return *t.kept;
                        },
                    },
                    mode);
}

Status Node::Impl::keep_settings_in_catalog(const std::string& name, const StreamSettings& s) {
  const std::string text = settings_to_json(s).dump();
  auto created = catalog->create_with_settings(name, 1, text);
  if (created.ok()) return Status::OK();
  // An entry without a local log (a create that failed after the catalog
  // write): it takes these settings.
  if (created.code() == Errc::already_exists) return catalog->update_settings(name, text);
  return std::move(created).error().with_context("keeping the settings of " + name +
                                                 " in the catalog");
}

Status Node::Impl::recover_from_catalog(bool in_background) {
  auto entries = catalog->list();
  if (!entries.ok()) {
    return std::move(entries).error().with_context("listing the catalog's streams");
  }
  // Marked as being opened at once, so that until each is open a lookup
  // answers unavailable (clients retry), never not_found.
  std::vector<std::pair<std::string, StreamSettings>> todo;
  for (const auto& entry : *entries) {
    const std::string& name = entry.stream;
    {
      std::lock_guard l(mu);
      if (table.state(name) != StreamTable::State::absent || deletions.count(name)) continue;
    }
    STRATA_ASSIGN_OR_RETURN(auto kept, catalog_kept_settings(*catalog, name));
    if (!kept && catalog_outlives_disk()) {
      // Created before the catalog kept settings: a Create with its
      // arguments brings it back as it was; defaults could silently drop
      // its remote confirms.
      spdlog::warn(
          "node: stream {} is in catalog {} with no settings beside it and has no local "
          "log here: not opened (create it again with its arguments to serve it)",
          name, catalog->describe());
      continue;
    }
    if (!kept) {
      // The embedded catalog keeps none (`strata recover --from-bucket`
      // rebuilt its entries after the disk was lost).
      spdlog::warn(
          "node: stream {} is in catalog {} but has no local log here, and the catalog "
          "keeps no settings: serving it from the bucket with this node's "
          "configuration (alter its retention if it had its own)",
          name, catalog->describe());
      kept = StreamSettings{};
    }
    std::lock_guard l(mu);
    if (table.state(name) != StreamTable::State::absent) continue;
    table.begin_open(name);
    todo.emplace_back(name, std::move(*kept));
  }
  if (todo.empty()) return Status::OK();
  auto run = [this, todo = std::move(todo)] {
    for (const auto& [name, settings] : todo) {
      bool stop = false;
      {
        std::lock_guard l(mu);
        stop = closed;
      }
      if (stop) {
        {
          std::lock_guard l(mu);
          table.abort_open(name);
        }
        table_cv.notify_all();
        continue;
      }
      auto log = open_marked(name, TakeOver{settings, {}});
      if (!log.ok()) {
        spdlog::error(
            "node: stream {}: recovering it from the bucket failed (it stays "
            "unserved until the node restarts): {}",
            name, log.error().to_string());
        continue;
      }
      spdlog::info(
          "node: stream {} recovered from the bucket (no local log here): serving from "
          "offset {}",
          name, (*log)->committed_next());
    }
  };
  if (!in_background) {
    run();
    return Status::OK();
  }
  recovery = std::thread(std::move(run));
  return Status::OK();
}

Result<StreamEntry> Node::Impl::build_entry(const std::string& name, const OpenMode& mode) {
  StreamEntry e;
  STRATA_ASSIGN_OR_RETURN(e.settings, settings_for(name, mode));
  e.effective = node::effective_settings(cfg, e.settings);
  if (creates(mode) && e.effective.tiering && catalog_outlives_disk()) {
    STRATA_TRY(keep_settings_in_catalog(name, e.settings));
  }
  log::LogOptions lo = cfg.log_options();
  lo.max_segment_bytes = e.effective.segment_bytes;
  lo.retention = e.effective.local_retention;
  lo.filter_size_bytes = e.effective.filter_size_bytes;
  if (const auto* c = std::get_if<CreateNew>(&mode)) lo.first_offset = c->first_offset;
  if (e.effective.tiering) {
    STRATA_TRY(validate_stream_name(name));
    e.hooks = std::make_shared<tier::TieringHooks>();
    lo.hooks = e.hooks;
  }
  auto with_settings = [&](FileSystem& fs, const std::string& dir) {
    return write_settings_file(fs, dir, e.settings);
  };
  // A cluster owner stamps its tenure's epoch on every chunk it writes, so
  // that a chunk names the tenure that wrote it (TakeOver::epoch).
  const TakeOver* owned = take_over(mode);
  if (owned && owned->epoch != 0) lo.epoch = owned->epoch;
  auto log =
      creates(mode) ? registry->create(name, lo, with_settings) : registry->open_stream(name, lo);
  if (owned && lo.epoch && !log.ok() && log.code() == Errc::conflict) {
    // The log holds chunks of a later epoch than the catalog's (a catalog
    // rebuilt from the bucket): its chunks keep writing that one.
    spdlog::warn("node: stream {}: {}; its new chunks keep the log's epoch", printable_stream(name),
                 log.error().to_string());
    lo.epoch.reset();
    log = registry->open_stream(name, lo);
  }
  // A cluster owner taking over a stream it holds no local log of (a fresh
  // disk) creates one; align_with_remote starts it after the remote tier.
  if (owned && !log.ok() && log.code() == Errc::not_found) {
    log = registry->create(name, lo, with_settings);
  }
  if (!log.ok()) return log.error();
  e.log = *log;
  if (!e.effective.tiering) return e;
  auto aligned = align_with_remote(name, e.log, lo, e.settings, owned);
  if (!aligned.ok()) {
    (void)e.log->close();
    return aligned.error();
  }
  e.log = *aligned;
  if (Status s = start_uploader(name, mode, e); !s.ok()) {
    (void)e.log->close();
    return s.error();
  }
  return e;
}

tier::UploaderOptions Node::Impl::uploader_options(const std::string& name,
                                                   const EffectiveSettings& eff) const {
  const TieringSettings& t = cfg.tiering;
  tier::UploaderOptions o;
  o.stream = name;
  o.key_prefix = t.key_prefix;
  o.assembly.target_size = eff.fragment_target_bytes;
  o.assembly.max_age_ms = eff.fragment_max_age_ms;
  o.assembly.hurry_max_age_ms = t.remote_confirm_cut_ms;
  o.persist_threshold = t.persist_threshold;
  o.persist_interval_ms = t.persist_interval_ms;
  o.request_timeout_ms = t.request_timeout_ms;
  o.delete_grace_ms = t.delete_grace_ms;
  o.retention = eff.remote_retention;
  return o;
}

Status Node::Impl::start_uploader(const std::string& name, const OpenMode& mode, StreamEntry& e) {
  const TakeOver* owned = take_over(mode);
  e.gate = std::make_shared<StreamGate>(name);
  tier::UploaderEnv env;
  env.io = runtime->io_shared();
  env.tasks = runtime->tasks();
  env.governor = governor;
  env.store = std::make_shared<GatedStore>(store, e.gate);
  std::shared_ptr<catalog::Catalog> cat = catalog;
  if (owned && owned->acquire.owner) {
    cat = std::make_shared<catalog::OwnerGuardedCatalog>(catalog, *owned->acquire.owner);
  }
  env.catalog = std::make_shared<GatedCatalog>(cat, e.gate);
  env.cache = cache;
  env.clock = &system_clock();
  tier::UploaderOptions uo = uploader_options(name, e.effective);
  // The acquire raised the epoch already: the uploader adopts this tenure's
  // (checking that no later one stands) instead of raising it again, so
  // the epoch a take-back compares is the one the chunks carry.
  if (owned && owned->epoch != 0) uo.adopt_epoch = owned->epoch;
  if (owned) {
    // The epoch goes beside the log, off the uploader's strand, for a take-
    // back after this process is gone (owner_epoch_file.h).
    uo.on_running = [reg = registry, pool = runtime->pool(), name](uint64_t epoch) {
      pool->post([reg, name, epoch] {
        if (Status s = write_owner_epoch(reg->fs(), reg->dir_of(name), epoch); !s.ok()) {
          spdlog::warn("node: stream {}: recording owner epoch {}: {}", printable_stream(name),
                       epoch, s.to_string());
        }
      });
    };
  }
  if (owned && owned->acquire.on_fenced) {
    uo.on_stopped = [name, cb = owned->acquire.on_fenced](tier::UploaderState st,
                                                          const std::string& why) {
      if (st == tier::UploaderState::fenced) cb(name, why);
    };
  }
  auto u = tier::Uploader::start(env, std::move(uo), e.log);
  if (!u.ok()) return std::move(u).error().with_context("starting the uploader of " + name);
  e.uploader = *u;
  e.hooks->attach(e.uploader, e.log);
  return Status::OK();
}

// The remote tier may hold offsets the local log does not (its disk was
// lost, or restored from an older copy): appends must never reuse them, so
// the local log restarts after what the remote tier holds. Everything the
// local log held is below that point and already remote. If the persisted
// state cannot be read now, the uploader finds out at its start and stalls
// rather than upload over it (tier/uploader.h, "remote ahead").
Result<std::shared_ptr<log::StreamLog>> Node::Impl::align_with_remote(
    const std::string& name, std::shared_ptr<log::StreamLog> log, log::LogOptions lo,
    const StreamSettings& settings, const TakeOver* owned) {
  // A cluster owner's open must know exactly where the remote tier ends.
  const bool exact = owned != nullptr;
  STRATA_ASSIGN_OR_RETURN(auto keys, tier::ObjectKeys::make(cfg.tiering.key_prefix, name));
  auto st = tier::load_stream_state(*catalog, *store, *cache, keys, /*take_over=*/false);
  // A cluster owner must know where the remote tier ends before it writes.
  if (!st.ok() && exact) {
    return Error(st.error()).with_context("reading the persisted state of " + name);
  }
  if (!st.ok()) {
    spdlog::warn(
        "node: stream {}: cannot read its persisted state now ({}); the uploader will retry", name,
        st.error().to_string());
    return log;
  }
  const uint64_t remote_next = st->manifest.next_offset;
  const uint64_t local_next = log->committed_next();
  // Readers take the remote tier from the node's cache: the manifest this
  // takeover just read goes there first, so that none reads an older one
  // (left from this node's earlier ownership) against a local log that
  // restarts past its end.
  if (exact && st->has_root) {
    (void)cache->sync(name,
                      tier::CachedManifest{std::make_shared<const tier::Manifest>(st->manifest),
                                           st->entry.epoch, st->entry.revision});
  }
  // What this node's uploader had reached when it let this very log go
  // (remembered while the process lives); null otherwise.
  const auto mine = exact ? released_at(name) : std::nullopt;
  const ReleasedAt* left = mine && mine->local_next == local_next ? &*mine : nullptr;
  // A log that changed since this node let it go is not taken back.
  std::optional<uint64_t> my_epoch;
  if (exact && st->has_root && remote_next < local_next && (left || !mine)) {
    my_epoch = own_epoch(name, left);
  }
  if (my_epoch && *my_epoch == owned->epoch_before) {
    // Taking back a stream this node let go (its lease lapsed, or the
    // process was restarted) with no owner in between: the epoch this
    // acquire raised is the one this node's uploader held, so the remote
    // tier is a prefix of this log and the tail past it is the stream's
    // own. It is kept and uploaded, not dropped: nothing confirmed here is
    // lost.
    spdlog::info(
        "node: stream {}: taking it back at epoch {} with no owner since; its unuploaded offsets "
        "{}..{} are kept and uploaded",
        name, *my_epoch, remote_next, local_next - 1);
    takeover_kept += local_next - remote_next;
    return log;
  }
  // A tail whose last chunk the fenced owner's tenure wrote (chunks name
  // their tenure, TakeOver::epoch) — a copy of that owner's log
  // (StreamLog::append_copy) — is a prefix of that owner's log, as the
  // remote tier is: it is kept and uploaded. (Epoch 1 is a stream no node
  // has acquired yet, and the epoch of chunks written before chunks named
  // their tenure.)
  const uint64_t tail_epoch = log->last_chunk_epoch();
  if (exact && remote_next < local_next && owned->epoch_before >= 2 &&
      tail_epoch == owned->epoch_before) {
    spdlog::info(
        "node: stream {}: taking it over at remote offset {} with a copy of the last owner's log "
        "(epoch {}) to offset {}: offsets {}..{} are kept and uploaded",
        name, remote_next, tail_epoch, local_next - 1, remote_next, local_next - 1);
    takeover_kept += local_next - remote_next;
    return log;
  }
  if (exact && st->has_root && remote_next != local_next) {
    // Taking a stream over: offsets at or above the remote next offset may
    // have been written by another owner since this log last wrote; ours
    // there were never uploaded and are dropped (the takeover's loss). What
    // this node wrote and never uploaded starts where its uploader had
    // persisted when it let the stream go (known while the process lives),
    // else at the remote tier's end — which another owner may have moved
    // past our tail, hiding the loss, so the first is preferred. Without
    // it (another process wrote this log), the log's last chunks name the
    // tenure that wrote them: what the remote tier holds from where later
    // tenures' uploads begin is not ours.
    uint64_t lost_from = remote_next;
    if (left) {
      lost_from = std::min(left->persisted_next, remote_next);
    } else if (tail_epoch >= 2 && tail_epoch < owned->epoch_before) {
      lost_from =
          std::max(log->first_offset(),
                   std::min(tier::uploaded_after_epoch(st->manifest, tail_epoch), remote_next));
    }
    const uint64_t lost = local_next > lost_from ? local_next - lost_from : 0;
    if (lost > 0) {
      spdlog::error(
          "node: stream {}: taking it over at remote offset {}; offsets {}..{} written here{} were "
          "never uploaded and another owner has held the stream since: they are dropped ({} "
          "offsets; lost unless a consumer already read them)",
          name, remote_next, lost_from, local_next - 1,
          left ? fmt::format(" under epoch {}", left->epoch) : std::string(), lost);
    } else {
      spdlog::warn(
          "node: stream {}: taking it over; the local log ends at {}, the remote tier at {}: the "
          "local log restarts at {}",
          name, local_next, remote_next, remote_next);
    }
    takeover_dropped += lost;
  } else if (!st->has_root || remote_next < local_next) {
    return log;
  } else if (remote_next == local_next) {
    // A log that restarted after the remote tier and has not been written
    // since (a restart right after a takeover) has no writers of its own.
    seed_writers(name, *log, keys, st->manifest);
    return log;
  } else {
    spdlog::error(
        "node: stream {}: the local log ends at offset {} but the remote tier holds offsets up "
        "to {} (local data lost or restored from an older copy); the local log restarts at {} so "
        "that new records never reuse offsets the remote tier holds",
        name, local_next, remote_next, remote_next);
  }
  STRATA_ASSIGN_OR_RETURN(log, restart_after_remote(name, lo, settings, remote_next));
  seed_writers(name, *log, keys, st->manifest);
  return log;
}

// The local log starts again, empty, at the remote tier's next offset; the
// new directory carries the stream's settings like the first did.
Result<std::shared_ptr<log::StreamLog>> Node::Impl::restart_after_remote(
    const std::string& name, log::LogOptions lo, const StreamSettings& settings,
    uint64_t remote_next) {
  local_resets += 1;
  STRATA_TRY(registry->remove(name));
  lo.first_offset = remote_next;
  return registry->create(name, lo, [&](FileSystem& fs, const std::string& dir) {
    return write_settings_file(fs, dir, settings);
  });
}

// The epoch this node's uploader last ran under for `name`: remembered
// since the release (`left`), or — after a restart — recorded beside the
// log (owner_epoch_file.h). nullopt when neither says.
std::optional<uint64_t> Node::Impl::own_epoch(const std::string& name, const ReleasedAt* left) {
  if (left) return left->epoch;
  auto rec = read_owner_epoch(registry->fs(), registry->dir_of(name));
  if (!rec.ok()) {
    spdlog::warn("node: stream {}: {} (its tail is not taken back)", printable_stream(name),
                 rec.error().to_string());
    return std::nullopt;
  }
  return *rec;
}

// A log started after the remote tier takes the publishers' sequences from
// it, so a publisher resending its unconfirmed messages to this node (after
// a takeover) has those already stored deduplicated. Reading is bounded
// (kWriterRecoveryBytes); a failure is logged, not fatal: the stream
// serves, and only a resend of messages stored before it could be
// duplicated.
void Node::Impl::seed_writers(const std::string& name, log::StreamLog& log,
                              const tier::ObjectKeys& keys, const tier::Manifest& manifest) {
  if (manifest.empty() || log.committed_next() != log.first_offset()) return;
  tier::RemoteReaderDeps deps;
  deps.store = store;
  deps.pool = runtime->pool();
  deps.groups = cache->groups().fetcher(*store, keys);
  auto got = tier::remote_writer_sequences(
      deps, keys, std::make_shared<const tier::Manifest>(manifest), kWriterRecoveryBytes);
  if (!got.ok()) {
    spdlog::warn(
        "node: stream {}: cannot read its publishers' sequences from the remote tier "
        "({}); deduplication starts empty",
        name, got.error().to_string());
    return;
  }
  if (got->writers.empty()) return;
  if (log.seed_writer_sequences(got->writers)) {
    spdlog::info(
        "node: stream {}: {} publisher sequence(s) taken from the remote tier ({} "
        "fragment(s) read{})",
        name, got->writers.size(), got->fragments_read,
        got->from_snapshot ? "" : ", no snapshot within the budget: deltas only");
  }
}

}  // namespace strata::node
