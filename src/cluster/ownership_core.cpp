#include "cluster/ownership_core.h"

#include <algorithm>

#include "cluster/cluster_limits.h"
#include "common/assert.h"
#include "common/overloaded.h"

namespace strata::cluster {

OwnershipTiming OwnershipTiming::resolved() const {
  OwnershipTiming r = *this;
  if (r.keepalive_interval_ms <= 0) {
    r.keepalive_interval_ms = std::max<int64_t>(1, r.lease_ttl_ms / kKeepalivesPerTtl);
  }
  if (r.safety_margin_ms <= 0) {
    r.safety_margin_ms = std::max<int64_t>(1, r.lease_ttl_ms / kTtlPerSafetyMargin);
  }
  if (r.acquire_grace_ms <= 0) r.acquire_grace_ms = r.lease_ttl_ms;
  if (r.retry_ms <= 0) r.retry_ms = 1;
  if (r.rebalance_after_ms == 0) r.rebalance_after_ms = kRebalanceAfterTtls * r.lease_ttl_ms;
  if (r.member_memory_ms <= 0) r.member_memory_ms = kMemberMemoryTtls * r.lease_ttl_ms;
  return r;
}

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
}  // namespace

uint64_t rendezvous_score(const std::string& stream, const std::string& node_id) {
  uint64_t h = fnv1a(0xcbf29ce484222325ull, stream);
  // A separator that cannot occur in stream names keeps ("ab","c") and
  // ("a","bc") apart.
  h = fnv1a(h, std::string(1, '\0'));
  return splitmix64(fnv1a(h, node_id));
}

std::string first_choice(const std::string& stream, const std::vector<std::string>& nodes) {
  std::string best;
  uint64_t best_score = 0;
  for (const auto& n : nodes) {
    uint64_t s = rendezvous_score(stream, n);
    if (best.empty() || s > best_score || (s == best_score && n < best)) {
      best = n;
      best_score = s;
    }
  }
  return best;
}

OwnershipCore::OwnershipCore(std::string node_id, OwnershipTiming timing)
    : id_(std::move(node_id)), t_(timing.resolved()) {}

bool OwnershipCore::serving(const std::string& s) const {
  auto it = owned_.find(s);
  return it != owned_.end() && it->second.state == StreamState::serving;
}

int64_t OwnershipCore::valid_until_ms() const {
  if (phase_ != Phase::live && phase_ != Phase::registering) return 0;
  return last_ok_sent_ms_ + t_.lease_ttl_ms - t_.safety_margin_ms;
}

void OwnershipCore::mirror() {
  streams_.clear();
  for (const auto& [s, o] : owned_) streams_[s] = o.state;
}

Effects OwnershipCore::start(int64_t now_ms) {
  Effects fx;
  if (stopped_) return fx;
  phase_ = Phase::granting;
  grant_sent_ms_ = now_ms;
  fx.push_back(effect::GrantLease{});
  return fx;
}

Effects OwnershipCore::stop() {
  Effects fx;
  if (stopped_) return fx;
  stopped_ = true;
  close_all(fx);
  if (lease_ != 0) fx.push_back(effect::Revoke{lease_});
  lease_ = 0;
  phase_ = Phase::no_lease;
  return fx;
}

void OwnershipCore::close_all(Effects& fx) {
  for (const auto& [s, o] : owned_) {
    if (o.state != StreamState::acquiring) fx.push_back(effect::Close{s});
  }
  owned_.clear();
  mirror();
}

// Gives the lease up: every stream stops at once (acquires in flight are
// forgotten; a late win under the old lease is never opened), the old
// lease is revoked (its owner keys go with it, so others need not wait for
// the TTL), and a fresh lease is asked for.
void OwnershipCore::fence(const std::string& why, Effects& fx) {
  fences_ += 1;
  // Nothing won under the old lease is opened or acquired now.
  std::erase_if(fx, [&](const Effect& e) {
    if (auto* st = std::get_if<effect::Stand>(&e)) candidacy_in_flight_.erase(st->stream);
    if (auto* w = std::get_if<effect::Withdraw>(&e)) candidacy_in_flight_.erase(w->stream);
    return std::holds_alternative<effect::Open>(e) || std::holds_alternative<effect::Acquire>(e) ||
           std::holds_alternative<effect::Stand>(e) || std::holds_alternative<effect::Withdraw>(e);
  });
  close_all(fx);
  fx.push_back(effect::LeaseGivenUp{why});
  retry_at_.clear();
  // Candidacies on the old lease go with it.
  stood_.clear();
  // Opens under the old lease end as stale (their lease is not ours).
  orphan_opens_.clear();
  if (lease_ != 0) fx.push_back(effect::Revoke{lease_});
  lease_ = 0;
  keepalives_in_flight_ = 0;
  register_in_flight_ = false;
  phase_ = Phase::no_lease;
}

