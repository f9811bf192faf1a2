#include "raftmeta/store_options.h"

#include "common/fs.h"

namespace strata::raftmeta {

std::string store_path(const std::string& dir) {
  return path_join(dir, kStoreFile);
}
std::string migrating_path(const std::string& dir) {
  return store_path(dir) + kMigratingSuffix;
}
std::string dets_path(const std::string& dir) {
  return path_join(dir, kDetsFile);
}

}  // namespace strata::raftmeta
