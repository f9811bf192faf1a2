// GatedFs: a FileSystem wrapper for the seal-sync tests. It records the
// order of file creations and syncs, and can hold the syncs of chosen files
// until the test opens the gate — a slow disk the test controls, with a
// handshake (wait_held) instead of sleeps.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "common/fs.h"

namespace strata::log::test {

class GatedFs final : public FileSystem {
 public:
  explicit GatedFs(FileSystem& inner) : inner_(inner) {}

  // Syncs of files whose name is `name` wait until open_gate().
  void hold_syncs_of(std::string name) {
    std::lock_guard<std::mutex> g(mu_);
    held_name_ = std::move(name);
    gate_open_ = false;
  }
  void open_gate() {
    std::lock_guard<std::mutex> g(mu_);
    gate_open_ = true;
    cv_.notify_all();
  }
  // Waits until a held sync is waiting at the gate.
  bool wait_held(std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, timeout, [&] { return holding_ > 0; });
  }
  // "create <name>", "sync <name>" (before), "synced <name>" (after),
  // "sync_dir", in the order they happened.
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> g(mu_);
    return events_;
  }
  // Position of the first event equal to `e` at or after `from`, or -1.
  long position(const std::string& e, long from = 0) const {
    auto ev = events();
    if (from < 0 || size_t(from) > ev.size()) return -1;
    auto it = std::find(ev.begin() + from, ev.end(), e);
    return it == ev.end() ? -1 : long(it - ev.begin());
  }

  Result<std::unique_ptr<File>> open(const std::string& path, OpenOptions opts) override {
    STRATA_ASSIGN_OR_RETURN(auto f, inner_.open(path, opts));
    if (opts.create) record("create " + path_basename(path));
    return std::unique_ptr<File>(new GatedFile(this, std::move(f)));
  }
  Status rename(const std::string& from, const std::string& to) override {
    return inner_.rename(from, to);
  }
  Status remove(const std::string& path) override { return inner_.remove(path); }
  Status create_dir(const std::string& path) override { return inner_.create_dir(path); }
  Status remove_dir(const std::string& path) override { return inner_.remove_dir(path); }
  Status sync_dir(const std::string& path) override {
    record("sync_dir");
    return inner_.sync_dir(path);
  }
  Result<std::vector<std::string>> list_dir(const std::string& path) override {
    return inner_.list_dir(path);
  }
  Result<FileStat> stat(const std::string& path) override { return inner_.stat(path); }

 private:
  class GatedFile final : public File {
   public:
    GatedFile(GatedFs* fs, std::unique_ptr<File> f) : File(f->path()), fs_(fs), f_(std::move(f)) {}
    Result<size_t> read_at(uint64_t offset, char* buf, size_t n) override {
      return f_->read_at(offset, buf, n);
    }
    Status write_at(uint64_t offset, BytesView data) override { return f_->write_at(offset, data); }
    Status append(BytesView data) override { return f_->append(data); }
    Status sync() override {
      const std::string name = path_basename(path());
      fs_->before_sync(name);
      Status s = f_->sync();
      fs_->record("synced " + name);
      return s;
    }
    Status truncate(uint64_t size) override { return f_->truncate(size); }
    Result<uint64_t> size() override { return f_->size(); }

   private:
    GatedFs* fs_;
    std::unique_ptr<File> f_;
  };

  void record(std::string e) {
    std::lock_guard<std::mutex> g(mu_);
    events_.push_back(std::move(e));
  }
  void before_sync(const std::string& name) {
    std::unique_lock<std::mutex> l(mu_);
    events_.push_back("sync " + name);
    if (name != held_name_ || gate_open_) return;
    ++holding_;
    cv_.notify_all();
    cv_.wait(l, [&] { return gate_open_; });
    --holding_;
  }

  FileSystem& inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string held_name_;
  bool gate_open_ = true;
  int holding_ = 0;
  std::vector<std::string> events_;
};

}  // namespace strata::log::test
