// A FileSystem wrapper that counts the bytes and calls of File::read_at, to
// check how much of a file recovery reads.
#pragma once

#include <atomic>

#include "common/fs.h"

namespace strata::slotstore::test {

class CountingFs final : public FileSystem {
 public:
  explicit CountingFs(FileSystem& base) : base_(base) {}

  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> reads{0};

  Result<std::unique_ptr<File>> open(const std::string& path, OpenOptions opts) override {
    STRATA_ASSIGN_OR_RETURN(auto f, base_.open(path, opts));
    return std::unique_ptr<File>(new CountingFile(this, std::move(f)));
  }
  Status rename(const std::string& a, const std::string& b) override { return base_.rename(a, b); }
  Status remove(const std::string& p) override { return base_.remove(p); }
  Status create_dir(const std::string& p) override { return base_.create_dir(p); }
  Status remove_dir(const std::string& p) override { return base_.remove_dir(p); }
  Status sync_dir(const std::string& p) override { return base_.sync_dir(p); }
  Result<std::vector<std::string>> list_dir(const std::string& p) override {
    return base_.list_dir(p);
  }
  Result<FileStat> stat(const std::string& p) override { return base_.stat(p); }

 private:
  class CountingFile final : public File {
   public:
    CountingFile(CountingFs* fs, std::unique_ptr<File> f)
        : File(f->path()), fs_(fs), f_(std::move(f)) {}
    Result<size_t> read_at(uint64_t off, char* buf, size_t n) override {
      ++fs_->reads;
      auto r = f_->read_at(off, buf, n);
      if (r.ok()) fs_->bytes_read += *r;
      return r;
    }
    Status write_at(uint64_t off, BytesView d) override { return f_->write_at(off, d); }
    Status append(BytesView d) override { return f_->append(d); }
    Status sync() override { return f_->sync(); }
    Status truncate(uint64_t n) override { return f_->truncate(n); }
    Result<uint64_t> size() override { return f_->size(); }

   private:
    CountingFs* fs_;
    std::unique_ptr<File> f_;
  };

  FileSystem& base_;
};

}  // namespace strata::slotstore::test
