// Scrub, the shell: reads a stream's persisted manifest tree, lists its
// prefix, reads its fragments (a few requests in flight) and hands it all
// to the core (scrub.h). Also the tree loader GC shares (gc_run.h).
//
// It reads beside a running node: the root it reads may be replaced and
// deleted (after tiering.delete_grace_ms) while it reads. A root or group
// that is gone is therefore only reported missing when the catalog entry
// still names the same revision; otherwise the walk starts again from the
// newer root. The same holds for a whole scrub whose findings say missing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "catalog/catalog.h"
#include "common/clock.h"
#include "common/random.h"
#include "common/result.h"
#include "objstore/object_store.h"
#include "tier/backoff.h"
#include "tier/object_keys.h"
#include "tier/scrub.h"
#include "tier/tier_limits.h"

namespace strata::tier {

// How the shells read the catalog: a fresh view at every call (the CLI
// re-opens the embedded catalog read-only, since a read-only open is a
// snapshot; a test passes a node's live catalog).
struct CatalogSource {
  std::function<Result<std::vector<catalog::StreamEntry>>()> list;
  // nullopt when the stream has no entry.
  std::function<Result<std::optional<catalog::StreamEntry>>(const std::string& stream)> get;

  // Calls straight through to `c` (which must outlive the source).
  static CatalogSource live(catalog::Catalog& c);
};

struct LoadedTree {
  std::optional<catalog::StreamEntry> entry;  // nullopt: the stream is not in the catalog
  RootRead root;                              // ok and empty when the entry names no root
  std::optional<int64_t> root_last_modified_ms;
  TreeWalk walk;  // complete() unless the root is not ok
};

// Reads the entry, the root it names and every group below it. Errors only
// when the catalog cannot be read; object-store trouble is in the result
// (a root that kept being replaced while read is `unreadable`).
Result<LoadedTree> load_tree(objstore::ObjectStore& store, const CatalogSource& catalog,
                             const ObjectKeys& keys);
// The same, starting from an entry already read (e.g. from a list()).
Result<LoadedTree> load_tree_from(objstore::ObjectStore& store, const CatalogSource& catalog,
                                  const ObjectKeys& keys,
                                  std::optional<catalog::StreamEntry> entry);

struct ScrubOptions {
  // Read every fragment whole and verify every CRC. Otherwise read the
  // header and index of every fragment (ranged GETs) and `sample` fragments,
  // chosen at random, whole.
  bool full = false;
  uint64_t sample = 8;
  uint64_t seed = 0;       // of the sample; 0: a random seed
  size_t concurrency = 4;  // requests in flight
  const Clock* clock = &system_clock();
  // Called (serialized, from reading threads) as fragments are checked.
  std::function<void(uint64_t checked, uint64_t total)> progress;
};

// Scrubs one stream. Errors only when the catalog or the listing cannot be
// read; everything else is a finding.
Result<ScrubReport> scrub_stream(objstore::ObjectStore& store, const CatalogSource& catalog,
                                 const ObjectKeys& keys, const ScrubOptions& opts = {});

// Runs an object-store call (returning an ObjectResult), retrying transient
// failures with the uploader's transient backoff (without its immediate
// first retry): a scrub or gc run should not fail on one 503.
template <class F>
auto with_transient_retries(F f) -> decltype(f()) {
  Random rng(uint64_t(std::random_device{}()));
  BackoffPolicy p = BackoffPolicy::transient();
  p.immediate_first = false;
  for (uint32_t attempt = 1;; ++attempt) {
    auto r = f();
    if (r.ok() || r.retry() != objstore::RetryClass::transient || attempt == kTransientTries) {
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms(p, attempt, rng)));
  }
}

// Runs fn(0..n-1) on up to `concurrency` threads. An exception escaping fn
// is caught and passed to `threw` with the index.
void run_bounded(size_t n, size_t concurrency, const std::function<void(size_t)>& fn,
                 const std::function<void(size_t, const std::string&)>& threw);

}  // namespace strata::tier
