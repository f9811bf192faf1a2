// OwnershipCore as a pure unit: lease grant, registration and keepalive
// timing, the clock check that stops every stream before the lease can
// expire (including a process frozen past its lease), rendezvous
// placement, acquire/open/close decisions and stale results; then a seeded
// simulation checking the safety invariant over random event orders.
#include "cluster/ownership_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "cluster/cluster_limits.h"
#include "cluster/core_timing.h"
#include "common/overloaded.h"
#include "support/temp_dir.h"

namespace strata::cluster {
namespace {

using Phase = OwnershipCore::Phase;
using State = OwnershipCore::StreamState;

OwnershipTiming timing() {
  return core_test_timing();
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// ---- reading an effect list ----

// The streams of every effect of type E, in list order.
template <class E>
std::vector<std::string> streams_of(const Effects& fx) {
  std::vector<std::string> out;
  for (const auto& e : fx) {
    if (const auto* x = std::get_if<E>(&e)) out.push_back(x->stream);
  }
  return out;
}
std::vector<std::string> acquires(const Effects& fx) {
  return streams_of<effect::Acquire>(fx);
}
std::vector<std::string> opens(const Effects& fx) {
  return streams_of<effect::Open>(fx);
}
std::vector<std::string> closes(const Effects& fx) {
  return streams_of<effect::Close>(fx);
}
std::vector<std::string> removes(const Effects& fx) {
  return streams_of<effect::Remove>(fx);
}
std::vector<std::string> handoffs(const Effects& fx) {
  return streams_of<effect::HandOff>(fx);
}
template <class E>
size_t count_of(const Effects& fx) {
  return size_t(std::count_if(fx.begin(), fx.end(),
                              [](const Effect& e) { return std::holds_alternative<E>(e); }));
}
// The lease of the one effect of type E (at most one per list), if any.
template <class E>
std::optional<int64_t> lease_of(const Effects& fx) {
  EXPECT_LE(count_of<E>(fx), 1u);
  for (const auto& e : fx) {
    if (const auto* x = std::get_if<E>(&e)) return x->lease;
  }
  return std::nullopt;
}
std::optional<int64_t> keepalive(const Effects& fx) {
  return lease_of<effect::Keepalive>(fx);
}
std::optional<int64_t> registers(const Effects& fx) {
  return lease_of<effect::Register>(fx);
}
std::vector<int64_t> revokes(const Effects& fx) {
  std::vector<int64_t> out;
  for (const auto& e : fx) {
    if (const auto* r = std::get_if<effect::Revoke>(&e)) out.push_back(r->lease);
  }
  return out;
}
bool grants(const Effects& fx) {
  EXPECT_LE(count_of<effect::GrantLease>(fx), 1u);
  return count_of<effect::GrantLease>(fx) > 0;
}
bool fenced(const Effects& fx) {
  EXPECT_LE(count_of<effect::LeaseGivenUp>(fx), 1u);
  return count_of<effect::LeaseGivenUp>(fx) > 0;
}
std::string why(const Effects& fx) {
  for (const auto& e : fx) {
    if (const auto* g = std::get_if<effect::LeaseGivenUp>(&e)) return g->why;
  }
  return "";
}
// Where the first effect of type E (of `stream`, if given) stands in the
// list; fx.size() if none.
template <class E>
size_t position(const Effects& fx, const std::string& stream = "") {
  for (size_t i = 0; i < fx.size(); ++i) {
    const auto* x = std::get_if<E>(&fx[i]);
    if (!x) continue;
    if constexpr (requires { x->stream; }) {
      if (!stream.empty() && x->stream != stream) continue;
    }
    return i;
  }
  return fx.size();
}

// A stream whose first choice among `nodes` is `want`.
std::string stream_first_for(const std::string& want, const std::vector<std::string>& nodes,
                             int skip = 0) {
  for (int i = 0;; ++i) {
    std::string s = "s" + std::to_string(i);
    if (first_choice(s, nodes) == want && skip-- == 0) return s;
  }
}

ev::View view(int64_t rev, std::vector<std::string> nodes, std::vector<std::string> streams,
              std::map<std::string, OwnerRecord> owners = {}) {
  ev::View v;
  v.revision = rev;
  v.nodes = std::move(nodes);
  v.streams = std::move(streams);
  v.owners = std::move(owners);
  return v;
}

// A core of node "a" brought to live with lease 7 at time 0.
OwnershipCore live_core(const std::string& id = "a", int64_t lease = 7,
                        OwnershipTiming t = timing()) {
  OwnershipCore c(id, t);
  auto fx = c.start(0);
  EXPECT_TRUE(grants(fx));
  fx = c.on(ev::LeaseGranted{lease}, 0);
  EXPECT_EQ(registers(fx), lease);
  EXPECT_EQ(c.phase(), Phase::registering);
  fx = c.on(ev::Registered{lease, true, ""}, 0);
  EXPECT_EQ(c.phase(), Phase::live);
  return c;
}

TEST(OwnershipTiming, DefaultsDeriveFromTheTtl) {
  OwnershipTiming t;
  t.lease_ttl_ms = 6000;
  auto r = t.resolved();
  EXPECT_EQ(r.keepalive_interval_ms, 2000);
  EXPECT_EQ(r.safety_margin_ms, 1200);
  EXPECT_EQ(r.acquire_grace_ms, 6000);
  EXPECT_EQ(r.rebalance_after_ms, 12000);
}

TEST(Rendezvous, IsStableSpreadsAndMovesOnlyTheLostNodesStreams) {
  // Pinned: every node of every version must rank alike.
  EXPECT_EQ(rendezvous_score("orders", "n1"), rendezvous_score("orders", "n1"));
  EXPECT_NE(rendezvous_score("ab", "c"), rendezvous_score("a", "bc"));
  std::vector<std::string> nodes{"n1", "n2", "n3"};
  std::map<std::string, int> count;
  std::map<std::string, std::string> before;
  for (int i = 0; i < 600; ++i) {
    std::string s = "stream-" + std::to_string(i);
    before[s] = first_choice(s, nodes);
    count[before[s]] += 1;
  }
  for (const auto& n : nodes) EXPECT_GT(count[n], 120) << n;
  std::vector<std::string> two{"n1", "n3"};
  for (const auto& [s, owner] : before) {
    if (owner != "n2") {
      EXPECT_EQ(first_choice(s, two), owner) << s;
    }
  }
  EXPECT_EQ(first_choice("x", {}), "");
}

TEST(OwnershipCore, GrantRegisterAndKeepaliveEveryInterval) {
  auto c = live_core();
  EXPECT_EQ(c.valid_until_ms(), 2500);
  auto fx = c.on(ev::Tick{}, 999);
  EXPECT_FALSE(keepalive(fx));
  fx = c.on(ev::Tick{}, 1000);
  EXPECT_EQ(keepalive(fx), 7);
  // The next one is due an interval after this one.
  EXPECT_FALSE(keepalive(c.on(ev::Tick{}, 1500)));
  fx = c.on(ev::KeepaliveDone{7, 1000, true, false, ""}, 1800);
  // Valid from when it was sent (1000), not when it was answered.
  EXPECT_EQ(c.valid_until_ms(), 3500);
  EXPECT_FALSE(keepalive(fx));
  EXPECT_EQ(keepalive(c.on(ev::Tick{}, 2000)), 7);
}

// An etcd leader election: the keepalive sent at 1000 waits on a member
// until a new leader is elected. The next ones go out beside it, up to
// kMaxKeepalivesInFlight, and whichever succeeds counts from when it was
// sent — the late answer of the first keeps the lease.
TEST(OwnershipCore, KeepalivesGoOutBesideOneThatWaitsForAnElection) {
  auto c = live_core();  // TTL 3000, interval 1000, margin 500
  ASSERT_EQ(keepalive(c.on(ev::Tick{}, 1000)), 7);
  EXPECT_EQ(keepalive(c.on(ev::Tick{}, 2000)), 7);
  EXPECT_EQ(keepalive(c.on(ev::Tick{}, 2400)), std::nullopt);
  // The first answers at 2450, after its own interval but before the
  // lease would be given up (2500): valid until 1000 + 2500.
  auto fx = c.on(ev::KeepaliveDone{7, 1000, true, false, ""}, 2450);
  EXPECT_FALSE(fenced(fx));
  EXPECT_EQ(c.valid_until_ms(), 3500);
  // The second answers later still; its send time moves the lease on.
  fx = c.on(ev::KeepaliveDone{7, 2000, true, false, ""}, 3400);
  EXPECT_FALSE(fenced(fx));
  EXPECT_EQ(c.valid_until_ms(), 4500);
  // The third was due at 3000: it goes out now.
  EXPECT_EQ(keepalive(fx), 7);
  fx = c.on(ev::KeepaliveDone{7, 3400, true, false, ""}, 3401);
  EXPECT_EQ(c.valid_until_ms(), 5900);
  // A success sent before the newest one moves nothing back.
  EXPECT_EQ(keepalive(c.on(ev::Tick{}, 4400)), 7);
  c.on(ev::KeepaliveDone{7, 1200, true, false, ""}, 4401);
  EXPECT_EQ(c.valid_until_ms(), 5900);
}

TEST(OwnershipCore, AtMostKMaxKeepalivesInFlight) {
  OwnershipTiming t = timing();
  t.keepalive_interval_ms = 200;
  auto c = live_core("a", 7, t);
  std::vector<int64_t> sent;
  for (int64_t now = 100; now <= 1500; now += 100) {
    if (keepalive(c.on(ev::Tick{}, now))) sent.push_back(now);
  }
  EXPECT_EQ(sent, (std::vector<int64_t>{200, 400, 600}));
  static_assert(kMaxKeepalivesInFlight == 3);
  // One answers: the next goes out at once.
  auto fx = c.on(ev::KeepaliveDone{7, 400, true, false, ""}, 1550);
  EXPECT_EQ(keepalive(fx), 7);
  EXPECT_EQ(c.valid_until_ms(), 400 + 2500);
}

TEST(OwnershipCore, AFailedGrantOrRegistrationIsRetriedAfterTheBackoff) {
  OwnershipCore c("a", timing());
  c.start(0);
  auto fx = c.on(ev::LeaseFailed{"down"}, 10);
  EXPECT_FALSE(grants(fx));
  EXPECT_EQ(c.phase(), Phase::no_lease);
  EXPECT_FALSE(grants(c.on(ev::Tick{}, 109)));
  EXPECT_TRUE(grants(c.on(ev::Tick{}, 110)));
  fx = c.on(ev::LeaseGranted{9}, 120);
  EXPECT_EQ(registers(fx), 9);
  fx = c.on(ev::Registered{9, false, "down"}, 130);
  EXPECT_FALSE(registers(fx));
  EXPECT_FALSE(registers(c.on(ev::Tick{}, 229)));
  EXPECT_EQ(registers(c.on(ev::Tick{}, 230)), 9);
  c.on(ev::Registered{9, true, ""}, 240);
  EXPECT_EQ(c.phase(), Phase::live);
}

TEST(OwnershipCore, AnUnaskedGrantIsGivenBack) {
  auto c = live_core();
  auto fx = c.on(ev::LeaseGranted{99}, 10);
  EXPECT_EQ(revokes(fx), std::vector<int64_t>{99});
  EXPECT_EQ(c.lease(), 7);
}

// Brings stream `s` to serving on core `c` (lease 7, node "a" alone).
void own(OwnershipCore& c, const std::string& s, int64_t now, int64_t rev = 5) {
  auto fx = c.on(view(rev - 1, {"a"}, {s}), now);
  ASSERT_TRUE(has(acquires(fx), s));
  fx = c.on(ev::AcquireDone{s, c.lease(), true, rev, ""}, now);
  ASSERT_TRUE(has(opens(fx), s));
  fx = c.on(ev::OpenDone{s, c.lease(), true, ""}, now);
  ASSERT_TRUE(c.serving(s));
}

TEST(OwnershipCore, WithoutASuccessfulKeepaliveEveryStreamStopsBeforeTheTtl) {
  auto c = live_core();
  own(c, "x", 0);
  // Keepalives fail (etcd unreachable); retried after the backoff.
  auto fx = c.on(ev::Tick{}, 1000);
  ASSERT_EQ(keepalive(fx), 7);
  fx = c.on(ev::KeepaliveDone{7, 1000, false, false, "timeout"}, 1050);
  EXPECT_FALSE(fenced(fx));
  EXPECT_EQ(keepalive(c.on(ev::Tick{}, 1150)), 7);
  c.on(ev::KeepaliveDone{7, 1150, false, false, "timeout"}, 1200);
  fx = c.on(ev::Tick{}, 2499);
  EXPECT_FALSE(fenced(fx));
  EXPECT_TRUE(c.serving("x"));
  fx = c.on(ev::Tick{}, 2500);  // TTL 3000 - margin 500 after the grant was sent
  EXPECT_TRUE(fenced(fx));
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});
  EXPECT_EQ(revokes(fx), std::vector<int64_t>{7});
  EXPECT_TRUE(grants(fx));  // competes again with a fresh lease
  // In the order they must run: the streams stop, then the lease is given
  // up and revoked, then a fresh one is asked for.
  EXPECT_LT(position<effect::Close>(fx, "x"), position<effect::LeaseGivenUp>(fx));
  EXPECT_LT(position<effect::LeaseGivenUp>(fx), position<effect::Revoke>(fx));
  EXPECT_LT(position<effect::Revoke>(fx), position<effect::GrantLease>(fx));
  EXPECT_FALSE(c.serving("x"));
  EXPECT_EQ(c.valid_until_ms(), 0);
  EXPECT_EQ(c.fences(), 1u);
  // The old lease's late answers change nothing.
  fx = c.on(ev::KeepaliveDone{7, 1150, true, false, ""}, 2600);
  EXPECT_FALSE(fenced(fx));
  EXPECT_EQ(c.phase(), Phase::granting);
}

TEST(OwnershipCore, AProcessFrozenPastItsLeaseStopsOnTheFirstEventAfterItThaws) {
  auto c = live_core();
  own(c, "x", 0);
  ASSERT_EQ(keepalive(c.on(ev::Tick{}, 1000)), 7);
  // Frozen from 1000 to 60000; the keepalive sent at 1000 is answered "ok"
  // after the thaw. Its send time is what counts: stop.
  auto fx = c.on(ev::KeepaliveDone{7, 1000, true, false, ""}, 60000);
  EXPECT_TRUE(fenced(fx));
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});
  // Same when the first event is a late acquire win: nothing opens.
  auto d = live_core();
  d.on(view(1, {"a"}, {"y"}), 0);
  fx = d.on(ev::AcquireDone{"y", 7, true, 3, ""}, 60000);
  EXPECT_TRUE(fenced(fx));
  EXPECT_TRUE(opens(fx).empty());
  EXPECT_TRUE(closes(fx).empty());
  EXPECT_TRUE(d.streams().empty());
}

