#include "server/stream_ops.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/assert.h"
#include "common/stream_name.h"
#include "server/server_limits.h"

namespace strata::server {

using namespace proto;

StreamOps::StreamOps(StreamOpsDeps deps) : d_(std::move(deps)) {
  STRATA_ASSERT(d_.node && d_.served && d_.supers && d_.offsets,
                "stream operations need a node, its served streams, super streams and offsets");
}

void StreamOps::attach_cluster(cluster::Ownership* ownership, ClusterOffsets* offsets) {
  STRATA_ASSERT(ownership && offsets && !ownership_.load(),
                "a node joins one cluster, once, with its offsets in etcd");
  cluster_offsets_ = offsets;
  ownership_ = ownership;
}

void StreamOps::attach_offsets(ClusterOffsets* offsets) {
  STRATA_ASSERT(offsets && !ownership_.load() && !cluster_offsets_.load(),
                "one node's etcd offsets are attached once, outside a cluster");
  cluster_offsets_ = offsets;
}

Status StreamOps::create_stream(const std::string& name, const node::StreamSettings& settings) {
  if (d_.may_create) STRATA_TRY(d_.may_create(name));
  if (d_.vhost_exists && !d_.vhost_exists(name)) return vhost_gone(name);
  Status st = ownership_.load() ? create_cluster_stream(name, settings) : [&]() -> Status {
    // Before the stream exists, so that no store for the new stream is
    // refused; a deleted stream's offsets are gone already (remove_stream).
    d_.offsets->stream_created(name);
    auto s = d_.node->create_stream(name, settings);
    if (!s.ok()) return std::move(s).error();
    return Status::OK();
  }();
  if (st.ok()) {
    // The vhost's deletion takes it out of the access rules first, then
    // lists its streams and deletes them: a creation that began before and
    // ended after the listing is caught here, as the vhost is gone by then
    // (on another node of a cluster, in the rules as stored, not yet in
    // this node's copy of them).
    const auto& exists_now = d_.vhost_exists_now ? d_.vhost_exists_now : d_.vhost_exists;
    if (exists_now && !exists_now(name)) {
      if (Status del = delete_stream(name); !del.ok() && del.error().code != Errc::not_found) {
        spdlog::warn("serve: stream {} was created as its vhost was deleted; deleting it: {}",
                     printable_stream(name), del.error().to_string());
      }
      return vhost_gone(name);
    }
    return st;
  }
  if (st.error().code != Errc::already_exists) return st;
  return already_exists_as(name, settings, st.error());
}

Error StreamOps::vhost_gone(const std::string& name) {
  return Error(Errc::invalid_argument,
               fmt::format("stream {}: its vhost '{}' does not exist (deleted)",
                           printable_stream(name), printable_name(split_stream_name(name).vhost)));
}

// Creating an existing stream again, as RabbitMQ answers it: with the
// settings it was created with, "already exists" (code 5); with others,
// invalid_argument (code 17, precondition failed). Settings compare by
// what was given: an argument given now and not then (or the reverse)
// differs, as RabbitMQ compares arguments. When the existing stream's
// settings cannot be read here (another node serves it and the catalog
// keeps none), "already exists".
Status StreamOps::already_exists_as(const std::string& name, const node::StreamSettings& settings,
                                    Error exists) {
  auto existing =
      ownership_.load() ? d_.node->catalog_stream_settings(name) : d_.node->stream_settings(name);
  if (!existing.ok() || *existing == settings) return exists;
  return Error(Errc::invalid_argument,
               fmt::format("stream {} exists with other arguments ({} now, {} at its creation)",
                           name, node::settings_to_json(settings).dump(),
                           node::settings_to_json(*existing).dump()));
}

// In a cluster a stream is created as a catalog entry with its settings
// beside it (node/node.h, create_catalog_stream); its placement owner
// (cluster/ownership_core.h) acquires and serves it with those settings, as
// does every later owner.
Status StreamOps::create_cluster_stream(const std::string& name,
                                        const node::StreamSettings& settings) {
  d_.offsets->stream_created(name);
  STRATA_TRY(d_.node->create_catalog_stream(name, settings));
  // Answered once an owner serves it (or is about to), so that a client's
  // next Metadata names a leader; the entry exists either way.
  auto wait = std::chrono::milliseconds(2 * d_.lease_ttl_ms) + kCreateAwaitsOwnerMargin;
  if (auto o = ownership_.load()->await_owner(name, wait); !o.ok()) {
    spdlog::warn("serve: stream {} created; no owner yet: {}", name, o.error().to_string());
  }
  return Status::OK();
}

Status StreamOps::delete_stream(const std::string& name) {
  cluster::Ownership* own = ownership_.load();
  ClusterOffsets* cluster_offsets = cluster_offsets_.load();
  // Not served here: forwarded through the catalog to the node that serves
  // it (ownerless: this node takes it and deletes it), and answered once
  // the entry is gone (cluster/ownership.h, request_deletion).
  if (own && !own->serving(name) && d_.served->served_elsewhere(name)) {
    auto wait = std::chrono::milliseconds(4 * d_.lease_ttl_ms) + kForwardedDeleteMargin;
    Status st = own->request_deletion(name, wait);
    if (st.ok()) cluster_offsets->stream_removed(name);
    return st;
  }
  // Stop appending first, so that nothing is confirmed that the deletion
  // removes.
  if (auto s = d_.served->served(name); s.ok()) (*s)->retire();
  Status st = d_.node->delete_stream(name);
  if (st.ok() || st.error().code == Errc::not_found) {
    d_.served->retire(name, /*drain=*/false);
    // In a cluster the catalog's remove took the stream's etcd offsets.
    if (cluster_offsets) cluster_offsets->stream_removed(name);
    if (auto o = d_.offsets->remove_stream(name); !o.ok()) {
      spdlog::warn("serve: stream {}: removing its stored offsets: {}", name,
                   o.error().to_string());
    }
  }
  return st;
}

Status StreamOps::alter_stream(const std::string& name, const node::StreamSettings& to) {
  cluster::Ownership* own = ownership_.load();
  // Stored in the catalog; the owner applies it when it sees it
  // (cluster_follow.h), and a stream without an owner now gets it from
  // the catalog when it is next opened.
  if (own && !own->serving(name)) return d_.node->alter_catalog_stream(name, to);
  return d_.node->alter_stream(name, to);
}

Result<node::StreamSettings> StreamOps::stream_settings(const std::string& name) {
  if (ownership_.load()) {
    auto kept = d_.node->catalog_stream_settings(name);
    if (kept.ok() || kept.error().code != Errc::not_found) return kept;
  }
  return d_.node->stream_settings(name);
}

Status StreamOps::create_super_stream(const SuperStream& s, const node::StreamSettings& settings) {
  return d_.supers->create(
      s,
      // Every partition gets the super stream's arguments, as in RabbitMQ.
      [this, &settings](const std::string& p) { return create_stream(p, settings); },
      [this](const std::string& p) { return delete_stream(p); });
}

Status StreamOps::delete_super_stream(const std::string& name) {
  return d_.supers->remove(name, [this](const std::string& p) -> Status {
    Status st = delete_stream(p);
    if (!st.ok() && st.error().code == Errc::not_found) return Status::OK();
    return st;
  });
}

Result<std::vector<std::string>> StreamOps::route(const std::string& super,
                                                  const std::string& routing_key) {
  return d_.supers->route(super, routing_key);
}

Result<std::vector<std::string>> StreamOps::partitions(const std::string& super) {
  return d_.supers->partitions(super);
}

MetadataResponse StreamOps::metadata(const std::vector<std::string>& streams,
                                     const Advertised& self) {
  if (ownership_.load()) return cluster_metadata(streams, self);
  MetadataResponse resp;
  resp.brokers.push_back(Broker{0, self.host, self.port});
  for (const auto& s : streams) {
    StreamMetadata m;
    m.stream = s;
    auto st = d_.node->stream(s);
    if (st.ok()) {
      m.leader_reference = 0;
    } else {
      // Being opened (node/stream_table.h): there in a moment, as a stream
      // is during a takeover in a cluster.
      m.code = st.code() == Errc::unavailable ? ResponseCode::stream_not_available
                                              : ResponseCode::stream_does_not_exist;
      m.leader_reference = 0xffff;
    }
    resp.streams.push_back(std::move(m));
  }
  return resp;
}

// A cluster's Metadata: every registered node is a broker (references in
// node id order); a stream's leader is its owner, the only node that
// writes it, and every other registered node is a replica: it serves the
// stream's consumers (replica_feed.h), so clients may place them there. A
// stream in the catalog without an owner (during a takeover) is
// stream_not_available: clients retry.
MetadataResponse StreamOps::cluster_metadata(const std::vector<std::string>& streams,
                                             const Advertised& self) {
  MetadataResponse resp;
  const cluster::Ownership* own = ownership_.load();
  auto view = own->view();
  // This node is described as the client reached it; the others by the
  // listener of the same kind they registered (a TLS client is told TLS
  // ports). A node without one is no broker for this client, and a stream
  // it leads is not available to it.
  const auto& addresses = view.addresses(self.tls);
  std::map<std::string, uint16_t> refs;
  for (const auto& [id, ignored] : view.nodes) {
    const bool me = id == own->config().node_id;
    auto a = addresses.find(id);
    if (!me && a == addresses.end()) continue;
    auto hp =
        me ? Result<std::pair<std::string, uint16_t>>(std::pair(self.host, uint16_t(self.port)))
           : parse_host_port("node " + id, a->second);
    if (!hp.ok()) continue;
    uint16_t ref = uint16_t(resp.brokers.size());
    refs[id] = ref;
    resp.brokers.push_back(Broker{ref, hp->first, hp->second});
  }
  for (const auto& s : streams) {
    StreamMetadata m;
    m.stream = s;
    m.leader_reference = 0xffff;
    auto owner = view.owners.find(s);
    if (owner != view.owners.end() && refs.count(owner->second.node_id)) {
      m.leader_reference = refs[owner->second.node_id];
      for (const auto& [id, ref] : refs) {
        if (id != owner->second.node_id) m.replica_references.push_back(ref);
      }
    } else if (owner != view.owners.end() ||
               std::find(view.streams.begin(), view.streams.end(), s) != view.streams.end()) {
      m.code = ResponseCode::stream_not_available;
    } else {
      m.code = ResponseCode::stream_does_not_exist;
    }
    resp.streams.push_back(std::move(m));
  }
  return resp;
}

}  // namespace strata::server
