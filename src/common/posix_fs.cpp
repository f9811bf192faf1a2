#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/fs.h"

namespace strata {
namespace {

Error os_error(const char* op, const std::string& path, int err) {
  Errc code = Errc::io;
  if (err == ENOENT) code = Errc::not_found;
  if (err == EEXIST) code = Errc::already_exists;
  return Error(code, fmt::format("{} {}: {}", op, path, std::strerror(err)));
}

class PosixFile final : public File {
 public:
  PosixFile(std::string path, int fd) : File(std::move(path)), fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }

  Result<size_t> read_at(uint64_t offset, char* buf, size_t n) override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, buf + done, n - done, off_t(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return os_error("pread", path(), errno);
      }
      if (r == 0) break;
      done += size_t(r);
    }
    return done;
  }

  Status write_at(uint64_t offset, BytesView data) override {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t r = ::pwrite(fd_, data.data() + done, data.size() - done, off_t(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return os_error("pwrite", path(), errno);
      }
      done += size_t(r);
    }
    return Status::OK();
  }

  Status append(BytesView data) override {
    if (end_ < 0) {
      struct stat st;
      if (::fstat(fd_, &st) != 0) return os_error("fstat", path(), errno);
      end_ = st.st_size;
    }
    STRATA_TRY(write_at(uint64_t(end_), data));
    end_ += int64_t(data.size());
    return Status::OK();
  }

  Status sync() override {
    // fdatasync also flushes the file size, which is all the metadata a
    // reader of our formats depends on.
    if (::fdatasync(fd_) != 0) return os_error("fdatasync", path(), errno);
    return Status::OK();
  }

  Status truncate(uint64_t size) override {
    if (::ftruncate(fd_, off_t(size)) != 0) return os_error("ftruncate", path(), errno);
    end_ = -1;
    return Status::OK();
  }

  Status reserve(uint64_t offset, uint64_t len) override {
    // KEEP_SIZE: readers and recovery see the same end as without it.
    while (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, off_t(offset), off_t(len)) != 0) {
      if (errno == EINTR) continue;
      if (errno == EOPNOTSUPP || errno == ENOSYS) {
        return Error(Errc::unsupported,
                     fmt::format("fallocate {}: not supported by this file system", path()));
      }
      return os_error("fallocate", path(), errno);
    }
    return Status::OK();
  }

  Status release_reserved() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return os_error("fstat", path(), errno);
    // Allocated beyond the blocks the size needs: a truncate to the same
    // size frees them (nothing to do, and no metadata change, otherwise).
    const uint64_t blk = st.st_blksize > 0 ? uint64_t(st.st_blksize) : 4096;
    const uint64_t needed = (uint64_t(st.st_size) + blk - 1) / blk * blk;
    if (uint64_t(st.st_blocks) * 512 <= needed) return Status::OK();
    if (::ftruncate(fd_, st.st_size) != 0) return os_error("ftruncate", path(), errno);
    return Status::OK();
  }

  Result<uint64_t> size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return os_error("fstat", path(), errno);
    return uint64_t(st.st_size);
  }

  int native_handle() const override { return fd_; }

 private:
  int fd_;
  int64_t end_ = -1;  // cached end for append; -1 = unknown
};

class PosixFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<File>> open(const std::string& path, OpenOptions o) override {
    int flags = O_CLOEXEC | (o.write ? O_RDWR : O_RDONLY);
    if (o.create) flags |= O_CREAT;
    if (o.create && o.exclusive) flags |= O_EXCL;
    if (o.truncate) flags |= O_TRUNC;
    int fd;
    do {
      fd = ::open(path.c_str(), flags, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return os_error("open", path, errno);
    return std::unique_ptr<File>(new PosixFile(path, fd));
  }

  Status rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return os_error("rename", from + " -> " + to, errno);
    return Status::OK();
  }

  Status remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return os_error("unlink", path, errno);
    return Status::OK();
  }

  Status create_dir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0) return os_error("mkdir", path, errno);
    return Status::OK();
  }

  Status remove_dir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return os_error("rmdir", path, errno);
    return Status::OK();
  }

  Status sync_dir(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return os_error("open directory", path, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return os_error("fsync directory", path, err);
    return Status::OK();
  }

  Result<std::vector<std::string>> list_dir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (!d) return os_error("opendir", path, errno);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<FileStat> stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return os_error("stat", path, errno);
    int64_t mtime_ms = int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
    return FileStat{S_ISDIR(st.st_mode), uint64_t(st.st_size), mtime_ms};
  }
};

}  // namespace

FileSystem& posix_fs() {
  static PosixFileSystem fs;
  return fs;
}

}  // namespace strata
