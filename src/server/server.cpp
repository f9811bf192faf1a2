#include "server/server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "catalog/catalog.h"
#include "common/fs.h"
#include "common/stream_name.h"
#include "node/catalog_open.h"
#include "node/node.h"
#include "server/access_admin.h"
#include "server/access_policy.h"
#include "server/cluster_follow.h"
#include "server/connection_registry.h"
#include "server/listener.h"
#include "server/management_cluster.h"
#include "server/management_streams.h"
#include "server/replica_copies.h"
#include "server/served_streams.h"
#include "server/server_limits.h"
#include "server/server_metrics.h"
#include "server/stream_history.h"
#include "server/stream_ops.h"
#include "server/tls_context.h"
#include "server/tracked_offsets.h"
#include "server/transport.h"

namespace strata::server {

// Members in the order they are made; destroyed the other way round, so
// that whatever holds strands or timers of the runtime goes before it.
struct Server::Impl {
  explicit Impl(ServeConfig c) : cfg(std::move(c)), registry(cfg.server.max_connections) {
    counters.outbound.limit = cfg.server.max_buffered_bytes;
  }

  Status start();
  Status open_state();
  Status join_cluster();
  // Connection::describe of every open connection, in id order; one that
  // does not answer within a second (its strand stuck) is left out.
  nlohmann::json connections_json();
  // Server::status_json.
  nlohmann::json status_json() const;
  std::vector<ClientTally> client_tallies();
  // Every stream and the settings it was created with: a cluster's from
  // the catalog (any node's streams), a single node's from its data.
  Result<std::vector<std::pair<std::string, node::StreamSettings>>> stream_definitions();
  // OK unless the vhost of `stored` is at its max-queues limit and the
  // stream is not one of its streams already (a create of an existing one
  // is answered as such).
  Status vhost_has_room(const std::string& stored);
  void on_accept(asio::ip::tcp::socket socket, Strand strand, bool tls);
  // The listener clients find the node on: the plain one, unless TLS only.
  const Listener& front() const { return listener ? *listener : *tls_listener; }
  Advertised tls_advertised() const;
  Status stop();
  std::string advertised_host() const;
  uint32_t advertised_port() const;
  // "host:port" of those.
  std::string advertised_address() const;

  const ServeConfig cfg;
  ServerCounters counters;
  LoginThrottle logins;
  ConnectionQuota quota{cfg.server.max_connections_per_user, cfg.server.max_connections_per_vhost};
  std::shared_ptr<node::Runtime> runtime;
  std::unique_ptr<node::Node> node;
  std::unique_ptr<OffsetStore> offsets;
  std::unique_ptr<SuperStreams> supers;
  std::unique_ptr<ServedStreams> served;
  std::unique_ptr<StreamOps> ops;
  std::unique_ptr<ClusterOffsets> cluster_offsets;
  std::unique_ptr<cluster::Ownership> ownership;
  // cluster.replica_copies: this node's copies of the streams others own.
  std::shared_ptr<ReplicaCopies> copies;
  std::unique_ptr<TrackedOffsets> tracked;
  std::unique_ptr<SacCoordinator> sac;
  ConnectionRegistry registry;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Listener> tls_listener;
  std::unique_ptr<TlsContexts> tls;
  std::unique_ptr<AccessPolicy> access;
  // The etcd client of a cluster node (null on a single node).
  std::shared_ptr<etcd::EtcdClient> etcd;
  std::unique_ptr<AccessAdmin> access_admin;
  ApiCounters api_counters;
  ApiNode api_node;
  // The last hour the console charts (stream_history.h), sampled by
  // history_thread while the node has an HTTP endpoint.
  StreamHistory history{kHistoryWindowMs};
  std::thread history_thread;
  std::mutex history_mu;
  std::condition_variable history_cv;
  bool history_stop = false;
  void sample_history();
  ConnectionEnv env;

