#include "cluster/ownership.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/bind_executor.hpp>
#include <asio/post.hpp>
#include <future>

#include "cluster/cluster_limits.h"
#include "cluster/cluster_status.h"
#include "cluster/ownership_impl.h"
#include "node/node.h"

namespace strata::cluster {

using json = nlohmann::json;
using std::chrono::milliseconds;

Status validate(const OwnershipConfig& c) {
  if (c.node_id.empty() || c.node_id.size() > kMaxNodeIdBytes ||
      c.node_id.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string::npos) {
    return Error(Errc::invalid_argument,
                 fmt::format("cluster.node_id: '{}' is not 1..{} characters of [A-Za-z0-9._-]",
                             c.node_id, kMaxNodeIdBytes));
  }
  if (c.timing.lease_ttl_ms < kLeaseTtlUnitMs || c.timing.lease_ttl_ms % kLeaseTtlUnitMs != 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("cluster.lease_ttl_ms: {} is not a whole number of seconds >= {} "
                             "(etcd leases have a TTL in seconds)",
                             c.timing.lease_ttl_ms, kLeaseTtlUnitMs));
  }
  auto t = c.timing.resolved();
  if (t.safety_margin_ms >= t.lease_ttl_ms ||
      t.keepalive_interval_ms >= t.lease_ttl_ms - t.safety_margin_ms) {
    return Error(Errc::invalid_argument,
                 fmt::format("cluster: keepalive interval {} ms and safety margin {} ms leave no "
                             "time within the lease TTL of {} ms",
                             t.keepalive_interval_ms, t.safety_margin_ms, t.lease_ttl_ms));
  }
  return Status::OK();
}

// ---- the public face: every call goes to Impl ----

