// CatalogWatch: follow every change of the catalog's entries without
// polling, so a node's manifest cache can track roots other nodes persist.
// Changes arrive in revision order, each once, from `from_revision` on
// (inclusive; 0: from now). Implemented by the etcd backend
// (etcd_catalog.h). The single-node backends (embedded, memory) do not
// implement it: their only writer is the node's own uploader, which hands
// persisted edits to the manifest cache itself.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "catalog/catalog.h"
#include "common/result.h"

namespace strata::catalog {

struct CatalogChange {
  enum class Kind : uint8_t { changed, removed };
  Kind kind = Kind::changed;
  // changed: the entry as stored by the change. removed: stream and the
  // revision of the removal (epoch 0, root "").
  StreamEntry entry;
};

// A running watch; destroying it stops the callbacks (after any in progress).
class CatalogWatchHandle {
 public:
  virtual ~CatalogWatchHandle() = default;
};

class CatalogWatch {
 public:
  virtual ~CatalogWatch() = default;
  // on_change runs on the watch's thread, one change at a time. on_error
  // ends the watch: Errc::out_of_range when from_revision is older than the
  // backend keeps (re-read with list() and watch from its revision + 1),
  // Errc::corrupt for an entry that cannot be decoded.
  virtual std::unique_ptr<CatalogWatchHandle> watch(
      uint64_t from_revision, std::function<void(const CatalogChange&)> on_change,
      std::function<void(const Error&)> on_error) = 0;
};

}  // namespace strata::catalog
