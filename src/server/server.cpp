#include "server/server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/ip/address.hpp>

#include "common/fs.h"
#include "common/metrics.h"
#include "server/connection.h"

namespace strata::server {

Server::Server(ServeConfig cfg)
    : cfg_(std::move(cfg)),
      sac_(std::chrono::milliseconds(cfg_.server.consumer_update_timeout_ms)) {}

Result<std::unique_ptr<Server>> Server::start(ServeConfig cfg) {
  auto hp = parse_host_port("listen", cfg.server.listen);
  if (!hp.ok()) return std::move(hp).error();
  std::unique_ptr<Server> s(new Server(std::move(cfg)));
  // One event loop and one blocking pool for the whole process
  // (node/runtime.h): connections, appends and readers run on the node's.
  node::RuntimeOptions ro = node::runtime_options(s->cfg_.node);
  ro.io_threads = std::max(ro.io_threads, s->cfg_.server.threads);
  s->runtime_ = node::Runtime::start(ro);
  s->sac_timer_.emplace(s->io());
  auto node = node::Node::open(s->cfg_.node, s->runtime_);
  if (!node.ok()) return std::move(node).error().with_context("serve: opening the node");
  s->node_ = std::move(node).value();
  auto offsets = OffsetStore::open(path_join(s->cfg_.node.data_dir, "tracking"));
  if (!offsets.ok()) return std::move(offsets).error().with_context("serve: offset tracking");
  s->offsets_ = std::move(offsets).value();
  auto supers = SuperStreams::open(path_join(s->cfg_.node.data_dir, "super_streams"));
  if (!supers.ok()) return std::move(supers).error().with_context("serve: super streams");
  s->supers_ = std::move(supers).value();

  std::error_code ec;
  auto addr = asio::ip::make_address(hp->first, ec);
  if (ec) {
    return Error(Errc::invalid_argument,
                 fmt::format("serve: listen address '{}' is not an IP address", hp->first));
  }
  asio::ip::tcp::endpoint ep(addr, hp->second);
  auto acc = std::make_unique<asio::ip::tcp::acceptor>(s->io());
  acc->open(ep.protocol(), ec);
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error(Errc::io, fmt::format("serve: cannot listen on {}: {}", s->cfg_.server.listen,
                                       ec.message()));
  }
  s->acceptor_ = std::move(acc);
  s->host_ = hp->first;
  s->port_ = s->acceptor_->local_endpoint().port();
  // After the bind: the address it registers is the one clients reach.
  if (s->cfg_.cluster.enabled) {
    const auto& e = s->cfg_.node.catalog_etcd;
    etcd::ClientOptions o;
    o.endpoints = e.endpoints;
    o.request_timeout = std::chrono::milliseconds(e.request_timeout_ms);
    o.attempt_timeout = std::chrono::milliseconds(e.attempt_timeout_ms);
    auto client = etcd::EtcdClient::open(o);
    if (!client.ok()) return std::move(client).error().with_context("serve: cluster: etcd client");
    std::shared_ptr<etcd::EtcdClient> shared(std::move(client).value());
    auto oc = ownership_config(s->cfg_.cluster, s->cfg_.node,
                               fmt::format("{}:{}", s->advertised_host(), s->advertised_port()));
    oc.on_release = [srv = s.get()](const std::string& name) { srv->stream_lost(name); };
    oc.on_handoff = [srv = s.get()](const std::string& name) { srv->stream_handing_off(name); };
    // A deletion another node asked for, of a stream served here.
    oc.on_remove = [srv = s.get()](const std::string& name) { return srv->delete_stream(name); };
    // Consumer offsets follow the stream: kept in etcd, not under tracking/.
    ClusterOffsetsOptions co;
    co.ns = e.ns;
    s->cluster_offsets_ = ClusterOffsets::start(shared, co);
    auto own = cluster::Ownership::start(std::move(oc), shared, s->node_.get());
    if (!own.ok()) return std::move(own).error().with_context("serve: cluster");
    s->ownership_ = std::move(own).value();
  }
  s->accept();
  return s;
}

Server::~Server() {
  (void)stop();
}

