// Node: a replica's copy of a stream another node owns (Node::open_copy) —
// the owner's chunks kept on this node's disk, in the directory an
// owner's log would use, so that this node keeps them if it takes the
// stream over (stream_open.cpp, align_with_remote).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/stream_name.h"
#include "node/node_impl.h"
#include "node/remote_stream.h"
#include "node/stream_settings_file.h"

namespace strata::node {

namespace {

Error served_not_copied(const std::string& name) {
  return Error(Errc::conflict, fmt::format("stream {} is served here, not copied", name));
}

}  // namespace

Result<std::shared_ptr<log::StreamLog>> Node::open_copy(const std::string& name,
                                                        uint64_t first_offset,
                                                        std::shared_ptr<log::LogHooks> hooks) {
  auto& im = *impl_;
  {
    std::lock_guard l(im.mu);
    if (im.closed) return Error(Errc::closed, "the node is closed");
    if (!im.copy_allowed(name)) return served_not_copied(name);
    if (auto it = im.copies.find(name); it != im.copies.end() && !it->second->closed()) {
      return it->second;
    }
  }
  STRATA_TRY(validate_stream_name(name));
  STRATA_ASSIGN_OR_RETURN(auto kept, catalog_kept_settings(*im.catalog, name));
  const StreamSettings settings = kept.value_or(StreamSettings{});
  const EffectiveSettings eff = node::effective_settings(im.cfg, settings);
  log::LogOptions lo = im.cfg.log_options();
  lo.max_segment_bytes = eff.segment_bytes;
  lo.filter_size_bytes = eff.filter_size_bytes;
  // Trimmed by its copier to what the remote tier holds, never by age or
  // size: its tail is what a takeover here would keep.
  lo.retention = {};
  lo.retention_on_roll = false;
  if (hooks) {
    // Every segment the hooks let go: they keep what is not uploaded.
    lo.retention.max_bytes = 0;
    lo.hooks = std::move(hooks);
  }
  auto log = im.registry->open_stream(name, lo);
  if (!log.ok() && log.code() == Errc::not_found) {
    lo.first_offset = first_offset;
    log = im.registry->create(name, lo, [&](FileSystem& fs, const std::string& dir) {
      return write_settings_file(fs, dir, settings);
    });
  }
  if (!log.ok()) return std::move(log).error().with_context("opening a copy of " + name);
  std::lock_guard l(im.mu);
  // Closed, or acquired meanwhile: the owner's open closed nothing of ours yet, and
  // the copy must not stay open beside it.
  if (im.closed || !im.copy_allowed(name)) {
    (void)(*log)->close();
    return im.closed ? Error(Errc::closed, "the node is closed") : served_not_copied(name);
  }
  im.copies[name] = *log;
  return *log;
}

void Node::close_copy(const std::string& name) {
  impl_->close_copy(name);
}

Status Node::drop_copy(const std::string& name) {
  auto& im = *impl_;
  {
    std::lock_guard l(im.mu);
    if (!im.copy_allowed(name)) return served_not_copied(name);
    im.dropping.insert(name);
  }
  im.close_copy(name);
  Status s = im.registry->remove(name);
  {
    std::lock_guard l(im.mu);
    im.dropping.erase(name);
  }
  im.copies_cv.notify_all();
  if (!s.ok() && s.code() != Errc::not_found) return s;
  return Status::OK();
}

Result<LocalTail> Node::local_tail(const std::string& name) {
  auto& im = *impl_;
  std::shared_ptr<log::StreamLog> log;
  {
    std::lock_guard l(im.mu);
    if (im.closed) return Error(Errc::closed, "the node is closed");
    if (!im.copy_allowed(name)) return served_not_copied(name);
    if (auto it = im.copies.find(name); it != im.copies.end() && !it->second->closed()) {
      log = it->second;
    }
  }
  STRATA_TRY(validate_stream_name(name));
  if (!log) {
    // Without the writer's lock or a repair: a copier may open it meanwhile.
    auto read = log::open_stream_read_only(im.registry->data_dir(), name);
    if (!read.ok() && read.code() == Errc::not_found) return LocalTail{};
    if (!read.ok()) return std::move(read).error().with_context("reading the tail of " + name);
    log = *read;
  }
  LocalTail t{log->last_chunk_epoch(), log->committed_next()};
  uint64_t remote_next = 0;
  if (im.cfg.tiering.enabled) {
    STRATA_ASSIGN_OR_RETURN(auto remote, remote_stream(name));
    auto m = remote->load_manifest();
    if (!m.ok() && m.code() != Errc::not_found) {
      return std::move(m).error().with_context("reading where the remote tier of " + name +
                                               " ends");
    }
    if (m.ok()) remote_next = m->manifest->next_offset;
  }
  if (t.next <= remote_next) return LocalTail{};
  return t;
}

bool Node::Impl::copy_allowed(const std::string& name) const {
  return !table.find(name) && !acquiring.count(name);
}

void Node::Impl::close_copy(const std::string& name) {
  std::shared_ptr<log::StreamLog> log;
  {
    std::lock_guard l(mu);
    auto it = copies.find(name);
    if (it == copies.end()) return;
    log = std::move(it->second);
    copies.erase(it);
  }
  if (Status s = log->close(); !s.ok()) {
    spdlog::warn("node: stream {}: closing its copy: {}", printable_stream(name), s.to_string());
  }
}

}  // namespace strata::node
