#include "common/file_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata {

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

Result<FileLock> FileLock::acquire(const std::string& lock_path, std::string_view what) {
  FileLock l;
  l.path_ = lock_path;
  l.fd_ = ::open(l.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (l.fd_ < 0) {
    return Error(errno == ENOENT ? Errc::not_found : Errc::io,
                 fmt::format("open lock file {}: {}", l.path_, std::strerror(errno)));
  }
  while (::flock(l.fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    if (err == EWOULDBLOCK) {
      return Error(Errc::conflict,
                   fmt::format("{} is already open for writing (lock {} is held by another "
                               "process or handle)",
                               what, l.path_));
    }
    return Error(Errc::io, fmt::format("flock {}: {}", l.path_, std::strerror(err)));
  }
  return l;
}

void FileLock::release() {
  if (fd_ >= 0) {
    ::close(fd_);  // drops the flock
    fd_ = -1;
  }
}

}  // namespace strata