  std::mutex stop_mu;
  std::atomic<const char*> stage{""};
  bool stopped = false;
  Status stop_status;
};

Status Server::Impl::start() {
  // One event loop and one blocking pool for the whole process
  // (node/runtime.h): connections, appends and readers run on the node's.
  node::RuntimeOptions ro = node::runtime_options(cfg.node);
  ro.io_threads = std::max(ro.io_threads, cfg.server.threads);
  runtime = node::Runtime::start(ro);
  STRATA_TRY(open_state());
  if (cfg.tls.enabled()) {
    // A cluster's nodes dial each other over TLS with a client context
    // made (and reloaded) with the listener's.
    auto t = TlsContexts::make(cfg.tls, cfg.cluster.enabled && cfg.cluster.peer_tls);
    if (!t.ok()) return std::move(t).error().with_context("serve");
    tls = std::move(t).value();
    STRATA_ASSIGN_OR_RETURN(tls_listener, Listener::open(runtime->io(), cfg.tls.listen));
  }
  if (!cfg.tls.only) {
    STRATA_ASSIGN_OR_RETURN(listener, Listener::open(runtime->io(), cfg.server.listen));
  }
  StreamOpsDeps d;
  d.node = node.get();
  d.served = served.get();
  d.supers = supers.get();
  d.offsets = offsets.get();
  d.lease_ttl_ms = cfg.cluster.lease_ttl_ms;
  d.advertised = Advertised{advertised_host(), advertised_port()};
  d.may_create = [this](const std::string& name) { return vhost_has_room(name); };
  d.vhost_exists = [this](const std::string& name) {
    const std::string_view vhost = split_stream_name(name).vhost;
    return vhost == kDefaultVhost || !access || access->current()->has_vhost(vhost);
  };
  if (etcd) {
    d.vhost_exists_now = [this, known = d.vhost_exists](const std::string& name) {
      // A read of etcd after the create: a deletion through any node
      // committed before this create's stream could be listed shows here
      // ("/" is never deleted: no read for it).
      if (access && split_stream_name(name).vhost != kDefaultVhost) {
        if (Status st = access_admin->refresh(); !st.ok()) {
          spdlog::warn("serve: cannot re-read the vhosts after creating {}: {}; kept as created",
                       printable_stream(name), st.error().to_string());
        }
      }
      return known(name);
    };
  }
  ops = std::make_unique<StreamOps>(std::move(d));
  // After the bind: the address a cluster node registers is the one
  // clients reach.
  if (cfg.cluster.enabled) STRATA_TRY(join_cluster());
  // One node on the etcd catalog: its consumers' offsets are written to
  // etcd as well, so that a node on a new disk (which serves the catalog's
  // streams again from the bucket) answers QueryOffset as before; the
  // local store keeps answering what was stored before etcd had it.
  const bool offsets_in_etcd_too = !cfg.cluster.enabled && cfg.node.catalog_backend == "etcd";
  if (offsets_in_etcd_too) {
    auto client = etcd::EtcdClient::open(node::etcd_client_options(cfg.node.catalog_etcd));
    if (!client.ok()) return std::move(client).error().with_context("serve: offsets: etcd client");
    ClusterOffsetsOptions co;
    co.ns = cfg.node.catalog_etcd.ns;
    cluster_offsets =
        ClusterOffsets::start(std::shared_ptr<etcd::EtcdClient>(std::move(client).value()), co);
    ops->attach_offsets(cluster_offsets.get());
  }
  tracked = std::make_unique<TrackedOffsets>(*node, *served, *offsets, cluster_offsets.get(),
                                             offsets_in_etcd_too);
  sac = std::make_unique<SacCoordinator>(
      runtime->io(), std::chrono::milliseconds(cfg.server.consumer_update_timeout_ms),
      [this](const SacEffect& e) {
        // Posted under the coordinator's lock, so each connection gets its
        // effects in the order the groups produced them.
        if (auto c = registry.find(e.consumer.connection)) c->sac_effect(e);
      });
  env.settings = &cfg.server;
  access = std::make_unique<AccessPolicy>(cfg.server.users.access);
  env.access = access.get();
  if (cfg.cluster.enabled) {
    env.peer_users = cfg.cluster.peer_users;
    if (env.peer_users.empty()) env.peer_users.push_back(cfg.server.users.peer.user);
  }
  // Live changes to the users sit beside the catalog: in etcd for a
  // cluster (every node polls them), in the data directory otherwise.
  access_admin =
      std::make_unique<AccessAdmin>(access.get(),
                                    etcd ? etcd_access_store(etcd, cfg.node.catalog_etcd.ns)
                                         : file_access_store(posix_fs(), cfg.node.data_dir),
                                    cfg.server.users.access, [this] {
                                      for (auto& c : registry.all()) c->recheck_access();
                                    });
  if (auto st = access_admin->start(etcd ? kAccessPollInterval : std::chrono::milliseconds(0));
      !st.ok()) {
    return std::move(st).error().with_context("serve");
  }
  api_node.list = [this] { return stream_definitions(); };
  api_node.create = [this](const std::string& name, const node::StreamSettings& settings) {
    return ops->create_stream(name, settings);
  };
  api_node.connections = [this] { return connections_json(); };
  api_node.tallies = [this] { return client_tallies(); };
  api_node.history = &history;
  api_node.history_interval_ms = cfg.server.history_interval_ms;

  api_node.stream_status = [this] { return node->status_json()["streams"]; };
  api_node.remove = [this](const std::string& name) { return ops->delete_stream(name); };
  api_node.alter = [this](const std::string& name, const node::StreamSettings& to) {
    return ops->alter_stream(name, to);
  };
  api_node.settings = [this](const std::string& name) { return ops->stream_settings(name); };
  api_node.super_streams = [this] { return supers->all(); };
  api_node.create_super_stream = [this](const SuperStream& s, const node::StreamSettings& st) {
    return ops->create_super_stream(s, st);
  };
  api_node.delete_super_stream = [this](const std::string& name) {
    return ops->delete_super_stream(name);
  };
  api_node.overview = [this] {
    std::vector<std::pair<std::string, std::string>> ls;
    if (listener) ls.emplace_back("stream", advertised_address());
    if (tls_listener) {
      ls.emplace_back("stream/ssl",
                      fmt::format("{}:{}", tls_advertised().host, tls_advertised().port));
    }
    const std::string name = cfg.cluster.enabled ? cfg.cluster.node_id : advertised_address();
    return overview_document(name, ls, status_json());
  };
  api_node.process = [this] { return node->process_figures(); };
  api_node.cluster = [this] {
    if (ownership) return cluster_document(ownership->status_json());
    return single_node_cluster(advertised_address(), node->streams());
  };
  api_node.store_offset = [this](const std::string& stream, const std::string& reference,
                                 uint64_t offset) {
    return tracked->store(stream, reference, offset);
  };
  api_node.query_offset = [this](const std::string& stream, const std::string& reference) {
    return tracked->query(stream, reference);
  };
  api_node.close_connection = [this](uint64_t id, const std::string& why) {
    auto c = registry.find(id);
    if (!c) return false;
    c->close_by_operator(why);
    return true;
  };
  env.counters = &counters;
  env.logins = &logins;
  env.quota = &quota;
  env.tasks = runtime->tasks();
  env.streams = served.get();
  env.replicas = served.get();
  env.admin = ops.get();
  env.offsets = tracked.get();
  env.sac = sac.get();
  env.on_closed = [this](uint64_t id) {
    if (quota.release(id)) counters.connections_established -= 1;
    if (registry.remove(id)) counters.connections_open -= 1;
  };
  if (listener) {
    listener->start([this](asio::ip::tcp::socket s, Strand strand) {
      on_accept(std::move(s), std::move(strand), /*tls=*/false);
    });
  }
  if (tls_listener) {
    tls_listener->start([this](asio::ip::tcp::socket s, Strand strand) {
      on_accept(std::move(s), std::move(strand), /*tls=*/true);
    });
  }
  // Last: a sample reads everything started above.
  if (!cfg.node.http_listen.empty()) {
    history_thread = std::thread([this] {
      std::unique_lock l(history_mu);
      const auto every = std::chrono::milliseconds(cfg.server.history_interval_ms);
      while (!history_cv.wait_for(l, every, [&] { return history_stop; })) {
        l.unlock();
        sample_history();
        l.lock();
      }
    });
  }
  return Status::OK();
}

// The node and what the server keeps beside it in the data directory.
Status Server::Impl::open_state() {
  auto n = node::Node::open(cfg.node, runtime);
  if (!n.ok()) return std::move(n).error().with_context("serve: opening the node");
  node = std::move(n).value();
  auto o = OffsetStore::open(path_join(cfg.node.data_dir, "tracking"));
  if (!o.ok()) return std::move(o).error().with_context("serve: offset tracking");
  offsets = std::move(o).value();
  // A cluster's super streams are the cluster's (etcd), a single node's
  // its own (files under the data directory).
  std::unique_ptr<SuperStreamStore> store;
  if (cfg.cluster.enabled) {
    auto client = etcd::EtcdClient::open(node::etcd_client_options(cfg.node.catalog_etcd));
    if (!client.ok()) return std::move(client).error().with_context("serve: cluster: etcd client");
    etcd = std::move(client).value();
    store = etcd_super_stream_store(etcd, cfg.node.catalog_etcd.ns);
  } else {
    store = file_super_stream_store(path_join(cfg.node.data_dir, "super_streams"), posix_fs());
  }
  auto s = SuperStreams::open(std::move(store));
  if (!s.ok()) return std::move(s).error().with_context("serve: super streams");
  supers = std::move(s).value();
  served = std::make_unique<ServedStreams>(*node, *supers, cfg, counters);
  return Status::OK();
}

Status Server::Impl::join_cluster() {
  const auto& e = cfg.node.catalog_etcd;
  std::shared_ptr<etcd::EtcdClient> shared = etcd;  // opened with the super streams
  if (cfg.cluster.local_confirms_asked) {
    spdlog::warn(
        "serve: tiering.confirm is \"local\" in a cluster: a publish is confirmed once this "
        "node's disk holds it, and a takeover after this node dies or loses its lease drops what "
        "it had not uploaded (counted as node.takeover_dropped_offsets); \"remote\" confirms "
        "only what survives losing any node");
  }
  // The listeners this node has: peers and clients reach it on them.
  auto oc = ownership_config(cfg.cluster, cfg.node, listener ? advertised_address() : "");
  if (tls_listener) {
    oc.tls_advertise = fmt::format("{}:{}", tls_advertised().host, tls_advertised().port);
  }
  oc.peer_tls = cfg.cluster.peer_tls;
  // Appends and local confirms check the lease's end at the moment they
  // happen (node/stream_handle.h, lease_ended): no lease yet, no writes.
  oc.lease_valid_until = node->lease_fence();
  oc.lease_valid_until->store(0, std::memory_order_release);
  // Alterations and super streams made on other nodes.
  follow_cluster_keys(oc, *node, *supers, runtime->pool());
  oc.on_release = [this](const std::string& name) {
    spdlog::info("serve: stream {}: no longer served here (ownership lost)", name);
    // The same as a deletion for this node's clients: publishers and
    // consumers dropped with a MetadataUpdate; stored offsets stay.
    served->retire(name, /*drain=*/false);
  };
  // What is appended before the node persists the stream is handed over
  // with it; nothing may be appended after.
  oc.on_handoff = [this](const std::string& name) { served->retire(name, /*drain=*/true); };
  // A deletion another node asked for, of a stream served here.
  oc.on_remove = [this](const std::string& name) { return ops->delete_stream(name); };
  // Consumer offsets follow the stream: kept in etcd, not under tracking/.
  ClusterOffsetsOptions co;
  co.ns = e.ns;
  cluster_offsets = ClusterOffsets::start(shared, co);
  auto own = cluster::Ownership::start(std::move(oc), shared, node.get());
  if (!own.ok()) return std::move(own).error().with_context("serve: cluster");
  ownership = std::move(own).value();
  served->attach_cluster(ownership.get(), cfg.cluster.peer_tls ? tls.get() : nullptr);
  ops->attach_cluster(ownership.get(), cluster_offsets.get());
  if (cfg.cluster.replica_copies) {
    const auto every = std::chrono::milliseconds(
        std::max<int64_t>(cfg.cluster.lease_ttl_ms / 8, kReplicaOwnerCheckMin.count()));
    copies = ReplicaCopies::start(*served, *node, *ownership, asio::make_strand(runtime->io()),
                                  runtime->tasks(), every);
  }
  return Status::OK();
}

// What `ask` (describe or tally) hands back from every open connection, each
// taken on its own strand; a connection that does not answer within
// kDescribeWait is left out.
template <class T, class Ask>
std::vector<T> gather(const std::vector<std::shared_ptr<Connection>>& conns, Ask ask) {
  struct Gathered {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<T> got;
    size_t left = 0;
  };
  auto g = std::make_shared<Gathered>();
  g->left = conns.size();
  for (const auto& c : conns) {
    ask(*c, [g](T t) {
      std::lock_guard l(g->mu);
      g->got.push_back(std::move(t));
      g->left -= 1;
      g->cv.notify_all();
    });
  }
  std::unique_lock l(g->mu);
  g->cv.wait_for(l, kDescribeWait, [&] { return g->left == 0; });
  return g->got;
}

// As RabbitMQ checks max-queues: count, then create (two creates racing
// for the last place may both get it).
Status Server::Impl::vhost_has_room(const std::string& stored) {
  const StreamPlace place = split_stream_name(stored);
  const auth::VHost* v = access->current()->find_vhost(place.vhost);
  if (v == nullptr || !v->max_queues) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(auto all, stream_definitions());
  size_t in_vhost = 0;
  for (const auto& [name, settings] : all) {
    if (name == stored) return Status::OK();
    if (split_stream_name(name).vhost == place.vhost) ++in_vhost;
  }
  if (in_vhost < *v->max_queues) return Status::OK();
  return Error(Errc::invalid_argument,
               fmt::format("stream {}: vhost '{}' has reached its max-queues limit ({} streams)",
                           printable_stream(stored), printable_name(place.vhost), *v->max_queues));
}

nlohmann::json Server::Impl::connections_json() {
  auto got = gather<nlohmann::json>(registry.all(),
                                    [](Connection& c, auto done) { c.describe(std::move(done)); });
  std::sort(got.begin(), got.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["id"].get<uint64_t>() < b["id"].get<uint64_t>();
  });
  return nlohmann::json(got);
}