void OwnershipCore::check_clock(int64_t now, Effects& fx) {
  if (phase_ != Phase::live && phase_ != Phase::registering) return;
  if (now >= valid_until_ms()) {
    fence("no keepalive succeeded within " + std::to_string(t_.lease_ttl_ms - t_.safety_margin_ms) +
              " ms (lease TTL " + std::to_string(t_.lease_ttl_ms) + " ms minus margin " +
              std::to_string(t_.safety_margin_ms) + " ms)",
          fx);
  }
}

void OwnershipCore::apply(const ev::View& v, Effects& fx) {
  if (v.revision < view_.revision) return;
  view_ = v;
  // Streams we serve whose owner key is no longer ours (deleted, or another
  // node's) once the view has caught up with our acquire.
  for (auto it = owned_.begin(); it != owned_.end();) {
    const Owned& o = it->second;
    if (o.state == StreamState::acquiring || view_.revision < o.acquired_revision) {
      ++it;
      continue;
    }
    auto ow = view_.owners.find(it->first);
    bool ours = ow != view_.owners.end() && ow->second.node_id == id_ && ow->second.lease == lease_;
    if (ours) {
      ++it;
      continue;
    }
    fx.push_back(effect::Close{it->first});
    if (o.state == StreamState::opening && o.in_flight) orphan_opens_.insert(it->first);
    it = owned_.erase(it);
  }
  mirror();
}

bool OwnershipCore::backing_off(const std::string& stream, int64_t now) const {
  auto r = retry_at_.find(stream);
  return r != retry_at_.end() && now < r->second;
}

// An open (a takeover that raises the epoch under the owner key) is only
// ever asked for under the lease the node holds now.
void OwnershipCore::emit_open(const std::string& stream, Owned& o, Effects& fx) {
  STRATA_ASSERT(lease_ != 0 && (phase_ == Phase::live || phase_ == Phase::registering),
                "cluster: a stream is opened only under a live lease");
  o.state = StreamState::opening;
  o.in_flight = true;
  fx.push_back(effect::Open{stream, lease_});
}

void OwnershipCore::drive(int64_t now, Effects& fx) {
  if (stopped_) return;
  if (phase_ == Phase::no_lease && now >= retry_grant_at_) {
    phase_ = Phase::granting;
    grant_sent_ms_ = now;
    fx.push_back(effect::GrantLease{});
    return;
  }
  if (phase_ != Phase::live && phase_ != Phase::registering) return;
  keep_lease(now, fx);
  if (phase_ == Phase::registering) {
    if (!register_in_flight_ && now >= register_retry_at_) {
      register_in_flight_ = true;
      fx.push_back(effect::Register{lease_});
    }
    return;
  }
  acquire_ownerless(now, fx);
  remove_requested(now, fx);
  maybe_hand_off(now, fx);
  retry_opens(now, fx);
  mirror();
}

void OwnershipCore::keep_lease(int64_t now, Effects& fx) {
  if (keepalives_in_flight_ >= kMaxKeepalivesInFlight || now < next_keepalive_at_) return;
  keepalives_in_flight_ += 1;
  next_keepalive_at_ = now + t_.keepalive_interval_ms;
  fx.push_back(effect::Keepalive{lease_, now});
}

