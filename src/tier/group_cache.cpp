#include "tier/group_cache.h"

#include "tier/manifest_codec.h"

namespace strata::tier {

GroupCache::GroupCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {
  st_.capacity_bytes = capacity_bytes;
}

std::shared_ptr<const ManifestGroup> GroupCache::find(const std::string& key) {
  std::lock_guard lk(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    st_.misses += 1;
    return nullptr;
  }
  st_.hits += 1;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->group;
}

void GroupCache::insert(const std::string& key, std::shared_ptr<const ManifestGroup> group,
                        uint64_t bytes) {
  std::lock_guard lk(mu_);
  if (bytes > capacity_ || index_.count(key) != 0) return;
  lru_.push_front(Entry{key, std::move(group), bytes});
  index_.emplace(key, lru_.begin());
  st_.bytes += bytes;
  evict_locked();
}

void GroupCache::evict_locked() {
  while (st_.bytes > capacity_ && !lru_.empty()) {
    const Entry& e = lru_.back();
    st_.bytes -= e.bytes;
    index_.erase(e.key);
    lru_.pop_back();
    st_.evictions += 1;
  }
}

GroupFetch GroupCache::fetcher(objstore::ObjectStore& store, const ObjectKeys& keys) {
  return [this, &store,
          &keys](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
    std::string key = keys.for_entry(e);
    if (auto g = find(key)) return g;
    auto body = store.get(key);
    if (!body.ok()) return body.error().to_error();
    STRATA_ASSIGN_OR_RETURN(ManifestGroup g, decode_group(*body, key));
    auto shared = std::make_shared<const ManifestGroup>(std::move(g));
    insert(key, shared, body->size());
    return shared;
  };
}

GroupCacheStats GroupCache::stats() const {
  std::lock_guard lk(mu_);
  GroupCacheStats s = st_;
  s.entries = index_.size();
  return s;
}

}  // namespace strata::tier