// etcd was out of reach: the node gave lease 7 up on its clock, but the
// revoke did not get through and etcd kept the lease (an outage extends
// it). With lease 8 the node finds x's key still on 7: its own, taken back
// at once — moved to lease 8, not created — and opened. So is y's, on a
// lease this process never held (an earlier process of this node, killed
// and restarted: node ids are unique). Another node's key is not touched.
TEST(OwnershipCore, AKeyStillOnALeaseTheNodeGaveUpIsTakenBackAtOnce) {
  auto c = live_core();
  own(c, "x", 0);
  auto fx = c.on(
      view(10, {"a", "b"}, {"x", "y", "z"}, {{"x", {"a", 7}}, {"y", {"a", 5}}, {"z", {"b", 9}}}),
      0);
  ASSERT_TRUE(c.serving("x"));
  fx = c.on(ev::Tick{}, 2500);
  ASSERT_TRUE(fenced(fx));
  ASSERT_TRUE(grants(fx));
  c.on(ev::LeaseGranted{8}, 2600);
  // Live again: the view still shows x's key on lease 7.
  fx = c.on(ev::Registered{8, true, ""}, 2600);
  ASSERT_EQ(c.phase(), Phase::live);
  std::vector<std::pair<std::string, int64_t>> acquired;
  for (const auto& e : fx) {
    if (const auto* a = std::get_if<effect::Acquire>(&e)) {
      EXPECT_EQ(a->lease, 8);
      acquired.emplace_back(a->stream, a->from_lease);
    }
  }
  EXPECT_EQ(acquired, (std::vector<std::pair<std::string, int64_t>>{{"x", 7}, {"y", 5}}));
  // Not asked twice while it runs.
  EXPECT_TRUE(acquires(c.on(ev::Tick{}, 2750)).empty());
  fx = c.on(ev::AcquireDone{"x", 8, true, 11, ""}, 2800);
  EXPECT_EQ(opens(fx), std::vector<std::string>{"x"});
  fx = c.on(ev::OpenDone{"x", 8, true, ""}, 2900);
  EXPECT_TRUE(c.serving("x"));
  // The view catches up: the key is on lease 8 now, served, nothing more.
  fx = c.on(
      view(11, {"a", "b"}, {"x", "y", "z"}, {{"x", {"a", 8}}, {"y", {"a", 5}}, {"z", {"b", 9}}}),
      3000);
  EXPECT_TRUE(acquires(fx).empty());
  EXPECT_TRUE(closes(fx).empty());
  EXPECT_TRUE(c.serving("x"));
}