// Live: which ownerless streams to try.
void OwnershipCore::acquire_ownerless(int64_t now, Effects& fx) {
  const bool self_seen =
      std::find(view_.nodes.begin(), view_.nodes.end(), id_) != view_.nodes.end();
  for (const auto& n : view_.nodes) node_last_seen_[n] = now;
  std::erase_if(node_last_seen_,
                [&](const auto& kv) { return now - kv.second > t_.member_memory_ms; });
  for (const auto& s : view_.streams) {
    if (auto ow = view_.owners.find(s); ow != view_.owners.end()) {
      ownerless_since_.erase(s);
      stood_.erase(s);
      if (t_.elect_most_complete && has_candidacy(s) && !candidacy_in_flight_.count(s) &&
          !backing_off(s, now)) {
        candidacy_in_flight_.insert(s);
        fx.push_back(effect::Withdraw{s, lease_});
      }
      // A key naming this node on another lease: one this node gave up,
      // or an earlier process's (node ids are unique): ours to take back,
      // before that lease expires and the stream goes to whoever acquires
      // first.
      const bool ours_before = ow->second.node_id == id_ && ow->second.lease != lease_;
      if (ours_before && !owned_.count(s) && !orphan_opens_.count(s) && self_seen &&
          !backing_off(s, now)) {
        owned_[s] = Owned{StreamState::acquiring, 0, true};
        fx.push_back(effect::Acquire{s, lease_, ow->second.lease});
      }
      continue;
    }
    auto [since, fresh] = ownerless_since_.emplace(s, now);
    (void)fresh;
    if (owned_.count(s) || orphan_opens_.count(s) || !self_seen || backing_off(s, now)) continue;
    // Whoever asked to delete an ownerless stream takes it, to delete it.
    auto del = view_.deletions.find(s);
    const bool asked = del != view_.deletions.end() && del->second == id_;
    const int64_t waited = now - since->second;
    bool go = asked;
    if (!go && t_.elect_most_complete) {
      stand_for(s, fx);
      go = elected(s, waited);
    } else if (!go) {
      go = first_choice(s, view_.nodes) == id_ || waited >= t_.acquire_grace_ms;
    }
    if (!go) continue;
    owned_[s] = Owned{StreamState::acquiring, 0, true};
    fx.push_back(effect::Acquire{s, lease_});
  }
  // Forget streams no longer in the catalog.
  auto listed = [&](const std::string& s) {
    return std::find(view_.streams.begin(), view_.streams.end(), s) != view_.streams.end();
  };
  std::erase_if(ownerless_since_, [&](const auto& kv) { return !listed(kv.first); });
  std::erase_if(stood_, [&](const std::string& s) { return !listed(s); });
}

bool OwnershipCore::has_candidacy(const std::string& stream) const {
  auto c = view_.candidacies.find(stream);
  return c != view_.candidacies.end() && c->second.count(id_);
}

// Posts this node's candidacy for ownerless `s`, once per lease.
void OwnershipCore::stand_for(const std::string& s, Effects& fx) {
  if (stood_.count(s) || candidacy_in_flight_.count(s) || has_candidacy(s)) return;
  candidacy_in_flight_.insert(s);
  fx.push_back(effect::Stand{s, lease_});
}

bool OwnershipCore::elected(const std::string& s, int64_t waited) const {
  auto c = view_.candidacies.find(s);
  const Election e = elect(s, view_.nodes, c == view_.candidacies.end() ? nullptr : &c->second);
  // The most complete copy, once every live node has stood — or after the
  // grace, once a majority has (cluster/election.h: a minority's best may
  // lack what a majority confirmed); a majority of the nodes seen lately,
  // not only of the live ones (member_memory_ms).
  const int64_t grace = t_.acquire_grace_ms;
  const size_t known = std::max(view_.nodes.size(), node_last_seen_.size());
  if (e.best == id_ && quorum_stood(e.stood, known) && (e.all_stood || waited >= grace)) {
    return true;
  }
  // Whoever stood best did not take it (it hangs, or died and its lease
  // has not expired yet): the runner-up does, if a majority stood besides
  // the best. Not anyone: the best's candidacy goes with its lease, and the
  // election is held again among those left.
  return e.stood >= 2 && e.runner_up == id_ && waited >= 2 * grace &&
         quorum_stood(e.stood - 1, known);
}

void OwnershipCore::on_candidacy(const ev::CandidacyDone& c, int64_t now) {
  candidacy_in_flight_.erase(c.stream);
  if (c.lease != lease_) return;
  if (!c.ok) {
    retry_at_[c.stream] = now + t_.retry_ms;
    return;
  }
  if (c.stood) stood_.insert(c.stream);
}

// Deletions requested of streams served here.
void OwnershipCore::remove_requested(int64_t now, Effects& fx) {
  for (auto& [s, o] : owned_) {
    if (o.state != StreamState::serving || o.removing || !view_.deletions.count(s)) continue;
    if (backing_off(s, now)) continue;
    o.removing = true;
    fx.push_back(effect::Remove{s, lease_});
  }
}

