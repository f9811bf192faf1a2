#include "common/fault_fs.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "common/random.h"

namespace strata {

// Not in the anonymous namespace: FaultFileSystem::Node (declared in the
// header) holds these.
struct FaultFsPendingWrite {
  bool truncate = false;
  uint64_t offset = 0;  // write offset, or the new size for a truncate
  std::string bytes;
};

namespace {

void apply(std::string& data, const FaultFsPendingWrite& w, size_t keep_bytes) {
  if (w.truncate) {
    data.resize(w.offset);
    return;
  }
  size_t n = std::min(keep_bytes, w.bytes.size());
  if (data.size() < w.offset + n) data.resize(w.offset + n, '\0');
  data.replace(w.offset, n, w.bytes, 0, n);
}

// Splits "/a/b/c" into {"a","b","c"}; paths must be absolute.
Result<std::vector<std::string>> split(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return Error(Errc::invalid_argument,
                 "FaultFileSystem needs absolute paths, got '" + path + "'");
  }
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) {
      std::string p = path.substr(i, j - i);
      if (p != ".") parts.push_back(std::move(p));
    }
    i = j;
  }
  return parts;
}

}  // namespace

struct FaultFileSystem::Node {
  bool is_dir = false;
  // Files.
  std::string data;
  std::string durable;
  std::vector<FaultFsPendingWrite> pending;
  // Directories.
  std::map<std::string, std::shared_ptr<Node>> children;
  std::map<std::string, std::shared_ptr<Node>> durable_children;
};

class FaultFileSystem::MemFile final : public File {
 public:
  MemFile(FaultFileSystem* fs, std::string path, std::shared_ptr<Node> node, uint64_t boot,
          bool writable)
      : File(std::move(path)), fs_(fs), node_(std::move(node)), boot_(boot), writable_(writable) {}

  Result<size_t> read_at(uint64_t offset, char* buf, size_t n) override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    STRATA_TRY(alive(FaultOp::Kind::read, false));
    const std::string& d = node_->data;
    if (offset >= d.size()) return size_t(0);
    size_t k = std::min<uint64_t>(n, d.size() - offset);
    std::memcpy(buf, d.data() + offset, k);
    return k;
  }

  Status write_at(uint64_t offset, BytesView data) override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    return write_locked(offset, data);
  }

  Status append(BytesView data) override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    return write_locked(node_->data.size(), data);
  }

  Status sync() override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    STRATA_TRY(alive(FaultOp::Kind::sync, true));
    node_->durable = node_->data;
    node_->pending.clear();
    return Status::OK();
  }

  Status truncate(uint64_t size) override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    if (!writable_) return Error(Errc::invalid_argument, path() + ": truncate on read-only file");
    STRATA_TRY(alive(FaultOp::Kind::truncate, true));
    FaultFsPendingWrite w{true, size, {}};
    apply(node_->data, w, 0);
    node_->pending.push_back(std::move(w));
    return Status::OK();
  }

  Result<uint64_t> size() override {
    std::lock_guard<std::mutex> l(fs_->mu_);
    STRATA_TRY(alive(FaultOp::Kind::read, false));
    return uint64_t(node_->data.size());
  }

 private:
  Status alive(FaultOp::Kind kind, bool mutating) {
    if (boot_ != fs_->boot_) {
      return Error(Errc::simulated_crash, path() + ": file handle from before a simulated crash");
    }
    return fs_->check(kind, path(), mutating);
  }

  Status write_locked(uint64_t offset, BytesView data) {
    if (!writable_) return Error(Errc::invalid_argument, path() + ": write on read-only file");
    if (boot_ != fs_->boot_) {
      return Error(Errc::simulated_crash, path() + ": file handle from before a simulated crash");
    }
    bool was_down = fs_->down_;
    Status s = fs_->check(FaultOp::Kind::write, path(), true);
    if (!s.ok()) {
      // The write that crosses the crash budget reaches the page cache but
      // not the caller: leave it pending so crash() may keep or tear it.
      if (!was_down && fs_->down_) {
        FaultFsPendingWrite w{false, offset, std::string(data)};
        apply(node_->data, w, w.bytes.size());
        node_->pending.push_back(std::move(w));
      }
      return s;
    }
    FaultFsPendingWrite w{false, offset, std::string(data)};
    apply(node_->data, w, w.bytes.size());
    node_->pending.push_back(std::move(w));
    return Status::OK();
  }

  FaultFileSystem* fs_;
  std::shared_ptr<Node> node_;
  uint64_t boot_;
  bool writable_;
};

FaultFileSystem::FaultFileSystem() : root_(std::make_shared<Node>()) {
  root_->is_dir = true;
}
FaultFileSystem::~FaultFileSystem() = default;