TEST(OwnershipCore, LeaseNotFoundStopsAtOnce) {
  auto c = live_core();
  own(c, "x", 0);
  c.on(ev::Tick{}, 1000);
  auto fx = c.on(ev::KeepaliveDone{7, 1000, false, true, "lease not found"}, 1001);
  EXPECT_TRUE(fenced(fx));
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});
  EXPECT_NE(why(fx).find("lease not found"), std::string::npos);
}

TEST(OwnershipCore, TheFirstChoiceAcquiresAtOnceOthersAfterTheGrace) {
  std::vector<std::string> nodes{"a", "b"};
  std::string mine = stream_first_for("a", nodes);
  std::string theirs = stream_first_for("b", nodes);
  auto c = live_core();
  auto fx = c.on(view(1, nodes, {mine, theirs}), 100);
  EXPECT_EQ(acquires(fx), std::vector<std::string>{mine});
  EXPECT_EQ(c.streams().at(mine), State::acquiring);
  EXPECT_TRUE(acquires(c.on(ev::Tick{}, 2099)).empty());
  fx = c.on(ev::Tick{}, 2100);  // ownerless for the grace: anyone tries
  EXPECT_EQ(acquires(fx), std::vector<std::string>{theirs});
}

TEST(OwnershipCore, NothingIsAcquiredBeforeTheNodeSeesItsOwnRegistration) {
  auto c = live_core();
  auto fx = c.on(view(1, {"b"}, {"x"}), 0);
  EXPECT_TRUE(acquires(fx).empty());
  fx = c.on(ev::Tick{}, 5000);
  EXPECT_TRUE(acquires(fx).empty());
}