void OwnershipCore::retry_opens(int64_t now, Effects& fx) {
  for (auto& [s, o] : owned_) {
    if (o.state != StreamState::opening || o.in_flight || backing_off(s, now)) continue;
    emit_open(s, o, fx);
  }
}

// At most one hand-off at a time: the first served stream whose first
// choice is another node registered for rebalance_after_ms.
void OwnershipCore::maybe_hand_off(int64_t now, Effects& fx) {
  for (auto it = node_seen_since_.begin(); it != node_seen_since_.end();) {
    if (std::find(view_.nodes.begin(), view_.nodes.end(), it->first) == view_.nodes.end()) {
      it = node_seen_since_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& n : view_.nodes) node_seen_since_.emplace(n, now);
  if (t_.rebalance_after_ms < 0 || now < handoff_retry_at_) return;
  // Not seeing our own registration, every stream would seem another's.
  if (!node_seen_since_.count(id_)) return;
  for (const auto& [s, o] : owned_) {
    if (o.state == StreamState::handing_off) return;
  }
  for (auto& [s, o] : owned_) {
    if (o.state != StreamState::serving || o.removing || o.in_flight ||
        view_.revision < o.acquired_revision || view_.deletions.count(s)) {
      continue;
    }
    const std::string to = first_choice(s, view_.nodes);
    if (to.empty() || to == id_) continue;
    if (now - node_seen_since_.at(to) < t_.rebalance_after_ms) continue;
    o.state = StreamState::handing_off;
    o.in_flight = true;
    fx.push_back(effect::HandOff{s, lease_});
    return;
  }
}

void OwnershipCore::on_granted(const ev::LeaseGranted& g, Effects& fx) {
  if (phase_ != Phase::granting) {
    // Not asked for any more: give it back. (emplace: GCC 12 falsely warns
    // of an uninitialized string when this temporary is pushed back.)
    fx.emplace_back(std::in_place_type<effect::Revoke>, effect::Revoke{g.lease});
    return;
  }
  lease_ = g.lease;
  last_ok_sent_ms_ = grant_sent_ms_;
  phase_ = Phase::registering;
  register_in_flight_ = false;
  register_retry_at_ = 0;
  keepalives_in_flight_ = 0;
  next_keepalive_at_ = grant_sent_ms_ + t_.keepalive_interval_ms;
}

void OwnershipCore::on_lease_failed(int64_t now) {
  if (phase_ != Phase::granting) return;
  phase_ = Phase::no_lease;
  retry_grant_at_ = now + t_.retry_ms;
}

void OwnershipCore::on_keepalive(const ev::KeepaliveDone& k, int64_t now, Effects& fx) {
  if (k.lease != lease_ || keepalives_in_flight_ == 0) return;
  keepalives_in_flight_ -= 1;
  if (k.ok) {
    // Answered late (it waited for an election) it still renewed the lease
    // no earlier than it was sent: only a newer success moves this on.
    last_ok_sent_ms_ = std::max(last_ok_sent_ms_, k.sent_ms);
  } else if (k.lease_gone) {
    fence("etcd says lease " + std::to_string(lease_) + " is gone: " + k.why, fx);
  } else {
    next_keepalive_at_ = std::min(next_keepalive_at_, now + t_.retry_ms);
  }
}

void OwnershipCore::on_registered(const ev::Registered& r, int64_t now) {
  if (r.lease != lease_ || phase_ != Phase::registering) return;
  register_in_flight_ = false;
  if (r.ok) {
    phase_ = Phase::live;
  } else {
    register_retry_at_ = now + t_.retry_ms;
  }
}

void OwnershipCore::on_acquired(const ev::AcquireDone& a, int64_t now, Effects& fx) {
  auto it = owned_.find(a.stream);
  if (a.lease != lease_ || it == owned_.end() || it->second.state != StreamState::acquiring) {
    return;
  }
  if (a.won) {
    it->second.acquired_revision = a.revision;
    emit_open(a.stream, it->second, fx);
  } else {
    // Lost (the view will show the winner) or failed: either way not again
    // before the backoff, so a lagging view does not make us retry in a
    // loop.
    owned_.erase(it);
    retry_at_[a.stream] = now + t_.retry_ms;
  }
}

void OwnershipCore::on_opened(const ev::OpenDone& o, int64_t now, Effects& fx) {
  if (o.lease == lease_ && orphan_opens_.erase(o.stream) > 0) {
    // The open of a stream dropped while it ran (the only open of it under
    // this lease: none starts before this one is back).
    if (o.ok) fx.push_back(effect::Close{o.stream});
    return;
  }
  auto it = owned_.find(o.stream);
  if (o.lease != lease_ || it == owned_.end() || it->second.state != StreamState::opening) {
    // Opened under a lease given up since, or closed meanwhile.
    if (o.ok) fx.push_back(effect::Close{o.stream});
    return;
  }
  it->second.in_flight = false;
  if (o.ok) {
    it->second.state = StreamState::serving;
    retry_at_.erase(o.stream);
  } else {
    retry_at_[o.stream] = now + t_.retry_ms;
  }
}

void OwnershipCore::on_removed(const ev::RemoveDone& r, int64_t now) {
  auto it = owned_.find(r.stream);
  if (r.lease != lease_ || it == owned_.end() || !it->second.removing) return;
  // Done: the view drops the stream (the remove took its owner key); until
  // then it is not deleted again.
  if (r.ok) return;
  // Failed: tried again after the backoff.
  it->second.removing = false;
  retry_at_[r.stream] = now + t_.retry_ms;
}

void OwnershipCore::on_handed_off(const ev::HandoffDone& h, int64_t now, Effects& fx) {
  if (h.lease != lease_) return;
  // Counted even when the view showed the key gone first (and apply()
  // dropped the stream).
  if (h.ok) handoffs_ += 1;
  auto it = owned_.find(h.stream);
  if (it == owned_.end() || it->second.state != StreamState::handing_off) return;
  if (h.ok) {
    // Its first choice takes it; the view drops our key.
    owned_.erase(it);
    return;
  }
  handoff_retry_at_ = now + t_.rebalance_after_ms;
  if (h.closed) {
    // Closed but still ours: a takeover under our own key.
    emit_open(h.stream, it->second, fx);
  } else {
    it->second.state = StreamState::serving;
    it->second.in_flight = false;
  }
}

void OwnershipCore::on_writer_fenced(const ev::WriterFenced& f, Effects& fx) {
  auto it = owned_.find(f.stream);
  if (f.lease != lease_ || it == owned_.end() || it->second.state != StreamState::serving ||
      it->second.removing) {
    return;
  }
  // Close first (the list runs in order), then the open's takeover raises
  // the epoch again under our key.
  writer_fences_ += 1;
  fx.push_back(effect::Close{f.stream});
  emit_open(f.stream, it->second, fx);
}

Effects OwnershipCore::on(const Event& e, int64_t now) {
  Effects fx;
  if (stopped_) return fx;
  // Every event, whatever it is, first answers to the clock: a process
  // frozen past its lease stops on the first event after it thaws, before
  // it acts on what the event says (a late win, a late keepalive).
  check_clock(now, fx);
  std::visit(Overloaded{
                 [&](const ev::Tick&) {},
                 [&](const ev::LeaseGranted& g) { on_granted(g, fx); },
                 [&](const ev::LeaseFailed&) { on_lease_failed(now); },
                 [&](const ev::KeepaliveDone& k) { on_keepalive(k, now, fx); },
                 [&](const ev::Registered& r) { on_registered(r, now); },
                 [&](const ev::View& v) { apply(v, fx); },
                 [&](const ev::AcquireDone& a) { on_acquired(a, now, fx); },
                 [&](const ev::OpenDone& o) { on_opened(o, now, fx); },
                 [&](const ev::RemoveDone& r) { on_removed(r, now); },
                 [&](const ev::HandoffDone& h) { on_handed_off(h, now, fx); },
                 [&](const ev::WriterFenced& f) { on_writer_fenced(f, fx); },
                 [&](const ev::CandidacyDone& c) { on_candidacy(c, now); },
             },
             e);
  check_clock(now, fx);
  drive(now, fx);
  mirror();
  // Stopping is never delayed by anything else: every Close runs first, the
  // rest in the order decided (a stream opened under an old lease, whose
  // late OpenDone comes in as the lease is given up, stops before the
  // lease is revoked, like every other stream of that lease).
  std::stable_partition(fx.begin(), fx.end(),
                        [](const Effect& x) { return std::holds_alternative<effect::Close>(x); });
  // The safety rule the whole design rests on: nothing is served past the
  // lease by the node's own clock.
  for (const auto& [s, o] : owned_) {
    STRATA_ASSERT(o.state != StreamState::serving || now < valid_until_ms(),
                  "cluster: a stream is served past the lease's validity");
  }
  return fx;
}

}  // namespace strata::cluster
