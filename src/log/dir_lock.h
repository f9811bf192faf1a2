// One writer per stream, also across processes: a writer holds an exclusive
// flock(2) on `<stream dir>/LOCK` for as long as it is open. The kernel drops
// the lock when the process dies (kill -9 included), so there is nothing to
// clean up after a crash. Only meaningful on the real file system; a log on
// another FileSystem (tests) skips it.
#pragma once

#include <string>

#include "common/result.h"

namespace strata::log {

class DirLock {
 public:
  DirLock() = default;
  DirLock(DirLock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  DirLock& operator=(DirLock&& o) noexcept;
  ~DirLock() { release(); }

  // Fails with Errc::conflict naming the directory if another writer holds it.
  static Result<DirLock> acquire(const std::string& dir);
  void release();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace strata::log
