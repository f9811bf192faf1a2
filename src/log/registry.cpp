#include "log/registry.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/file_lock.h"
#include "common/name_component.h"
#include "common/publish_file.h"
#include "common/stream_name.h"
#include "log/inspect.h"
#include "log/recovery.h"

namespace strata::log {

namespace {

constexpr std::string_view kCreatingPrefix = ".creating-";
constexpr std::string_view kDeletingPrefix = ".deleting-";

// The stream's name, beside its hashed component: published with the
// directory, so a directory named by a hashed component always has it.
Status write_name_file(FileSystem& fs, const std::string& dir, std::string_view name) {
  return write_file_atomic(fs, path_join(dir, std::string(kStreamNameFile)), name);
}

}  // namespace

std::string stream_dir(const std::string& data_dir, std::string_view name) {
  return path_join(data_dir, name_component(name));
}

std::optional<std::string> stream_of_entry(FileSystem& fs, const std::string& data_dir,
                                           const std::string& entry) {
  if (auto name = name_of_component(entry)) {
    if (validate_stream_name(*name).ok()) return name;
    return std::nullopt;
  }
  if (!is_hashed_component(entry)) return std::nullopt;
  const std::string file = path_join(path_join(data_dir, entry), std::string(kStreamNameFile));
  auto held = read_file(fs, file);
  if (!held.ok()) {
    spdlog::warn("stream registry {}: ignoring {}: its name cannot be read from {}: {}", data_dir,
                 entry, file, held.error().to_string());
    return std::nullopt;
  }
  std::string name(*held);
  if (!validate_stream_name(name).ok() || name_component(name) != entry) {
    spdlog::warn(
        "stream registry {}: ignoring {}: {} holds \"{}\", whose directory is not this one",
        data_dir, entry, file, printable_name(name));
    return std::nullopt;
  }
  return name;
}

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
  STRATA_TRY(validate_stream_name(name));
  std::lock_guard<std::mutex> g(mu_);
  const std::string component = name_component(name);
  const std::string dir = path_join(data_dir_, component);
  if (open_.count(name) || strata::exists(fs_, dir)) {
    return Error(Errc::already_exists,
                 fmt::format("stream '{}' already exists in {}", printable_name(name), data_dir_));
  }
  const std::string tmp = path_join(data_dir_, std::string(kCreatingPrefix) + component);
  STRATA_TRY(remove_all(fs_, tmp));
  STRATA_TRY(fs_.create_dir(tmp));
  STRATA_TRY(create_segment_files(fs_, tmp, opts.first_offset));
  if (is_hashed_component(component)) STRATA_TRY(write_name_file(fs_, tmp, name));
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
  STRATA_TRY(validate_stream_name(name));
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
  const std::string dir = dir_of(name);
  auto st = fs_.stat(dir);
  if (!st.ok() && st.code() == Errc::not_found) {
    return Error(Errc::not_found,
                 fmt::format("no stream '{}' in {}", printable_name(name), data_dir_));
  }
  LogOptions o = opts;
  o.fs = &fs_;
  o.create_if_missing = false;
  auto log = StreamLog::open(dir, o);
  if (!log.ok()) {
    return std::move(log).error().with_context(
        fmt::format("opening stream '{}'", printable_name(name)));
  }
  open_[name] = *log;
  return *log;
}

Status StreamRegistry::remove(const std::string& name) {
  STRATA_TRY(validate_stream_name(name));
  std::lock_guard<std::mutex> g(mu_);
  const std::string component = name_component(name);
  const std::string dir = path_join(data_dir_, component);
  if (auto it = open_.find(name); it != open_.end()) {
    Status s = it->second->close();
    if (!s.ok()) {
      spdlog::warn("closing stream '{}' before delete: {}", printable_name(name), s.to_string());
    }
    open_.erase(it);
  }
  auto st = fs_.stat(dir);
  if (!st.ok()) {
    if (st.code() == Errc::not_found) {
      return Error(Errc::not_found,
                   fmt::format("no stream '{}' in {}", printable_name(name), data_dir_));
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
    tomb = path_join(data_dir_, fmt::format("{}{}.{}", kDeletingPrefix, component, n));
    if (!strata::exists(fs_, tomb)) break;
  }
  STRATA_TRY(rename_durable(fs_, dir, tomb));
  lock.release();
  // From here on the stream is gone even if we crash: open finishes the job.
  STRATA_TRY(remove_all(fs_, tomb));
  return fs_.sync_dir(data_dir_);
}

Result<std::vector<std::string>> StreamRegistry::list() {
  STRATA_ASSIGN_OR_RETURN(auto entries, fs_.list_dir(data_dir_));
  std::vector<std::string> out;
  for (const auto& n : entries) {
    if (n.starts_with('.')) continue;  // the registry's own
    auto st = fs_.stat(path_join(data_dir_, n));
    if (!st.ok() || !st->is_dir) continue;
    if (auto name = stream_of_entry(fs_, data_dir_, n)) {
      out.push_back(std::move(*name));
    } else if (!is_hashed_component(n)) {  // a hashed one was named in a warning already
      spdlog::warn("stream registry {}: ignoring directory {}: not a stream's", data_dir_, n);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool StreamRegistry::exists(const std::string& name) {
  if (!validate_stream_name(name).ok()) return false;
  auto st = fs_.stat(dir_of(name));
  return st.ok() && st->is_dir;
}

std::string StreamRegistry::dir_of(std::string_view name) const {
  return stream_dir(data_dir_, name);
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
  std::vector<std::string> known;
  auto entries = posix_fs().list_dir(data_dir);
  if (entries.ok()) {
    for (const auto& n : *entries) {
      if (!is_stream_dir(posix_fs(), path_join(data_dir, n))) continue;
      if (auto s = stream_of_entry(posix_fs(), data_dir, n)) known.push_back(printable_name(*s));
    }
  }
  std::sort(known.begin(), known.end());
  return Error(Errc::not_found,
               fmt::format("no stream '{}' in {} (streams: {})", printable_name(name), data_dir,
                           known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
}

Result<std::shared_ptr<StreamLog>> open_stream_read_only(const std::string& data_dir,
                                                         std::string_view name) {
  STRATA_TRY(validate_stream_name(name));
  const std::string dir = stream_dir(data_dir, name);
  if (!is_stream_dir(posix_fs(), dir)) return no_such_stream(data_dir, name);
  LogOptions o;
  o.read_only = true;
  return StreamLog::open(dir, o);
}

}  // namespace strata::log