Status FaultFileSystem::check(FaultOp::Kind kind, const std::string& path, bool mutating) {
  if (down_) return Error(Errc::simulated_crash, path + ": machine is down (simulated crash)");
  if (fail_pred_ && fail_pred_(FaultOp{kind, path})) {
    return Error(fail_code_, fmt::format("{}: injected failure", path));
  }
  if (mutating) {
    if (crash_budget_) {
      if (*crash_budget_ == 0) {
        down_ = true;
        return Error(Errc::simulated_crash, path + ": simulated crash");
      }
      --*crash_budget_;
    }
    ++mutations_;
  }
  return Status::OK();
}

Result<std::shared_ptr<FaultFileSystem::Node>> FaultFileSystem::lookup(
    const std::string& path) const {
  STRATA_ASSIGN_OR_RETURN(auto parts, split(path));
  std::shared_ptr<Node> n = root_;
  for (const auto& p : parts) {
    if (!n->is_dir) return Error(Errc::not_found, path + ": not a directory on the way");
    auto it = n->children.find(p);
    if (it == n->children.end())
      return Error(Errc::not_found, path + ": no such file or directory");
    n = it->second;
  }
  return n;
}

Result<std::shared_ptr<FaultFileSystem::Node>> FaultFileSystem::parent_dir(
    const std::string& path, std::string* name) const {
  STRATA_ASSIGN_OR_RETURN(auto parts, split(path));
  if (parts.empty()) return Error(Errc::invalid_argument, "operation on the root directory");
  *name = parts.back();
  std::shared_ptr<Node> n = root_;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    auto it = n->children.find(parts[i]);
    if (it == n->children.end() || !it->second->is_dir) {
      return Error(Errc::not_found, path + ": parent directory does not exist");
    }
    n = it->second;
  }
  return n;
}

Result<std::unique_ptr<File>> FaultFileSystem::open(const std::string& path, OpenOptions o) {
  std::lock_guard<std::mutex> l(mu_);
  std::string name;
  STRATA_ASSIGN_OR_RETURN(auto dir, parent_dir(path, &name));
  auto it = dir->children.find(name);
  std::shared_ptr<Node> node;
  if (it == dir->children.end()) {
    if (!o.create) {
      STRATA_TRY(check(FaultOp::Kind::read, path, false));
      return Error(Errc::not_found, "open " + path + ": no such file");
    }
    STRATA_TRY(check(FaultOp::Kind::create, path, true));
    node = std::make_shared<Node>();
    dir->children[name] = node;
  } else {
    node = it->second;
    if (node->is_dir) return Error(Errc::invalid_argument, "open " + path + ": is a directory");
    if (o.create && o.exclusive) return Error(Errc::already_exists, "open " + path + ": exists");
    STRATA_TRY(check(o.truncate ? FaultOp::Kind::truncate : FaultOp::Kind::read, path, o.truncate));
    if (o.truncate) {
      FaultFsPendingWrite w{true, 0, {}};
      apply(node->data, w, 0);
      node->pending.push_back(std::move(w));
    }
  }
  return std::unique_ptr<File>(new MemFile(this, path, node, boot_, o.write));
}

Status FaultFileSystem::rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> l(mu_);
  std::string fname, tname;
  STRATA_ASSIGN_OR_RETURN(auto fdir, parent_dir(from, &fname));
  STRATA_ASSIGN_OR_RETURN(auto tdir, parent_dir(to, &tname));
  auto it = fdir->children.find(fname);
  if (it == fdir->children.end())
    return Error(Errc::not_found, "rename " + from + ": no such file");
  auto dst = tdir->children.find(tname);
  if (dst != tdir->children.end() && dst->second->is_dir != it->second->is_dir) {
    return Error(Errc::invalid_argument, "rename " + from + " -> " + to + ": kind mismatch");
  }
  if (dst != tdir->children.end() && dst->second->is_dir && !dst->second->children.empty()) {
    return Error(Errc::invalid_argument, "rename " + from + " -> " + to + ": target not empty");
  }
  STRATA_TRY(check(FaultOp::Kind::rename, from, true));
  auto node = it->second;
  fdir->children.erase(it);
  tdir->children[tname] = node;
  return Status::OK();
}

Status FaultFileSystem::remove(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  std::string name;
  STRATA_ASSIGN_OR_RETURN(auto dir, parent_dir(path, &name));
  auto it = dir->children.find(name);
  if (it == dir->children.end()) return Error(Errc::not_found, "unlink " + path + ": no such file");
  if (it->second->is_dir)
    return Error(Errc::invalid_argument, "unlink " + path + ": is a directory");
  STRATA_TRY(check(FaultOp::Kind::remove, path, true));
  dir->children.erase(it);
  return Status::OK();
}

