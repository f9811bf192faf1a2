// ManifestCache: the node's view of every stream's *persisted* manifest
// (manifest_replica in the original). Readers, local retention and status
// read it; only uploaders (and, in a cluster, catalog watches) write it.
//
// A stream's entry moves by sequenced edit batches: a batch applies only on
// top of the revision it was computed from (batch.prev_revision ==
// cached revision) and under the same epoch. Anything else — a gap, an
// epoch change, an edit that does not apply — leaves the entry marked
// stale and is an error; the writer then installs the full manifest
// (sync). A stale or missing entry reads as Errc::unavailable, never as an
// empty stream: readers fail closed and retry.
//
// It also holds the node's group objects (group_cache.h), bounded by bytes,
// so that readers and lookups of every stream share one budget.
//
// Thread safety: any thread; readers get immutable snapshots.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tier/group_cache.h"
#include "tier/manifest.h"
#include "tier/manifest_codec.h"

namespace strata::tier {

struct CachedManifest {
  std::shared_ptr<const Manifest> manifest;
  uint64_t epoch = 0;
  uint64_t revision = 0;  // catalog revision the manifest was persisted at (0: none yet)
};

struct ManifestCacheStats {
  uint64_t streams = 0;
  uint64_t stale = 0;
  uint64_t syncs = 0;
  uint64_t batches_applied = 0;
  uint64_t batches_rejected = 0;
};

class ManifestCache {
 public:
  static constexpr uint64_t kDefaultGroupCacheBytes = 64ull << 20;
  explicit ManifestCache(uint64_t group_cache_bytes = kDefaultGroupCacheBytes)
      : groups_(group_cache_bytes) {}

  // Installs the full persisted manifest (start, reinitialize, resync). A
  // sync older than what is cached (same epoch, lower revision, or a lower
  // epoch) is refused with Errc::conflict.
  Status sync(std::string_view stream, CachedManifest m);
  // Applies one persisted edit batch; see the rules above.
  Status apply(std::string_view stream, const EditBatch& batch);
  // Marks the entry unavailable until the next sync (e.g. the uploader is
  // reinitializing and the persisted state is being re-read).
  void invalidate(std::string_view stream);
  void erase(std::string_view stream);

  // The cached manifest; unavailable when missing or stale.
  Result<CachedManifest> get(std::string_view stream) const;
  // Waits until get(stream) would answer (a sync installed it), at most
  // `timeout`; whether it does.
  bool await_available(std::string_view stream, std::chrono::milliseconds timeout) const;
  std::vector<std::string> streams() const;
  ManifestCacheStats stats() const;
  GroupCache& groups() { return groups_; }

 private:
  struct Entry {
    CachedManifest m;
    bool stale = false;
  };
  mutable std::mutex mu_;
  mutable std::condition_variable available_;  // a sync installed an entry
  std::map<std::string, Entry, std::less<>> entries_;
  ManifestCacheStats st_;
  GroupCache groups_;
};

}  // namespace strata::tier
