// NodeReadView: reading a node's streams across both tiers from another
// process (`strata consume --config`), without being the node and while it
// runs: the local logs are opened read-only (no writer lock; they follow
// the writer from disk), the catalog read-only, the object store as the
// node's configuration names it. Its manifest cache is its own, filled from
// the catalog and the bucket when a reader opens and again on refresh():
// the running node persists newer manifests, which this view sees only
// when asked to look again.
#pragma once

#include <memory>
#include <string>

#include "common/blocking_pool.h"
#include "common/result.h"
#include "log/offset_spec.h"
#include "node/node_config.h"
#include "objstore/object_store.h"
#include "tier/manifest_cache.h"
#include "tier/stream_reader.h"

namespace strata::node {

class NodeReadView {
 public:
  // Opens the node's object store (checking access). Errors name the part.
  static Result<std::unique_ptr<NodeReadView>> open(const NodeConfig& cfg);
  ~NodeReadView();

  // A reader of `stream` (local only when tiering is disabled or the stream
  // has no catalog entry yet).
  Result<std::unique_ptr<tier::StreamReader>> open_reader(const std::string& stream,
                                                          const log::OffsetSpec& spec,
                                                          tier::StreamReaderOptions opts = {});
  // Re-reads the stream's catalog entry and persisted manifest into the
  // cache; readers opened before see it at their next tier change.
  Status refresh(const std::string& stream);

 private:
  explicit NodeReadView(NodeConfig cfg) : cfg_(std::move(cfg)) {}
  NodeConfig cfg_;
  std::shared_ptr<objstore::ObjectStore> store_;
  std::shared_ptr<tier::ManifestCache> cache_;
  std::shared_ptr<BlockingPool> pool_;
};

}  // namespace strata::node
