// Node: deleting streams (node.h, delete_stream; the protocol in
// docs/formats/stream-deletion.md). The steps and their order are in
// node/deletion_core.h and node/deletion_steps.h; this file holds what only
// the node can do — the marker before anything else, stopping the stream's
// writer, and the bookkeeping of pending deletions across open and close.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/name_component.h"
#include "common/stream_name.h"
#include "node/deletion_marker.h"
#include "node/node_impl.h"
#include "tier/object_keys.h"

namespace strata::node {

namespace {

std::string deletions_dir(const NodeConfig& c) {
  return path_join(c.data_dir, "deletions");
}

// The longest an uploader's request may still run after its uploader was
// closed: its task's deadline (4 x tiering.request_timeout_ms), and past
// it, for an abandoned S3 request, the S3 client's own deadlines (a wait
// for a connection slot and the request itself).
int64_t gate_wait_ms(const NodeConfig& c) {
  int64_t ms = 4 * c.tiering.request_timeout_ms;
  if (c.objstore.backend == objstore::ObjectStoreConfig::Backend::s3) {
    ms = std::max<int64_t>(
        ms, 2 * int64_t(c.objstore.s3.request_timeout_ms) + c.objstore.s3.connect_timeout_ms);
  }
  return ms;
}

}  // namespace

Result<DeletionTargets> Node::Impl::deletion_targets(const std::string& name) const {
  STRATA_ASSIGN_OR_RETURN(auto keys, tier::ObjectKeys::make(cfg.tiering.key_prefix, name));
  DeletionTargets t;
  t.stream = name;
  t.key_prefix = keys.stream_prefix();
  t.list_page_keys = cfg.deletion.list_page_keys;
  t.store = store;
  t.catalog = catalog;
  t.registry = registry;
  t.cache = cache;
  t.fs = &posix_fs();
  t.marker_dir = deletions_dir(cfg);
  return t;
}

Status Node::Impl::scan_deletions() {
  STRATA_ASSIGN_OR_RETURN(auto markers, scan_deletion_markers(posix_fs(), deletions_dir(cfg)));
  std::lock_guard l(mu);
  std::optional<std::vector<std::string>> local;  // read when a marker needs it
  for (auto& m : markers) {
    if (m.stream.empty()) {
      // An unreadable marker under a hashed component: its stream is the
      // local one of that component, if any.
      if (!local) {
        STRATA_ASSIGN_OR_RETURN(local, registry->list());
      }
      for (const auto& n : *local) {
        if (name_component(n) == m.component) m.stream = n;
      }
      if (m.stream.empty()) {
        spdlog::error(
            "node: {}; no stream of this node has that file name, so nothing waits on "
            "it: fix or remove it",
            m.problem);
        continue;
      }
    }
    Deletion d;
    d.requested_at_ms = m.requested_at_ms;
    d.blocked = m.problem;
    if (d.blocked.empty()) {
      if (Status s = validate_stream_name(m.stream); !s.ok()) {
        d.blocked =
            fmt::format("deletion marker {}: {}",
                        deletion_marker_path(deletions_dir(cfg), m.stream), s.error().message);
      }
    }
    if (!d.blocked.empty()) {
      // Nothing is deleted on the word of a file we cannot read; the stream
      // is not opened either, so nothing is written to it meanwhile.
      spdlog::error("node: {}; the deletion of {} waits until the marker is fixed or removed",
                    d.blocked, printable_name(m.stream));
    } else {
      deletion_queue.push_back(m.stream);
    }
    deletions[m.stream] = std::move(d);
  }
  return Status::OK();
}

std::vector<std::string> Node::Impl::pending_deletions() const {
  std::lock_guard l(mu);
  std::vector<std::string> out;
  for (const auto& [name, d] : deletions) out.push_back(name);
  return out;
}

Status Node::Impl::delete_stream(const std::string& name) {
  // The caller waits below for jobs of the runtime's pool (the deletion's
  // steps, the stopped uploader's requests) and is often a pool job itself
  // (a client's DeleteStream): while it waits the pool may run one more
  // thread, or a few deletions at once would take every thread and wait
  // for jobs queued behind them.
  BlockingPool::Waiting waiting = runtime->pool()->waiting();
  std::unique_lock l(mu);
  // An open in progress ends first: what it opens is then deleted.
  table_cv.wait(l, [&] { return closed || table.state(name) != StreamTable::State::opening; });
  if (closed) return Error(Errc::closed, "node is closed");
  std::shared_ptr<DeletionAttempt> a;
  auto dit = deletions.find(name);
  if (dit != deletions.end()) {
    Deletion& d = dit->second;
    if (!d.blocked.empty()) return Error(Errc::fatal, d.blocked);
    if (d.attempt) {
      // A run (or its preparation) is under way: its outcome is ours.
      a = d.attempt;
    } else {
      a = std::make_shared<DeletionAttempt>();
      d.attempt = a;
      std::shared_ptr<StreamGate> gate = d.gate;
      if (gate) {
        l.unlock();
        Status s = await_gate(name, gate);
        l.lock();
        if (!s.ok()) {
          end_attempt_locked(name, a, s);
          return a->status;
        }
      }
      auto again = deletions.find(name);
      if (!a->ended && again != deletions.end()) start_run_locked(name, again->second, a);
    }
  } else {
    std::optional<StreamEntry> e = table.release(name);
    if (!e) {
      return Error(Errc::not_found, fmt::format("stream {} does not exist on this node", name));
    }
    a = std::make_shared<DeletionAttempt>();
    Deletion& d = deletions[name];
    d.requested_at_ms = system_clock().now_ms();
    d.gate = e->gate;
    d.attempt = a;
    const int64_t requested = d.requested_at_ms;
    l.unlock();
    Status s = prepare_deletion(name, *e, requested);
    l.lock();
    if (!s.ok()) {
      end_attempt_locked(name, a, s);
      return a->status;
    }
    auto d2 = deletions.find(name);
    if (!a->ended && d2 != deletions.end()) start_run_locked(name, d2->second, a);
  }
  deletions_cv.wait(l, [&] { return a->ended; });
  return a->status;
}

// Marker first: until it is durable nothing has been destroyed, and a
// failure gives the stream back as it was. From the marker on, the deletion
// is certain to finish (here, or at a later open).
Status Node::Impl::prepare_deletion(const std::string& name, StreamEntry e,
                                    int64_t requested_at_ms) {
  DeletionMarker m;
  m.stream = name;
  m.requested_at_ms = requested_at_ms;
  if (Status s = write_deletion_marker(posix_fs(), deletions_dir(cfg), m); !s.ok()) {
    std::lock_guard l(mu);
    if (!closed) {
      deletions.erase(name);
      table.put_back(name, e);
    }
    return std::move(s).error().with_context(
        fmt::format("deleting stream {} (nothing was deleted)", name));
  }
  spdlog::info("node: deleting stream {}", printable_stream(name));
  // Stop the writer: no chunk reaches the uploader any more, the uploader
  // stops deciding (the governor drops its queued transfers), the gate
  // refuses its later requests, and appends fail with Errc::closed.
  if (e.hooks) e.hooks->detach();
  if (e.uploader) e.uploader->close();
  if (e.gate) e.gate->close();
  if (Status s = e.log->close(); !s.ok()) {
    // The directory is removed anyway; a failed final sync loses nothing
    // the deletion would keep.
    spdlog::warn("node: deleting stream {}: closing its log: {}", printable_stream(name),
                 s.to_string());
  }
  cache->erase(name);
  if (e.gate) return await_gate(name, e.gate);
  return Status::OK();
}

// Requests the stopped uploader had started may still be running: none may
// land after the listing that decides what is left to remove.
Status Node::Impl::await_gate(const std::string& name, const std::shared_ptr<StreamGate>& gate) {
  const int64_t ms = gate_wait_ms(cfg);
  if (!gate->wait_idle(std::chrono::milliseconds(ms))) {
    return Error(Errc::timeout,
                 fmt::format("deleting stream {}: {} request(s) of its stopped uploader still "
                             "running after {} ms; the deletion stays pending",
                             name, gate->in_flight(), ms));
  }
  std::lock_guard l(mu);
  if (auto it = deletions.find(name); it != deletions.end() && it->second.gate == gate) {
    it->second.gate.reset();
  }
  return Status::OK();
}

void Node::Impl::start_run_locked(const std::string& name, Deletion& d,
                                  const std::shared_ptr<DeletionAttempt>& a) {
  if (closed) {
    end_attempt_locked(name, a, Error(Errc::closed, "node is closed"));
    return;
  }
  auto t = deletion_targets(name);
  if (!t.ok()) {
    end_attempt_locked(name, a, Error(Errc::fatal, t.error().message));
    return;
  }
  d.runs += 1;
  DeletionRunOptions o;
  o.core = cfg.deletion.core;
  o.step_deadline_ms = 4 * cfg.tiering.request_timeout_ms;
  a->run = StreamDeletion::start(runtime->io_shared(), runtime->tasks(), std::move(t).value(), o,
                                 [this, name, a](Status s) { end_attempt(name, a, std::move(s)); });
}

void Node::Impl::end_attempt(const std::string& name, const std::shared_ptr<DeletionAttempt>& a,
                             Status s) {
  if (s.ok()) {
    spdlog::info("node: stream {} deleted", printable_stream(name));
  } else {
    spdlog::error("node: deleting stream {}: {}; the deletion stays pending",
                  printable_stream(name), s.to_string());
  }
  std::lock_guard l(mu);
  end_attempt_locked(name, a, std::move(s));
  if (background == name) {
    background.clear();
    start_background_locked();
  }
}

void Node::Impl::end_attempt_locked(const std::string& name,
                                    const std::shared_ptr<DeletionAttempt>& a, Status s) {
  if (a->ended) return;
  a->ended = true;
  bool pending = false;
  auto it = deletions.find(name);
  if (it != deletions.end() && it->second.attempt == a) {
    Deletion& d = it->second;
    if (a->run) d.progress = a->run->progress();
    d.attempt.reset();
    if (s.ok()) {
      deletions.erase(it);
    } else {
      d.last_error = s.error().message;
      pending = true;
    }
  }
  if (pending) {
    s = Error(s.code(), s.error().message +
                            "; the deletion stays pending: it finishes on the next delete of "
                            "this stream or when the node next opens");
  }
  a->status = std::move(s);
  deletions_cv.notify_all();
}

void Node::Impl::start_background_locked() {
  while (background.empty() && !closed && !deletion_queue.empty()) {
    std::string name = deletion_queue.front();
    deletion_queue.pop_front();
    auto it = deletions.find(name);
    // Finished or taken over by a delete_stream meanwhile, or blocked.
    if (it == deletions.end() || it->second.attempt || !it->second.blocked.empty()) continue;
    auto a = std::make_shared<DeletionAttempt>();
    it->second.attempt = a;
    background = name;
    start_run_locked(name, it->second, a);
    if (a->ended) background.clear();
  }
}

Status Node::Impl::await_deletions(std::chrono::milliseconds timeout) {
  std::unique_lock l(mu);
  auto idle = [&] {
    if (!deletion_queue.empty() || !background.empty()) return false;
    for (const auto& [name, d] : deletions) {
      if (d.attempt) return false;
    }
    return true;
  };
  if (!deletions_cv.wait_for(l, timeout, idle)) {
    return Error(Errc::timeout, fmt::format("{} deletion(s) still pending after {} ms",
                                            deletions.size(), timeout.count()));
  }
  for (const auto& [name, d] : deletions) {
    std::string why = d.blocked.empty() ? d.last_error : d.blocked;
    return Error(d.blocked.empty() ? Errc::unavailable : Errc::fatal,
                 fmt::format("the deletion of stream {} is pending: {}", name,
                             why.empty() ? "not run yet" : why));
  }
  return Status::OK();
}

// Deletion runs whose end was never reported (their last event was dropped
// with the event loop): their callers learn it here. Their markers stay;
// the next open finishes them.
void Node::Impl::end_deletions_at_close() {
  {
    std::lock_guard l(mu);
    for (auto& [name, d] : deletions) {
      if (!d.attempt || d.attempt->ended) continue;
      d.attempt->ended = true;
      d.attempt->status = Error(Errc::closed, fmt::format("the node closed before the deletion of "
                                                          "stream {} finished",
                                                          name));
      d.attempt.reset();
    }
    deletion_queue.clear();
    background.clear();
  }
  deletions_cv.notify_all();
}

}  // namespace strata::node
