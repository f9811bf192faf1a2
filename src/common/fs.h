// The file layer every durable component writes through (LevelDB's Env
// idea). Two implementations: the real POSIX one (posix_fs()) and
// FaultFileSystem (fault_fs.h), an in-memory one for tests that can crash,
// drop unsynced writes, tear the last write and fail fsync.
//
// Durability model (strict POSIX, which FaultFileSystem enforces):
//  - file contents are durable only after File::sync();
//  - a directory entry (create, rename, remove, mkdir) is durable only after
//    sync_dir() of the directory holding it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"

namespace strata {

class File {
 public:
  virtual ~File() = default;

  // Reads up to n bytes at `offset` into buf; returns the count read, which
  // is less than n only at end of file.
  virtual Result<size_t> read_at(uint64_t offset, char* buf, size_t n) = 0;
  virtual Status write_at(uint64_t offset, BytesView data) = 0;
  // Writes at the current end of the file. One appender per file.
  virtual Status append(BytesView data) = 0;
  // Makes everything written so far durable (contents and size).
  virtual Status sync() = 0;
  virtual Status truncate(uint64_t size) = 0;
  virtual Result<uint64_t> size() = 0;
  // Allocates disk space for [offset, offset + len) without changing the
  // size, so later writes there skip the file system's block reservation
  // per page (ext4's delayed allocation: ~25 % of a write into the page
  // cache, docs/BENCHMARKS.md). Errc::unsupported where the file system (or
  // this layer) cannot; the caller then just writes.
  virtual Status reserve(uint64_t offset, uint64_t len);
  // Frees space reserve() allocated past the end of the file (a no-op when
  // there is none). Changes no byte of the file.
  virtual Status release_reserved() { return Status::OK(); }
  // The operating system's descriptor, or -1 where there is none (the
  // in-memory FaultFileSystem): lets a server send file bytes to a socket
  // with sendfile(2) instead of copying them through user space.
  virtual int native_handle() const { return -1; }

  const std::string& path() const { return path_; }

 protected:
  explicit File(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

struct OpenOptions {
  bool write = false;      // open for writing as well as reading
  bool create = false;     // create if missing
  bool exclusive = false;  // with create: fail with already_exists if present
  bool truncate = false;   // truncate to zero on open

  static OpenOptions read_only() { return {}; }
  static OpenOptions read_write() { return {true, false, false, false}; }
  static OpenOptions create_or_open() { return {true, true, false, false}; }
  static OpenOptions create_new() { return {true, true, true, false}; }
  static OpenOptions create_truncate() { return {true, true, false, true}; }
};

struct FileStat {
  // A constructor rather than an aggregate, so that FileStat{is_dir, size}
  // (file systems that keep no times) stays valid and warning-free.
  FileStat(bool dir = false, uint64_t bytes = 0, std::optional<int64_t> mtime = std::nullopt)
      : is_dir(dir), size(bytes), mtime_ms(mtime) {}
  bool is_dir = false;
  uint64_t size = 0;
  // Last modification, ms since the Unix epoch (unset where the file system
  // keeps no times, e.g. FaultFileSystem).
  std::optional<int64_t> mtime_ms;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Result<std::unique_ptr<File>> open(const std::string& path, OpenOptions opts) = 0;
  // Atomically replaces `to` with `from` (POSIX rename).
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  virtual Status remove(const std::string& path) = 0;
  // Creates one directory level; already_exists if present.
  virtual Status create_dir(const std::string& path) = 0;
  // Removes an empty directory.
  virtual Status remove_dir(const std::string& path) = 0;
  // Makes the entries of directory `path` durable.
  virtual Status sync_dir(const std::string& path) = 0;
  // Entry names in the directory, sorted bytewise.
  virtual Result<std::vector<std::string>> list_dir(const std::string& path) = 0;
  // not_found if absent.
  virtual Result<FileStat> stat(const std::string& path) = 0;
};

// The real file system.
FileSystem& posix_fs();

// ---- helpers over any FileSystem ----

std::string path_join(const std::string& dir, const std::string& name);
std::string path_parent(const std::string& path);
std::string path_basename(const std::string& path);

bool exists(FileSystem& fs, const std::string& path);
// mkdir -p; every directory it creates is made durable in its parent.
Status create_dirs(FileSystem& fs, const std::string& path);
Result<Bytes> read_file(FileSystem& fs, const std::string& path);
// Reads exactly n bytes at offset, or fails with corrupt naming the file and
// position when the file is shorter.
Status read_exact(File& f, uint64_t offset, char* buf, size_t n);
// Crash-atomic replace: write `path.tmp`, sync, rename over `path`, sync the
// directory (publish_file.h). After a crash, `path` holds either the old or
// the new bytes.
Status write_file_atomic(FileSystem& fs, const std::string& path, BytesView data);
// Removes a file or a directory tree (not crash-atomic by itself; callers
// that need an atomic delete rename the tree away first).
Status remove_all(FileSystem& fs, const std::string& path);

}  // namespace strata
