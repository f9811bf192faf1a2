// The uploader's blocking jobs: each does one piece of I/O, once, and
// returns what happened as a value. They run on the node's BlockingPool
// through run_task (common/task.h); retries, deadlines and ordering belong
// to the uploader core and shell, never to a job.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "common/result.h"
#include "log/chunk_walk.h"
#include "log/stream_log.h"
#include "objstore/object_store.h"
#include "tier/fragment.h"
#include "tier/fragment_assembly.h"
#include "tier/manifest.h"
#include "tier/manifest_cache.h"
#include "tier/manifest_retention.h"
#include "tier/object_keys.h"
#include "tier/transfer_failure.h"
#include "tier/uploader_events.h"

namespace strata::tier {

// ---- start ----

struct LoadedState {
  catalog::StreamEntry entry;  // after the take-over, if any
  Manifest manifest;           // the persisted manifest; empty_at(0) when root_key is ""
  bool has_root = false;       // entry.root_key names a root (manifest loaded from it)
  bool from_cache = false;     // the node's cache had it at the catalog's revision
  bool created = false;        // the catalog entry was created by this load
};

// Reads (creating if absent) the stream's catalog entry, raises its epoch
// when take_over, and loads the persisted manifest: from the cache when its
// revision is the catalog's, else by GETting the root. A missing root at
// revision > 0 is an error (transient), never an empty manifest.
Result<LoadedState> load_stream_state(catalog::Catalog& catalog, objstore::ObjectStore& store,
                                      const ManifestCache& cache, const ObjectKeys& keys,
                                      bool take_over);

// The manifest the catalog entry names (empty_at(0) when it has no root
// yet). A missing root is a transient error, never an empty manifest.
Result<Manifest> read_persisted_manifest(objstore::ObjectStore& store,
                                         const catalog::StreamEntry& entry);

// Read-only: the stream's catalog entry and the manifest it names, as the
// cache holds it (tools reading a node's streams without being the node).
// not_found when the stream has no catalog entry.
Result<CachedManifest> load_persisted_manifest(catalog::Catalog& catalog,
                                               objstore::ObjectStore& store,
                                               std::string_view stream);

// ---- fragments ----

// Builds the fragment object from the committed segment spans of `log`
// (StreamLog::map_committed: mapped, not copied; every chunk checked against
// the index and its CRC on the way) and PUTs it to `key`. Only a window of
// the fragment stays resident: each pass over the body drops the mapped
// pages behind it. Returns the object's size.
Result<uint64_t, TransferFailure> put_fragment(objstore::ObjectStore& store, log::StreamLog& log,
                                               const FragmentPlan& plan, uint64_t epoch,
                                               const std::string& key);

// PUTs a group object.
Result<uint64_t, TransferFailure> put_group(objstore::ObjectStore& store, const ManifestGroup& g,
                                            const std::string& key);

// ---- persist ----

struct PersistDone {
  bool ok = false;
  uint64_t revision = 0;  // ok: the new catalog revision
  upload::PersistError error = upload::PersistError::transient;
  bool fenced = false;  // the catalog holds a higher epoch
  std::string message;
};

// PUT the root (a new key) -> catalog compare-and-set. When the CAS is
// refused (conflict, fenced, not_found) the new root is referenced by
// nothing and is deleted again (best effort; GC catches a failure).
PersistDone persist_root(objstore::ObjectStore& store, catalog::Catalog& catalog,
                         const std::string& stream, const Manifest& m, uint64_t epoch,
                         const std::string& root_key, uint64_t expected_revision);

// ---- retention ----

// plan_retention with groups fetched from the store.
Result<RetentionPlan> evaluate_retention_plan(objstore::ObjectStore& store, const ObjectKeys& keys,
                                              const Manifest& m, const RetentionSpec& spec,
                                              int64_t now_ms);

// ---- deletes ----

struct DeleteDone {
  uint64_t deleted = 0;
  std::vector<std::string> failures;  // "key: error"
};
DeleteDone delete_objects(objstore::ObjectStore& store, const std::vector<std::string>& keys);

// ---- catch-up ----

// A catch-up read is the log's own chunk walk (StreamLog::walk_chunks,
// log/chunk_walk.h): chunk headers only, the bodies are read once, by the
// transfer that uploads them (put_fragment).

}  // namespace strata::tier
