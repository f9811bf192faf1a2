// Node: what cluster ownership (cluster/ownership.h) asks of a node —
// acquiring a stream (fence, settings from the catalog, open with exact
// alignment), creating one in the catalog only, releasing one, and handing
// one over without losing anything committed.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <future>

#include "node/node_impl.h"
#include "node/node_limits.h"

namespace strata::node {

namespace {

using json = nlohmann::json;

// Fence first: once the epoch is raised no older owner's persist can land,
// so the remote next offset the open reads is final. Guarded by the owner
// key: a node that no longer owns the stream cannot raise it. Returns the
// epoch it raised (0: no catalog entry yet) — the last owner's, which a
// take-back compares with its own (stream_open.cpp, align_with_remote) —
// and the one it raised it to, this tenure's.
struct Fenced {
  uint64_t before = 0;
  uint64_t now = 0;
};

Result<Fenced> fence_older_writers(catalog::Catalog& catalog, const std::string& name,
                                   const AcquireOptions& opts) {
  for (int attempt = 0;; ++attempt) {
    auto e = catalog.get(name);
    if (!e.ok() && e.code() == Errc::not_found) return Fenced{};
    if (!e.ok()) return std::move(e).error().with_context("taking over " + name);
    auto b = opts.owner ? catalog.bump_epoch_if_owner(name, e->revision, 0, *opts.owner)
                        : catalog.bump_epoch(name, e->revision, 0);
    if (!b.ok()) return std::move(b).error().with_context("taking over " + name);
    if (b->outcome == catalog::PutOutcome::ok) return Fenced{e->epoch, b->epoch};
    if (b->outcome == catalog::PutOutcome::not_found) return Fenced{};
    if (b->outcome == catalog::PutOutcome::fenced) {
      return Error(Errc::conflict,
                   fmt::format("taking over {}: its owner key {} no longer names this node on "
                               "lease {}; not raising the epoch (now {})",
                               name, opts.owner->key, opts.owner->lease, b->epoch));
    }
    if (attempt + 1 >= kTakeoverAttempts) {
      return Error(Errc::conflict,
                   fmt::format("taking over {}: its catalog entry kept changing", name));
    }
  }
}

}  // namespace

// The settings the stream was created with, wherever it runs: those kept
// in the catalog; nullopt when the catalog keeps none for it.
Result<std::optional<StreamSettings>> catalog_kept_settings(catalog::Catalog& catalog,
                                                            const std::string& name) {
  auto kept = catalog.settings(name);
  if (!kept.ok() && kept.code() == Errc::unsupported) return std::optional<StreamSettings>();
  if (!kept.ok()) return std::move(kept).error().with_context("reading the settings of " + name);
  if (!kept->has_value()) return std::optional<StreamSettings>();
  auto j = json::parse(**kept, nullptr, false);
  auto parsed = j.is_discarded() ? Result<StreamSettings>(Error(Errc::corrupt, "not JSON"))
                                 : settings_from_json(j);
  if (!parsed.ok()) {
    return Error(Errc::corrupt,
                 fmt::format("stream {}: the settings kept in catalog {} are unreadable: {}", name,
                             catalog.describe(), parsed.error().message));
  }
  return std::optional<StreamSettings>(*parsed);
}

Result<std::shared_ptr<log::StreamLog>> Node::Impl::acquire(const std::string& name,
                                                            const AcquireOptions& opts) {
  {
    std::unique_lock l(mu);
    if (const StreamEntry* e = table.find(name)) return e->log;
    copies_cv.wait(l, [&] { return !dropping.count(name); });
    acquiring.insert(name);
  }
  struct Acquiring {
    Impl& im;
    const std::string& name;
    ~Acquiring() {
      std::lock_guard l(im.mu);
      im.acquiring.erase(im.acquiring.find(name));
    }
  } acquiring_guard{*this, name};
  // The owner's log opens the directory a replica's copy is in.
  close_copy(name);
  STRATA_ASSIGN_OR_RETURN(Fenced f, fence_older_writers(*catalog, name, opts));
  STRATA_ASSIGN_OR_RETURN(auto kept, catalog_kept_settings(*catalog, name));
  return open_stream(name, TakeOver{std::move(kept), opts, f.before, f.now});
}

Status Node::create_catalog_stream(const std::string& name, const StreamSettings& settings) {
  STRATA_TRY(validate_settings(impl_->cfg, settings));
  // Stored even when empty, so that every owner takes them from the
  // catalog, never from a settings file left on its disk.
  auto e = impl_->catalog->create_with_settings(name, 1, settings_to_json(settings).dump());
  if (!e.ok()) return std::move(e).error();
  return Status::OK();
}

Result<StreamSettings> Node::catalog_stream_settings(const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(auto text, impl_->catalog->settings(name));
  if (!text) return Error(Errc::not_found, fmt::format("stream {} has no settings", name));
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) {
    return Error(Errc::corrupt, fmt::format("stream {}: settings in the catalog: not JSON", name));
  }
  return settings_from_json(j);
}

