// ReorderFs: an in-memory FileSystem for crash tests with a harsher model of
// a power loss than FaultFileSystem's ordered one. A real disk without write
// barriers persists the writes made since the last fsync in any order, and a
// multi-sector write may persist only some of its 512-byte sectors. So at
// crash(), ReorderFs keeps, of each unsynced write, an arbitrary subset of
// its sectors (all, none or some) — later writes can survive while earlier
// ones vanish. Synced data always survives. Directory entries are durable
// at once (this model is about data; FaultFileSystem covers directories).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "common/fs.h"
#include "common/random.h"

namespace strata::slotstore::test {

class ReorderFs final : public FileSystem {
 public:
  Result<std::unique_ptr<File>> open(const std::string& path, OpenOptions opts) override;
  Status rename(const std::string& from, const std::string& to) override;
  Status remove(const std::string& path) override;
  Status create_dir(const std::string& path) override;
  Status remove_dir(const std::string& path) override;
  Status sync_dir(const std::string& path) override;
  Result<std::vector<std::string>> list_dir(const std::string& path) override;
  Result<FileStat> stat(const std::string& path) override;

  // Power loss: every file keeps its synced bytes plus a random subset of
  // the sectors of each unsynced write; old handles die.
  void crash(Random& rng);
  // After n more mutating operations, every operation fails (machine down).
  void crash_after(uint64_t n);
  void clear_crash_after();
  bool is_down() const;
  // The process died, the machine did not: the machine is up again and
  // every write stays as the program left it (in the page cache), synced
  // or not — a later crash() may still drop the unsynced ones.
  void revive();

  struct Node;
  class MemFile;

 private:
  Status check(bool mutating);

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Node>> files_;
  std::set<std::string> dirs_{"/"};
  uint64_t boot_ = 0;
  std::optional<uint64_t> budget_;
  bool down_ = false;
};

}  // namespace strata::slotstore::test