std::string Server::advertised_host() const {
  if (!cfg_.server.advertised_host.empty()) return cfg_.server.advertised_host;
  // A wildcard listener is no address to connect to.
  if (host_ == "0.0.0.0" || host_ == "::") return "localhost";
  return host_;
}

uint32_t Server::advertised_port() const {
  return cfg_.server.advertised_port != 0 ? cfg_.server.advertised_port : port_;
}

void Server::accept() {
  Strand strand = asio::make_strand(io());
  acceptor_->async_accept(
      strand, [this, strand](const std::error_code& ec, asio::ip::tcp::socket sock) {
        if (ec) {
          if (ec == asio::error::operation_aborted) return;
          spdlog::warn("serve: accept: {}", ec.message());
        } else {
          std::shared_ptr<Connection> c;
          {
            std::lock_guard l(mu_);
            if (stopping_) return;
            if (connections_.size() >= cfg_.server.max_connections) {
              spdlog::warn("serve: refusing a connection: {} open", connections_.size());
            } else {
              uint64_t id = next_connection_id_++;
              c = std::make_shared<Connection>(*this, strand, std::move(sock), id);
              connections_[id] = c;
            }
          }
          if (c) {
            counters_.connections_accepted += 1;
            counters_.connections_open += 1;
            c->start();
          }
        }
        accept();
      });
}

void Server::connection_closed(uint64_t id) {
  std::lock_guard l(mu_);
  if (connections_.erase(id)) counters_.connections_open -= 1;
  if (connections_.empty()) conn_cv_.notify_all();
}

void Server::sac(const std::function<std::vector<SacEffect>(SacGroups&, SacTime)>& step) {
  std::lock_guard sl(sac_mu_);
  sac_apply(step(sac_, std::chrono::steady_clock::now()));
}

void Server::on_sac_timer() {
  std::lock_guard sl(sac_mu_);
  // Whatever deadline it fired for, re-arm for the next one after this step.
  sac_armed_.reset();
  sac_apply(sac_.expire(std::chrono::steady_clock::now()));
}

void Server::sac_apply(const std::vector<SacEffect>& effects) {
  for (const auto& e : effects) {
    std::shared_ptr<Connection> c;
    {
      std::lock_guard l(mu_);
      auto it = connections_.find(e.consumer.connection);
      if (it != connections_.end()) c = it->second.lock();
    }
    // Posted under sac_mu_, so each connection gets its effects in the
    // order the groups produced them.
    if (c) c->sac_effect(e);
  }
  auto next = sac_.next_deadline();
  if (next == sac_armed_) return;
  sac_armed_ = next;
  if (!next) {
    sac_timer_->cancel();
    return;
  }
  // Re-arming cancels the previous wait (its handler sees operation_aborted);
  // a handler already due runs anyway and expires only what is due.
  sac_timer_->expires_at(*next);
  sac_timer_->async_wait([this](const std::error_code& ec) {
    if (!ec) on_sac_timer();
  });
}

Result<std::shared_ptr<ServedStream>> Server::served(const std::string& name) {
  std::lock_guard l(mu_);
  auto it = streams_.find(name);
  if (it != streams_.end() && !it->second->retired()) return it->second;
  STRATA_ASSIGN_OR_RETURN(auto stream, node_->handle(name));
  AppenderOptions ao;
  ao.remote_timeout_ms = node_->config().tiering.remote_confirm_timeout_ms;
  // Consumers of a remote-confirmed stream read only what is persisted. The
  // confirm mode comes from the handle only: the stream's setting, else the
  // node's default (node/stream_settings.h).
  auto limit = stream->confirm() == node::ConfirmMode::remote ? persisted_limit(stream) : nullptr;
  auto appender = std::make_shared<StreamAppender>(stream, io(), tasks(), std::move(ao));
  auto s = std::make_shared<ServedStream>(std::move(stream), std::move(appender), std::move(limit));
  streams_[name] = s;
  return s;
}

bool Server::served_elsewhere(const std::string& name) {
  if (!ownership_) return false;
  auto v = ownership_->view();
  if (v.owners.count(name)) return true;
  return std::find(v.streams.begin(), v.streams.end(), name) != v.streams.end();
}

void Server::stream_lost(const std::string& name) {
  spdlog::info("serve: stream {}: no longer served here (ownership lost)", name);
  // The same as a deletion for this node's clients: publishers and
  // consumers dropped with a MetadataUpdate; stored offsets stay.
  stream_deleted(name);
}

