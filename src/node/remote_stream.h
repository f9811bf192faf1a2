// RemoteStream: reading a stream this node does not own, straight from the
// remote tier — what a replica subscription (server/replica_feed.h) reads
// below the owner's tail. The persisted manifest comes from the catalog and
// the bucket (not from this node's cache: no uploader of this node keeps
// it), fragments through the node's group cache and pool.
//
// Thread safety: any thread; every call blocks (run it on the pool).
#pragma once

#include <memory>
#include <string>

#include "catalog/catalog.h"
#include "common/result.h"
#include "objstore/object_store.h"
#include "tier/manifest_cache.h"
#include "tier/object_keys.h"
#include "tier/remote_reader.h"
#include "tier/stream_reader.h"

namespace strata::node {

class RemoteStream {
 public:
  static Result<std::shared_ptr<RemoteStream>> make(std::shared_ptr<catalog::Catalog> catalog,
                                                    tier::TierContext tier);

  const std::string& name() const { return tier_.stream; }
  // The persisted manifest the catalog names now; not_found when the stream
  // has no catalog entry.
  Result<tier::CachedManifest> load_manifest() const;
  // A reader of one snapshot of the manifest from `start` (reads the first
  // fragment's index). It must not outlive this RemoteStream.
  Result<std::unique_ptr<tier::RemoteReader>> open_reader(
      std::shared_ptr<const tier::Manifest> manifest, const tier::RemoteStart& start,
      const tier::StreamReaderOptions& opts) const;

 private:
  RemoteStream(std::shared_ptr<catalog::Catalog> catalog, tier::TierContext tier,
               tier::ObjectKeys keys);
  const std::shared_ptr<catalog::Catalog> catalog_;
  const tier::TierContext tier_;
  const tier::ObjectKeys keys_;
};

}  // namespace strata::node