TEST(OwnershipCore, AStreamWithAnOwnerIsLeftAlone) {
  auto c = live_core();
  auto fx = c.on(view(1, {"a", "b"}, {"x"}, {{"x", {"b", 3}}}), 0);
  EXPECT_TRUE(acquires(fx).empty());
  EXPECT_TRUE(acquires(c.on(ev::Tick{}, 10000)).empty() || c.phase() != Phase::live);
}

TEST(OwnershipCore, LostAndFailedAcquires) {
  auto c = live_core();
  auto fx = c.on(view(1, {"a"}, {"x", "y"}), 0);
  ASSERT_EQ(acquires(fx).size(), 2u);
  // Lost the race: forgotten; the view will show the winner.
  fx = c.on(ev::AcquireDone{"x", 7, false, 0, ""}, 10);
  EXPECT_FALSE(c.streams().count("x"));
  // Failed (etcd unreachable): retried after the backoff, while still ownerless.
  fx = c.on(ev::AcquireDone{"y", 7, false, 0, "timeout"}, 10);
  EXPECT_FALSE(has(acquires(fx), "y"));
  fx = c.on(view(2, {"a"}, {"x", "y"}, {{"x", {"b", 3}}}), 20);
  EXPECT_TRUE(acquires(fx).empty());
  fx = c.on(ev::Tick{}, 110);
  EXPECT_EQ(acquires(fx), std::vector<std::string>{"y"});
}

TEST(OwnershipCore, AFailedOpenIsRetriedAndAStaleOpenIsClosed) {
  auto c = live_core();
  c.on(view(1, {"a"}, {"x"}), 0);
  auto fx = c.on(ev::AcquireDone{"x", 7, true, 2, ""}, 0);
  ASSERT_EQ(opens(fx), std::vector<std::string>{"x"});
  fx = c.on(ev::OpenDone{"x", 7, false, "disk"}, 10);
  EXPECT_TRUE(opens(fx).empty());
  EXPECT_TRUE(opens(c.on(ev::Tick{}, 109)).empty());
  fx = c.on(ev::Tick{}, 110);
  EXPECT_EQ(opens(fx), std::vector<std::string>{"x"});
  // An open under a lease given up meanwhile is closed when it ends.
  fx = c.on(ev::Tick{}, 2500);
  ASSERT_TRUE(fenced(fx));
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});  // it may have opened already
  fx = c.on(ev::OpenDone{"x", 7, true, ""}, 2600);
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});
}

