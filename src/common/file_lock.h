// One writer across processes: a FileLock holds an exclusive flock(2) on a
// lock file for as long as it lives. The kernel drops the lock when the
// process dies (kill -9 included), so there is nothing to clean up after a
// crash, and a stale lock file is harmless. flock locks belong to an open
// file description, so a second handle in the same process is refused too.
// Only meaningful on the real file system; stores on another FileSystem
// (tests) skip it.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace strata {

class FileLock {
 public:
  FileLock() = default;
  FileLock(FileLock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  FileLock& operator=(FileLock&& o) noexcept;
  ~FileLock() { release(); }

  // Locks `lock_path` (created if missing). `what` names the thing it
  // guards for the error ("stream /d/s1"). Fails with Errc::conflict if
  // another process or handle holds it, Errc::not_found if its directory
  // does not exist.
  static Result<FileLock> acquire(const std::string& lock_path, std::string_view what);
  void release();
  bool held() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace strata
