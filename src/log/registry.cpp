#include "log/registry.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/file_lock.h"
#include "common/publish_file.h"
#include "log/inspect.h"
#include "log/log_limits.h"
#include "log/recovery.h"

namespace strata::log {

namespace {

constexpr std::string_view kCreatingPrefix = ".creating-";
constexpr std::string_view kDeletingPrefix = ".deleting-";

}  // namespace

StreamRegistry::StreamRegistry(std::string data_dir, LogOptions defaults)
    : data_dir_(std::move(data_dir)),
      defaults_(std::move(defaults)),
      fs_(defaults_.fs ? *defaults_.fs : posix_fs()) {}

StreamRegistry::~StreamRegistry() {
  Status s = close_all();
  if (!s.ok()) spdlog::warn("closing streams of {}: {}", data_dir_, s.to_string());
}

Result<std::unique_ptr<StreamRegistry>> StreamRegistry::open(const std::string& data_dir,
                                                             LogOptions defaults) {
  std::unique_ptr<StreamRegistry> r(new StreamRegistry(data_dir, std::move(defaults)));
  auto st = r->fs_.stat(data_dir);
  if (st.ok() && !st->is_dir) {
    return Error(Errc::invalid_argument,
                 fmt::format("data directory {} is not a directory", data_dir));
  }
  STRATA_TRY(create_dirs(r->fs_, data_dir));
  STRATA_TRY(r->finish_interrupted());
  return r;
}

Status StreamRegistry::validate_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxStreamNameBytes && name[0] != '.';
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-');
  }
  if (!ok) {
    return Error(Errc::invalid_argument,
                 fmt::format("bad stream name '{}' (1..{} characters of [A-Za-z0-9._-], not "
                             "starting with '.')",
                             name, kMaxStreamNameBytes));
  }
  return Status::OK();
}

Status StreamRegistry::finish_interrupted() {
  STRATA_ASSIGN_OR_RETURN(auto names, fs_.list_dir(data_dir_));
  bool changed = false;
  for (const auto& n : names) {
    bool creating = n.starts_with(kCreatingPrefix);
    if (!creating && !n.starts_with(kDeletingPrefix)) continue;
    std::string p = path_join(data_dir_, n);
    STRATA_TRY(remove_all(fs_, p));
    spdlog::warn("stream registry {}: removed {} left by an interrupted {}", data_dir_, p,
                 creating ? "create" : "delete");
    changed = true;
  }
  if (changed) STRATA_TRY(fs_.sync_dir(data_dir_));
  return Status::OK();
}

Result<std::shared_ptr<StreamLog>> StreamRegistry::create(const std::string& name) {
  return create(name, defaults_);
}

Result<std::shared_ptr<StreamLog>> StreamRegistry::create(const std::string& name,
                                                          const LogOptions& opts) {
  return create(name, opts, nullptr);
}

Result<std::shared_ptr<StreamLog>> StreamRegistry::create(const std::string& name,
                                                          const LogOptions& opts,
                                                          const PrepareDir& prepare) {
  STRATA_TRY(validate_name(name));
  std::lock_guard<std::mutex> g(mu_);
  const std::string dir = path_join(data_dir_, name);
  if (open_.count(name) || strata::exists(fs_, dir)) {
    return Error(Errc::already_exists,
                 fmt::format("stream '{}' already exists in {}", name, data_dir_));
  }
  const std::string tmp = path_join(data_dir_, std::string(kCreatingPrefix) + name);
  STRATA_TRY(remove_all(fs_, tmp));
  STRATA_TRY(fs_.create_dir(tmp));
  STRATA_TRY(create_segment_files(fs_, tmp, opts.first_offset));
  if (prepare) STRATA_TRY(prepare(fs_, tmp));
  STRATA_TRY(fs_.sync_dir(tmp));
  STRATA_TRY(rename_durable(fs_, tmp, dir));
  return open_locked(name, opts);
}

Result<std::shared_ptr<StreamLog>> StreamRegistry::open_stream(const std::string& name) {
  return open_stream(name, defaults_);
}

Result<std::shared_ptr<StreamLog>> StreamRegistry::open_stream(const std::string& name,
                                                               const LogOptions& opts) {
  STRATA_TRY(validate_name(name));
  std::lock_guard<std::mutex> g(mu_);
  return open_locked(name, opts);
}