// Every Close runs first: a stream opened under an old lease, whose late
// OpenDone comes in just as the current lease is given up, stops before
// that lease is revoked, as every stream of the lease does.
TEST(OwnershipCore, AStaleOpenEndingAsTheLeaseIsGivenUpIsClosedBeforeTheRevoke) {
  auto c = live_core();
  c.on(view(1, {"a"}, {"y"}), 0);
  ASSERT_EQ(opens(c.on(ev::AcquireDone{"y", 7, true, 2, ""}, 0)), std::vector<std::string>{"y"});
  // Lease 7 given up before the open ended; lease 8 granted at 2600.
  ASSERT_TRUE(fenced(c.on(ev::Tick{}, 2500)));
  c.on(ev::LeaseGranted{8}, 2600);
  c.on(ev::Registered{8, true, ""}, 2600);
  ASSERT_EQ(c.phase(), Phase::live);
  // The open under lease 7 ends well after lease 8 could have expired.
  auto fx = c.on(ev::OpenDone{"y", 7, true, ""}, 9000);
  ASSERT_TRUE(fenced(fx));
  EXPECT_EQ(closes(fx), std::vector<std::string>{"y"});
  EXPECT_EQ(revokes(fx), std::vector<int64_t>{8});
  EXPECT_LT(position<effect::Close>(fx, "y"), position<effect::LeaseGivenUp>(fx));
  EXPECT_LT(position<effect::Close>(fx, "y"), position<effect::Revoke>(fx));
}

TEST(OwnershipCore, AStreamWhoseOwnerKeyIsNoLongerOursIsClosedOnceTheViewCaughtUp) {
  auto c = live_core();
  own(c, "x", 0, /*rev=*/5);
  // A view older than the acquire does not show our key yet: kept.
  auto fx = c.on(view(4, {"a"}, {"x"}), 10);
  EXPECT_TRUE(closes(fx).empty());
  EXPECT_TRUE(c.serving("x"));
  fx = c.on(view(5, {"a"}, {"x"}, {{"x", {"a", 7}}}), 20);
  EXPECT_TRUE(closes(fx).empty());
  // Our key under an old lease is not ours.
  fx = c.on(view(6, {"a"}, {"x"}, {{"x", {"a", 6}}}), 30);
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});
  EXPECT_FALSE(c.serving("x"));
}

// A stream dropped while its open runs (the view showed its key gone) is not
// acquired again before that open is back: otherwise the first open's
// OpenDone would be taken for the second's, and the stream served while the
// second still runs (then closed by it).
TEST(OwnershipCore, AStreamDroppedWhileItsOpenRunsIsNotAcquiredAgainBeforeTheOpenIsBack) {
  auto c = live_core();
  c.on(view(1, {"a"}, {"x"}), 0);
  ASSERT_EQ(opens(c.on(ev::AcquireDone{"x", 7, true, 2, ""}, 0)), std::vector<std::string>{"x"});
  // Its key is another's, then gone: dropped, and not taken while the open runs.
  EXPECT_EQ(closes(c.on(view(3, {"a"}, {"x"}, {{"x", {"b", 9}}}), 10)),
            std::vector<std::string>{"x"});
  EXPECT_TRUE(acquires(c.on(view(4, {"a"}, {"x"}), 20)).empty());
  EXPECT_TRUE(acquires(c.on(ev::Tick{}, 500)).empty());
  // The open ends: its stream is closed, and only now acquired again.
  auto fx = c.on(ev::OpenDone{"x", 7, true, ""}, 600);
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});
  EXPECT_EQ(acquires(fx), std::vector<std::string>{"x"});
  ASSERT_EQ(opens(c.on(ev::AcquireDone{"x", 7, true, 5, ""}, 610)), std::vector<std::string>{"x"});
  c.on(ev::OpenDone{"x", 7, true, ""}, 620);
  EXPECT_TRUE(c.serving("x"));
}

TEST(OwnershipCore, AServedStreamWhoseWriterWasFencedIsClosedAndOpenedAgain) {
  auto c = live_core();
  own(c, "x", 0);
  // Stale reports are ignored: another lease, a stream not served here.
  EXPECT_TRUE(closes(c.on(ev::WriterFenced{"x", 6, "old lease"}, 10)).empty());
  EXPECT_TRUE(closes(c.on(ev::WriterFenced{"y", 7, "not ours"}, 10)).empty());
  EXPECT_TRUE(c.serving("x"));
  // Ours: stopped now and opened again (the open raises the epoch anew).
  auto fx = c.on(ev::WriterFenced{"x", 7, "epoch 5 > 4"}, 20);
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});
  EXPECT_EQ(opens(fx), std::vector<std::string>{"x"});
  // Closed before it is opened again: the list runs in order.
  EXPECT_LT(position<effect::Close>(fx, "x"), position<effect::Open>(fx, "x"));
  EXPECT_FALSE(fenced(fx));  // the lease is kept
  EXPECT_EQ(c.writer_fences(), 1u);
  EXPECT_EQ(c.streams().at("x"), State::opening);
  // A second report while it reopens does nothing more.
  fx = c.on(ev::WriterFenced{"x", 7, "again"}, 30);
  EXPECT_TRUE(closes(fx).empty());
  EXPECT_TRUE(opens(fx).empty());
  // A failed reopen (the owner key is not ours any more) is retried like
  // any open; the view then closes it.
  fx = c.on(ev::OpenDone{"x", 7, false, "owner key"}, 40);
  EXPECT_TRUE(opens(fx).empty());
  fx = c.on(ev::Tick{}, 140);
  EXPECT_EQ(opens(fx), std::vector<std::string>{"x"});
  fx = c.on(ev::OpenDone{"x", 7, true, ""}, 150);
  EXPECT_TRUE(c.serving("x"));
}

