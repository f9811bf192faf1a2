// FaultFileSystem: an in-memory FileSystem for crash tests (LevelDB's
// fault_injection_test idea, with a stricter model).
//
// It keeps, for every file, the bytes as the program sees them and the bytes
// that are durable (as of the last File::sync), and for every directory the
// entries as seen and the durable ones (as of the last sync_dir). crash()
// turns the machine off and on again: what was not durable is dropped — or,
// if asked, a random prefix of each file's unsynced writes survives and the
// first one that does not is torn at a random byte. All File handles opened
// before the crash are dead afterwards.
//
// Faults: crash_after(n) lets n more mutating operations succeed and fails
// every later operation with Errc::simulated_crash until crash() is called
// (the write that hits the limit is left pending, so a crash can tear it);
// fail_when(pred) makes matching operations fail without effect (a failed
// sync leaves the data unsynced, as Linux does after an fsync error).
#pragma once

#include <functional>
#include <mutex>
#include <optional>

#include "common/fs.h"

namespace strata {

struct CrashOptions {
  uint64_t seed = 0;
  // Keep a random prefix of each file's unsynced writes instead of none.
  bool keep_random_prefix = false;
  // Tear the first unsynced write that is not kept at a random byte.
  bool tear = false;
  // Per directory, keep all unsynced entry changes instead of none.
  bool random_dir_entries = false;
};

struct FaultOp {
  enum class Kind { write, truncate, sync, create, rename, remove, mkdir, rmdir, sync_dir, read };
  Kind kind;
  const std::string& path;
};

class FaultFileSystem final : public FileSystem {
 public:
  FaultFileSystem();
  ~FaultFileSystem() override;

  Result<std::unique_ptr<File>> open(const std::string& path, OpenOptions opts) override;
  Status rename(const std::string& from, const std::string& to) override;
  Status remove(const std::string& path) override;
  Status create_dir(const std::string& path) override;
  Status remove_dir(const std::string& path) override;
  Status sync_dir(const std::string& path) override;
  Result<std::vector<std::string>> list_dir(const std::string& path) override;
  Result<FileStat> stat(const std::string& path) override;

  // Power loss and restart (see the file comment).
  void crash(const CrashOptions& opts = {});
  // After n more successful mutating operations, the machine is down.
  void crash_after(uint64_t n);
  void clear_crash_after();
  // Operations matching pred fail with `code` and do nothing (nullptr clears).
  void fail_when(std::function<bool(const FaultOp&)> pred, Errc code = Errc::io);
  // Mutating operations performed so far (writes, truncates, syncs, entry
  // changes), to choose crash points over a workload.
  uint64_t mutation_count() const;
  bool is_down() const;
  // The durable bytes of a file (what a crash now would keep at least).
  Result<Bytes> durable_contents(const std::string& path) const;

  struct Node;
  class MemFile;

 private:
  Status check(FaultOp::Kind kind, const std::string& path, bool mutating);
  Result<std::shared_ptr<Node>> lookup(const std::string& path) const;
  Result<std::shared_ptr<Node>> parent_dir(const std::string& path, std::string* name) const;

  mutable std::mutex mu_;
  std::shared_ptr<Node> root_;
  uint64_t boot_ = 0;  // bumped by crash(); stale handles compare against it
  uint64_t mutations_ = 0;
  std::optional<uint64_t> crash_budget_;
  bool down_ = false;
  std::function<bool(const FaultOp&)> fail_pred_;
  Errc fail_code_ = Errc::io;
};

}  // namespace strata
