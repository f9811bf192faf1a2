// Ownership shell: running the core's effects, in the order the core lists
// them, one function per effect. A Close runs at once on the strand; every
// other effect but LeaseGivenUp starts a task (common/task.h) whose end
// comes back to the strand as exactly one core event.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cluster/cluster_limits.h"
#include "cluster/node_registration.h"
#include "cluster/ownership_impl.h"
#include "common/assert.h"
#include "common/overloaded.h"
#include "common/stream_name.h"
#include "node/node.h"

namespace strata::cluster {

using json = nlohmann::json;
using std::chrono::milliseconds;

namespace {

// What a task that ended without a value, or with an error, has to say.
template <class T>
std::string failure(const TaskOutcome<T>& out) {
  if (out.end != TaskEnd::completed) return out.error.to_string();
  if constexpr (std::is_same_v<T, Status>) {
    return out.value->to_string();
  } else {
    return out.value->error().to_string();
  }
}

template <class T>
bool succeeded(const TaskOutcome<T>& out) {
  return out.end == TaskEnd::completed && out.value->ok();
}

}  // namespace

void Ownership::Impl::execute(const Effects& fx) {
  // Before any effect runs: a fence the core decided on (the lease ended)
  // reaches the append path at once, not after the streams are closed.
  if (cfg_.lease_valid_until) {
    cfg_.lease_valid_until->store(core_.valid_until_ms(), std::memory_order_release);
  }
  for (const Effect& e : fx) {
    std::visit(Overloaded{
                   [&](const effect::Close& x) { close_stream(x); },
                   [&](const effect::LeaseGivenUp& x) { lease_given_up(x); },
                   [&](const effect::Revoke& x) { revoke(x); },
                   [&](const effect::GrantLease&) { grant_lease(); },
                   [&](const effect::Keepalive& x) { keepalive(x); },
                   [&](const effect::Register& x) { register_node(x); },
                   [&](const effect::Acquire& x) { acquire(x); },
                   [&](const effect::Remove& x) { remove(x); },
                   [&](const effect::HandOff& x) { hand_off(x); },
                   [&](const effect::Open& x) { open(x); },
                   [&](const effect::Stand& x) { stand(x); },
                   [&](const effect::Withdraw& x) { withdraw(x); },
               },
               e);
  }
  publish();
}

void Ownership::Impl::publish() {
  {
    std::lock_guard l(mu_);
    auto now = core_.streams();
    for (const auto& [s, st] : now) {
      if (st != OwnershipCore::StreamState::serving) continue;
      auto was = owned_.find(s);
      if (was == owned_.end() || was->second != OwnershipCore::StreamState::serving) {
        streams_acquired_ += 1;
      }
    }
    owned_ = std::move(now);
    lease_ = core_.lease();
    fences_ = core_.fences();
    writer_fences_ = core_.writer_fences();
    handoffs_ = core_.handoffs();
  }
  cv_.notify_all();
}

void Ownership::Impl::require_current_lease(int64_t lease, const char* what) const {
  // An owner key, a registration or an epoch raised under a lease the node
  // no longer holds is exactly the write fencing exists to prevent.
  STRATA_ASSERT(lease != 0 && lease == core_.lease(), what);
}

// Stopping comes at once: no task, no wait for etcd.
void Ownership::Impl::close_stream(const effect::Close& e) {
  spdlog::info("cluster: {}: stops serving stream {}", cfg_.node_id, printable_stream(e.stream));
  {
    std::lock_guard l(mu_);
    streams_released_ += 1;
  }
  node_->release_stream(e.stream);
  if (cfg_.on_release) cfg_.on_release(e.stream);
}

void Ownership::Impl::lease_given_up(const effect::LeaseGivenUp& e) {
  spdlog::error("cluster: {}: gave up its lease, every stream stopped: {}", cfg_.node_id, e.why);
  std::lock_guard l(mu_);
  last_fence_ = e.why;
}

void Ownership::Impl::revoke(const effect::Revoke& e) {
  STRATA_ASSERT(e.lease != 0, "cluster: revoking lease 0 (no lease)");
  run_task<Status>(
      tasks(), strand_, call_deadline(), "cluster: revoking a lease",
      [c = client_, lease = e.lease] { return c->lease_revoke(lease); },
      [](TaskOutcome<Status>) {});
}

void Ownership::Impl::grant_lease() {
  const int64_t ttl_s = (cfg_.timing.lease_ttl_ms + kLeaseTtlUnitMs - 1) / kLeaseTtlUnitMs;
  run_task<Result<etcd::Lease>>(
      tasks(), strand_, call_deadline(), "cluster: granting a lease",
      [c = client_, ttl_s] { return c->lease_grant(ttl_s); },
      [this](TaskOutcome<Result<etcd::Lease>> out) {
        if (succeeded(out)) {
          handle(ev::LeaseGranted{(*out.value)->id});
        } else {
          handle(ev::LeaseFailed{failure(out)});
        }
      });
}

void Ownership::Impl::keepalive(const effect::Keepalive& e) {
  require_current_lease(e.lease, "cluster: a keepalive of a lease the node does not hold");
  // Given until the node would give the lease up (not one interval): a
  // keepalive waiting on a member for a new etcd leader renews the lease
  // once one is elected, and counts from when it was sent.
  const auto until_fence = milliseconds(core_.valid_until_ms() - now_ms());
  run_task<Result<int64_t>>(
      tasks(), strand_, std::max(kMinCallDeadline, until_fence), "cluster: lease keepalive",
      [c = client_, lease = e.lease] { return c->lease_keepalive(lease); },
      [this, lease = e.lease, sent_ms = e.sent_ms,
       started = std::chrono::steady_clock::now()](TaskOutcome<Result<int64_t>> out) {
        if (out.end == TaskEnd::completed) {
          keepalive_rtt_.record_us(uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::steady_clock::now() - started)
                                                .count()));
        }
        ev::KeepaliveDone k{lease, sent_ms, false, false, ""};
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

void Ownership::Impl::register_node(const effect::Register& e) {
  require_current_lease(e.lease, "cluster: registering under a lease the node does not hold");
  std::string key = cfg_.ns + "/nodes/" + cfg_.node_id;
  std::string value = registration_value({cfg_.advertise, cfg_.tls_advertise});
  run_task<Result<int64_t>>(
      tasks(), strand_, call_deadline(), "cluster: registering " + key,
      [c = client_, key, value, lease = e.lease] { return c->put(key, value, lease); },
      [this, lease = e.lease](TaskOutcome<Result<int64_t>> out) {
        const bool ok = succeeded(out);
        handle(ev::Registered{lease, ok, ok ? "" : failure(out)});
      });
}

namespace {

// The acquire txn: If create_revision(key) == 0 Then put key = id on the
// lease Else read key — or, with `from_lease` (taking a stream back), If
// key = id on from_lease Then move it to the lease Else read key. An
// ambiguous retry that finds our own key (same id, same lease) won.
Result<etcd::TxnResponse> acquire_owner_key(etcd::EtcdClient& c, const std::string& key,
                                            const std::string& id, int64_t lease,
                                            int64_t from_lease,
                                            const std::vector<std::string>& candidacies) {
  etcd::TxnRequest t;
  if (from_lease != 0) {
    t.compare.push_back(etcd::Compare::value_is(key, etcd::CompareOp::equal, id));
    t.compare.push_back(etcd::Compare::revision(key, etcd::CompareTarget::lease,
                                                etcd::CompareOp::equal, from_lease));
  } else {
    t.compare.push_back(etcd::Compare::revision(key, etcd::CompareTarget::create_revision,
                                                etcd::CompareOp::equal, 0));
  }
  t.success.push_back(etcd::PutOp{key, id, lease});
  // The election is over: its candidacies go with the same txn.
  for (const std::string& k : candidacies) t.success.push_back(etcd::DeleteOp{k, ""});
  t.failure.push_back(etcd::RangeOp{key, ""});
  auto r = c.txn(t);
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
}

}  // namespace

void Ownership::Impl::acquire(const effect::Acquire& e) {
  require_current_lease(e.lease, "cluster: an owner key created under a lease not held");
  std::string key = cfg_.ns + "/owners/" + e.stream;
  std::vector<std::string> candidacies;
  {
    std::lock_guard l(mu_);
    if (auto c = view_.candidacies.find(e.stream); c != view_.candidacies.end()) {
      for (const auto& [node, value] : c->second)
        candidacies.push_back(candidacy_key(node, e.stream));
    }
  }
  run_task<Result<etcd::TxnResponse>>(
      tasks(), strand_, call_deadline(), "cluster: acquiring " + key,
      [c = client_, key, id = cfg_.node_id, lease = e.lease, from = e.from_lease,
       candidacies = std::move(candidacies)] {
        return acquire_owner_key(*c, key, id, lease, from, candidacies);
      },
      [this, s = e.stream, lease = e.lease,
       from = e.from_lease](TaskOutcome<Result<etcd::TxnResponse>> out) {
        ev::AcquireDone a{s, lease, false, 0, ""};
        if (!succeeded(out)) {
          a.why = failure(out);
        } else {
          a.won = (*out.value)->succeeded;
          a.revision = (*out.value)->revision;
        }
        if (a.won) {
          spdlog::info("cluster: {} owns stream {}{}", cfg_.node_id, printable_stream(s),
                       from ? fmt::format(" again (its key moved from lease {:x})", from) : "");
        }
        handle(a);
      });
}

std::string Ownership::Impl::candidacy_key(const std::string& node,
                                           const std::string& stream) const {
  return cfg_.ns + "/candidates/" + node + "/" + stream;
}

void Ownership::Impl::stand(const effect::Stand& e) {
  require_current_lease(e.lease, "cluster: a candidacy posted under a lease not held");
  run_task<Result<Candidacy>>(
      tasks(), strand_, call_deadline(), "cluster: standing for " + e.stream,
      [c = client_, node = node_, key = candidacy_key(cfg_.node_id, e.stream), s = e.stream,
       lease = e.lease]() -> Result<Candidacy> {
        STRATA_ASSIGN_OR_RETURN(node::LocalTail t, node->local_tail(s));
        const Candidacy cand{t.epoch, t.next};
        STRATA_TRY(c->put(key, candidacy_to_json(cand), lease));
        return cand;
      },
      [this, s = e.stream, lease = e.lease](TaskOutcome<Result<Candidacy>> out) {
        ev::CandidacyDone d{s, lease, true, succeeded(out), ""};
        if (!d.ok) {
          d.why = failure(out);
          spdlog::warn("cluster: {}: standing for stream {} failed: {}", cfg_.node_id,
                       printable_stream(s), d.why);
        } else if ((*out.value)->next > 0) {
          spdlog::info("cluster: {} stands for stream {} with its tail to offset {} (epoch {})",
                       cfg_.node_id, printable_stream(s), (*out.value)->next, (*out.value)->epoch);
        }
        handle(d);
      });
}

void Ownership::Impl::withdraw(const effect::Withdraw& e) {
  run_task<Status>(
      tasks(), strand_, call_deadline(), "cluster: withdrawing from " + e.stream,
      [c = client_, key = candidacy_key(cfg_.node_id, e.stream)]() -> Status {
        STRATA_TRY(c->remove(key));
        return Status::OK();
      },
      [this, s = e.stream, lease = e.lease](TaskOutcome<Status> out) {
        ev::CandidacyDone d{s, lease, false, succeeded(out), ""};
        if (!d.ok) d.why = failure(out);
        handle(d);
      });
}

void Ownership::Impl::remove(const effect::Remove& e) {
  require_current_lease(e.lease, "cluster: a stream deleted under a lease not held");
  // Without on_remove such requests wait for a node that has it.
  if (!cfg_.on_remove) return;
  spdlog::info("cluster: {}: deleting stream {}, as requested through the catalog", cfg_.node_id,
               printable_stream(e.stream));
  run_task<Status>(
      tasks(), strand_, kRemoveDeadline, "cluster: deleting stream " + e.stream,
      [fn = cfg_.on_remove, s = e.stream] { return fn(s); },
      [this, s = e.stream, lease = e.lease](TaskOutcome<Status> out) {
        const bool ok = succeeded(out);
        const std::string why = ok ? "" : failure(out);
        if (!ok)
          spdlog::warn("cluster: {}: deleting stream {} failed: {}", cfg_.node_id,
                       printable_stream(s), why);
        handle(ev::RemoveDone{s, lease, ok, why});
      });
}

namespace {

// The hand-off's blocking part: the node stops taking writes, persists what
// is committed and closes the stream; then the owner key is deleted only
// while it is still ours (if it is not, it is not ours to give, and the
// stream is closed anyway).
ev::HandoffDone hand_off_stream(node::Node& n, etcd::EtcdClient& c,
                                const std::function<void(const std::string&)>& before,
                                const std::string& key, const std::string& id, const std::string& s,
                                int64_t lease, milliseconds timeout) {
  ev::HandoffDone d{s, lease, false, false, ""};
  Status st = n.hand_off_stream(s, timeout, [&] {
    if (before) before(s);
  });
  if (!st.ok()) {
    d.why = st.to_string();
    return d;
  }
  d.closed = true;
  etcd::TxnRequest t;
  t.compare.push_back(etcd::Compare::value_is(key, etcd::CompareOp::equal, id));
  t.compare.push_back(
      etcd::Compare::revision(key, etcd::CompareTarget::lease, etcd::CompareOp::equal, lease));
  t.success.push_back(etcd::DeleteOp{key, ""});
  auto r = c.txn(t);
  if (!r.ok()) {
    d.why = r.error().to_string();
    return d;
  }
  d.ok = true;
  return d;
}

}  // namespace

void Ownership::Impl::hand_off(const effect::HandOff& e) {
  require_current_lease(e.lease, "cluster: a stream handed over under a lease not held");
  spdlog::info("cluster: {}: hands stream {} over to its first choice", cfg_.node_id,
               printable_stream(e.stream));
  const auto timeout = cfg_.handoff_timeout;
  run_task<ev::HandoffDone>(
      tasks(), strand_, timeout + call_deadline() + kHandoffCloseSlack,
      "cluster: handing over " + e.stream,
      [n = node_, c = client_, fn = cfg_.on_handoff, key = cfg_.ns + "/owners/" + e.stream,
       id = cfg_.node_id, s = e.stream, lease = e.lease,
       timeout] { return hand_off_stream(*n, *c, fn, key, id, s, lease, timeout); },
      [this, s = e.stream, lease = e.lease](TaskOutcome<ev::HandoffDone> out) {
        ev::HandoffDone d = out.end == TaskEnd::completed
                                ? *out.value
                                : ev::HandoffDone{s, lease, false, true, out.error.to_string()};
        if (d.closed && cfg_.on_release) cfg_.on_release(s);
        if (d.ok) {
          spdlog::info("cluster: {}: handed stream {} over", cfg_.node_id, printable_stream(s));
        } else {
          spdlog::warn("cluster: {}: handing stream {} over failed{}: {}", cfg_.node_id,
                       printable_stream(s),
                       d.closed ? " after closing it (it is opened again)" : "", d.why);
        }
        handle(d);
      });
}

void Ownership::Impl::open(const effect::Open& e) {
  require_current_lease(e.lease, "cluster: a stream opened under a lease not held");
  const int64_t lease = e.lease;
  node::AcquireOptions ao;
  // The takeover raises the epoch only while the owner key is ours, on this lease.
  ao.owner = catalog::OwnerCondition{cfg_.ns + "/owners/" + e.stream, cfg_.node_id, lease};
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
      tasks(), strand_, kOpenDeadline, "cluster: opening stream " + e.stream,
      [n = node_, s = e.stream, ao = std::move(ao)]() -> Status {
        auto r = n->acquire_stream(s, ao);
        if (!r.ok()) return r.error();
        return Status::OK();
      },
      [this, s = e.stream, lease](TaskOutcome<Status> out) {
        const bool ok = succeeded(out);
        const std::string why = ok ? "" : failure(out);
        if (!ok)
          spdlog::warn("cluster: {}: opening stream {} failed: {}", cfg_.node_id,
                       printable_stream(s), why);
        handle(ev::OpenDone{s, lease, ok, why});
      });
}

}  // namespace strata::cluster
