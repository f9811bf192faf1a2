#include "cluster/ownership.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/bind_executor.hpp>
#include <asio/post.hpp>
#include <future>

#include "common/overloaded.h"
#include "node/node.h"

namespace strata::cluster {

using json = nlohmann::json;
using std::chrono::milliseconds;

Status validate(const OwnershipConfig& c) {
  if (c.node_id.empty() || c.node_id.size() > 128 ||
      c.node_id.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string::npos) {
    return Error(
        Errc::invalid_argument,
        fmt::format("cluster.node_id: '{}' is not 1..128 characters of [A-Za-z0-9._-]", c.node_id));
  }
  if (c.timing.lease_ttl_ms < 1000 || c.timing.lease_ttl_ms % 1000 != 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("cluster.lease_ttl_ms: {} is not a whole number of seconds >= 1000 "
                             "(etcd leases have a TTL in seconds)",
                             c.timing.lease_ttl_ms));
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

Ownership::Ownership(OwnershipConfig cfg, std::shared_ptr<etcd::EtcdClient> client,
                     node::Node* node)
    : cfg_(std::move(cfg)),
      client_(std::move(client)),
      node_(node),
      core_(cfg_.node_id, cfg_.timing) {}

Result<std::unique_ptr<Ownership>> Ownership::start(OwnershipConfig cfg,
                                                    std::shared_ptr<etcd::EtcdClient> client,
                                                    node::Node* node) {
  STRATA_TRY(validate(cfg));
  std::unique_ptr<Ownership> o(new Ownership(std::move(cfg), std::move(client), node));
  BlockingPoolOptions po;
  po.threads = 4;
  po.max_threads = 32;
  po.stop_grace = milliseconds(1000);
  o->pool_ = std::make_shared<BlockingPool>(po);
  o->work_.emplace(asio::make_work_guard(o->io_));
  o->thread_ = std::thread([p = o.get()] { p->io_.run(); });
  asio::post(o->strand_, [p = o.get()] {
    p->resync();
    p->run(p->core_.start(p->now_ms()));
    p->arm_tick();
  });
  return o;
}

Ownership::~Ownership() {
  stop();
}

int64_t Ownership::now_ms() const {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A call may not outlive the time the core waits for it: a keepalive
// that answers after the next one is due is as good as lost.
milliseconds Ownership::call_deadline() const {
  return milliseconds(std::max<int64_t>(200, core_.timing().keepalive_interval_ms));
}

void Ownership::arm_tick() {
  int64_t tick =
      cfg_.tick_ms > 0 ? cfg_.tick_ms : std::max<int64_t>(10, cfg_.timing.lease_ttl_ms / 20);
  tick_.expires_after(milliseconds(tick));
  tick_.async_wait(asio::bind_executor(strand_, [this](const std::error_code& ec) {
    if (ec) return;
    {
      std::lock_guard l(mu_);
      if (stopped_) return;
    }
    handle(ev::Tick{});
    arm_tick();
  }));
}

void Ownership::post_event(Event e) {
  asio::post(strand_, [this, e = std::move(e)] { handle(e); });
}

void Ownership::handle(const Event& e) {
  {
    std::lock_guard l(mu_);
    if (stopped_) return;
  }
  run(core_.on(e, now_ms()));
}

ev::View Ownership::core_view() const {
  ev::View v;
  v.revision = view_.revision;
  for (const auto& [id, addr] : view_.nodes) v.nodes.push_back(id);
  v.owners = view_.owners;
  v.streams = view_.streams;
  v.deletions = view_.deletions;
  return v;
}

bool Ownership::apply_kv(const etcd::KeyValue& kv, bool removed) {
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
    if (removed) {
      view_.nodes.erase(name);
    } else {
      auto j = json::parse(kv.value, nullptr, false);
      view_.nodes[name] = j.is_object() && j.contains("address") && j["address"].is_string()
                              ? j["address"].get<std::string>()
                              : "";
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
  if (take("streams/", &name)) {
    auto it = std::lower_bound(view_.streams.begin(), view_.streams.end(), name);
    bool present = it != view_.streams.end() && *it == name;
    if (removed && present) view_.streams.erase(it);
    if (!removed && !present) view_.streams.insert(it, name);
    return removed == present;
  }
  return false;
}

// Reads the whole namespace, then watches it from the next revision. Runs
// on the strand; on failure it is tried again at the next tick's pace.
void Ownership::resync() {
  {
    std::lock_guard l(mu_);
    if (stopped_) return;
  }
  watch_.reset();
  const uint64_t gen = ++watch_generation_;
  const std::string prefix = cfg_.ns + "/";
  run_task<Result<etcd::RangeResult>>(
      TaskContext{pool_.get(), lifetime_}, strand_, milliseconds(10000),
      "cluster: reading " + prefix,
      [c = client_, prefix] { return c->range(prefix, etcd::prefix_end(prefix)); },
      [this, gen, prefix](TaskOutcome<Result<etcd::RangeResult>> out) {
        if (gen != watch_generation_) return;
        if (out.end != TaskEnd::completed || !out.value->ok()) {
          std::string why = out.end != TaskEnd::completed ? out.error.to_string()
                                                          : out.value->error().to_string();
          spdlog::warn("cluster: reading {} failed ({}); retrying", prefix, why);
          auto t = std::make_shared<asio::steady_timer>(io_, milliseconds(core_.timing().retry_ms));
          t->async_wait(asio::bind_executor(strand_, [this, t](const std::error_code& ec) {
            if (!ec) resync();
          }));
          return;
        }
        const auto& r = **out.value;
        {
          std::lock_guard l(mu_);
          view_ = ClusterView{};
          view_.revision = r.revision;
          for (const auto& kv : r.kvs) (void)apply_kv(kv, false);
        }
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
      });
}

void Ownership::on_watch(const std::vector<etcd::WatchEvent>& events) {
  ev::View v;
  {
    std::lock_guard l(mu_);
    bool changed = false;
    for (const auto& e : events) {
      changed = apply_kv(e.kv, e.type == etcd::WatchEvent::Type::remove) || changed;
      view_.revision = std::max(view_.revision, e.kv.mod_revision);
    }
    // Other keys under <ns>/ (entries' persists, epochs, settings, consumer
    // offsets) change nothing the core decides on: no snapshot for them.
    if (!changed) return;
    v = core_view();
  }
  cv_.notify_all();
  post_event(std::move(v));
}

void Ownership::run(Effects fx) {
  const TaskContext ctx{pool_.get(), lifetime_};
  // Stopping comes first and at once: no task, no wait for etcd.
  for (const auto& s : fx.close) {
    spdlog::info("cluster: {}: stops serving stream {}", cfg_.node_id, s);
    node_->release_stream(s);
    if (cfg_.on_release) cfg_.on_release(s);
  }
  if (fx.fenced) {
    spdlog::error("cluster: {}: gave up its lease, every stream stopped: {}", cfg_.node_id, fx.why);
  }
  {
    std::lock_guard l(mu_);
    owned_ = core_.streams();
    lease_ = core_.lease();
    fences_ = core_.fences();
    writer_fences_ = core_.writer_fences();
    handoffs_ = core_.handoffs();
    if (fx.fenced) last_fence_ = fx.why;
  }
  cv_.notify_all();
  for (int64_t lease : fx.revoke) {
    run_task<Status>(
        ctx, strand_, call_deadline(), "cluster: revoking a lease",
        [c = client_, lease] { return c->lease_revoke(lease); }, [](TaskOutcome<Status>) {});
  }
  if (fx.grant_lease) {
    const int64_t ttl_s = (cfg_.timing.lease_ttl_ms + 999) / 1000;
    run_task<Result<etcd::Lease>>(
        ctx, strand_, call_deadline(), "cluster: granting a lease",
        [c = client_, ttl_s] { return c->lease_grant(ttl_s); },
        [this](TaskOutcome<Result<etcd::Lease>> out) {
          if (out.end == TaskEnd::completed && out.value->ok()) {
            handle(ev::LeaseGranted{(*out.value)->id});
          } else {
            handle(ev::LeaseFailed{out.end == TaskEnd::completed ? out.value->error().to_string()
                                                                 : out.error.to_string()});
          }
        });
  }
  if (fx.keepalive) {
    const int64_t lease = *fx.keepalive;
    run_task<Result<int64_t>>(
        ctx, strand_, call_deadline(), "cluster: lease keepalive",
        [c = client_, lease] { return c->lease_keepalive(lease); },
        [this, lease](TaskOutcome<Result<int64_t>> out) {
          ev::KeepaliveDone k{lease, false, false, ""};
          if (out.end != TaskEnd::completed) {
            k.why = out.error.to_string();
          } else if (out.value->ok() && **out.value > 0) {
            k.ok = true;
          } else if (!out.value->ok() && out.value->code() != Errc::not_found) {
            k.why = out.value->error().to_string();
          } else {
            k.lease_gone = true;
            k.why = out.value->ok() ? "TTL 0" : out.value->error().to_string();
          }
          handle(k);
        });
  }
  if (fx.register_node) {
    const int64_t lease = *fx.register_node;
    std::string key = cfg_.ns + "/nodes/" + cfg_.node_id;
    std::string value = json{{"address", cfg_.advertise}}.dump();
    run_task<Result<int64_t>>(
        ctx, strand_, call_deadline(), "cluster: registering " + key,
        [c = client_, key, value, lease] { return c->put(key, value, lease); },
        [this, lease](TaskOutcome<Result<int64_t>> out) {
          bool ok = out.end == TaskEnd::completed && out.value->ok();
          handle(ev::Registered{lease, ok,
                                ok ? ""
                                   : (out.end == TaskEnd::completed ? out.value->error().to_string()
                                                                    : out.error.to_string())});
        });
  }
  for (const auto& s : fx.acquire) {
    const int64_t lease = core_.lease();
    std::string key = cfg_.ns + "/owners/" + s;
    run_task<Result<etcd::TxnResponse>>(
        ctx, strand_, call_deadline(), "cluster: acquiring " + key,
        [c = client_, key, id = cfg_.node_id, lease]() -> Result<etcd::TxnResponse> {
          etcd::TxnRequest t;
          t.compare.push_back(etcd::Compare::revision(key, etcd::CompareTarget::create_revision,
                                                      etcd::CompareOp::equal, 0));
          t.success.push_back(etcd::PutOp{key, id, lease});
          t.failure.push_back(etcd::RangeOp{key, ""});
          auto r = c->txn(t);
          if (!r.ok() || r->succeeded || !r->maybe_applied) return r;
          // Our own earlier attempt may be what the compare found.
          if (!r->ranges.empty() && !r->ranges[0].kvs.empty()) {
            const auto& kv = r->ranges[0].kvs[0];
            if (kv.value == id && kv.lease == lease) {
              r->succeeded = true;
              r->revision = kv.mod_revision;
            }
          }
          return r;
        },
        [this, s, lease](TaskOutcome<Result<etcd::TxnResponse>> out) {
          ev::AcquireDone a{s, lease, false, 0, ""};
          if (out.end != TaskEnd::completed) {
            a.why = out.error.to_string();
          } else if (!out.value->ok()) {
            a.why = out.value->error().to_string();
          } else {
            a.won = (*out.value)->succeeded;
            a.revision = (*out.value)->revision;
          }
          if (a.won) spdlog::info("cluster: {} owns stream {}", cfg_.node_id, s);
          handle(a);
        });
  }
  for (const auto& s : fx.remove) {
    const int64_t lease = core_.lease();
    if (!cfg_.on_remove) continue;
    spdlog::info("cluster: {}: deleting stream {}, as requested through the catalog", cfg_.node_id,
                 s);
    run_task<Status>(
        ctx, strand_, milliseconds(120000), "cluster: deleting stream " + s,
        [fn = cfg_.on_remove, s] { return fn(s); },
        [this, s, lease](TaskOutcome<Status> out) {
          bool ok = out.end == TaskEnd::completed && out.value->ok();
          std::string why =
              ok ? ""
                 : (out.end == TaskEnd::completed ? out.value->to_string() : out.error.to_string());
          if (!ok) spdlog::warn("cluster: {}: deleting stream {} failed: {}", cfg_.node_id, s, why);
          handle(ev::RemoveDone{s, lease, ok, why});
        });
  }
  for (const auto& s : fx.handoff) {
    const int64_t lease = core_.lease();
    spdlog::info("cluster: {}: hands stream {} over to its first choice", cfg_.node_id, s);
    const auto timeout = cfg_.handoff_timeout;
    run_task<ev::HandoffDone>(
        ctx, strand_, timeout + call_deadline() + milliseconds(5000), "cluster: handing over " + s,
        [n = node_, c = client_, fn = cfg_.on_handoff, key = cfg_.ns + "/owners/" + s,
         id = cfg_.node_id, s, lease, timeout]() -> ev::HandoffDone {
          ev::HandoffDone d{s, lease, false, false, ""};
          Status st = n->hand_off_stream(s, timeout, [&] {
            if (fn) fn(s);
          });
          if (!st.ok()) {
            d.why = st.to_string();
            return d;
          }
          d.closed = true;
          // Released only while still ours; if it is not, it is not ours
          // to give and the stream is closed anyway.
          etcd::TxnRequest t;
          t.compare.push_back(etcd::Compare::value_is(key, etcd::CompareOp::equal, id));
          t.compare.push_back(etcd::Compare::revision(key, etcd::CompareTarget::lease,
                                                      etcd::CompareOp::equal, lease));
          t.success.push_back(etcd::DeleteOp{key, ""});
          auto r = c->txn(t);
          if (!r.ok()) {
            d.why = r.error().to_string();
            return d;
          }
          d.ok = true;
          return d;
        },
        [this, s, lease](TaskOutcome<ev::HandoffDone> out) {
          ev::HandoffDone d = out.end == TaskEnd::completed
                                  ? *out.value
                                  : ev::HandoffDone{s, lease, false, true, out.error.to_string()};
          if (d.closed && cfg_.on_release) cfg_.on_release(s);
          if (d.ok) {
            spdlog::info("cluster: {}: handed stream {} over", cfg_.node_id, s);
          } else {
            spdlog::warn("cluster: {}: handing stream {} over failed{}: {}", cfg_.node_id, s,
                         d.closed ? " after closing it (it is opened again)" : "", d.why);
          }
          handle(d);
        });
  }
  for (const auto& s : fx.open) {
    const int64_t lease = core_.lease();
    node::AcquireOptions ao;
    ao.owner = catalog::OwnerCondition{cfg_.ns + "/owners/" + s, cfg_.node_id, lease};
    ao.on_fenced = [this, sink = fence_sink_, lease](const std::string& stream,
                                                     const std::string& why) {
      std::lock_guard l(sink->mu);
      if (!sink->open) return;
      spdlog::warn(
          "cluster: {}: the writer of stream {} was fenced while this node owns it ({}); "
          "acquiring it again",
          cfg_.node_id, stream, why);
      post_event(ev::WriterFenced{stream, lease, why});
    };
    run_task<Status>(
        ctx, strand_, milliseconds(30000), "cluster: opening stream " + s,
        [n = node_, s, ao = std::move(ao)]() -> Status {
          auto r = n->acquire_stream(s, ao);
          if (!r.ok()) return r.error();
          return Status::OK();
        },
        [this, s, lease](TaskOutcome<Status> out) {
          bool ok = out.end == TaskEnd::completed && out.value->ok();
          std::string why =
              ok ? ""
                 : (out.end == TaskEnd::completed ? out.value->to_string() : out.error.to_string());
          if (!ok) spdlog::warn("cluster: {}: opening stream {} failed: {}", cfg_.node_id, s, why);
          handle(ev::OpenDone{s, lease, ok, why});
        });
  }
}

void Ownership::stop() {
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
    Effects fx = core_.stop();
    for (const auto& s : fx.close) node_->release_stream(s);
    tick_.cancel();
    ++watch_generation_;
    {
      std::lock_guard l(mu_);
      stopped_ = true;
      owned_.clear();
    }
    done.set_value(fx.revoke.empty() ? 0 : fx.revoke.front());
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

bool Ownership::serving(const std::string& stream) const {
  std::lock_guard l(mu_);
  auto it = owned_.find(stream);
  return it != owned_.end() && it->second == OwnershipCore::StreamState::serving;
}

std::string Ownership::owner_address(const std::string& stream) const {
  std::lock_guard l(mu_);
  auto it = view_.owners.find(stream);
  if (it == view_.owners.end()) return "";
  auto n = view_.nodes.find(it->second.node_id);
  return n == view_.nodes.end() ? "" : n->second;
}

ClusterView Ownership::view() const {
  std::lock_guard l(mu_);
  return view_;
}

uint64_t Ownership::fences() const {
  std::lock_guard l(mu_);
  return fences_;
}

uint64_t Ownership::handoffs() const {
  std::lock_guard l(mu_);
  return handoffs_;
}

uint64_t Ownership::writer_fences() const {
  std::lock_guard l(mu_);
  return writer_fences_;
}

Result<std::string> Ownership::await_owner(const std::string& stream, milliseconds timeout) {
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

Status Ownership::request_deletion(const std::string& stream, milliseconds timeout) {
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

json Ownership::status_json() const {
  std::lock_guard l(mu_);
  json owned = json::object();
  for (const auto& [s, st] : owned_) {
    owned[s] = st == OwnershipCore::StreamState::serving       ? "serving"
               : st == OwnershipCore::StreamState::opening     ? "opening"
               : st == OwnershipCore::StreamState::handing_off ? "handing_off"
                                                               : "acquiring";
  }
  json owners = json::object();
  for (const auto& [s, o] : view_.owners) owners[s] = {{"node", o.node_id}, {"lease", o.lease}};
  return {{"node_id", cfg_.node_id},
          {"advertise", cfg_.advertise},
          {"lease", lease_},
          {"fences", fences_},
          {"writer_fences", writer_fences_},
          {"handoffs", handoffs_},
          {"last_fence", last_fence_},
          {"owned", owned},
          {"nodes", view_.nodes},
          {"owners", owners},
          {"revision", view_.revision}};
}

}  // namespace strata::cluster