Ownership::Ownership(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Ownership>> Ownership::start(OwnershipConfig cfg,
                                                    std::shared_ptr<etcd::EtcdClient> client,
                                                    node::Node* node) {
  STRATA_TRY(validate(cfg));
  std::unique_ptr<Ownership> o(
      new Ownership(std::make_unique<Impl>(std::move(cfg), std::move(client), node)));
  o->impl_->begin();
  return o;
}

Ownership::~Ownership() {
  stop();
}

void Ownership::stop() {
  impl_->stop();
}
bool Ownership::serving(const std::string& stream) const {
  return impl_->serving(stream);
}
std::string Ownership::owner_address(const std::string& stream) const {
  return impl_->owner_address(stream);
}
ClusterView Ownership::view() const {
  return impl_->view();
}
Result<std::string> Ownership::await_owner(const std::string& stream, milliseconds timeout) {
  return impl_->await_owner(stream, timeout);
}
Status Ownership::request_deletion(const std::string& stream, milliseconds timeout) {
  return impl_->request_deletion(stream, timeout);
}
json Ownership::status_json() const {
  return impl_->status_json();
}
std::string Ownership::metrics_text() const {
  return impl_->metrics_text();
}
uint64_t Ownership::fences() const {
  return impl_->fences();
}
uint64_t Ownership::writer_fences() const {
  return impl_->writer_fences();
}
uint64_t Ownership::handoffs() const {
  return impl_->handoffs();
}
const OwnershipConfig& Ownership::config() const {
  return impl_->config();
}

// ---- the shell's life ----

Ownership::Impl::Impl(OwnershipConfig cfg, std::shared_ptr<etcd::EtcdClient> client,
                      node::Node* node)
    : cfg_(std::move(cfg)),
      client_(std::move(client)),
      node_(node),
      core_(cfg_.node_id, cfg_.timing) {}

void Ownership::Impl::begin() {
  BlockingPoolOptions po;
  po.threads = kTaskPoolThreads;
  po.max_threads = kTaskPoolMaxThreads;
  po.stop_grace = kTaskPoolStopGrace;
  pool_ = std::make_shared<BlockingPool>(po);
  work_.emplace(asio::make_work_guard(io_));
  thread_ = std::thread([this] { io_.run(); });
  asio::post(strand_, [this] {
    resync();
    execute(core_.start(now_ms()));
    arm_tick();
  });
}

void Ownership::Impl::stop() {
  {
    std::lock_guard l(mu_);
    if (stopped_ || !thread_.joinable()) return;
  }
  {
    std::lock_guard l(fence_sink_->mu);
    fence_sink_->open = false;
  }
  std::promise<int64_t> done;
  asio::post(strand_, [this, &done] {
    // The core's last list: a Close per stream, then the Revoke of the
    // lease, which is done here, synchronously, after the strand stops.
    int64_t lease = 0;
    for (const Effect& e : core_.stop()) {
      if (const auto* c = std::get_if<effect::Close>(&e)) node_->release_stream(c->stream);
      if (const auto* r = std::get_if<effect::Revoke>(&e)) lease = r->lease;
    }
    tick_.cancel();
    ++watch_generation_;
    {
      std::lock_guard l(mu_);
      stopped_ = true;
      owned_.clear();
    }
    done.set_value(lease);
  });
  const int64_t lease = done.get_future().get();
  cv_.notify_all();
  // Revoking deletes our owner keys: other nodes take over without waiting
  // for the TTL.
  if (lease != 0) {
    if (Status s = client_->lease_revoke(lease); !s.ok()) {
      spdlog::warn("cluster: revoking lease {}: {}", lease, s.to_string());
    }
  }
  watch_.reset();
  pool_->stop();
  lifetime_->end();
  work_.reset();
  io_.stop();
  thread_.join();
}

int64_t Ownership::Impl::now_ms() const {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A call may not outlive the time the core waits for it: a keepalive
// that answers after the next one is due is as good as lost.
milliseconds Ownership::Impl::call_deadline() const {
  return std::max(kMinCallDeadline, milliseconds(core_.timing().keepalive_interval_ms));
}

bool Ownership::Impl::stopped() const {
  std::lock_guard l(mu_);
  return stopped_;
}

void Ownership::Impl::arm_tick() {
  const milliseconds tick =
      cfg_.tick_ms > 0 ? milliseconds(cfg_.tick_ms)
                       : std::max(kMinTick, milliseconds(cfg_.timing.lease_ttl_ms / kTicksPerTtl));
  tick_.expires_after(tick);
  tick_.async_wait(asio::bind_executor(strand_, [this](const std::error_code& ec) {
    if (ec || stopped()) return;
    handle(ev::Tick{});
    arm_tick();
  }));
}

void Ownership::Impl::post_event(Event e) {
  asio::post(strand_, [this, e = std::move(e)] { handle(e); });
}

void Ownership::Impl::handle(const Event& e) {
  if (stopped()) return;
  execute(core_.on(e, now_ms()));
}

// ---- for callers ----

bool Ownership::Impl::serving(const std::string& stream) const {
  std::lock_guard l(mu_);
  auto it = owned_.find(stream);
  return it != owned_.end() && it->second == OwnershipCore::StreamState::serving;
}

std::string Ownership::Impl::owner_address(const std::string& stream) const {
  std::lock_guard l(mu_);
  auto it = view_.owners.find(stream);
  if (it == view_.owners.end()) return "";
  auto n = view_.nodes.find(it->second.node_id);
  return n == view_.nodes.end() ? "" : n->second;
}

ClusterView Ownership::Impl::view() const {
  std::lock_guard l(mu_);
  return view_;
}

uint64_t Ownership::Impl::fences() const {
  std::lock_guard l(mu_);
  return fences_;
}

uint64_t Ownership::Impl::handoffs() const {
  std::lock_guard l(mu_);
  return handoffs_;
}

uint64_t Ownership::Impl::writer_fences() const {
  std::lock_guard l(mu_);
  return writer_fences_;
}

Result<std::string> Ownership::Impl::await_owner(const std::string& stream, milliseconds timeout) {
  std::unique_lock l(mu_);
  std::string owner;
  bool ok = cv_.wait_for(l, timeout, [&] {
    auto it = view_.owners.find(stream);
    if (it == view_.owners.end()) return false;
    owner = it->second.node_id;
    if (owner != cfg_.node_id) return true;
    auto o = owned_.find(stream);
    return o != owned_.end() && o->second == OwnershipCore::StreamState::serving;
  });
  if (!ok) {
    return Error(Errc::timeout,
                 fmt::format("no node serves stream {} after {} ms", stream, timeout.count()));
  }
  return owner;
}

Status Ownership::Impl::request_deletion(const std::string& stream, milliseconds timeout) {
  const std::string entry = cfg_.ns + "/streams/" + stream;
  etcd::TxnRequest t;
  t.compare.push_back(etcd::Compare::revision(entry, etcd::CompareTarget::create_revision,
                                              etcd::CompareOp::greater, 0));
  t.success.push_back(etcd::PutOp{cfg_.ns + "/deletions/" + stream, cfg_.node_id, 0});
  STRATA_ASSIGN_OR_RETURN(auto r, client_->txn(t));
  if (!r.succeeded) {
    return Error(Errc::not_found, fmt::format("no stream {} in the catalog", stream));
  }
  std::unique_lock l(mu_);
  // The watch shows the entry gone once the deleting node's remove ran.
  bool gone = cv_.wait_for(l, timeout, [&] {
    return stopped_ || (view_.revision >= r.revision &&
                        !std::binary_search(view_.streams.begin(), view_.streams.end(), stream));
  });
  if (!gone || stopped_) {
    return Error(Errc::timeout,
                 fmt::format("stream {}: its deletion is requested but not done after {} ms; the "
                             "node that takes it finishes it",
                             stream, timeout.count()));
  }
  return Status::OK();
}

json Ownership::Impl::status_json() const {
  std::lock_guard l(mu_);
  json owned = json::object();
  for (const auto& [s, st] : owned_) {
    owned[s] = st == OwnershipCore::StreamState::serving       ? "serving"
               : st == OwnershipCore::StreamState::opening     ? "opening"
               : st == OwnershipCore::StreamState::handing_off ? "handing_off"
                                                               : "acquiring";
  }
  json owners = json::object();
  for (const auto& [s, o] : view_.owners) {
    owners[s] = {{"node", o.node_id}, {"lease", lease_json(o.lease)}};
  }
  // Elections in progress: what each node stood with.
  json candidacies = json::object();
  for (const auto& [s, by_node] : view_.candidacies) {
    for (const auto& [n, c] : by_node) candidacies[s][n] = {{"epoch", c.epoch}, {"next", c.next}};
  }
  return {{"node_id", cfg_.node_id},
          {"advertise", cfg_.advertise},
          {"tls_advertise", cfg_.tls_advertise},
          {"lease", lease_json(lease_)},
          {"fences", fences_},
          {"writer_fences", writer_fences_},
          {"handoffs", handoffs_},
          {"last_fence", last_fence_},
          {"owned", owned},
          {"nodes", view_.nodes},
          {"tls_nodes", view_.tls_nodes},
          // Registered peers with no address of the kind this node dials
          // (cluster.peer_tls differs between them).
          {"unreachable_peers", unreachable_peers_},
          {"owners", owners},
          {"candidacies", candidacies},
          {"revision", view_.revision}};
}

std::string Ownership::Impl::metrics_text() const {
  PromWriter w;
  std::lock_guard l(mu_);
  uint64_t serving = 0;
  for (const auto& [s, st] : owned_) serving += st == OwnershipCore::StreamState::serving;
  w.gauge("strata_cluster_lease_up",
          "1 while the node holds its etcd lease (streams may be served); 0 after it gave it up",
          {}, lease_ != 0 ? 1 : 0);
  w.counter("strata_cluster_fences_total",
            "Times the node stopped every stream for want of a renewed lease", {}, double(fences_));
  w.counter("strata_cluster_writer_fences_total",
            "Streams re-acquired after their uploader was fenced while this node owned them", {},
            double(writer_fences_));
  w.gauge("strata_cluster_streams_serving", "Streams this node owns and serves", {},
          double(serving));
  w.counter("strata_cluster_streams_acquired_total", "Streams this node began serving", {},
            double(streams_acquired_));
  w.counter("strata_cluster_streams_released_total",
            "Streams this node stopped serving (released, handed over, fenced)", {},
            double(streams_released_));
  w.counter("strata_cluster_handoffs_total", "Streams handed over to their first-choice node", {},
            double(handoffs_));
  w.gauge("strata_cluster_nodes", "Nodes registered in the cluster as this node sees them", {},
          double(view_.nodes.size()));
  w.histogram("strata_cluster_etcd_keepalive_seconds",
              "Round trip of the lease keepalives etcd answered", {}, keepalive_rtt_.snapshot());
  return w.text();
}

}  // namespace strata::cluster
