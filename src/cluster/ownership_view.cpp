// Ownership shell: following <ns>/ — one read of the whole namespace, then
// one watch from the revision after it; a watch that ends reads again. What
// it sees becomes the callers' ClusterView and the core's ev::View.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/bind_executor.hpp>
#include <asio/post.hpp>

#include "cluster/cluster_limits.h"
#include "cluster/node_registration.h"
#include "cluster/ownership_impl.h"
#include "common/assert.h"

namespace strata::cluster {

using json = nlohmann::json;
using std::chrono::milliseconds;

ev::View Ownership::Impl::core_view() const {
  ev::View v;
  v.revision = view_.revision;
  for (const auto& [id, addr] : view_.nodes) v.nodes.push_back(id);
  v.owners = view_.owners;
  v.streams = view_.streams;
  v.deletions = view_.deletions;
  v.candidacies = view_.candidacies;
  return v;
}

// A cluster whose nodes disagree on cluster.peer_tls: the links between
// them fail (a replica finds no owner to follow, copies are not made), so
// the registration that shows it is reported once, naming the fix.
void Ownership::Impl::warn_if_unreachable(const std::string& node, const NodeRegistration& r) {
  const bool reachable =
      node == cfg_.node_id || !(cfg_.peer_tls ? r.tls_address : r.address).empty();
  if (reachable) {
    unreachable_peers_.erase(node);
    return;
  }
  if (!unreachable_peers_.insert(node).second) return;
  if (cfg_.peer_tls) {
    spdlog::error(
        "cluster: {}: node {} registered no TLS address (no tls.listen there), and this node "
        "reaches its peers over TLS (cluster.peer_tls): it cannot reach {}. Every node of a "
        "cluster sets cluster.peer_tls, or none does",
        cfg_.node_id, node, node);
  } else {
    spdlog::error(
        "cluster: {}: node {} registered no plain address (tls.only there), and this node "
        "reaches its peers in plain TCP: it cannot reach {}. Every node of a cluster sets "
        "cluster.peer_tls, or none does",
        cfg_.node_id, node, node);
  }
}

bool Ownership::Impl::apply_kv(const etcd::KeyValue& kv, bool removed) {
  const std::string prefix = cfg_.ns + "/";
  if (kv.key.compare(0, prefix.size(), prefix) != 0) return false;
  std::string rest = kv.key.substr(prefix.size());
  auto take = [&](std::string_view dir, std::string* name) {
    if (rest.compare(0, dir.size(), dir) != 0) return false;
    *name = rest.substr(dir.size());
    return !name->empty();
  };
  std::string name;
  if (take("nodes/", &name)) {
    view_.tls_nodes.erase(name);
    if (removed) {
      view_.nodes.erase(name);
    } else {
      NodeRegistration r = parse_registration(kv.value);
      warn_if_unreachable(name, r);
      view_.nodes[name] = std::move(r.address);
      if (!r.tls_address.empty()) view_.tls_nodes[name] = std::move(r.tls_address);
    }
    return true;
  }
  if (take("owners/", &name)) {
    if (removed) {
      view_.owners.erase(name);
    } else {
      view_.owners[name] = OwnerRecord{kv.value, kv.lease};
    }
    return true;
  }
  if (take("deletions/", &name)) {
    if (removed) {
      view_.deletions.erase(name);
    } else {
      view_.deletions[name] = kv.value;
    }
    return true;
  }
  if (take("candidates/", &name)) {
    // <node>/<stream>: node ids have no '/' (ownership.cpp checks them).
    const size_t slash = name.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == name.size()) return false;
    const std::string node = name.substr(0, slash), stream = name.substr(slash + 1);
    if (removed) {
      auto it = view_.candidacies.find(stream);
      if (it == view_.candidacies.end()) return false;
      it->second.erase(node);
      if (it->second.empty()) view_.candidacies.erase(it);
    } else {
      Candidacy c;
      if (!candidacy_from_json(kv.value, &c)) {
        // Counted as standing with nothing: the election still ends.
        spdlog::warn("cluster: {}: malformed candidacy '{}'; counted as holding nothing", kv.key,
                     kv.value);
      }
      view_.candidacies[stream][node] = c;
    }
    return true;
  }
  if (take("streams/", &name)) {
    auto it = std::lower_bound(view_.streams.begin(), view_.streams.end(), name);
    bool present = it != view_.streams.end() && *it == name;
    if (removed && present) view_.streams.erase(it);
    if (!removed && !present) view_.streams.insert(it, name);
    return removed == present;
  }
  return false;
}