void Server::Impl::sample_history() {
  auto entries = stream_entries(api_node, "");
  if (!entries.ok()) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::map<std::string, HistorySample> round;
  for (const auto& e : *entries) {
    if (!e.value("served_here", false)) continue;
    // Keyed by the stored name, as /api/history?stream=&vhost= asks.
    round[qualified_stream_name(e["vhost"].get<std::string>(), e["name"].get<std::string>())] =
        sample_of_entry(now, e);
  }
  history.record(now, round);
}

std::vector<ClientTally> Server::Impl::client_tallies() {
  return gather<ClientTally>(registry.all(),
                             [](Connection& c, auto done) { c.tally(std::move(done)); });
}

Result<std::vector<std::pair<std::string, node::StreamSettings>>>
Server::Impl::stream_definitions() {
  std::vector<std::string> names;
  if (ownership) {
    STRATA_ASSIGN_OR_RETURN(auto entries, node->catalog().list());
    for (auto& e : entries) names.push_back(std::move(e.stream));
  } else {
    names = node->streams();
  }
  std::vector<std::pair<std::string, node::StreamSettings>> out;
  for (auto& name : names) {
    auto s = ownership ? node->catalog_stream_settings(name) : node->stream_settings(name);
    // Deleted meanwhile, or created before streams kept their settings.
    if (!s.ok() && s.error().code != Errc::not_found) return std::move(s).error();
    out.emplace_back(std::move(name), s.ok() ? *s : node::StreamSettings{});
  }
  return out;
}

