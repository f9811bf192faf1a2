// The `fs` backend: objects as files under a root directory, through
// strata::FileSystem (so crash tests run it on FaultFileSystem).
//
// Layout (docs/formats/objstore.md, "`fs` backend: files"): key "a/b/c" is the file
// <root>/d_a/d_b/f_c. Directory segments are tagged "d_", object files
// "f_", temporary files "t_", so the keys "a" and "a/b" can both exist and
// no temporary file is ever mistaken for an object. Each object file holds
// the body followed by a 12-byte trailer: "SOBJ", u32 version (1), u32
// CRC32C of the body (big-endian). get_to() verifies the CRC as it reads;
// read_range() preads straight into the caller's buffer.
//
// put = write t_<name>.<unique> in the key's directory, fsync, rename over
// f_<name>, fsync the directory: after a crash at any instant the key holds
// the old object, or none, or the complete new one — never a prefix.
// remove = unlink, fsync the directory, then prune empty parents.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/fs.h"
#include "objstore/object_store.h"

namespace strata::objstore {

constexpr size_t kFsTrailerBytes = 12;

class FsObjectStore final : public ObjectStore {
 public:
  // Opens the store rooted at `root` (created, durably, if create_if_missing).
  // `fs` must outlive the store. max_get_bytes: the cap of get()
  // (objstore.max_get_bytes).
  static Result<std::unique_ptr<FsObjectStore>> open(FileSystem& fs, std::string root,
                                                     bool create_if_missing,
                                                     uint64_t max_get_bytes = kDefaultMaxGetBytes);

  using ObjectStore::put;
  ObjectResult<PutResult> put(std::string_view key, BodyParts body,
                              const PutOptions& opts) override;
  ObjectResult<uint64_t> read_range(std::string_view key, uint64_t offset,
                                    std::span<uint8_t> dst) override;
  ObjectResult<uint64_t> get_to(std::string_view key, const GetSink& sink,
                                const GetLimits& limits) override;
  uint64_t max_get_bytes() const override { return max_get_bytes_; }
  ObjectResult<ObjectInfo> head(std::string_view key) override;
  ObjectStatus remove(std::string_view key) override;
  std::vector<RemoveOutcome> remove_many(std::span<const std::string> keys) override;
  ObjectResult<ListPage> list(const ListRequest& req) override;
  ObjectStatus check_access() override;
  std::string describe() const override;

  // Removes temporary files left by puts that a crash interrupted. Call it
  // only when no other process writes to the same root (e.g. at start-up).
  // Returns how many were removed.
  Result<size_t> sweep_temp_files();

  const std::string& root() const { return root_; }

 private:
  FsObjectStore(FileSystem& fs, std::string root, uint64_t max_get_bytes)
      : fs_(fs), root_(std::move(root)), max_get_bytes_(max_get_bytes) {}

  struct Located;
  ObjectResult<Located> locate(Op op, std::string_view key) const;
  ObjectResult<uint32_t> read_trailer(Op op, std::string_view key, File& f, uint64_t file_size);
  // A listed object file's size, etag and time; nullopt when it was removed
  // while listing. `prefix`: the listing's, for errors.
  ObjectResult<std::optional<ObjectInfo>> listed_object(const std::string& key,
                                                        const std::string& path,
                                                        const std::string& prefix);
  ObjectStatus put_once(const Located& loc, std::string_view key, BodyParts body,
                        std::optional<uint32_t> expected_crc,
                        const std::function<void(uint64_t)>& progress, uint32_t* crc_out,
                        bool* dir_vanished);
  void prune_empty_dirs(const std::string& dir);

  FileSystem& fs_;
  const std::string root_;
  const uint64_t max_get_bytes_;
  std::atomic<uint64_t> temp_counter_{0};
};

}  // namespace strata::objstore