TEST(OwnershipCore, AStreamWhoseDeletionWasRequestedIsDeletedByTheNodeServingIt) {
  auto c = live_core();
  own(c, "x", 0);
  auto v = view(6, {"a", "b"}, {"x"}, {{"x", {"a", 7}}});
  v.deletions["x"] = "b";
  auto fx = c.on(v, 10);
  EXPECT_EQ(removes(fx), std::vector<std::string>{"x"});
  // One deletion at a time.
  EXPECT_TRUE(removes(c.on(ev::Tick{}, 20)).empty());
  // A failed one is tried again after the backoff; stale reports are ignored.
  EXPECT_TRUE(removes(c.on(ev::RemoveDone{"x", 6, false, "old lease"}, 30)).empty());
  fx = c.on(ev::RemoveDone{"x", 7, false, "s3 down"}, 30);
  EXPECT_TRUE(removes(fx).empty());
  EXPECT_TRUE(removes(c.on(ev::Tick{}, 129)).empty());
  fx = c.on(ev::Tick{}, 130);
  EXPECT_EQ(removes(fx), std::vector<std::string>{"x"});
  fx = c.on(ev::RemoveDone{"x", 7, true, ""}, 140);
  EXPECT_TRUE(removes(fx).empty());
  // The remove took the entry, its request and the owner key: closed.
  fx = c.on(view(9, {"a", "b"}, {}), 150);
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});
  EXPECT_TRUE(c.streams().empty());
}

TEST(OwnershipCore, AnOwnerlessStreamIsTakenAtOnceByTheNodeThatAskedToDeleteIt) {
  auto c = live_core();
  const std::string s = stream_first_for("b", {"a", "b"});
  // Not a's to take before the grace...
  auto fx = c.on(view(2, {"a", "b"}, {s}), 10);
  EXPECT_TRUE(acquires(fx).empty());
  // ...nor when b asked for the deletion (b takes it)...
  auto v = view(3, {"a", "b"}, {s});
  v.deletions[s] = "b";
  EXPECT_TRUE(acquires(c.on(v, 20)).empty());
  // ...but a asked: a takes it at once, to delete it once it serves it.
  v = view(4, {"a", "b"}, {s});
  v.deletions[s] = "a";
  fx = c.on(v, 30);
  EXPECT_EQ(acquires(fx), std::vector<std::string>{s});
  fx = c.on(ev::AcquireDone{s, 7, true, 5, ""}, 40);
  ASSERT_EQ(opens(fx), std::vector<std::string>{s});
  EXPECT_TRUE(removes(fx).empty());  // not before it is open
  fx = c.on(ev::OpenDone{s, 7, true, ""}, 50);
  EXPECT_EQ(removes(fx), std::vector<std::string>{s});
}

// Ticks every 250 ms from `from` to `to`, answering every keepalive at
// once; returns every stream handed over meanwhile.
std::vector<std::string> live_until(OwnershipCore& c, int64_t from, int64_t to) {
  std::vector<std::string> handed;
  for (int64_t t = from; t <= to; t += 250) {
    auto fx = c.on(ev::Tick{}, t);
    EXPECT_FALSE(fenced(fx)) << why(fx);
    for (const auto& s : handoffs(fx)) handed.push_back(s);
    if (keepalive(fx)) {
      fx = c.on(ev::KeepaliveDone{*keepalive(fx), t, true, false, ""}, t);
      for (const auto& s : handoffs(fx)) handed.push_back(s);
    }
  }
  return handed;
}

// "a" serves x and y, whose first choice among {a, b} is b, and z, its own.
struct Rebalance {
  explicit Rebalance(OwnershipTiming t = timing()) : c(live_core("a", 7, t)) {}
  std::vector<std::string> nodes{"a", "b"};
  std::string x = stream_first_for("b", nodes), y = stream_first_for("b", nodes, 1),
              z = stream_first_for("a", nodes);
  OwnershipCore c;
  int64_t now = 0;

  void setup() {
    for (const auto& s : {x, y, z}) {
      auto fx = c.on(view(1, {"a"}, {x, y, z}), now);
      if (has(acquires(fx), s) || c.streams().count(s)) {
        c.on(ev::AcquireDone{s, 7, true, 2, ""}, now);
        c.on(ev::OpenDone{s, 7, true, ""}, now);
      }
    }
    ASSERT_TRUE(c.serving(x) && c.serving(y) && c.serving(z));
    // b registers at 1000.
    std::map<std::string, OwnerRecord> owners{{x, {"a", 7}}, {y, {"a", 7}}, {z, {"a", 7}}};
    live_until(c, 0, 750);
    auto fx = c.on(view(3, nodes, {x, y, z}, owners), 1000);
    EXPECT_TRUE(handoffs(fx).empty());
    if (keepalive(fx)) c.on(ev::KeepaliveDone{*keepalive(fx), 1000, true, false, ""}, 1000);
    now = 1000;
  }

  // setup(), then time goes on until the first hand-off: its stream.
  std::string first_handoff() {
    setup();
    auto handed = live_until(c, 1250, 7000);
    EXPECT_EQ(handed.size(), 1u);
    return handed.empty() ? std::string() : handed[0];
  }
};

TEST(OwnershipCore, StreamsAreHandedOneAtATimeToAFirstChoiceRegisteredLongEnough) {
  Rebalance r;
  r.setup();
  auto& c = r.c;
  // Not before b has been registered for 2 x TTL (6 s).
  EXPECT_TRUE(live_until(c, 1250, 6750).empty());
  auto handed = live_until(c, 7000, 7000);
  ASSERT_EQ(handed.size(), 1u);
  const std::string first = handed[0];
  EXPECT_TRUE(first == r.x || first == r.y);
  EXPECT_EQ(c.streams().at(first), State::handing_off);
  EXPECT_FALSE(c.serving(first)) << "a stream being handed over takes no writes";
  // One at a time.
  EXPECT_TRUE(live_until(c, 7250, 9000).empty());
  auto fx = c.on(ev::HandoffDone{first, 7, true, true, ""}, 9000);
  EXPECT_FALSE(c.streams().count(first));
  EXPECT_EQ(c.handoffs(), 1u);
  // Then, at once, the other; z, whose first choice is a, stays.
  handed = handoffs(fx);
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(handed[0], first == r.x ? r.y : r.x);
  c.on(ev::HandoffDone{handed[0], 7, true, true, ""}, 9300);
  EXPECT_TRUE(live_until(c, 9500, 30000).empty());
  EXPECT_TRUE(c.serving(r.z));
  EXPECT_EQ(c.handoffs(), 2u);
}