void Server::Impl::on_accept(asio::ip::tcp::socket socket, Strand strand, bool over_tls) {
  auto id = registry.reserve();
  if (!id) {
    // Full or stopping: the socket closes as it goes. Logged once in a
    // while: a flood of refusals must not flood the log too.
    const uint64_t n = ++counters.connections_refused_limit;
    if ((n & (n - 1)) == 0) {
      spdlog::warn(
          "serve: connection refused: {} connections open (server.max_connections) or "
          "stopping; {} refused so far",
          registry.size(), n);
    }
    return;
  }
  std::shared_ptr<Connection> c;
  if (over_tls) {
    // The context in force now; a reload later changes it for later
    // connections only.
    auto current = tls->current();
    c = Connection::make(env, *id, strand,
                         tls_transport(std::move(socket), strand, std::move(current.context)),
                         ConnectionOrigin{tls_advertised(), current.settings->cert_login_from});
    counters.tls_connections += 1;
  } else {
    c = Connection::make(env, *id, strand, plain_transport(std::move(socket), strand),
                         ConnectionOrigin{{advertised_host(), advertised_port()}, ""});
  }
  registry.add(c);
  counters.connections_accepted += 1;
  counters.connections_open += 1;
  c->start();
}

std::string Server::Impl::advertised_host() const {
  if (!cfg.server.advertised_host.empty()) return cfg.server.advertised_host;
  const std::string& host = listener || tls_listener ? front().host() : "";
  // A wildcard listener is no address to connect to.
  if (host == "0.0.0.0" || host == "::") return "localhost";
  return host;
}

