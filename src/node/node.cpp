#include "node/node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <future>

#include "catalog/embedded_catalog.h"
#include "catalog/owner_guarded_catalog.h"
#include "node/catalog_open.h"
#include "node/stream_settings_file.h"
#include "objstore/metered_store.h"
#include "tier/upload_jobs.h"
#include "tier/writer_recovery.h"

namespace strata::node {

using json = nlohmann::json;

namespace {

// Each open stream holds a segment and an index file open; a node with
// thousands of streams needs more descriptors than the usual soft limit.
void raise_fd_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

Node::Node(NodeConfig cfg) : cfg_(std::move(cfg)) {}

Result<std::unique_ptr<Node>> Node::open(NodeConfig cfg) {
  std::unique_ptr<Node> n(new Node(std::move(cfg)));
  if (Status s = n->start(); !s.ok()) {
    (void)n->close();
    return s.error();
  }
  return n;
}

Status Node::start() {
  raise_fd_limit();
  started_ms_ = system_clock().now_ms();
  FileSystem& fs = posix_fs();
  STRATA_TRY(create_dirs(fs, cfg_.data_dir));
  // First: everything below (leftovers of interrupted creates, deletion
  // markers) assumes no other process works in this directory.
  auto lock =
      FileLock::acquire(path_join(cfg_.data_dir, "LOCK"), "data directory " + cfg_.data_dir);
  if (!lock.ok()) {
    if (lock.code() != Errc::conflict) return std::move(lock).error();
    return Error(Errc::conflict,
                 fmt::format("data directory {} is in use by another process (a running node or "
                             "`strata` command); stop it first ({})",
                             cfg_.data_dir, lock.error().message));
  }
  dir_lock_ = std::move(lock).value();

  auto store = objstore::open_object_store(cfg_.objstore);
  if (!store.ok()) return std::move(store).error().with_context("opening the object store");
  store_ = std::make_shared<objstore::MeteredStore>(
      std::shared_ptr<objstore::ObjectStore>(std::move(store).value()));
  if (auto a = store_->check_access(); !a.ok()) {
    return a.error().to_error().with_context("checking the object store " + store_->describe());
  }

  if (cfg_.catalog_backend == "etcd") {
    auto cat = open_etcd_catalog(cfg_.catalog_etcd);
    if (!cat.ok()) return std::move(cat).error().with_context("opening the etcd catalog");
    catalog_ = std::move(cat).value();
  } else {
    catalog::EmbeddedCatalogOptions co;
    co.capacity = cfg_.catalog_capacity;
    auto cat = catalog::EmbeddedCatalog::open(fs, path_join(cfg_.data_dir, "catalog"), co);
    if (!cat.ok()) return std::move(cat).error().with_context("opening the catalog");
    catalog_ = std::shared_ptr<catalog::Catalog>(std::move(cat).value());
  }

  auto reg = log::StreamRegistry::open(path_join(cfg_.data_dir, "streams"), cfg_.log_options());
  if (!reg.ok()) return std::move(reg).error().with_context("opening the stream directory");
  registry_ = std::move(reg).value();

  cache_ = std::make_shared<tier::ManifestCache>(cfg_.tiering.group_cache_bytes);
  BlockingPoolOptions po;
  po.threads = cfg_.blocking_threads;
  po.max_threads = std::max<size_t>(64, 2 * size_t(cfg_.blocking_threads));
  pool_ = std::make_shared<BlockingPool>(po);
  lifetime_ = std::make_shared<IoLifetime>();
  governor_ = tier::Governor::make(*io_, cfg_.governor, system_clock());
  work_.emplace(asio::make_work_guard(*io_));
  for (uint32_t i = 0; i < cfg_.io_threads; ++i) {
    io_threads_.emplace_back([io = io_] { io->run(); });
  }

  STRATA_TRY(scan_deletions());
  STRATA_ASSIGN_OR_RETURN(auto names, registry_->list());
  std::lock_guard l(mu_);
  size_t opened = 0;
  for (const auto& name : names) {
    if (!cfg_.open_streams_at_start) break;
    // Being deleted: its uploader must not start (it would take the stream
    // over and upload again what the deletion removes).
    if (deletions_.count(name)) continue;
    auto s = open_stream_locked(name, false);
    if (!s.ok()) return std::move(s).error().with_context("opening stream " + name);
    opened += 1;
  }
  spdlog::info("node: {} stream(s) in {}, {} deletion(s) pending, object store {}, catalog {}",
               opened, cfg_.data_dir, deletions_.size(), store_->describe(), catalog_->describe());
  start_background_locked();
  return Status::OK();
}

tier::UploaderOptions Node::uploader_options(const std::string& name,
                                             const EffectiveSettings& eff) const {
  const TieringSettings& t = cfg_.tiering;
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

Result<std::shared_ptr<log::StreamLog>> Node::open_stream_locked(const std::string& name,
                                                                 bool create,
                                                                 const StreamSettings& settings,
                                                                 const AcquireOptions* owned,
                                                                 bool settings_given) {
  if (closed_) return Error(Errc::closed, "node is closed");
  if (auto d = deletions_.find(name); d != deletions_.end()) {
    std::string why = d->second.blocked.empty() ? d->second.last_error : d->second.blocked;
    return Error(create ? Errc::unavailable : Errc::not_found,
                 fmt::format("stream {} is being deleted{}{}", name,
                             create ? "; create it again once its deletion has finished" : "",
                             why.empty() ? "" : " (last error: " + why + ")"));
  }
  if (auto it = streams_.find(name); it != streams_.end()) {
    if (create) return Error(Errc::already_exists, fmt::format("stream {} exists", name));
    return it->second.log;
  }
  StreamEntry e;
  if (create) {
    STRATA_TRY(validate_settings(cfg_, settings));
    e.settings = settings;
  } else if (settings_given) {
    e.settings = settings;
    if (Status v = validate_settings(cfg_, e.settings); !v.ok()) {
      spdlog::warn("node: stream {}: {}; ignored under this node's configuration", name,
                   v.error().message);
    }
    // A local log left from an earlier ownership carries the settings the
    // catalog holds, so local tools read what the stream runs with.
    const std::string dir = path_join(registry_->data_dir(), name);
    if (exists(registry_->fs(), dir)) {
      auto cur = read_settings_file(registry_->fs(), dir);
      if (!cur.ok() || *cur != e.settings) {
        STRATA_TRY(write_settings_file(registry_->fs(), dir, e.settings));
      }
    }
  } else {
    auto s = read_settings_file(registry_->fs(), path_join(registry_->data_dir(), name));
    if (!s.ok()) return s.error();
    e.settings = *s;
    // Valid when created; the node's configuration may have changed since
    // (tiering turned off): what cannot apply any more is ignored.
    if (Status v = validate_settings(cfg_, e.settings); !v.ok()) {
      spdlog::warn("node: stream {}: {}; ignored under this node's configuration", name,
                   v.error().message);
    }
  }
  e.effective = node::effective_settings(cfg_, e.settings);
  log::LogOptions lo = cfg_.log_options();
  lo.max_segment_bytes = e.effective.segment_bytes;
  lo.retention = e.effective.local_retention;
  if (e.effective.tiering) {
    STRATA_TRY(tier::validate_stream_name(name));
    e.hooks = std::make_shared<tier::TieringHooks>();
    lo.hooks = e.hooks;
  }
  auto with_settings = [&](FileSystem& fs, const std::string& dir) {
    return write_settings_file(fs, dir, e.settings);
  };
  auto log = create ? registry_->create(name, lo, with_settings) : registry_->open_stream(name, lo);
  // A cluster owner taking over a stream it holds no local log of (a fresh
  // disk) creates one; align_with_remote starts it after the remote tier.
  if (owned && !log.ok() && log.code() == Errc::not_found) {
    log = registry_->create(name, lo, with_settings);
  }
  if (!log.ok()) return log.error();
  e.log = *log;
  if (e.effective.tiering) {
    auto aligned = align_with_remote(name, e.log, lo, e.settings, owned != nullptr);
    if (!aligned.ok()) {
      (void)e.log->close();
      return aligned.error();
    }
    e.log = *aligned;
  }
  if (e.effective.tiering) {
    e.gate = std::make_shared<StreamGate>(name);
    tier::UploaderEnv env;
    env.io = io_;
    env.tasks = TaskContext{pool_.get(), lifetime_};
    env.governor = governor_;
    env.store = std::make_shared<GatedStore>(store_, e.gate);
    std::shared_ptr<catalog::Catalog> cat = catalog_;
    if (owned && owned->owner) {
      cat = std::make_shared<catalog::OwnerGuardedCatalog>(catalog_, *owned->owner);
    }
    env.catalog = std::make_shared<GatedCatalog>(cat, e.gate);
    env.cache = cache_;
    env.clock = &system_clock();
    tier::UploaderOptions uo = uploader_options(name, e.effective);
    if (owned && owned->on_fenced) {
      uo.on_stopped = [name, cb = owned->on_fenced](tier::UploaderState st,
                                                    const std::string& why) {
        if (st == tier::UploaderState::fenced) cb(name, why);
      };
    }
    auto u = tier::Uploader::start(env, std::move(uo), e.log);
    if (!u.ok()) return std::move(u).error().with_context("starting the uploader of " + name);
    e.uploader = *u;
    e.hooks->attach(e.uploader);
  }
  streams_[name] = e;
  return e.log;
}

// The remote tier may hold offsets the local log does not (its disk was
// lost, or restored from an older copy): appends must never reuse them, so
// the local log restarts after what the remote tier holds. Everything the
// local log held is below that point and already remote. If the persisted
// state cannot be read now, the uploader finds out at its start and stalls
// rather than upload over it (tier/uploader.h, "remote ahead").
Result<std::shared_ptr<log::StreamLog>> Node::align_with_remote(const std::string& name,
                                                                std::shared_ptr<log::StreamLog> log,
                                                                log::LogOptions lo,
                                                                const StreamSettings& settings,
                                                                bool exact) {
  STRATA_ASSIGN_OR_RETURN(auto keys, tier::ObjectKeys::make(cfg_.tiering.key_prefix, name));
  auto st = tier::load_stream_state(*catalog_, *store_, *cache_, keys, /*take_over=*/false);
  // A cluster owner must know where the remote tier ends before it writes.
  if (!st.ok() && exact) {
    return Error(st.error()).with_context("reading the persisted state of " + name);
  }
  if (!st.ok()) {
    spdlog::warn(
        "node: stream {}: cannot read its persisted state now ({}); the uploader will "
        "retry",
        name, st.error().to_string());
    return log;
  }
  uint64_t remote_next = st->manifest.next_offset;
  uint64_t local_next = log->committed_next();
  if (exact && st->has_root && remote_next != local_next) {
    // Taking a stream over: offsets at or above the remote next offset may
    // have been written by another owner since this log last wrote; ours
    // there were never uploaded and are dropped (the takeover's loss).
    spdlog::warn(
        "node: stream {}: taking it over; the local log ends at {}, the remote tier at {}: the "
        "local log restarts at {}{}",
        name, local_next, remote_next, remote_next,
        local_next > remote_next
            ? fmt::format(" ({} unuploaded offsets dropped)", local_next - remote_next)
            : "");
    local_resets_ += 1;
    takeover_dropped_ += local_next > remote_next ? local_next - remote_next : 0;
    STRATA_TRY(registry_->remove(name));
    lo.first_offset = remote_next;
    STRATA_ASSIGN_OR_RETURN(
        log, registry_->create(name, lo, [&](FileSystem& fs, const std::string& dir) {
          return write_settings_file(fs, dir, settings);
        }));
    seed_writers(name, *log, keys, st->manifest);
    return log;
  }
  if (!st->has_root || remote_next < local_next) return log;
  if (remote_next == local_next) {
    // A log that restarted after the remote tier and has not been written
    // since (a restart right after a takeover) has no writers of its own.
    seed_writers(name, *log, keys, st->manifest);
    return log;
  }
  spdlog::error(
      "node: stream {}: the local log ends at offset {} but the remote tier holds offsets up to "
      "{} (local data lost or restored from an older copy); the local log restarts at {} so that "
      "new records never reuse offsets the remote tier holds",
      name, local_next, remote_next, remote_next);
  local_resets_ += 1;
  STRATA_TRY(registry_->remove(name));
  lo.first_offset = remote_next;
  // The new directory carries the stream's settings like the first did.
  STRATA_ASSIGN_OR_RETURN(log,
                          registry_->create(name, lo, [&](FileSystem& fs, const std::string& dir) {
                            return write_settings_file(fs, dir, settings);
                          }));
  seed_writers(name, *log, keys, st->manifest);
  return log;
}

// How much of the remote tier a node reads, newest first, looking for the
// publishers' sequences (a local segment's worth at the default size).
constexpr uint64_t kWriterRecoveryBytes = 512ull << 20;

// A log started after the remote tier takes the publishers' sequences from
// it, so a publisher resending its unconfirmed messages to this node (after
// a takeover) has those already stored deduplicated. Reading is bounded;
// a failure is logged, not fatal: the stream serves, and only a resend of
// messages stored before it could be duplicated.
void Node::seed_writers(const std::string& name, log::StreamLog& log, const tier::ObjectKeys& keys,
                        const tier::Manifest& manifest) {
  if (manifest.empty() || log.committed_next() != log.first_offset()) return;
  tier::RemoteReaderDeps deps;
  deps.store = store_;
  deps.pool = pool_;
  deps.groups = cache_->groups().fetcher(*store_, keys);
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

Result<std::shared_ptr<log::StreamLog>> Node::acquire_stream(const std::string& name,
                                                             const AcquireOptions& opts) {
  {
    std::lock_guard l(mu_);
    if (auto it = streams_.find(name); it != streams_.end()) return it->second.log;
  }
  // Fence first: once the epoch is raised no older owner's persist can
  // land, so the remote next offset read below is final. Guarded by the
  // owner key: a node that no longer owns the stream cannot raise it.
  for (int attempt = 0;; ++attempt) {
    auto e = catalog_->get(name);
    if (!e.ok() && e.code() == Errc::not_found) break;
    if (!e.ok()) return std::move(e).error().with_context("taking over " + name);
    auto b = opts.owner ? catalog_->bump_epoch_if_owner(name, e->revision, 0, *opts.owner)
                        : catalog_->bump_epoch(name, e->revision, 0);
    if (!b.ok()) return std::move(b).error().with_context("taking over " + name);
    if (b->outcome == catalog::PutOutcome::ok || b->outcome == catalog::PutOutcome::not_found) {
      break;
    }
    if (b->outcome == catalog::PutOutcome::fenced) {
      return Error(Errc::conflict,
                   fmt::format("taking over {}: its owner key {} no longer names this node on "
                               "lease {}; not raising the epoch (now {})",
                               name, opts.owner->key, opts.owner->lease, b->epoch));
    }
    if (attempt >= 10) {
      return Error(Errc::conflict,
                   fmt::format("taking over {}: its catalog entry kept changing", name));
    }
  }
  // The settings the stream was created with, wherever it runs.
  auto kept = catalog_->settings(name);
  if (!kept.ok() && kept.code() != Errc::unsupported) {
    return std::move(kept).error().with_context("reading the settings of " + name);
  }
  StreamSettings settings;
  const bool given = kept.ok() && kept->has_value();
  if (given) {
    auto j = json::parse(**kept, nullptr, false);
    auto parsed = j.is_discarded() ? Result<StreamSettings>(Error(Errc::corrupt, "not JSON"))
                                   : settings_from_json(j);
    if (!parsed.ok()) {
      return Error(Errc::corrupt,
                   fmt::format("stream {}: the settings kept in catalog {} are unreadable: {}",
                               name, catalog_->describe(), parsed.error().message));
    }
    settings = *parsed;
  }
  std::lock_guard l(mu_);
  return open_stream_locked(name, false, settings, &opts, given);
}

Status Node::create_catalog_stream(const std::string& name, const StreamSettings& settings) {
  STRATA_TRY(validate_settings(cfg_, settings));
  // Stored even when empty, so that every owner takes them from the
  // catalog, never from a settings file left on its disk.
  auto e = catalog_->create_with_settings(name, 1, settings_to_json(settings).dump());
  if (!e.ok()) return std::move(e).error();
  return Status::OK();
}

void Node::release_stream(const std::string& name) {
  StreamEntry e;
  {
    std::lock_guard l(mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) return;
    e = std::move(it->second);
    streams_.erase(it);
  }
  if (e.hooks) e.hooks->detach();
  if (e.uploader) e.uploader->close();
  if (e.log) {
    if (Status s = e.log->close(); !s.ok()) {
      spdlog::warn("node: stream {}: closing its log: {}", name, s.to_string());
    }
  }
}

Status Node::hand_off_stream(const std::string& name, std::chrono::milliseconds timeout,
                             const std::function<void()>& hidden) {
  StreamEntry e;
  {
    std::lock_guard l(mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) {
      return Error(Errc::not_found, fmt::format("stream {} is not open on this node", name));
    }
    if (!it->second.uploader) {
      return Error(Errc::unsupported,
                   fmt::format("stream {} is not tiered: nothing would carry its data to another "
                               "node, so it is not handed over",
                               name));
    }
    if (closed_) return Error(Errc::closed, "node closed");
    e = it->second;
    handing_off_[name] = e;
    streams_.erase(it);
  }
  // Ends the hand-over: the stream closed here unless it was put back.
  auto finish = [&](bool close_it) {
    if (close_it) {
      if (e.hooks) e.hooks->detach();
      e.uploader->close();
      if (Status s = e.log->close(); !s.ok()) {
        spdlog::warn("node: stream {}: closing its log: {}", name, s.to_string());
      }
    }
    std::lock_guard l(mu_);
    handing_off_.erase(name);
    handoff_cv_.notify_all();
  };
  if (hidden) hidden();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Status st;
  for (;;) {
    const uint64_t target = e.log->committed_next();
    auto p = std::make_shared<std::promise<Status>>();
    auto f = p->get_future();
    e.uploader->await_persisted(
        target, [p](Status s) { p->set_value(std::move(s)); }, /*urgent=*/true);
    e.uploader->force_cut();
    if (f.wait_until(deadline) != std::future_status::ready) {
      st = Error(Errc::timeout,
                 fmt::format("offsets below {} not persisted within {} ms (remote next {})", target,
                             timeout.count(), e.uploader->persisted_next()));
      break;
    }
    st = f.get();
    // Nothing committed since: all of it is persisted.
    if (!st.ok() || e.log->committed_next() == target) break;
  }
  if (!st.ok()) {
    bool put_back = false;
    {
      std::lock_guard l(mu_);
      if (!closed_ && !streams_.count(name)) {
        streams_[name] = e;
        put_back = true;
      }
    }
    finish(!put_back);
    return std::move(st).error().with_context("handing stream " + name + " over");
  }
  finish(true);
  return Status::OK();
}

Result<std::shared_ptr<log::StreamLog>> Node::create_stream(const std::string& name,
                                                            const StreamSettings& settings) {
  std::lock_guard l(mu_);
  return open_stream_locked(name, true, settings);
}

Result<StreamSettings> Node::stream_settings(const std::string& name) const {
  std::lock_guard l(mu_);
  auto it = streams_.find(name);
  if (it == streams_.end()) {
    return Error(Errc::not_found, fmt::format("stream {} does not exist on this node", name));
  }
  return it->second.settings;
}

Result<EffectiveSettings> Node::effective_settings(const std::string& name) const {
  std::lock_guard l(mu_);
  auto it = streams_.find(name);
  if (it == streams_.end()) {
    return Error(Errc::not_found, fmt::format("stream {} does not exist on this node", name));
  }
  return it->second.effective;
}

tier::TierContext Node::tier_context(const std::string& name) const {
  tier::TierContext ctx;
  ctx.stream = name;
  bool tiered = cfg_.tiering.enabled;
  {
    std::lock_guard l(mu_);
    if (auto it = streams_.find(name); it != streams_.end()) tiered = it->second.effective.tiering;
  }
  if (tiered) {
    ctx.store = store_;
    ctx.cache = cache_;
    ctx.key_prefix = cfg_.tiering.key_prefix;
    ctx.pool = pool_;
  }
  return ctx;
}

Result<std::unique_ptr<tier::StreamReader>> Node::open_reader(const std::string& name,
                                                              const log::OffsetSpec& spec,
                                                              tier::StreamReaderOptions opts) {
  STRATA_ASSIGN_OR_RETURN(auto log, stream(name));
  auto r = tier::StreamReader::open(log, tier_context(name), spec, opts);
  // Just opened (a takeover, a hand-over, a restart): its uploader may still
  // be loading the persisted manifest that remote offsets need. A reader
  // asked for them then waits for it (at most 5 s) instead of failing.
  for (int i = 0; i < 200 && !r.ok() && r.code() == Errc::unavailable; ++i) {
    auto up = uploader(name);
    if (!up || up->state() != tier::UploaderState::starting) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    r = tier::StreamReader::open(log, tier_context(name), spec, opts);
  }
  return r;
}

Result<std::shared_ptr<log::StreamLog>> Node::stream(const std::string& name) {
  std::lock_guard l(mu_);
  auto it = streams_.find(name);
  if (it == streams_.end()) {
    if (deletions_.count(name)) {
      return Error(Errc::not_found, fmt::format("stream {} is being deleted", name));
    }
    return Error(Errc::not_found, fmt::format("stream {} does not exist on this node", name));
  }
  return it->second.log;
}

std::vector<std::string> Node::streams() const {
  std::lock_guard l(mu_);
  std::vector<std::string> out;
  for (const auto& [k, v] : streams_) out.push_back(k);
  return out;
}

std::shared_ptr<tier::Uploader> Node::uploader(const std::string& name) const {
  std::lock_guard l(mu_);
  auto it = streams_.find(name);
  return it == streams_.end() ? nullptr : it->second.uploader;
}

Status Node::flush(const std::string& name, std::chrono::milliseconds timeout) {
  std::shared_ptr<log::StreamLog> log;
  std::shared_ptr<tier::Uploader> up;
  {
    std::lock_guard l(mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) {
      return Error(Errc::not_found, fmt::format("stream {} does not exist on this node", name));
    }
    log = it->second.log;
    up = it->second.uploader;
  }
  if (!up) return Error(Errc::unavailable, "tiering is disabled on this node");
  uint64_t target = log->committed_next();
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  up->await_persisted(
      target, [p](Status s) { p->set_value(std::move(s)); }, /*urgent=*/true);
  up->force_cut();
  if (f.wait_for(timeout) != std::future_status::ready) {
    auto st = up->status();
    return Error(Errc::timeout,
                 fmt::format("stream {}: offsets below {} not persisted within {} ms (remote next "
                             "{}; last error: {})",
                             name, target, timeout.count(), st.remote_next_offset,
                             st.last_error.empty() ? "none" : st.last_error));
  }
  return f.get();
}

Status Node::close() {
  std::map<std::string, StreamEntry> streams, handing_off;
  {
    std::lock_guard l(mu_);
    if (closed_) return Status::OK();
    closed_ = true;
    streams.swap(streams_);
    handing_off = handing_off_;
  }
  for (auto& [name, e] : streams) {
    if (e.hooks) e.hooks->detach();
    if (e.uploader) e.uploader->close();
  }
  // A hand-over in progress waits on its uploader: closed, the wait ends at
  // once and the hand-over closes its stream; wait for that, so that none
  // runs on past the node.
  for (auto& [name, e] : handing_off) e.uploader->close();
  {
    std::unique_lock l(mu_);
    if (!handoff_cv_.wait_for(l, std::chrono::seconds(30), [&] { return handing_off_.empty(); })) {
      spdlog::warn("node: {} stream hand-over(s) still running at close", handing_off_.size());
    }
  }
  // In-flight tasks: given the pool's grace to finish, then abandoned. Only
  // then the event loop stops (their outcomes are dropped), then the logs
  // and the catalog close.
  if (pool_) pool_->stop();
  if (lifetime_) lifetime_->end();
  work_.reset();
  io_->stop();
  for (auto& t : io_threads_) t.join();
  io_threads_.clear();
  // Handlers still queued (an uploader's close, cancelled timers) own the
  // uploaders, which own the event loop: run them out here, on this thread,
  // so nothing is left holding the loop alive. A closed uploader's handlers
  // only tidy up and start nothing new; the bound is a safety net.
  io_->restart();
  for (int round = 0; round < 1000 && io_->poll() > 0; ++round) {
  }
  // What is left (timers of tasks abandoned at the pool's stop) is
  // destroyed unrun.
  io_->shutdown();
  streams.clear();
  // Deletion runs whose end was never reported (their last event was
  // dropped with the event loop): their callers learn it here. Their
  // markers stay; the next open finishes them.
  {
    std::lock_guard l(mu_);
    for (auto& [name, d] : deletions_) {
      if (!d.attempt || d.attempt->ended) continue;
      d.attempt->ended = true;
      d.attempt->status = Error(Errc::closed, fmt::format("the node closed before the deletion of "
                                                          "stream {} finished",
                                                          name));
      d.attempt.reset();
    }
    deletion_queue_.clear();
    background_.clear();
  }
  deletions_cv_.notify_all();
  Status first = Status::OK();
  if (registry_) {
    if (Status s = registry_->close_all(); !s.ok() && first.ok()) first = s;
  }
  if (auto* ec = dynamic_cast<catalog::EmbeddedCatalog*>(catalog_.get())) {
    if (Status s = ec->close(); !s.ok() && first.ok()) first = s;
  }
  dir_lock_.release();
  return first;
}

Node::~Node() {
  Status s = close();
  if (!s.ok()) spdlog::error("node: closing: {}", s.to_string());
}

}  // namespace strata::node
