// GroupCache: the node's group objects, shared by every reader of every
// stream, bounded by bytes and evicting the least recently used. Groups are
// immutable and every write goes to a new key (object_keys.h), so a cached
// group never goes stale: the key is the whole identity.
//
// Size of an entry: its encoded object size (what a re-read would cost), a
// close bound of its memory. A group larger than the whole budget is
// returned but not kept.
//
// Thread safety: any thread. Two threads missing the same key may both
// fetch it; the second insert is dropped (same content).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "objstore/object_store.h"
#include "tier/manifest.h"
#include "tier/object_keys.h"

namespace strata::tier {

struct GroupCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  uint64_t bytes = 0;
  uint64_t entries = 0;
  uint64_t capacity_bytes = 0;
};

class GroupCache {
 public:
  explicit GroupCache(uint64_t capacity_bytes);

  std::shared_ptr<const ManifestGroup> find(const std::string& key);
  void insert(const std::string& key, std::shared_ptr<const ManifestGroup> group, uint64_t bytes);

  // A GroupFetch reading through this cache from `store` under `keys`.
  // The store and keys must outlive the returned function.
  GroupFetch fetcher(objstore::ObjectStore& store, const ObjectKeys& keys);

  GroupCacheStats stats() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const ManifestGroup> group;
    uint64_t bytes = 0;
  };
  void evict_locked();

  mutable std::mutex mu_;
  uint64_t capacity_;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  GroupCacheStats st_;
};

}  // namespace strata::tier