TEST(OwnershipCore, AFailedHandoffKeepsServingOrOpensAgainAndIsRetriedLater) {
  Rebalance r;
  std::vector<std::string> handed{r.first_handoff()};
  ASSERT_FALSE(handed[0].empty());
  auto& c = r.c;
  // Failed before closing (the persist did not finish): served again.
  auto fx = c.on(ev::HandoffDone{handed[0], 7, false, false, "timeout"}, 7100);
  EXPECT_TRUE(c.serving(handed[0]));
  EXPECT_TRUE(opens(fx).empty());
  // Not tried again for rebalance_after_ms.
  EXPECT_TRUE(live_until(c, 7250, 13000).empty());
  handed = live_until(c, 13250, 13250);
  ASSERT_EQ(handed.size(), 1u);
  // Closed, but the owner key could not be deleted: opened again.
  fx = c.on(ev::HandoffDone{handed[0], 7, false, true, "etcd down"}, 13300);
  EXPECT_EQ(opens(fx), std::vector<std::string>{handed[0]});
  EXPECT_EQ(c.streams().at(handed[0]), State::opening);
  EXPECT_EQ(c.handoffs(), 0u);
  // A result under an old lease, or for a stream not being handed over, is ignored.
  fx = c.on(ev::HandoffDone{handed[0], 6, true, true, ""}, 13400);
  EXPECT_EQ(c.streams().at(handed[0]), State::opening);
}

// The owner key's deletion may reach the core (through the watch) before
// the hand-off's own result: the stream is dropped then, and the hand-off
// still counted once.
TEST(OwnershipCore, AHandoffSeenFirstInTheViewIsCountedOnce) {
  Rebalance r;
  std::vector<std::string> handed{r.first_handoff()};
  ASSERT_FALSE(handed[0].empty());
  auto& c = r.c;
  const std::string other = handed[0] == r.x ? r.y : r.x;
  std::map<std::string, OwnerRecord> owners{{other, {"a", 7}}, {r.z, {"a", 7}}};
  c.on(view(9, r.nodes, {r.x, r.y, r.z}, owners), 7100);
  EXPECT_FALSE(c.streams().count(handed[0]));
  c.on(ev::HandoffDone{handed[0], 7, true, true, ""}, 7200);
  EXPECT_EQ(c.handoffs(), 1u);
}

TEST(OwnershipCore, NoHandoffWhenDisabledOrForAStreamBeingDeleted) {
  OwnershipTiming t = timing();
  t.rebalance_after_ms = -1;
  Rebalance r(t);
  r.setup();
  EXPECT_TRUE(live_until(r.c, 1250, 30000).empty());

  Rebalance d;
  d.setup();
  std::map<std::string, OwnerRecord> owners{{d.x, {"a", 7}}, {d.y, {"a", 7}}, {d.z, {"a", 7}}};
  auto v = view(4, d.nodes, {d.x, d.y, d.z}, owners);
  v.deletions[d.x] = "b";
  v.deletions[d.y] = "b";
  auto fx = d.c.on(v, 1100);
  EXPECT_TRUE(handoffs(fx).empty());
  EXPECT_EQ(removes(fx).size(), 2u);
  // Deleted, not handed over (no on_remove answer here: they stay removing).
  for (int64_t t2 = 1250; t2 <= 30000; t2 += 250) {
    fx = d.c.on(ev::Tick{}, t2);
    EXPECT_TRUE(handoffs(fx).empty());
    if (keepalive(fx)) d.c.on(ev::KeepaliveDone{*keepalive(fx), t2, true, false, ""}, t2);
  }
}

TEST(OwnershipCore, StopClosesEverythingAndRevokes) {
  auto c = live_core();
  own(c, "x", 0);
  auto fx = c.stop();
  EXPECT_EQ(closes(fx), std::vector<std::string>{"x"});
  EXPECT_EQ(revokes(fx), std::vector<int64_t>{7});
  EXPECT_LT(position<effect::Close>(fx, "x"), position<effect::Revoke>(fx));
  EXPECT_FALSE(grants(c.on(ev::Tick{}, 100000)));
}