void Server::stream_handing_off(const std::string& name) {
  // What is appended before the node persists the stream is handed over
  // with it; nothing may be appended after.
  retire_served(name, /*drain=*/true);
}

void Server::stream_deleted(const std::string& name) {
  retire_served(name, /*drain=*/false);
}

void Server::retire_served(const std::string& name, bool drain) {
  std::shared_ptr<ServedStream> s;
  {
    std::lock_guard l(mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) return;
    s = it->second;
    streams_.erase(it);
  }
  s->retire();
  if (drain && !s->appender().wait_idle(std::chrono::seconds(10))) {
    spdlog::warn("serve: stream {}: appends still running 10 s after it was retired", name);
  }
  for (auto& c : s->watchers()) c->stream_gone(name);
}

Status Server::create_stream(const std::string& name, const node::StreamSettings& settings) {
  if (ownership_) return create_cluster_stream(name, settings);
  // Before the stream exists, so that no store for the new stream is
  // refused; a deleted stream's offsets are gone already (remove_stream).
  offsets_->stream_created(name);
  auto s = node_->create_stream(name, settings);
  if (!s.ok()) return std::move(s).error();
  return Status::OK();
}

// In a cluster a stream is created as a catalog entry with its settings
// beside it (node/node.h, create_catalog_stream); its placement owner
// (cluster/ownership_core.h) acquires and serves it with those settings, as
// does every later owner.
Status Server::create_cluster_stream(const std::string& name,
                                     const node::StreamSettings& settings) {
  offsets_->stream_created(name);
  STRATA_TRY(node_->create_catalog_stream(name, settings));
  // Answered once an owner serves it (or is about to), so that a client's
  // next Metadata names a leader; the entry exists either way.
  auto wait = std::chrono::milliseconds(2 * cfg_.cluster.lease_ttl_ms + 5000);
  if (auto o = ownership_->await_owner(name, wait); !o.ok()) {
    spdlog::warn("serve: stream {} created; no owner yet: {}", name, o.error().to_string());
  }
  return Status::OK();
}

