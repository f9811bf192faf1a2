#include "server/replica_copies.h"

#include <spdlog/spdlog.h>

#include <asio/post.hpp>
#include <future>
#include <set>

#include "common/metrics.h"

namespace strata::server {

std::string copies_metrics_text(const ReplicaCopies* copies) {
  PromWriter w;
  w.gauge("strata_cluster_copies", "Streams this node keeps a replica copy of now", {},
          copies ? double(copies->copying()) : 0);
  w.counter("strata_cluster_copied_chunks_total",
            "Chunks of other nodes' streams appended to this node's copies", {},
            copies ? double(copies->counters().copied_chunks.load()) : 0);
  w.counter("strata_cluster_dropped_copies_total",
            "Copies that no longer lined up with their owner's log and started again", {},
            copies ? double(copies->counters().dropped_copies.load()) : 0);
  return w.text();
}

std::shared_ptr<ReplicaCopies> ReplicaCopies::start(ServedStreams& served, node::Node& node,
                                                    cluster::Ownership& own, Strand strand,
                                                    TaskContext tasks,
                                                    std::chrono::milliseconds every) {
  std::shared_ptr<ReplicaCopies> c(new ReplicaCopies(served, node, own, strand, tasks, every));
  asio::post(strand, [c] { c->scan(); });
  return c;
}

ReplicaCopies::ReplicaCopies(ServedStreams& served, node::Node& node, cluster::Ownership& own,
                             Strand strand, TaskContext tasks, std::chrono::milliseconds every)
    : served_(served),
      node_(node),
      own_(own),
      strand_(strand),
      tasks_(tasks),
      every_(every),
      timer_(strand) {}

void ReplicaCopies::stop() {
  // On the strand, and waited for: no copier may run on past the node.
  auto done = std::make_shared<std::promise<void>>();
  auto f = done->get_future();
  asio::post(strand_, [self = shared_from_this(), done] {
    self->stopped_ = true;
    self->timer_.cancel();
    for (auto& [name, c] : self->copiers_) c->stop();
    self->copiers_.clear();
    self->running_.store(0);
    done->set_value();
  });
  f.wait_for(std::chrono::seconds(5));
}

void ReplicaCopies::scan() {
  if (stopped_) return;
  const auto view = own_.view();
  const std::string& self_id = own_.config().node_id;
  std::set<std::string> listed(view.streams.begin(), view.streams.end());
  for (auto it = copiers_.begin(); it != copiers_.end();) {
    const bool gone = !listed.count(it->first);
    auto owner = view.owners.find(it->first);
    const bool mine = owner != view.owners.end() && owner->second.node_id == self_id;
    if (gone || mine || it->second->stopped()) {
      it->second->stop();
      if (gone) {
        // Deleted from the cluster: its copy goes too (off the strand).
        tasks_.pool->post([&node = node_, name = it->first] {
          if (Status s = node.drop_copy(name); !s.ok()) {
            spdlog::warn("copy of {}: removing it: {}", name, s.to_string());
          }
        });
      }
      it = copiers_.erase(it);
      continue;
    }
    ++it;
  }
  // The streams served here with replicated confirms count the copies of
  // the nodes registered now.
  for (const auto& [name, rec] : view.owners) {
    if (rec.node_id != self_id) continue;
    if (auto s = served_.existing(name); s && s->replica_acks()) {
      s->replica_acks()->count_copies_of(view, self_id);
    }
  }
  for (const std::string& name : view.streams) {
    if (copiers_.count(name)) continue;
    auto owner = view.owners.find(name);
    if (owner == view.owners.end() || owner->second.node_id == self_id) continue;
    auto env = served_.replica_env(name);
    if (!env.ok()) continue;
    CopierEnv ce;
    ce.replica = std::move(env).value();
    ce.node = &node_;
    ce.self_id = self_id;
    ce.copied_chunks = &counters_.copied_chunks;
    ce.dropped_copies = &counters_.dropped_copies;
    copiers_[name] = ReplicaCopier::start(std::move(ce), strand_, tasks_);
  }
  running_.store(copiers_.size());
  timer_.expires_after(every_);
  timer_.async_wait([weak = std::weak_ptr<ReplicaCopies>(shared_from_this())](std::error_code ec) {
    if (auto self = weak.lock(); self && !ec) self->scan();
  });
}

}  // namespace strata::server
