// AccessStore: where the live changes to users and permissions (the
// overlay, auth/access_overlay.h) are kept, beside the catalog:
//   single node  <data_dir>/access/overlay.json, replaced crash-atomically
//                (write, sync, rename, sync the directory): after a crash
//                the file holds the overlay before or after the change
//   cluster      the etcd key <ns>/access/overlay, shared by every node
// Each stored overlay has a version (0: none stored yet); save() writes
// only over the version it was given (compare-and-set), so two operators
// changing users at once on two nodes lose neither change: the second
// save fails, reloads and applies its edit again (server/access_admin.h).
// Errors name the file or the etcd key. Calls block (file or network I/O).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "auth/access_overlay.h"
#include "common/fs.h"
#include "common/result.h"

namespace strata::etcd {
class EtcdClient;
}

namespace strata::server {

struct StoredOverlay {
  auth::AccessOverlay overlay;
  int64_t version = 0;
};

class AccessStore {
 public:
  virtual ~AccessStore() = default;
  // corrupt naming the place for a stored overlay that does not decode.
  virtual Result<StoredOverlay> load() = 0;
  // The new version, or nullopt when the stored version is no longer
  // `expected` (nothing written).
  virtual Result<std::optional<int64_t>> save(const auth::AccessOverlay& o, int64_t expected) = 0;
  // "<data_dir>/access/overlay.json" or "etcd key <ns>/access/overlay".
  virtual std::string where() const = 0;
};

std::unique_ptr<AccessStore> file_access_store(FileSystem& fs, std::string data_dir);
std::unique_ptr<AccessStore> etcd_access_store(std::shared_ptr<etcd::EtcdClient> client,
                                               const std::string& ns);

}  // namespace strata::server