Status Server::delete_stream(const std::string& name) {
  // Not served here: forwarded through the catalog to the node that serves
  // it (ownerless: this node takes it and deletes it), and answered once
  // the entry is gone (cluster/ownership.h, request_deletion).
  if (ownership_ && !ownership_->serving(name) && served_elsewhere(name)) {
    auto wait = std::chrono::milliseconds(4 * cfg_.cluster.lease_ttl_ms + 60'000);
    Status st = ownership_->request_deletion(name, wait);
    if (st.ok() && cluster_offsets_) cluster_offsets_->stream_removed(name);
    return st;
  }
  // Stop appending first, so that nothing is confirmed that the deletion
  // removes.
  if (auto s = served(name); s.ok()) (*s)->retire();
  Status st = node_->delete_stream(name);
  if (st.ok() || st.error().code == Errc::not_found) {
    stream_deleted(name);
    // In a cluster the catalog's remove took the stream's etcd offsets.
    if (cluster_offsets_) cluster_offsets_->stream_removed(name);
    if (auto o = offsets_->remove_stream(name); !o.ok()) {
      spdlog::warn("serve: stream {}: removing its stored offsets: {}", name,
                   o.error().to_string());
    }
  }
  return st;
}

Status Server::stop() {
  std::vector<std::shared_ptr<Connection>> conns;
  std::vector<std::shared_ptr<ServedStream>> streams;
  {
    std::lock_guard l(mu_);
    if (stopped_) return stop_status_;
    stopped_ = true;
    stopping_ = true;
    for (auto& [id, w] : connections_) {
      if (auto c = w.lock()) conns.push_back(std::move(c));
    }
    for (auto& [n, s] : streams_) streams.push_back(s);
  }
  if (acceptor_) {
    asio::post(io(), [this] {
      std::error_code ec;
      acceptor_->close(ec);
    });
  }
  // What was handed to the log is appended and confirmed before the
  // connections go.
  for (auto& s : streams) {
    if (!s->appender().wait_idle(std::chrono::seconds(30))) {
      spdlog::warn("serve: stream {}: appends still running at shutdown", s->name());
    }
  }
  for (auto& c : conns) c->shutdown();
  // Let the Close frames and the last confirms go out.
  {
    std::unique_lock l(mu_);
    if (!conn_cv_.wait_for(l, std::chrono::seconds(5), [&] { return connections_.empty(); })) {
      spdlog::warn("serve: {} connection(s) still open at shutdown", connections_.size());
    }
  }
  for (auto& s : streams) s->retire();
  {
    std::lock_guard sl(sac_mu_);
    if (sac_timer_) sac_timer_->cancel();
  }
  if (cluster_offsets_) cluster_offsets_->close();
  // Revokes the lease: other nodes take this node's streams over at once.
  if (ownership_) ownership_->stop();
  // Closes the uploaders (on the runtime, still running), then stops the
  // runtime: in-flight tasks given the pool's grace, the event loop's
  // threads joined, what connections left queued run out or dropped.
  if (node_) stop_status_ = node_->close();
  if (runtime_) runtime_->stop();
  {
    std::lock_guard l(mu_);
    streams_.clear();
    connections_.clear();
  }
  streams.clear();
  conns.clear();
  if (offsets_) {
    if (auto st = offsets_->close(); !st.ok()) {
      spdlog::error("serve: closing the offset store: {}", st.error().to_string());
    }
  }
  return stop_status_;
}

std::string Server::metrics_text() const {
  std::string text = node_->metrics_text();
  PromWriter w;
  w.gauge("strata_server_connections", "Open client connections", {},
          double(counters_.connections_open.load()));
  w.counter("strata_server_connections_accepted_total", "Client connections accepted", {},
            double(counters_.connections_accepted.load()));
  w.gauge("strata_server_publishers", "Declared publishers", {},
          double(counters_.publishers.load()));
  w.gauge("strata_server_consumers", "Subscriptions", {}, double(counters_.consumers.load()));
  w.counter("strata_server_messages_in_total", "Messages received in Publish frames", {},
            double(counters_.messages_in.load()));
  w.counter("strata_server_messages_confirmed_total", "Publishing ids confirmed", {},
            double(counters_.messages_confirmed.load()));
  w.counter("strata_server_chunks_out_total", "Chunks delivered (Deliver frames)", {},
            double(counters_.chunks_out.load()));
  w.counter("strata_server_chunks_joined_total",
            "Stored chunks delivered inside another chunk's Deliver (server.coalesce_bytes)", {},
            double(counters_.chunks_joined.load()));
  w.counter("strata_server_bytes_out_total", "Bytes of Deliver frames", {},
            double(counters_.bytes_out.load()));
  w.counter("strata_server_replica_remote_chunks_total",
            "Chunks replica subscriptions read from the bucket", {},
            double(counters_.replica_remote_chunks.load()));
  w.counter("strata_server_replica_forwarded_chunks_total",
            "Chunks replica subscriptions forwarded from owners", {},
            double(counters_.replica_forwarded_chunks.load()));
  w.counter("strata_server_replica_links_total", "Subscriptions replicas made at owners", {},
            double(counters_.replica_links.load()));
  w.counter("strata_server_protocol_errors_total", "Frames refused (malformed, out of order)", {},
            double(counters_.protocol_errors.load()));
  return text + w.text();
}

nlohmann::json Server::status_json() const {
  nlohmann::json j = node_->status_json();
  if (ownership_) j["cluster"] = ownership_->status_json();
  j["server"] = {
      {"listen", fmt::format("{}:{}", host_, port_)},
      {"advertised", fmt::format("{}:{}", advertised_host(), advertised_port())},
      {"connections", counters_.connections_open.load()},
      {"publishers", counters_.publishers.load()},
      {"consumers", counters_.consumers.load()},
      {"messages_in", counters_.messages_in.load()},
      {"messages_confirmed", counters_.messages_confirmed.load()},
      {"chunks_out", counters_.chunks_out.load()},
      {"chunks_joined", counters_.chunks_joined.load()},
      {"replica_remote_chunks", counters_.replica_remote_chunks.load()},
      {"replica_forwarded_chunks", counters_.replica_forwarded_chunks.load()},
      {"replica_links", counters_.replica_links.load()},
  };
  return j;
}

}  // namespace strata::server
