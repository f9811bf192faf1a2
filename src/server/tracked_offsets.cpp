#include "server/tracked_offsets.h"

#include <fmt/format.h>

namespace strata::server {

TrackedOffsets::TrackedOffsets(node::Node& node, ServedStreams& served, OffsetStore& local,
                               ClusterOffsets* cluster, bool local_too)
    : node_(node), served_(served), local_(local), cluster_(cluster), local_too_(local_too) {}

bool TrackedOffsets::known(const std::string& stream) {
  if (node_.stream(stream).ok()) return true;
  return cluster_ && served_.served_elsewhere(stream);
}

Status TrackedOffsets::store(const std::string& stream, const std::string& reference,
                             uint64_t offset) {
  if (!known(stream)) {
    return Error(Errc::not_found, fmt::format("stream {} is not known here", stream));
  }
  if (cluster_ && local_too_) {
    STRATA_TRY(local_.store(stream, reference, offset));
    return cluster_->store(stream, reference, offset);
  }
  if (cluster_) return cluster_->store(stream, reference, offset);
  return local_.store(stream, reference, offset);
}

Result<std::optional<uint64_t>> TrackedOffsets::query(const std::string& stream,
                                                      const std::string& reference) {
  if (!known(stream)) {
    return Error(Errc::not_found, fmt::format("stream {} is not known here", stream));
  }
  if (cluster_ && local_too_) {
    auto q = cluster_->query(stream, reference);
    if (!q.ok() || q->has_value()) return q;
    return local_.query(stream, reference);
  }
  if (cluster_) return cluster_->query(stream, reference);
  return local_.query(stream, reference);
}

}  // namespace strata::server
