#include "server/super_streams.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/stream_name.h"
#include "server/super_stream_store.h"

namespace strata::server {

Result<std::unique_ptr<SuperStreams>> SuperStreams::open(std::string dir, FileSystem* fs) {
  return open(file_super_stream_store(std::move(dir), fs ? *fs : posix_fs()));
}

Result<std::unique_ptr<SuperStreams>> SuperStreams::open(std::unique_ptr<SuperStreamStore> store) {
  STRATA_ASSIGN_OR_RETURN(auto all, store->load());
  std::unique_ptr<SuperStreams> s(new SuperStreams(std::move(store)));
  for (auto& ss : all) s->supers_.emplace(ss.name, std::move(ss));
  return s;
}

void SuperStreams::learned(std::string_view name, std::optional<SuperStream> s) {
  std::lock_guard l(mu_);
  auto it = supers_.find(name);
  if (!s) {
    if (it != supers_.end()) supers_.erase(it);
  } else if (it == supers_.end()) {
    supers_.emplace(s->name, std::move(*s));
  } else {
    it->second = std::move(*s);
  }
}

void SuperStreams::learned_all(std::vector<SuperStream> all) {
  std::map<std::string, SuperStream, std::less<>> m;
  for (auto& s : all) {
    std::string name = s.name;
    m.emplace(std::move(name), std::move(s));
  }
  std::lock_guard l(mu_);
  supers_ = std::move(m);
}

Status SuperStreams::create(const SuperStream& s, const StreamFn& create_partition,
                            const StreamFn& delete_partition) {
  STRATA_TRY(validate_super_stream(s));
  {
    std::lock_guard l(mu_);
    if (supers_.count(s.name) || busy_.count(s.name)) {
      return Error(Errc::already_exists,
                   fmt::format("super stream {} exists", printable_name(s.name)));
    }
    busy_.insert(s.name);
  }
  std::vector<std::string> created;
  auto undo = [&](Error e) -> Status {
    for (const std::string& p : created) {
      if (Status d = delete_partition(p); !d.ok()) {
        spdlog::warn("super stream {}: could not delete partition {} after a failed create: {}",
                     printable_name(s.name), printable_name(p), d.error().message);
      }
    }
    std::lock_guard l(mu_);
    busy_.erase(s.name);
    return e;
  };
  for (const std::string& p : s.partitions) {
    if (Status st = create_partition(p); !st.ok()) {
      return undo(Error(
          st.code(), fmt::format("super stream {}: creating partition {}: {}",
                                 printable_name(s.name), printable_name(p), st.error().message)));
    }
    created.push_back(p);
  }
  Status st = store_->add(s);
  if (!st.ok()) return undo(st.error());
  std::lock_guard l(mu_);
  busy_.erase(s.name);
  supers_.emplace(s.name, s);
  return Status::OK();
}

Status SuperStreams::remove(std::string_view name, const StreamFn& delete_partition) {
  SuperStream s;
  {
    std::lock_guard l(mu_);
    auto it = supers_.find(name);
    if (it == supers_.end() || busy_.count(name)) {
      return Error(Errc::not_found,
                   fmt::format("super stream {} does not exist", printable_name(name)));
    }
    s = it->second;
    busy_.insert(s.name);
  }
  Status st = store_->remove(s.name);
  {
    std::lock_guard l(mu_);
    busy_.erase(s.name);
    // The removal failed: the super stream is still there. Gone already
    // (another node removed it meanwhile): the partitions go all the same.
    if (!st.ok() && st.code() != Errc::not_found) return st;
    supers_.erase(s.name);
  }
  if (st.code() == Errc::not_found) st = Status::OK();
  Status first = st;
  for (const std::string& p : s.partitions) {
    Status d = delete_partition(p);
    if (!d.ok() && d.code() != Errc::not_found && first.ok()) {
      first = Error(d.code(),
                    fmt::format("super stream {} deleted, but its partition {}: {}",
                                printable_name(s.name), printable_name(p), d.error().message));
    }
  }
  return first;
}

Result<std::vector<std::string>> SuperStreams::route(std::string_view super_stream,
                                                     std::string_view routing_key) const {
  std::lock_guard l(mu_);
  auto it = supers_.find(super_stream);
  if (it == supers_.end()) {
    return Error(Errc::not_found,
                 fmt::format("super stream {} does not exist", printable_name(super_stream)));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < it->second.partitions.size(); ++i) {
    if (it->second.binding_keys[i] == routing_key) out.push_back(it->second.partitions[i]);
  }
  return out;
}

Result<std::vector<std::string>> SuperStreams::partitions(std::string_view super_stream) const {
  std::lock_guard l(mu_);
  auto it = supers_.find(super_stream);
  if (it == supers_.end()) {
    return Error(Errc::not_found,
                 fmt::format("super stream {} does not exist", printable_name(super_stream)));
  }
  return it->second.partitions;
}

std::optional<std::string> SuperStreams::super_stream_of(std::string_view stream) const {
  std::lock_guard l(mu_);
  for (const auto& [name, s] : supers_) {
    for (const std::string& p : s.partitions) {
      if (p == stream) return name;
    }
  }
  return std::nullopt;
}

std::vector<std::string> SuperStreams::names() const {
  std::lock_guard l(mu_);
  std::vector<std::string> out;
  for (const auto& [name, s] : supers_) out.push_back(name);
  return out;
}

std::vector<SuperStream> SuperStreams::all() const {
  std::lock_guard l(mu_);
  std::vector<SuperStream> out;
  for (const auto& [name, s] : supers_) out.push_back(s);
  return out;
}

}  // namespace strata::server
