#include "log/dir_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fs.h"

namespace strata::log {

DirLock& DirLock::operator=(DirLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

Result<DirLock> DirLock::acquire(const std::string& dir) {
  DirLock l;
  l.path_ = path_join(dir, "LOCK");
  l.fd_ = ::open(l.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (l.fd_ < 0) {
    return Error(errno == ENOENT ? Errc::not_found : Errc::io,
                 fmt::format("open {}: {}", l.path_, std::strerror(errno)));
  }
  while (::flock(l.fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    if (err == EWOULDBLOCK) {
      return Error(Errc::conflict,
                   fmt::format("stream {} is already open for writing (lock {} is held "
                               "by another writer)",
                               dir, l.path_));
    }
    return Error(Errc::io, fmt::format("flock {}: {}", l.path_, std::strerror(err)));
  }
  return l;
}

void DirLock::release() {
  if (fd_ >= 0) {
    ::close(fd_);  // drops the flock
    fd_ = -1;
  }
}

}  // namespace strata::log