uint32_t Server::Impl::advertised_port() const {
  if (cfg.server.advertised_port != 0) return cfg.server.advertised_port;
  return listener || tls_listener ? front().port() : 0;
}

std::string Server::Impl::advertised_address() const {
  return fmt::format("{}:{}", advertised_host(), advertised_port());
}

Advertised Server::Impl::tls_advertised() const {
  uint32_t port = cfg.tls.advertised_port;
  if (port == 0 && tls_listener) port = tls_listener->port();
  return Advertised{advertised_host(), port, /*tls=*/true};
}

Status Server::Impl::stop() {
  std::lock_guard sl(stop_mu);
  if (stopped) return stop_status;
  stopped = true;
  {
    std::lock_guard l(history_mu);
    history_stop = true;
  }
  history_cv.notify_all();
  if (history_thread.joinable()) history_thread.join();
  stage = "closing the listener";
  auto conns = registry.stop_accepting();
  auto streams = served ? served->all() : std::vector<std::shared_ptr<ServedStream>>{};
  if (listener) listener->close();
  if (tls_listener) tls_listener->close();
  // What was handed to the log is appended and confirmed before the
  // connections go: one deadline for all streams, so that many streams do
  // not add up their waits.
  stage = "draining appends";
  const auto drain_deadline = std::chrono::steady_clock::now() + kShutdownDrainWait;
  for (auto& s : streams) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        drain_deadline - std::chrono::steady_clock::now());
    if (!s->appender().wait_idle(std::max(left, std::chrono::milliseconds(0)))) {
      spdlog::warn("serve: stream {}: appends still running at shutdown", s->name());
    }
  }
  stage = "closing connections";
  for (auto& c : conns) c->shutdown();
  conns.clear();
  // Let the last confirms and the connections' closes go out.
  registry.await_empty(kShutdownCloseWait);
  stage = "retiring streams";
  for (auto& s : streams) s->retire();
  if (sac) sac->stop();
  if (access_admin) access_admin->stop();
  if (cluster_offsets) cluster_offsets->close();
  // Revokes the lease: other nodes take this node's streams over at once.
  stage = "stopping replica copies";
  if (copies) copies->stop();
  stage = "giving up ownership";
  if (ownership) ownership->stop();
  // Closes the uploaders (on the runtime, still running), then stops the
  // runtime: in-flight tasks given the pool's grace, the event loop's
  // threads joined, what connections left queued run out or dropped.
  stage = "closing the node";
  if (node) stop_status = node->close();
  stage = "stopping the event loop";
  if (runtime) runtime->stop();
  streams.clear();
  if (served) served->clear();
  stage = "closing the offset store";
  if (offsets) {
    if (auto st = offsets->close(); !st.ok()) {
      spdlog::error("serve: closing the offset store: {}", st.error().to_string());
    }
  }
  stage = "done";
  return stop_status;
}

