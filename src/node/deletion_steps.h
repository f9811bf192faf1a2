// The blocking steps of deleting a stream (node/deletion_core.h gives their
// order and retries; node/stream_deletion.h runs them on the node's pool).
// Each step is idempotent: "already gone" is success, so a run that repeats
// a step after a crash or a failure converges. Each answers a StepOutcome:
// ok, or a failure classified transient or fatal by the one retry table
// (objstore/retry_class.h), with a message naming what failed and where.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "common/fs.h"
#include "log/registry.h"
#include "node/deletion_core.h"
#include "objstore/object_store.h"
#include "tier/manifest_cache.h"

namespace strata::node {

// What the steps of one stream's deletion touch. Shared pointers: a step
// abandoned at its deadline may outlive the node (common/blocking_pool.h).
struct DeletionTargets {
  std::string stream;
  std::string key_prefix;  // of every key of the stream (tier/object_keys.h stream_prefix)
  int list_page_keys = objstore::kMaxListKeys;
  std::shared_ptr<objstore::ObjectStore> store;
  std::shared_ptr<catalog::Catalog> catalog;
  std::shared_ptr<log::StreamRegistry> registry;
  std::shared_ptr<tier::ManifestCache> cache;
  FileSystem* fs = nullptr;  // of the marker directory
  std::string marker_dir;
};

// Catalog: raise the epoch (absent: nothing to fence).
StepOutcome fence_stream(const DeletionTargets& t);
// The first page of keys under the stream's prefix.
StepOutcome list_stream_objects(const DeletionTargets& t);
// remove_many of `keys`; every key's outcome is checked.
StepOutcome remove_stream_objects(const DeletionTargets& t, const std::vector<std::string>& keys);
// The local log directory, durably (log/registry.h remove).
StepOutcome remove_local_log(const DeletionTargets& t);
// The catalog entry at its current revision.
StepOutcome remove_catalog_entry(const DeletionTargets& t);
// The manifest cache entry, then the marker (durably).
StepOutcome remove_marker_step(const DeletionTargets& t);

// Runs `step` (with `keys` for remove_objects).
StepOutcome run_deletion_step(const DeletionTargets& t, DeletionStep step,
                              const std::vector<std::string>& keys);

}  // namespace strata::node