void Ownership::Impl::follow(const etcd::KeyValue& kv, bool removed,
                             std::vector<FollowedKey>* out) const {
  const std::string prefix = cfg_.ns + "/";
  if (kv.key.compare(0, prefix.size(), prefix) != 0) return;
  std::string_view rest = std::string_view(kv.key).substr(prefix.size());
  for (const auto& dir : cfg_.followed_dirs) {
    if (rest.substr(0, dir.size()) == dir) {
      out->push_back(FollowedKey{std::string(rest),
                                 removed ? std::nullopt : std::optional<std::string>(kv.value)});
      return;
    }
  }
}

// Reads the whole namespace, then watches it from the next revision. Runs
// on the strand; on failure it is tried again after the core's retry time.
void Ownership::Impl::resync() {
  if (stopped()) return;
  watch_.reset();
  const uint64_t gen = ++watch_generation_;
  const std::string prefix = cfg_.ns + "/";
  run_task<Result<etcd::RangeResult>>(
      tasks(), strand_, kNamespaceReadDeadline, "cluster: reading " + prefix,
      [c = client_, prefix] { return c->range(prefix, etcd::prefix_end(prefix)); },
      [this, gen, prefix](TaskOutcome<Result<etcd::RangeResult>> out) {
        if (gen != watch_generation_) return;
        if (out.end != TaskEnd::completed || !out.value->ok()) {
          std::string why = out.end != TaskEnd::completed ? out.error.to_string()
                                                          : out.value->error().to_string();
          spdlog::warn("cluster: reading {} failed ({}); retrying", prefix, why);
          resync_later();
          return;
        }
        on_snapshot(gen, **out.value);
      });
}

void Ownership::Impl::resync_later() {
  auto t = std::make_shared<asio::steady_timer>(io_, milliseconds(core_.timing().retry_ms));
  t->async_wait(asio::bind_executor(strand_, [this, t](const std::error_code& ec) {
    if (!ec) resync();
  }));
}

// The namespace as read at r.revision: the view starts over from it, the
// watch resumes right after it, and the core sees it.
void Ownership::Impl::on_snapshot(uint64_t gen, const etcd::RangeResult& r) {
  std::vector<FollowedKey> followed;
  {
    std::lock_guard l(mu_);
    view_ = ClusterView{};
    view_.revision = r.revision;
    for (const auto& kv : r.kvs) {
      if (!apply_kv(kv, false)) follow(kv, false, &followed);
    }
  }
  if (cfg_.on_followed) cfg_.on_followed(followed, /*snapshot=*/true);
  const std::string prefix = cfg_.ns + "/";
  etcd::WatchRequest w;
  w.key = prefix;
  w.range_end = etcd::prefix_end(prefix);
  w.start_revision = r.revision + 1;
  watch_ = client_->watch(
      w, [this](const std::vector<etcd::WatchEvent>& evs) { on_watch(evs); },
      [this, gen](const Error& e) {
        spdlog::warn("cluster: watch ended ({}); reading again", e.to_string());
        asio::post(strand_, [this, gen] {
          if (gen == watch_generation_) resync();
        });
      });
  ev::View v;
  {
    std::lock_guard l(mu_);
    v = core_view();
  }
  handle(v);
}

// On the watch's thread.
void Ownership::Impl::on_watch(const std::vector<etcd::WatchEvent>& events) {
  ev::View v;
  std::vector<FollowedKey> followed;
  bool changed = false;
  {
    std::lock_guard l(mu_);
    for (const auto& e : events) {
      const bool removed = e.type == etcd::WatchEvent::Type::remove;
      // The watch starts after the snapshot's revision and delivers in
      // revision order (etcd_client.h): a step back would apply an old
      // owner key over a newer one, and the core would act on it.
      STRATA_ASSERT(e.kv.mod_revision >= view_.revision,
                    "cluster: a watch event older than the view it updates");
      if (apply_kv(e.kv, removed)) {
        changed = true;
      } else {
        follow(e.kv, removed, &followed);
      }
      view_.revision = e.kv.mod_revision;
    }
    // Other keys under <ns>/ (entries' persists, epochs, settings, consumer
    // offsets) change nothing the core decides on: no snapshot for them.
    if (changed) v = core_view();
  }
  if (!followed.empty() && cfg_.on_followed) cfg_.on_followed(followed, /*snapshot=*/false);
  if (!changed) return;
  cv_.notify_all();
  post_event(std::move(v));
}

}  // namespace strata::cluster
