// Node: opening and closing, lookups, flush (node_impl.h lists the rest).
#include "node/node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <filesystem>
#include <future>

#include "catalog/embedded_catalog.h"
#include "node/catalog_open.h"
#include "node/node_impl.h"
#include "node/node_limits.h"
#include "node/remote_stream.h"
#include "objstore/metered_store.h"

namespace strata::node {

namespace {

// Whether the node's object store is a directory within its data directory
// (the default when no objstore is configured).
bool object_store_inside(const NodeConfig& cfg) {
  if (cfg.objstore.backend != objstore::ObjectStoreConfig::Backend::fs) return false;
  auto normal = [](const std::string& p, std::error_code& ec) {
    auto n = std::filesystem::weakly_canonical(p, ec).lexically_normal();
    return n.has_filename() ? n : n.parent_path();
  };
  std::error_code ec;
  const auto data = normal(cfg.data_dir, ec);
  if (ec) return false;
  const auto root = normal(cfg.objstore.fs.root, ec);
  if (ec) return false;
  auto d = data.begin(), r = root.begin();
  for (; d != data.end(); ++d, ++r) {
    if (r == root.end() || *d != *r) return false;
  }
  return true;
}

// Each open stream holds a segment and an index file open; a node with
// thousands of streams needs more descriptors than the usual soft limit.
void raise_fd_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

Result<FileLock> lock_data_dir(const std::string& data_dir) {
  auto lock = FileLock::acquire(path_join(data_dir, "LOCK"), "data directory " + data_dir);
  if (lock.ok() || lock.code() != Errc::conflict) return lock;
  return Error(Errc::conflict,
               fmt::format("data directory {} is in use by another process (a running node or "
                           "`strata` command); stop it first ({})",
                           data_dir, lock.error().message));
}

Result<std::shared_ptr<catalog::Catalog>> open_catalog(const NodeConfig& cfg) {
  if (cfg.catalog_backend == "etcd") {
    auto cat = open_etcd_catalog(cfg.catalog_etcd);
    if (!cat.ok()) return std::move(cat).error().with_context("opening the etcd catalog");
    return std::move(cat).value();
  }
  catalog::EmbeddedCatalogOptions co;
  co.capacity = cfg.catalog_capacity;
  auto cat = catalog::EmbeddedCatalog::open(posix_fs(), path_join(cfg.data_dir, "catalog"), co);
  if (!cat.ok()) return std::move(cat).error().with_context("opening the catalog");
  return std::shared_ptr<catalog::Catalog>(std::move(cat).value());
}

}  // namespace

RuntimeOptions runtime_options(const NodeConfig& cfg) {
  RuntimeOptions o;
  o.io_threads = std::max<uint32_t>(1, cfg.io_threads);
  o.blocking_threads = cfg.blocking_threads;
  o.max_blocking_threads = std::max<size_t>(kMinPoolThreadBound, 2 * size_t(cfg.blocking_threads));
  return o;
}

// ---- Impl ----

Status Node::Impl::start(std::shared_ptr<Runtime> rt) {
  raise_fd_limit();
  started_ms = system_clock().now_ms();
  STRATA_TRY(create_dirs(posix_fs(), cfg.data_dir));
  // First: everything below (leftovers of interrupted creates, deletion
  // markers) assumes no other process works in this directory.
  STRATA_ASSIGN_OR_RETURN(dir_lock, lock_data_dir(cfg.data_dir));

  auto s = objstore::open_object_store(cfg.objstore);
  if (!s.ok()) return std::move(s).error().with_context("opening the object store");
  store = std::make_shared<objstore::MeteredStore>(
      std::shared_ptr<objstore::ObjectStore>(std::move(s).value()));
  if (auto a = store->check_access(); !a.ok()) {
    return a.error().to_error().with_context("checking the object store " + store->describe());
  }
  STRATA_ASSIGN_OR_RETURN(catalog, open_catalog(cfg));

  auto reg = log::StreamRegistry::open(path_join(cfg.data_dir, "streams"), cfg.log_options());
  if (!reg.ok()) return std::move(reg).error().with_context("opening the stream directory");
  registry = std::move(reg).value();

  cache = std::make_shared<tier::ManifestCache>(cfg.tiering.group_cache_bytes);
  runtime = rt ? std::move(rt) : Runtime::start(runtime_options(cfg));
  governor = tier::Governor::make(runtime->io(), cfg.governor, system_clock());

  STRATA_TRY(scan_deletions());
  STRATA_ASSIGN_OR_RETURN(auto names, registry->list());
  size_t opened = 0;
  for (const auto& name : names) {
    if (!cfg.open_streams_at_start) break;
    {
      // Being deleted: its uploader must not start (it would take the
      // stream over and upload again what the deletion removes).
      std::lock_guard l(mu);
      if (deletions.count(name)) continue;
    }
    auto st = open_stream(name, OpenExisting{});
    if (!st.ok()) return std::move(st).error().with_context("opening stream " + name);
    opened += 1;
  }
  if (cfg.open_streams_at_start && cfg.tiering.enabled) {
    STRATA_TRY(recover_from_catalog(cfg.recover_in_background));
  }
  std::lock_guard l(mu);
  spdlog::info("node: {} stream(s) in {}, {} deletion(s) pending, object store {}, catalog {}",
               opened, cfg.data_dir, deletions.size(), store->describe(), catalog->describe());
  if (cfg.tiering.enabled && !cfg.local_retention.any()) {
    spdlog::info(
        "node: log.retention is unset: a tiered stream keeps {} segments ({} bytes at "
        "log.segment_bytes) on local disk beyond what is not uploaded yet, unless it sets its own "
        "(x-strata-local-max-bytes)",
        kDefaultLocalSegments, kDefaultLocalSegments * cfg.segment_bytes);
  }
  if (cfg.tiering.enabled && object_store_inside(cfg)) {
    spdlog::warn(
        "node: the object store {} is inside the data directory {}: the remote tier shares the "
        "local tier's disk, so uploads free no space and losing that disk loses both; set "
        "objstore to S3 or to a directory on another disk (docs/CONFIGURATION.md, \"objstore\")",
        store->describe(), cfg.data_dir);
  }
  start_background_locked();
  start_disk_watch_locked();
  if (cfg.tiering.enabled && cfg.tiering.orphan_grace_ms > 0) {
    OrphanSweepOptions o;
    o.prefix = cfg.tiering.key_prefix;
    o.grace_ms = cfg.tiering.orphan_grace_ms;
    o.interval_ms = std::max<int64_t>(cfg.tiering.orphan_grace_ms, kOrphanSweepMinIntervalMs);
    o.max_deletes = kOrphanSweepMaxDeletes;
    o.deadline_ms = kOrphanSweepDeadlineMs;
    orphans =
        std::make_shared<OrphanSweep>(runtime->io_shared(), runtime->tasks(), store, catalog, o);
    orphans->start();
  }
  return Status::OK();
}

void Node::Impl::start_disk_watch_locked() {
  DiskWatchOptions o;
  o.guard.free_limit_bytes = cfg.disk_free_limit_bytes;
  o.interval_ms = cfg.disk_check_interval_ms;
  // Called on the watch's strand, which stops running with the runtime,
  // before this Impl goes (close()).
  auto writers = [this] {
    std::vector<std::pair<std::string, std::shared_ptr<log::StreamLog>>> out;
    std::lock_guard l(mu);
    for (const auto& [name, e] : table.open_entries()) out.emplace_back(name, e.log);
    return out;
  };
  disk = std::make_shared<DiskWatch>(runtime->io_shared(), runtime->tasks(), cfg.data_dir, o,
                                     std::move(writers));
  disk->start();
}

Result<StreamEntry> Node::Impl::lookup_locked(const std::string& name) const {
  if (const StreamEntry* e = table.find(name)) return *e;
  if (table.state(name) == StreamTable::State::opening) {
    return Error(Errc::unavailable, fmt::format("stream {} is being opened on this node", name));
  }
  if (deletions.count(name)) {
    return Error(Errc::not_found, fmt::format("stream {} is being deleted", name));
  }
  return Error(Errc::not_found, fmt::format("stream {} does not exist on this node", name));
}

Result<StreamEntry> Node::Impl::lookup(const std::string& name) const {
  std::lock_guard l(mu);
  return lookup_locked(name);
}

tier::TierContext Node::Impl::tier_context(const std::string& name, bool tiered) const {
  tier::TierContext ctx;
  ctx.stream = name;
  if (tiered) {
    ctx.store = store;
    ctx.cache = cache;
    ctx.key_prefix = cfg.tiering.key_prefix;
    ctx.pool = runtime->pool();
    ctx.reads = reads_of(name);
  }
  return ctx;
}

std::shared_ptr<tier::RemoteReadCounters> Node::Impl::reads_of(const std::string& name) const {
  std::lock_guard l(reads_mu);
  auto& c = reads[name];
  if (!c) c = std::make_shared<tier::RemoteReadCounters>();
  return c;
}

std::shared_ptr<StreamHandle> Node::Impl::handle_for(const std::string& name,
                                                     const StreamEntry& e) const {
  return std::make_shared<StreamHandle>(name, e.effective, e.log, e.uploader,
                                        tier_context(name, e.effective.tiering),
                                        disk ? disk->alarm_flag() : nullptr, lease_until);
}

Status Node::Impl::close() {
  std::map<std::string, StreamEntry> open, handing_off;
  {
    std::unique_lock l(mu);
    if (closed) return Status::OK();
    closed = true;
    // An open in progress publishes nothing once closed: it closes its
    // stream itself. Wait for it, so that none runs on past the node.
    table_cv.wait(l, [&] { return !table.any_opening(); });
    l.unlock();
    // It has seen `closed` (no stream left marked): only its return is left.
    if (recovery.joinable()) recovery.join();
    l.lock();
    open = table.take_all_open();
    handing_off = table.handoff_entries();
  }
  if (disk) disk->stop();
  if (orphans) orphans->stop();
  for (auto& [name, e] : open) {
    if (e.hooks) e.hooks->detach();
    if (e.uploader) e.uploader->close();
  }
  // A hand-over in progress waits on its uploader: closed, the wait ends at
  // once and the hand-over closes its stream; wait for that, so that none
  // runs on past the node.
  for (auto& [name, e] : handing_off) e.uploader->close();
  {
    std::unique_lock l(mu);
    if (!table_cv.wait_for(l, kCloseAwaitsHandoffs, [&] { return !table.any_handing_off(); })) {
      spdlog::warn("node: {} stream hand-over(s) still running at close", table.handing_off());
    }
  }
  // In-flight tasks are given the pool's grace, then abandoned; then the
  // event loop stops (node/runtime.h). Only then the logs and the catalog
  // close.
  if (runtime) runtime->stop();
  open.clear();
  end_deletions_at_close();
  Status first = Status::OK();
  if (registry) {
    if (Status s = registry->close_all(); !s.ok() && first.ok()) first = s;
  }
  if (auto* ec = dynamic_cast<catalog::EmbeddedCatalog*>(catalog.get())) {
    if (Status s = ec->close(); !s.ok() && first.ok()) first = s;
  }
  dir_lock.release();
  return first;
}

// ---- Node ----

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Node>> Node::open(NodeConfig cfg, std::shared_ptr<Runtime> runtime) {
  std::unique_ptr<Node> n(new Node(std::make_unique<Impl>(std::move(cfg))));
  if (Status s = n->impl_->start(std::move(runtime)); !s.ok()) {
    (void)n->close();
    return s.error();
  }
  return n;
}

Node::~Node() {
  Status s = close();
  if (!s.ok()) spdlog::error("node: closing: {}", s.to_string());
}

Status Node::close() {
  return impl_->close();
}

std::shared_ptr<std::atomic<int64_t>> Node::lease_fence() const {
  return impl_->lease_until;
}

Result<std::shared_ptr<log::StreamLog>> Node::create_stream(const std::string& name,
                                                            const StreamSettings& settings,
                                                            uint64_t first_offset) {
  return impl_->open_stream(name, CreateNew{settings, first_offset});
}

Result<StreamSettings> Node::stream_settings(const std::string& name) const {
  STRATA_ASSIGN_OR_RETURN(auto e, impl_->lookup(name));
  return e.settings;
}

Result<EffectiveSettings> Node::effective_settings(const std::string& name) const {
  STRATA_ASSIGN_OR_RETURN(auto e, impl_->lookup(name));
  return e.effective;
}

Result<std::shared_ptr<log::StreamLog>> Node::stream(const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(auto e, impl_->lookup(name));
  return e.log;
}

Result<std::shared_ptr<StreamHandle>> Node::handle(const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(auto e, impl_->lookup(name));
  return impl_->handle_for(name, e);
}

Result<std::shared_ptr<RemoteStream>> Node::remote_stream(const std::string& name) {
  if (!impl_->cfg.tiering.enabled) {
    return Error(Errc::not_found, "tiering is disabled on this node");
  }
  return RemoteStream::make(impl_->catalog, impl_->tier_context(name, true));
}

std::vector<std::string> Node::streams() const {
  std::lock_guard l(impl_->mu);
  return impl_->table.names();
}

std::shared_ptr<tier::Uploader> Node::uploader(const std::string& name) const {
  auto e = impl_->lookup(name);
  return e.ok() ? e->uploader : nullptr;
}

tier::TierContext Node::tier_context(const std::string& name) const {
  auto e = impl_->lookup(name);
  return impl_->tier_context(name, e.ok() ? e->effective.tiering : impl_->cfg.tiering.enabled);
}

Result<std::unique_ptr<tier::StreamReader>> Node::open_reader(const std::string& name,
                                                              const log::OffsetSpec& spec,
                                                              tier::StreamReaderOptions opts) {
  STRATA_ASSIGN_OR_RETURN(auto h, handle(name));
  return h->open_reader(spec, opts);
}

Status Node::flush(const std::string& name, std::chrono::milliseconds timeout) {
  STRATA_ASSIGN_OR_RETURN(auto e, impl_->lookup(name));
  if (!e.uploader) return Error(Errc::unavailable, "tiering is disabled on this node");
  uint64_t target = e.log->committed_next();
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  e.uploader->await_persisted(
      target, [p](Status s) { p->set_value(std::move(s)); }, /*urgent=*/true);
  e.uploader->force_cut();
  if (f.wait_for(timeout) != std::future_status::ready) {
    auto st = e.uploader->status();
    return Error(Errc::timeout,
                 fmt::format("stream {}: offsets below {} not persisted within {} ms (remote next "
                             "{}; last error: {})",
                             name, target, timeout.count(), st.remote_next_offset,
                             st.last_error.empty() ? "none" : st.last_error));
  }
  return f.get();
}

Status Node::delete_stream(const std::string& name) {
  return impl_->delete_stream(name);
}

std::vector<std::string> Node::pending_deletions() const {
  return impl_->pending_deletions();
}

Status Node::await_deletions(std::chrono::milliseconds timeout) {
  return impl_->await_deletions(timeout);
}

DiskWatchSnapshot Node::disk() const {
  return impl_->disk ? impl_->disk->snapshot() : DiskWatchSnapshot{};
}

nlohmann::json Node::status_json() const {
  return impl_->status_json();
}

Node::ProcessFigures Node::process_figures() const {
  return impl_->process_figures();
}

nlohmann::json Node::deletions_json() const {
  return impl_->deletions_json();
}

std::string Node::metrics_text() const {
  return impl_->metrics_text();
}

Result<std::shared_ptr<log::StreamLog>> Node::acquire_stream(const std::string& name,
                                                             const AcquireOptions& opts) {
  return impl_->acquire(name, opts);
}

Status Node::hand_off_stream(const std::string& name, std::chrono::milliseconds timeout,
                             const std::function<void()>& hidden) {
  return impl_->hand_off(name, timeout, hidden);
}

const NodeConfig& Node::config() const {
  return impl_->cfg;
}

objstore::ObjectStore& Node::store() {
  return *impl_->store;
}

catalog::Catalog& Node::catalog() {
  return *impl_->catalog;
}

tier::ManifestCache& Node::cache() {
  return *impl_->cache;
}

Runtime& Node::runtime() {
  return *impl_->runtime;
}

}  // namespace strata::node
