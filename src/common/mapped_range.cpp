#include "common/mapped_range.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace strata {

Result<MappedRange> MappedRange::map(const std::string& path, uint64_t offset, uint64_t length) {
  MappedRange m;
  if (length == 0) return m;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return Error(e == ENOENT ? Errc::not_found : Errc::io,
                 fmt::format("open {}: {}", path, std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Error(Errc::io, fmt::format("fstat {}: {}", path, std::strerror(e)));
  }
  if (uint64_t(st.st_size) < offset + length) {
    ::close(fd);
    return Error(Errc::corrupt, fmt::format("{}: file is {} bytes, range [{}, {}) runs past it",
                                            path, uint64_t(st.st_size), offset, offset + length));
  }
  static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  uint64_t aligned = offset - offset % page;
  size_t map_len = size_t(offset + length - aligned);
  void* p = ::mmap(nullptr, map_len, PROT_READ, MAP_SHARED, fd, off_t(aligned));
  int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    return Error(Errc::io, fmt::format("mmap {} [{}, {}): {}", path, offset, offset + length,
                                       std::strerror(e)));
  }
  // The range is read once, front to back.
  ::madvise(p, map_len, MADV_SEQUENTIAL);
  m.base_ = p;
  m.base_len_ = map_len;
  m.data_ = static_cast<const char*>(p) + (offset - aligned);
  m.len_ = size_t(length);
  return m;
}

void MappedRange::drop_before(uint64_t n) {
  if (!base_) return;
  static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t end =
      uint64_t(data_ - static_cast<const char*>(base_)) + std::min<uint64_t>(n, len_);
  const uint64_t whole = end - end % page;
  // A read-only shared file map: MADV_DONTNEED only unmaps the pages, their
  // contents stay in the page cache (and in the file).
  if (whole > 0) ::madvise(base_, size_t(whole), MADV_DONTNEED);
}

MappedRange::MappedRange(MappedRange&& o) noexcept {
  *this = std::move(o);
}

MappedRange& MappedRange::operator=(MappedRange&& o) noexcept {
  if (this != &o) {
    if (base_) ::munmap(base_, base_len_);
    base_ = std::exchange(o.base_, nullptr);
    base_len_ = std::exchange(o.base_len_, 0);
    data_ = std::exchange(o.data_, nullptr);
    len_ = std::exchange(o.len_, 0);
  }
  return *this;
}

MappedRange::~MappedRange() {
  if (base_) ::munmap(base_, base_len_);
}

}  // namespace strata