Status FaultFileSystem::create_dir(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  std::string name;
  STRATA_ASSIGN_OR_RETURN(auto dir, parent_dir(path, &name));
  if (dir->children.count(name)) return Error(Errc::already_exists, "mkdir " + path + ": exists");
  STRATA_TRY(check(FaultOp::Kind::mkdir, path, true));
  auto node = std::make_shared<Node>();
  node->is_dir = true;
  dir->children[name] = node;
  return Status::OK();
}

Status FaultFileSystem::remove_dir(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  std::string name;
  STRATA_ASSIGN_OR_RETURN(auto dir, parent_dir(path, &name));
  auto it = dir->children.find(name);
  if (it == dir->children.end())
    return Error(Errc::not_found, "rmdir " + path + ": no such directory");
  if (!it->second->is_dir)
    return Error(Errc::invalid_argument, "rmdir " + path + ": not a directory");
  if (!it->second->children.empty()) {
    return Error(Errc::invalid_argument, "rmdir " + path + ": directory not empty");
  }
  STRATA_TRY(check(FaultOp::Kind::rmdir, path, true));
  dir->children.erase(it);
  return Status::OK();
}

Status FaultFileSystem::sync_dir(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_ASSIGN_OR_RETURN(auto n, lookup(path));
  if (!n->is_dir)
    return Error(Errc::invalid_argument, "fsync directory " + path + ": not a directory");
  STRATA_TRY(check(FaultOp::Kind::sync_dir, path, true));
  n->durable_children = n->children;
  return Status::OK();
}

Result<std::vector<std::string>> FaultFileSystem::list_dir(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_TRY(check(FaultOp::Kind::read, path, false));
  STRATA_ASSIGN_OR_RETURN(auto n, lookup(path));
  if (!n->is_dir) return Error(Errc::invalid_argument, "opendir " + path + ": not a directory");
  std::vector<std::string> names;
  for (const auto& [k, v] : n->children) names.push_back(k);
  return names;
}

Result<FileStat> FaultFileSystem::stat(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_TRY(check(FaultOp::Kind::read, path, false));
  STRATA_ASSIGN_OR_RETURN(auto n, lookup(path));
  return FileStat{n->is_dir, n->is_dir ? 0 : uint64_t(n->data.size())};
}

void FaultFileSystem::crash(const CrashOptions& opts) {
  std::lock_guard<std::mutex> l(mu_);
  Random rng(opts.seed);
  std::set<Node*> seen;
  // Walk the namespace as it will be after the restart.
  std::vector<std::shared_ptr<Node>> stack{root_};
  while (!stack.empty()) {
    auto n = stack.back();
    stack.pop_back();
    if (!seen.insert(n.get()).second) continue;
    if (n->is_dir) {
      if (opts.random_dir_entries && rng.chance(1, 2)) n->durable_children = n->children;
      n->children = n->durable_children;
      for (auto& [k, c] : n->children) stack.push_back(c);
      continue;
    }
    std::string data = n->durable;
    size_t keep = 0;
    if (opts.keep_random_prefix) keep = rng.uniform(n->pending.size() + 1);
    for (size_t i = 0; i < keep; ++i) apply(data, n->pending[i], n->pending[i].bytes.size());
    if (opts.tear && keep < n->pending.size()) {
      const auto& w = n->pending[keep];
      if (!w.truncate && !w.bytes.empty()) apply(data, w, rng.uniform(w.bytes.size()));
    }
    n->data = data;
    n->durable = data;
    n->pending.clear();
  }
  ++boot_;
  down_ = false;
  crash_budget_.reset();
}

void FaultFileSystem::crash_after(uint64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  crash_budget_ = n;
}

void FaultFileSystem::clear_crash_after() {
  std::lock_guard<std::mutex> l(mu_);
  crash_budget_.reset();
}

void FaultFileSystem::fail_when(std::function<bool(const FaultOp&)> pred, Errc code) {
  std::lock_guard<std::mutex> l(mu_);
  fail_pred_ = std::move(pred);
  fail_code_ = code;
}

uint64_t FaultFileSystem::mutation_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return mutations_;
}

bool FaultFileSystem::is_down() const {
  std::lock_guard<std::mutex> l(mu_);
  return down_;
}

Result<Bytes> FaultFileSystem::durable_contents(const std::string& path) const {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_ASSIGN_OR_RETURN(auto n, lookup(path));
  if (n->is_dir) return Error(Errc::invalid_argument, path + ": is a directory");
  return n->durable;
}

}  // namespace strata