void Node::release_stream(const std::string& name) {
  std::optional<StreamEntry> e;
  {
    std::lock_guard l(impl_->mu);
    e = impl_->table.release(name);
  }
  if (!e) return;
  e->close(name);
  impl_->remember_release(name, *e);
}

// After the close: the uploader has stopped, so what it persisted and the
// log's end no longer move.
void Node::Impl::remember_release(const std::string& name, const StreamEntry& e) {
  if (!e.uploader || !e.log) return;
  const tier::UploaderStatus st = e.uploader->status();
  if (st.epoch == 0) return;
  std::lock_guard l(released_mu);
  released[name] = ReleasedAt{st.epoch, st.remote_next_offset, e.log->committed_next()};
}

std::optional<Node::Impl::ReleasedAt> Node::Impl::released_at(const std::string& name) {
  std::lock_guard l(released_mu);
  auto it = released.find(name);
  if (it == released.end()) return std::nullopt;
  return it->second;
}

Status Node::Impl::hand_off(const std::string& name, std::chrono::milliseconds timeout,
                            const std::function<void()>& hidden) {
  StreamEntry e;
  {
    std::lock_guard l(mu);
    const StreamEntry* found = table.find(name);
    if (!found) {
      return Error(Errc::not_found, fmt::format("stream {} is not open on this node", name));
    }
    if (!found->uploader) {
      return Error(Errc::unsupported,
                   fmt::format("stream {} is not tiered: nothing would carry its data to another "
                               "node, so it is not handed over",
                               name));
    }
    if (closed) return Error(Errc::closed, "node closed");
    e = table.begin_handoff(name);
  }
  if (hidden) hidden();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Status st;
  for (;;) {
    const uint64_t target = e.log->committed_next();
    auto p = std::make_shared<std::promise<Status>>();
    auto f = p->get_future();
    e.uploader->await_persisted(
        target, [p](Status s) { p->set_value(std::move(s)); }, /*urgent=*/true);
    e.uploader->force_cut();
    if (f.wait_until(deadline) != std::future_status::ready) {
      st = Error(Errc::timeout,
                 fmt::format("offsets below {} not persisted within {} ms (remote next {})", target,
                             timeout.count(), e.uploader->persisted_next()));
      break;
    }
    st = f.get();
    // Nothing committed since: all of it is persisted.
    if (!st.ok() || e.log->committed_next() == target) break;
  }
  // Put back (served as before) when the hand-over failed and the node is
  // still open; else closed here, before the slot goes: the node's close
  // waits for it.
  bool put_back = false;
  {
    std::lock_guard l(mu);
    put_back = !st.ok() && !closed;
    if (put_back) table.cancel_handoff(name);
  }
  if (!put_back) {
    e.close(name);
    std::lock_guard l(mu);
    table.end_handoff(name);
  }
  table_cv.notify_all();
  if (!st.ok()) return std::move(st).error().with_context("handing stream " + name + " over");
  return Status::OK();
}

}  // namespace strata::node
