// SuperStreamStore: where a node keeps its super streams' definitions
// (super_streams.h holds them in memory and answers from there):
//   single node  one file per super stream under <data_dir>/super_streams,
//                published crash-atomically (named_files.h; byte layout in
//                docs/formats/server-state.md, "Super stream file")
//   cluster      the etcd key <ns>/super_streams/<name>, holding the same
//                bytes, shared by every node: a super stream created on one
//                node routes on all of them (each follows the keys with the
//                cluster's watch, cluster/ownership.h, on_followed)
// Errors name the file or the etcd key. Calls block (file or network I/O).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/fs.h"
#include "common/result.h"

namespace strata::etcd {
class EtcdClient;
}

namespace strata::server {

struct SuperStream;

class SuperStreamStore {
 public:
  virtual ~SuperStreamStore() = default;
  // Every stored super stream; corrupt naming the damaged one.
  virtual Result<std::vector<SuperStream>> load() = 0;
  // Stores a new super stream; already_exists when one of that name is
  // stored (nothing written).
  virtual Status add(const SuperStream& s) = 0;
  // Removes it; not_found when it is not stored. The super stream is gone
  // once this returns OK.
  virtual Status remove(std::string_view name) = 0;
  // "directory D" / "etcd prefix P", for messages.
  virtual std::string where() const = 0;
};

std::unique_ptr<SuperStreamStore> file_super_stream_store(std::string dir, FileSystem& fs);
std::unique_ptr<SuperStreamStore> etcd_super_stream_store(std::shared_ptr<etcd::EtcdClient> client,
                                                          const std::string& ns);

// The etcd keys' directory under <ns>/ ("super_streams/"), for the watch.
inline constexpr std::string_view kSuperStreamKeyDir = "super_streams/";

}  // namespace strata::server
