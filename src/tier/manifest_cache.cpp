#include "tier/manifest_cache.h"

#include <fmt/format.h>

namespace strata::tier {

Status ManifestCache::sync(std::string_view stream, CachedManifest m) {
  if (!m.manifest) {
    return Error(Errc::invalid_argument,
                 fmt::format("manifest cache: sync of stream {} without a manifest", stream));
  }
  std::lock_guard l(mu_);
  auto it = entries_.find(stream);
  if (it != entries_.end() && !it->second.stale) {
    const CachedManifest& cur = it->second.m;
    if (m.epoch < cur.epoch || (m.epoch == cur.epoch && m.revision < cur.revision)) {
      return Error(Errc::conflict,
                   fmt::format("manifest cache: stale sync of stream {} (epoch {} revision {}) "
                               "below the cached epoch {} revision {}",
                               stream, m.epoch, m.revision, cur.epoch, cur.revision));
    }
  }
  if (it == entries_.end()) it = entries_.emplace(std::string(stream), Entry{}).first;
  it->second.m = std::move(m);
  it->second.stale = false;
  st_.syncs += 1;
  available_.notify_all();
  return Status::OK();
}

Status ManifestCache::apply(std::string_view stream, const EditBatch& batch) {
  std::lock_guard l(mu_);
  auto it = entries_.find(stream);
  auto reject = [&](std::string why) -> Status {
    st_.batches_rejected += 1;
    if (it != entries_.end()) it->second.stale = true;
    return Error(Errc::conflict,
                 fmt::format("manifest cache: edit batch of stream {} (epoch {}, revision {} -> "
                             "{}) rejected: {}; a full sync is needed",
                             stream, batch.epoch, batch.prev_revision, batch.revision, why));
  };
  if (it == entries_.end()) return reject("the stream is not cached");
  Entry& e = it->second;
  if (e.stale) return reject("the entry is stale");
  if (batch.epoch != e.m.epoch) {
    return reject(fmt::format("cached epoch is {}", e.m.epoch));
  }
  if (batch.prev_revision != e.m.revision || batch.revision <= batch.prev_revision) {
    return reject(fmt::format("cached revision is {}", e.m.revision));
  }
  Manifest next = *e.m.manifest;
  for (const ManifestEdit& edit : batch.edits) {
    if (Status s = apply_edit(next, edit); !s.ok()) {
      return reject(fmt::format("edit {} does not apply: {}", describe(edit), s.error().message));
    }
  }
  e.m.manifest = std::make_shared<const Manifest>(std::move(next));
  e.m.revision = batch.revision;
  st_.batches_applied += 1;
  return Status::OK();
}

void ManifestCache::invalidate(std::string_view stream) {
  std::lock_guard l(mu_);
  auto it = entries_.find(stream);
  if (it != entries_.end()) it->second.stale = true;
}

void ManifestCache::erase(std::string_view stream) {
  std::lock_guard l(mu_);
  auto it = entries_.find(stream);
  if (it != entries_.end()) entries_.erase(it);
}

bool ManifestCache::await_available(std::string_view stream,
                                    std::chrono::milliseconds timeout) const {
  std::unique_lock l(mu_);
  return available_.wait_for(l, timeout, [&] {
    auto it = entries_.find(stream);
    return it != entries_.end() && !it->second.stale;
  });
}

Result<CachedManifest> ManifestCache::get(std::string_view stream) const {
  std::lock_guard l(mu_);
  auto it = entries_.find(stream);
  if (it == entries_.end()) {
    return Error(Errc::unavailable,
                 fmt::format("manifest of stream {} is not loaded on this node", stream));
  }
  if (it->second.stale) {
    return Error(Errc::unavailable,
                 fmt::format("manifest of stream {} is being resynchronized", stream));
  }
  return it->second.m;
}

std::vector<std::string> ManifestCache::streams() const {
  std::lock_guard l(mu_);
  std::vector<std::string> out;
  for (auto& [k, v] : entries_) out.push_back(k);
  return out;
}

ManifestCacheStats ManifestCache::stats() const {
  std::lock_guard l(mu_);
  ManifestCacheStats s = st_;
  s.streams = entries_.size();
  for (auto& [k, v] : entries_) s.stale += v.stale ? 1 : 0;
  return s;
}

}  // namespace strata::tier