Result<std::shared_ptr<StreamLog>> StreamRegistry::open_or_create(const std::string& name) {
  auto r = open_stream(name);
  if (r.ok() || r.code() != Errc::not_found) return r;
  return create(name);
}

Result<std::shared_ptr<StreamLog>> StreamRegistry::open_locked(const std::string& name,
                                                               const LogOptions& opts) {
  if (auto it = open_.find(name); it != open_.end()) {
    if (!it->second->closed()) return it->second;
    open_.erase(it);
  }
  const std::string dir = path_join(data_dir_, name);
  auto st = fs_.stat(dir);
  if (!st.ok() && st.code() == Errc::not_found) {
    return Error(Errc::not_found, fmt::format("no stream '{}' in {}", name, data_dir_));
  }
  LogOptions o = opts;
  o.fs = &fs_;
  o.create_if_missing = false;
  auto log = StreamLog::open(dir, o);
  if (!log.ok())
    return std::move(log).error().with_context(fmt::format("opening stream '{}'", name));
  open_[name] = *log;
  return *log;
}

Status StreamRegistry::remove(const std::string& name) {
  STRATA_TRY(validate_name(name));
  std::lock_guard<std::mutex> g(mu_);
  const std::string dir = path_join(data_dir_, name);
  if (auto it = open_.find(name); it != open_.end()) {
    Status s = it->second->close();
    if (!s.ok()) spdlog::warn("closing stream '{}' before delete: {}", name, s.to_string());
    open_.erase(it);
  }
  auto st = fs_.stat(dir);
  if (!st.ok()) {
    if (st.code() == Errc::not_found) {
      return Error(Errc::not_found, fmt::format("no stream '{}' in {}", name, data_dir_));
    }
    return st.error();
  }
  // Another process writing this stream holds its lock: refuse.
  FileLock lock;
  if (&fs_ == &posix_fs()) {
    STRATA_ASSIGN_OR_RETURN(lock, lock_stream(dir));
  }
  std::string tomb;
  for (int n = 0;; ++n) {
    tomb = path_join(data_dir_, fmt::format("{}{}.{}", kDeletingPrefix, name, n));
    if (!strata::exists(fs_, tomb)) break;
  }
  STRATA_TRY(rename_durable(fs_, dir, tomb));
  lock.release();
  // From here on the stream is gone even if we crash: open finishes the job.
  STRATA_TRY(remove_all(fs_, tomb));
  return fs_.sync_dir(data_dir_);
}

Result<std::vector<std::string>> StreamRegistry::list() {
  STRATA_ASSIGN_OR_RETURN(auto names, fs_.list_dir(data_dir_));
  std::vector<std::string> out;
  for (auto& n : names) {
    if (!validate_name(n).ok()) continue;
    auto st = fs_.stat(path_join(data_dir_, n));
    if (st.ok() && st->is_dir) out.push_back(std::move(n));
  }
  return out;
}

bool StreamRegistry::exists(const std::string& name) {
  if (!validate_name(name).ok()) return false;
  auto st = fs_.stat(path_join(data_dir_, name));
  return st.ok() && st->is_dir;
}

Status StreamRegistry::close_all() {
  std::lock_guard<std::mutex> g(mu_);
  Status first;
  for (auto& [name, log] : open_) {
    Status s = log->close();
    if (!s.ok() && first.ok()) first = s;
  }
  open_.clear();
  return first;
}

Error no_such_stream(const std::string& data_dir, std::string_view name) {
  std::string known;
  auto names = posix_fs().list_dir(data_dir);
  if (names.ok()) {
    for (const auto& n : *names) {
      if (StreamRegistry::validate_name(n).ok() &&
          is_stream_dir(posix_fs(), path_join(data_dir, n))) {
        known += (known.empty() ? "" : ", ") + n;
      }
    }
  }
  return Error(Errc::not_found, fmt::format("no stream '{}' in {} (streams: {})", name, data_dir,
                                            known.empty() ? "none" : known));
}

Result<std::shared_ptr<StreamLog>> open_stream_read_only(const std::string& data_dir,
                                                         std::string_view name) {
  STRATA_TRY(StreamRegistry::validate_name(name));
  const std::string dir = path_join(data_dir, std::string(name));
  if (!is_stream_dir(posix_fs(), dir)) return no_such_stream(data_dir, name);
  LogOptions o;
  o.read_only = true;
  return StreamLog::open(dir, o);
}

}  // namespace strata::log
