#include "node/remote_stream.h"

#include "tier/upload_jobs.h"

namespace strata::node {

RemoteStream::RemoteStream(std::shared_ptr<catalog::Catalog> catalog, tier::TierContext tier,
                           tier::ObjectKeys keys)
    : catalog_(std::move(catalog)), tier_(std::move(tier)), keys_(std::move(keys)) {}

Result<std::shared_ptr<RemoteStream>> RemoteStream::make(std::shared_ptr<catalog::Catalog> catalog,
                                                         tier::TierContext tier) {
  STRATA_ASSIGN_OR_RETURN(auto keys, tier::ObjectKeys::make(tier.key_prefix, tier.stream));
  return std::shared_ptr<RemoteStream>(
      new RemoteStream(std::move(catalog), std::move(tier), std::move(keys)));
}

Result<tier::CachedManifest> RemoteStream::load_manifest() const {
  return tier::load_persisted_manifest(*catalog_, *tier_.store, tier_.stream);
}

Result<std::unique_ptr<tier::RemoteReader>> RemoteStream::open_reader(
    std::shared_ptr<const tier::Manifest> manifest, const tier::RemoteStart& start,
    const tier::StreamReaderOptions& opts) const {
  return tier::RemoteReader::open(tier::remote_reader_deps(tier_, opts, keys_), keys_,
                                  std::move(manifest), start);
}

}  // namespace strata::node