// Random events in random order against one core: after every event, a
// stream is serving only while the lease is valid by the core's own clock,
// never two opens of one stream are outstanding, every stream closed was
// opened, and nothing opens under a lease that is not the current one.
TEST(OwnershipCore, SimulationNeverServesPastItsLease) {
  const uint64_t seed = test::test_seed(20240613);
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int rounds = test::scaled(300);
  for (int round = 0; round < rounds; ++round) {
    OwnershipCore c("a", timing());
    int64_t now = 0;
    int64_t next_lease = 1;
    std::vector<int64_t> granted;
    std::vector<std::pair<int64_t, int64_t>> pending_keepalive;  // lease, sent_ms
    std::vector<int64_t> pending_register;
    std::vector<std::pair<std::string, int64_t>> pending_acquire, pending_open, pending_handoff;
    std::set<std::string> open_streams;  // what the shell would have open
    // Runs the list in order as the shell does, checking what the order
    // promises: a Close before LeaseGivenUp for every stream the shell has
    // open, nothing acquired or opened after it, an Open never of a stream
    // still open (closed first) nor while another open of it runs under the
    // same lease, and every task under the lease the core holds now.
    auto run = [&](const Effects& fx) {
      bool given_up = false;
      auto current = [&](int64_t l) { return l != 0 && l == c.lease(); };
      for (const Effect& eff : fx) {
        std::visit(
            Overloaded{
                [&](const effect::Close& x) { open_streams.erase(x.stream); },
                [&](const effect::GrantLease&) { granted.push_back(0); },
                [&](const effect::Keepalive& x) {
                  ASSERT_TRUE(current(x.lease));
                  pending_keepalive.emplace_back(x.lease, x.sent_ms);
                },
                [&](const effect::Register& x) {
                  ASSERT_TRUE(current(x.lease));
                  pending_register.push_back(x.lease);
                },
                [&](const effect::Revoke& x) { ASSERT_NE(x.lease, 0); },
                [&](const effect::Acquire& x) {
                  ASSERT_TRUE(current(x.lease) && !given_up);
                  pending_acquire.push_back({x.stream, x.lease});
                },
                [&](const effect::Open& x) {
                  ASSERT_TRUE(current(x.lease) && !given_up);
                  ASSERT_FALSE(open_streams.count(x.stream)) << x.stream << " opened while open";
                  ASSERT_TRUE(std::find(pending_open.begin(), pending_open.end(),
                                        std::pair{x.stream, x.lease}) == pending_open.end())
                      << x.stream << " opened twice under one lease";
                  pending_open.push_back({x.stream, x.lease});
                },
                [&](const effect::Remove& x) { ASSERT_TRUE(current(x.lease)); },
                [&](const effect::HandOff& x) {
                  ASSERT_TRUE(current(x.lease));
                  pending_handoff.push_back({x.stream, x.lease});
                },
                [&](const effect::Stand& x) { ASSERT_TRUE(current(x.lease) && !given_up); },
                [&](const effect::Withdraw& x) { ASSERT_TRUE(current(x.lease) && !given_up); },
                [&](const effect::LeaseGivenUp&) {
                  ASSERT_TRUE(open_streams.empty()) << "a stream left open past LeaseGivenUp";
                  given_up = true;
                },
            },
            eff);
      }
    };
    run(c.start(now));
    for (int step = 0; step < 200; ++step) {
      now += std::uniform_int_distribution<int64_t>(0, 3)(rng) == 0
                 ? std::uniform_int_distribution<int64_t>(0, 4000)(rng)
                 : std::uniform_int_distribution<int64_t>(0, 300)(rng);
      Event e = ev::Tick{};
      int pick = int(rng() % 8);
      if (pick == 0 && !granted.empty()) {
        granted.pop_back();
        if (rng() % 4 == 0) {
          e = ev::LeaseFailed{"x"};
        } else {
          e = ev::LeaseGranted{next_lease++};
        }
      } else if (pick == 1 && !pending_keepalive.empty()) {
        auto [l, sent] = pending_keepalive.front();
        pending_keepalive.erase(pending_keepalive.begin());
        int r = int(rng() % 10);
        e = ev::KeepaliveDone{l, sent, r < 7, r == 9, ""};
      } else if (pick == 2 && !pending_register.empty()) {
        int64_t l = pending_register.front();
        pending_register.erase(pending_register.begin());
        e = ev::Registered{l, rng() % 5 != 0, ""};
      } else if (pick == 3 && !pending_acquire.empty()) {
        auto [s, l] = pending_acquire.front();
        pending_acquire.erase(pending_acquire.begin());
        int r = int(rng() % 3);
        e = ev::AcquireDone{s, l, r == 0, int64_t(step), r == 2 ? "err" : ""};
      } else if (pick == 4 && !pending_open.empty()) {
        auto [s, l] = pending_open.front();
        pending_open.erase(pending_open.begin());
        bool ok = rng() % 4 != 0;
        if (ok) open_streams.insert(s);
        e = ev::OpenDone{s, l, ok, ok ? "" : "err"};
      } else if (pick == 5) {
        std::vector<std::string> nodes{"a"};
        if (rng() % 2) nodes.push_back("b");
        std::map<std::string, OwnerRecord> owners;
        if (rng() % 3 == 0) owners["s1"] = {rng() % 2 ? "a" : "b", c.lease()};
        e = view(step, nodes, {"s1", "s2", "s3"}, owners);
      } else if (pick == 7 && !pending_handoff.empty()) {
        auto [s, l] = pending_handoff.front();
        pending_handoff.erase(pending_handoff.begin());
        // The shell closes the stream unless the persist failed first.
        const int r = int(rng() % 3);
        const bool closed = r != 2;
        if (closed) open_streams.erase(s);
        e = ev::HandoffDone{s, l, r == 0, closed, r == 0 ? "" : "err"};
      } else if (pick == 6 && !open_streams.empty() && rng() % 2 == 0) {
        // An open stream's uploader was fenced (a stale takeover elsewhere).
        e = ev::WriterFenced{*open_streams.begin(), c.lease(), "fenced"};
      }
      Effects fx = c.on(e, now);
      run(fx);
      if (HasFatalFailure()) return;
      // The safety invariant: serving implies a valid lease by the clock.
      for (const auto& [s, st] : c.streams()) {
        if (st == State::serving) {
          ASSERT_GT(c.valid_until_ms(), now) << "round " << round << " step " << step;
        }
      }
      // What the shell has open is what the core serves or is opening.
      for (const auto& s : open_streams) {
        auto it = c.streams().find(s);
        ASSERT_TRUE(it != c.streams().end() && it->second != State::acquiring)
            << s << " open but not owned, round " << round << " step " << step;
      }
    }
  }
}

}  // namespace
}  // namespace strata::cluster