// ---- Server ----

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Server>> Server::start(ServeConfig cfg) {
  if (auto hp = parse_host_port("listen", cfg.server.listen); !hp.ok()) return hp.error();
  std::unique_ptr<Server> s(new Server(std::make_unique<Impl>(std::move(cfg))));
  STRATA_TRY(s->impl_->start());
  return s;
}

Server::~Server() {
  (void)stop();
}

const std::string& Server::host() const {
  return impl_->front().host();
}

uint16_t Server::port() const {
  return impl_->front().port();
}

uint16_t Server::tls_port() const {
  return impl_->tls_listener ? impl_->tls_listener->port() : 0;
}

Status Server::reload_tls(const TlsSettings& s) {
  if (!impl_->tls) return Status::OK();
  if (s.listen != impl_->cfg.tls.listen) {
    spdlog::warn("serve: the TLS listener's address ({}) changes only at restart",
                 impl_->cfg.tls.listen);
  }
  STRATA_TRY(impl_->tls->reload(s));
  spdlog::info("serve: TLS certificate and settings reloaded ({}, {})", s.cert_file, s.key_file);
  return Status::OK();
}

Status Server::stop() {
  return impl_->stop();
}

void Server::reload_users(const UserSettings& users) {
  impl_->access_admin->set_base(users.access);
  const auto a = impl_->access->current();
  spdlog::info(
      "serve: users reloaded: {} users, {} vhosts, {} permission entries (with the live changes "
      "in {})",
      a->users().size(), a->vhosts().size(), a->permissions().size(),
      impl_->access_admin->store_where());
  if (users.peer.user != impl_->cfg.server.users.peer.user) {
    spdlog::warn("serve: the node's own login (user '{}') changes only at restart",
                 impl_->cfg.server.users.peer.user);
  }
}

