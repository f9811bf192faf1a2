#include "reorder_fs.h"

#include <algorithm>
#include <cstring>

namespace strata::slotstore::test {

namespace {
constexpr uint64_t kSector = 512;
}

struct ReorderFs::Node {
  std::string data;     // as the program sees it
  std::string durable;  // as of the last sync
  struct Write {
    uint64_t offset;
    std::string bytes;
    bool truncate;
  };
  std::vector<Write> pending;
};

class ReorderFs::MemFile final : public File {
 public:
  MemFile(ReorderFs* fs, std::string path, std::shared_ptr<Node> n, uint64_t boot)
      : File(std::move(path)), fs_(fs), n_(std::move(n)), boot_(boot) {}

  Result<size_t> read_at(uint64_t offset, char* buf, size_t len) override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    STRATA_TRY(alive(false));
    if (offset >= n_->data.size()) return size_t(0);
    size_t k = std::min<uint64_t>(len, n_->data.size() - offset);
    std::memcpy(buf, n_->data.data() + offset, k);
    return k;
  }
  Status write_at(uint64_t offset, BytesView d) override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    bool was_down = fs_->down_;
    Status s = alive(true);
    // The write that crosses the crash budget reaches the page cache but
    // not the caller (as in FaultFileSystem): crash() may keep any part.
    if (!s.ok() && (was_down || !fs_->down_)) return s;
    if (n_->data.size() < offset + d.size()) n_->data.resize(offset + d.size(), '\0');
    n_->data.replace(offset, d.size(), d);
    n_->pending.push_back({offset, std::string(d), false});
    return s;
  }
  Status append(BytesView d) override {
    uint64_t end;
    {
      std::lock_guard<std::mutex> l(fs_->mu_);
      end = n_->data.size();
    }
    return write_at(end, d);
  }
  Status sync() override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    STRATA_TRY(alive(true));
    n_->durable = n_->data;
    n_->pending.clear();
    return Status::OK();
  }
  Status truncate(uint64_t size) override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    STRATA_TRY(alive(true));
    n_->data.resize(size, '\0');
    n_->pending.push_back({size, {}, true});
    return Status::OK();
  }
  Result<uint64_t> size() override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    STRATA_TRY(alive(false));
    return uint64_t(n_->data.size());
  }

 private:
  Status alive(bool mutating) {
    if (boot_ != fs_->boot_)
      return Error(Errc::simulated_crash, path() + ": handle from before a crash");
    return fs_->check(mutating);
  }
  ReorderFs* fs_;
  std::shared_ptr<Node> n_;
  uint64_t boot_;
};

Status ReorderFs::check(bool mutating) {
  if (down_) return Error(Errc::simulated_crash, "machine is down (simulated crash)");
  if (mutating && budget_) {
    if (*budget_ == 0) {
      down_ = true;
      return Error(Errc::simulated_crash, "simulated crash");
    }
    --*budget_;
  }
  return Status::OK();
}

Result<std::unique_ptr<File>> ReorderFs::open(const std::string& path, OpenOptions o) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_TRY(check(o.create || o.truncate));
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (!o.create) return Error(Errc::not_found, "open " + path + ": no such file");
    it = files_.emplace(path, std::make_shared<Node>()).first;
  } else if (o.create && o.exclusive) {
    return Error(Errc::already_exists, "open " + path + ": exists");
  }
  if (o.truncate) {
    it->second->data.clear();
    it->second->pending.push_back({0, {}, true});
  }
  return std::unique_ptr<File>(new MemFile(this, path, it->second, boot_));
}

Status ReorderFs::rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_TRY(check(true));
  auto it = files_.find(from);
  if (it == files_.end()) return Error(Errc::not_found, "rename " + from + ": no such file");
  auto n = it->second;
  files_.erase(it);
  files_[to] = n;
  return Status::OK();
}

Status ReorderFs::remove(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_TRY(check(true));
  if (!files_.erase(path)) return Error(Errc::not_found, "unlink " + path + ": no such file");
  return Status::OK();
}

Status ReorderFs::create_dir(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_TRY(check(true));
  if (!dirs_.insert(path).second) return Error(Errc::already_exists, "mkdir " + path);
  return Status::OK();
}

Status ReorderFs::remove_dir(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_TRY(check(true));
  dirs_.erase(path);
  return Status::OK();
}

Status ReorderFs::sync_dir(const std::string&) {
  std::lock_guard<std::mutex> l(mu_);
  return check(true);
}

Result<std::vector<std::string>> ReorderFs::list_dir(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_TRY(check(false));
  std::vector<std::string> out;
  std::string prefix = path == "/" ? "/" : path + "/";
  for (const auto& [p, n] : files_) {
    if (p.rfind(prefix, 0) == 0 && p.find('/', prefix.size()) == std::string::npos) {
      out.push_back(p.substr(prefix.size()));
    }
  }
  return out;
}

Result<FileStat> ReorderFs::stat(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_TRY(check(false));
  if (dirs_.count(path)) return FileStat{true, 0};
  auto it = files_.find(path);
  if (it == files_.end()) return Error(Errc::not_found, "stat " + path + ": no such file");
  return FileStat{false, it->second->data.size()};
}

void ReorderFs::crash(Random& rng) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [path, n] : files_) {
    std::string d = n->durable;
    for (const auto& w : n->pending) {
      if (w.truncate) {
        if (rng.chance(1, 2)) d.resize(w.offset, '\0');
        continue;
      }
      // Each sector of the write independently reaches the disk or not.
      int mode = int(rng.uniform(3));  // 0 none, 1 all, 2 some sectors
      if (mode == 0) continue;
      uint64_t pos = w.offset, end = w.offset + w.bytes.size();
      while (pos < end) {
        uint64_t next = std::min(end, (pos / kSector + 1) * kSector);
        if (mode == 1 || rng.chance(1, 2)) {
          if (d.size() < next) d.resize(next, '\0');
          d.replace(pos, next - pos, w.bytes, pos - w.offset, next - pos);
        }
        pos = next;
      }
    }
    n->data = d;
    n->durable = d;
    n->pending.clear();
  }
  ++boot_;
  down_ = false;
  budget_.reset();
}

void ReorderFs::crash_after(uint64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  budget_ = n;
}

void ReorderFs::clear_crash_after() {
  std::lock_guard<std::mutex> l(mu_);
  budget_.reset();
}

void ReorderFs::revive() {
  std::lock_guard<std::mutex> l(mu_);
  down_ = false;
  budget_.reset();
}

bool ReorderFs::is_down() const {
  std::lock_guard<std::mutex> l(mu_);
  return down_;
}

}  // namespace strata::slotstore::test
