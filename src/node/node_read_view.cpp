#include "node/node_read_view.h"

#include "catalog/embedded_catalog.h"
#include "common/fs.h"
#include "log/registry.h"
#include "node/catalog_open.h"
#include "objstore/config.h"
#include "tier/upload_jobs.h"

namespace strata::node {

Result<std::unique_ptr<NodeReadView>> NodeReadView::open(const NodeConfig& cfg) {
  std::unique_ptr<NodeReadView> v(new NodeReadView(cfg));
  if (cfg.tiering.enabled) {
    auto store = objstore::open_object_store(cfg.objstore);
    if (!store.ok()) return std::move(store).error().with_context("opening the object store");
    v->store_ = std::shared_ptr<objstore::ObjectStore>(std::move(store).value());
    if (auto a = v->store_->check_access(); !a.ok()) {
      return a.error().to_error().with_context("checking the object store " +
                                               v->store_->describe());
    }
    v->cache_ = std::make_shared<tier::ManifestCache>(cfg.tiering.group_cache_bytes);
    v->pool_ = std::make_shared<BlockingPool>(BlockingPoolOptions{4, 16});
  }
  return v;
}

NodeReadView::~NodeReadView() {
  if (pool_) pool_->stop();
}

Status NodeReadView::refresh(const std::string& stream) {
  if (!cache_) return Status::OK();
  if (cfg_.catalog_backend == "etcd") {
    auto cat = open_etcd_catalog(cfg_.catalog_etcd);
    if (!cat.ok()) return std::move(cat).error().with_context("opening the node's etcd catalog");
    auto m = tier::load_persisted_manifest(**cat, *store_, stream);
    if (!m.ok()) return m.error().code == Errc::not_found ? Status::OK() : Status(m.error());
    cache_->erase(stream);
    return cache_->sync(stream, *m);
  }
  catalog::EmbeddedCatalogOptions co;
  co.read_only = true;
  co.create_if_missing = false;
  auto cat = catalog::EmbeddedCatalog::open(posix_fs(), path_join(cfg_.data_dir, "catalog"), co);
  if (!cat.ok()) {
    // A node that never persisted anything has no catalog yet: local only.
    if (cat.error().code == Errc::not_found) return Status::OK();
    return std::move(cat).error().with_context("opening the node's catalog read-only");
  }
  auto m = tier::load_persisted_manifest(**cat, *store_, stream);
  if (!m.ok()) {
    if (m.error().code == Errc::not_found) return Status::OK();
    return m.error();
  }
  cache_->erase(stream);
  return cache_->sync(stream, *m);
}

Result<std::unique_ptr<tier::StreamReader>> NodeReadView::open_reader(
    const std::string& stream, const log::OffsetSpec& spec, tier::StreamReaderOptions opts) {
  STRATA_ASSIGN_OR_RETURN(auto log,
                          log::open_stream_read_only(path_join(cfg_.data_dir, "streams"), stream));
  STRATA_TRY(refresh(stream));
  tier::TierContext ctx;
  ctx.stream = stream;
  if (cache_) {
    ctx.store = store_;
    ctx.cache = cache_;
    ctx.key_prefix = cfg_.tiering.key_prefix;
    ctx.pool = pool_;
  }
  return tier::StreamReader::open(std::move(log), std::move(ctx), spec, opts);
}

}  // namespace strata::node