ApiReply Server::api(const ApiRequest& r) {
  return handle_management_api(*impl_->access_admin, impl_->api_counters, impl_->api_node, r);
}

const char* Server::stop_stage() const {
  return impl_->stage.load();
}

std::string Server::metrics_text() const {
  // Per stream served here (0 without clients, so a series does not vanish
  // with its last consumer) and per stream other nodes serve that has
  // clients here (replica subscriptions).
  auto clients = stream_clients(impl_->client_tallies());
  for (const auto& name : impl_->node->streams()) clients.try_emplace(name);
  ServerMetricsInput in{impl_->counters, clients};
  in.tls_reloads = impl_->tls ? impl_->tls->reloads() : 0;
  in.api_auth_failures = impl_->api_counters.auth_failures.load();
  in.access_changes = impl_->api_counters.changes.load();
  in.consumer_group_series = impl_->cfg.server.consumer_group_metrics;
  in.disk = impl_->node->disk();
  return impl_->node->metrics_text() + server_metrics_text(in) +
         (impl_->ownership
              ? impl_->ownership->metrics_text() + copies_metrics_text(impl_->copies.get())
              : "");
}

nlohmann::json Server::status_json() const {
  return impl_->status_json();
}

nlohmann::json Server::Impl::status_json() const {
  const Impl& m = *this;
  const ServerCounters& c = m.counters;
  nlohmann::json j = m.node->status_json();
  if (m.ownership) {
    j["cluster"] = m.ownership->status_json();
    // Whether the links to the other nodes are TLS (cluster.peer_tls).
    j["cluster"]["peer_tls"] = m.cfg.cluster.peer_tls;
    j["cluster"]["peer_auth"] = m.cfg.cluster.peer_auth;
    j["cluster"]["peer_user"] = m.cfg.server.users.peer.user;
    j["cluster"]["peer_users"] = m.env.peer_users;
  }
  // Replicated streams served here: how far a majority holds them.
  for (const auto& s : m.served->all()) {
    if (!s->replica_acks()) continue;
    const std::string& name = s->name();
    if (j["streams"].contains(name))
      j["streams"][name]["replication"] = s->replica_acks()->status();
  }
  if (m.copies) {
    j["cluster"]["copies"] = {{"streams", m.copies->copying()},
                              {"copied_chunks", m.copies->counters().copied_chunks.load()},
                              {"dropped_copies", m.copies->counters().dropped_copies.load()}};
  }
  j["server"] = {
      {"listen", fmt::format("{}:{}", front().host(), front().port())},
      {"advertised", m.advertised_address()},
      {"connections", c.connections_open.load()},
      {"publishers", c.publishers.load()},
      {"consumers", c.consumers.load()},
      {"messages_in", c.messages_in.load()},
      {"messages_confirmed", c.messages_confirmed.load()},
      {"messages_out", c.records_out.load()},
      {"chunks_out", c.chunks_out.load()},
      {"chunks_joined", c.chunks_joined.load()},
      {"replica_remote_chunks", c.replica_remote_chunks.load()},
      {"replica_forwarded_chunks", c.replica_forwarded_chunks.load()},
      {"replica_links", c.replica_links.load()},
      {"protocol_errors", c.protocol_errors.load()},
      {"auth_failures", c.auth_failures.load()},
      {"handshake_timeouts", c.handshake_timeouts.load()},
      {"frames_too_large", c.frames_too_large.load()},
      {"partial_frame_timeouts", c.partial_frame_timeouts.load()},
      {"send_timeouts", c.send_timeouts.load()},
      {"access_refused", c.access_refused.load()},
      {"connections_refused_limit", c.connections_refused_limit.load()},
      {"buffered",
       {{"bytes", c.outbound.bytes.load()},
        {"limit", c.outbound.limit.load()},
        {"backlog_pauses", c.outbound.backlog_pauses.load()},
        {"limit_pauses", c.outbound.limit_pauses.load()}}},
  };
  if (m.access_admin) {
    const auto a = m.access->current();
    j["server"]["users"] = {
        {"users", a->users().size()},
        {"permissions", a->permissions().size()},
        {"live_changes", m.access_admin->store_where()},
        {"live_changes_version", m.access_admin->version()},
    };
  }
  if (m.tls) {
    auto cur = m.tls->current();
    // One reading of each counter, so the three fields agree.
    const uint64_t kernel_send = c.tls_kernel_send.load();
    const uint64_t tls_connections = c.tls_connections.load();
    j["server"]["tls"] = {
        {"listen", fmt::format("{}:{}", m.tls_listener->host(), m.tls_listener->port())},
        {"advertised", fmt::format("{}:{}", m.tls_advertised().host, m.tls_advertised().port)},
        {"only", m.cfg.tls.only},
        {"versions", cur.settings->versions},
        {"verify_peer", cur.settings->verify_peer},
        {"connections", tls_connections},
        {"handshake_failures", c.tls_handshake_failures.load()},
        {"reloads", m.tls->reloads()},
        // Which delivery path TLS connections took (server/transport.h):
        // with kernel TLS bodies go by SSL_sendfile; without it they are
        // read into memory and encrypted in user space.
        {"kernel_send_connections", kernel_send},
        {"sendfile_bytes", c.tls_sendfile_bytes.load()},
        {"zero_copy", kernel_send > 0},
        {"delivery", kernel_send == 0                 ? "copy (user-space TLS)"
                     : kernel_send >= tls_connections ? "sendfile (kernel TLS)"
                                                      : "sendfile (kernel TLS) where the kernel "
                                                        "took the records, else copy"},
    };
  }
  return j;
}

}  // namespace strata::server
