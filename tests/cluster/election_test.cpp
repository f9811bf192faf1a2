// Electing the most complete copy (cluster/election.h) and the core's
// part in it (OwnershipTiming::elect_most_complete): who stands, who
// acquires, what majority it waits for, and withdrawing once the stream
// has an owner. Pure: no etcd, no clock.
#include "cluster/election.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "cluster/core_timing.h"
#include "cluster/ownership_core.h"

namespace strata::cluster {
namespace {

OwnershipTiming electing() {
  return core_test_timing(/*elect_most_complete=*/true);
}

template <class E>
std::vector<std::string> streams_of(const Effects& fx) {
  std::vector<std::string> out;
  for (const auto& e : fx) {
    if (const auto* x = std::get_if<E>(&e)) out.push_back(x->stream);
  }
  return out;
}

// Node `id` live with lease 7 at time 0, keeping its lease alive as time goes.
struct Node {
  explicit Node(const std::string& id) : c(id, electing()) {
    c.start(0);
    c.on(ev::LeaseGranted{7}, 0);
    c.on(ev::Registered{7, true, ""}, 0);
  }
  Effects at(const ev::View& v, int64_t now) { return answered(c.on(v, now), now); }
  Effects tick(int64_t now) { return answered(c.on(ev::Tick{}, now), now); }
  // Every keepalive asked for succeeds at once (the effects of the answer
  // join the list).
  Effects answered(Effects fx, int64_t now) {
    for (size_t i = 0; i < fx.size(); ++i) {
      if (const auto* k = std::get_if<effect::Keepalive>(&fx[i])) {
        Effects more = c.on(ev::KeepaliveDone{k->lease, k->sent_ms, true, false, ""}, now);
        fx.insert(fx.end(), more.begin(), more.end());
      }
    }
    return fx;
  }
  OwnershipCore c;
};

const std::vector<std::string> kNodes{"a", "b", "c"};

// A stream whose first choice among kNodes is `want`.
std::string stream_first_for(const std::string& want) {
  for (int i = 0;; ++i) {
    std::string s = "s" + std::to_string(i);
    if (first_choice(s, kNodes) == want) return s;
  }
}

ev::View ownerless(const std::string& s, std::map<std::string, Candidacy> stood, int64_t rev) {
  ev::View v;
  v.revision = rev;
  v.nodes = kNodes;
  v.streams = {s};
  if (!stood.empty()) v.candidacies[s] = std::move(stood);
  return v;
}

TEST(Election, TheNewestEpochThenTheFurthestEndThenTheFirstChoiceWins) {
  const std::string s = stream_first_for("c");
  std::map<std::string, Candidacy> stood{{"a", {4, 900}}, {"b", {5, 600}}, {"c", {5, 500}}};
  // An older tenure's longer tail loses to the newer tenure's copy.
  Election e = elect(s, kNodes, &stood);
  EXPECT_EQ(e.best, "b");
  EXPECT_TRUE(e.all_stood);
  stood["c"] = {5, 600};
  // A tie goes to the first choice, as without elections.
  EXPECT_EQ(elect(s, kNodes, &stood).best, "c");
  stood = {{"a", {0, 0}}, {"b", {0, 0}}, {"c", {0, 0}}};
  EXPECT_EQ(elect(s, kNodes, &stood).best, "c");
}

TEST(Election, OnlyLiveNodesCountAndAllStoodNamesTheMissing) {
  const std::string s = "orders";
  std::map<std::string, Candidacy> stood{{"a", {3, 10}}, {"gone", {9, 99}}};
  Election e = elect(s, kNodes, &stood);
  EXPECT_EQ(e.best, "a");
  EXPECT_FALSE(e.all_stood);
  EXPECT_EQ(elect(s, kNodes, nullptr).best, "");
  EXPECT_FALSE(elect(s, {}, nullptr).all_stood);
}

TEST(Election, CandidacyJsonRoundTripsAndRefusesMalformed) {
  Candidacy c{7, 123456789012345ull}, back;
  ASSERT_TRUE(candidacy_from_json(candidacy_to_json(c), &back));
  EXPECT_EQ(back, c);
  EXPECT_FALSE(candidacy_from_json("", &back));
  EXPECT_FALSE(candidacy_from_json("{\"epoch\":1}", &back));
  EXPECT_FALSE(candidacy_from_json("{\"epoch\":-1,\"next\":3}", &back));
  EXPECT_FALSE(candidacy_from_json("[1,2]", &back));
}

TEST(ElectingCore, StandsFirstAndTheFirstChoiceWaitsForTheOthers) {
  const std::string s = stream_first_for("a");
  Node a("a");
  auto fx = a.at(ownerless(s, {}, 2), 10);
  EXPECT_EQ(streams_of<effect::Stand>(fx), std::vector<std::string>{s});
  // Without elections the first choice would acquire at once.
  EXPECT_TRUE(streams_of<effect::Acquire>(fx).empty());
  a.c.on(ev::CandidacyDone{s, 7, true, true, ""}, 20);
  // Stood once: not posted again while its candidacy shows up.
  fx = a.at(ownerless(s, {{"a", {0, 0}}}, 3), 30);
  EXPECT_TRUE(streams_of<effect::Stand>(fx).empty());
  EXPECT_TRUE(streams_of<effect::Acquire>(fx).empty());
  fx = a.at(ownerless(s, {{"a", {0, 0}}, {"b", {0, 0}}, {"c", {0, 0}}}, 4), 40);
  EXPECT_EQ(streams_of<effect::Acquire>(fx), std::vector<std::string>{s});
}

TEST(ElectingCore, TheMostCompleteCopyTakesItNotTheFirstChoice) {
  const std::string s = stream_first_for("a");
  const std::map<std::string, Candidacy> stood{{"a", {3, 100}}, {"b", {3, 250}}, {"c", {3, 200}}};
  Node a("a"), b("b"), c("c");
  EXPECT_TRUE(streams_of<effect::Acquire>(a.at(ownerless(s, stood, 2), 10)).empty());
  EXPECT_TRUE(streams_of<effect::Acquire>(c.at(ownerless(s, stood, 2), 10)).empty());
  EXPECT_EQ(streams_of<effect::Acquire>(b.at(ownerless(s, stood, 2), 10)),
            std::vector<std::string>{s});
  // c, the runner-up, waits through twice the grace (b may still acquire) ...
  for (int64_t t = 100; t < 4000; t += 100) {
    EXPECT_TRUE(streams_of<effect::Acquire>(c.tick(t)).empty()) << t;
    EXPECT_TRUE(streams_of<effect::Acquire>(a.tick(t)).empty()) << t;
  }
  // ... and takes it then if b never did (a and c, a majority, stood
  // besides b); a, which holds the least, never does.
  EXPECT_EQ(streams_of<effect::Acquire>(c.tick(4010)), std::vector<std::string>{s});
  for (int64_t t = 4010; t < 20000; t += 1000) {
    EXPECT_TRUE(streams_of<effect::Acquire>(a.tick(t)).empty()) << t;
  }
}

// A replicated confirm is on a majority of the nodes: the best of a
// minority may lack it, so a minority never elects, however long it waits.
TEST(ElectingCore, AMinorityThatStoodNeverElects) {
  const std::string s = stream_first_for("a");
  Node a("a"), b("b");
  // Only a stood (b and c are slow to, or their candidacies are not
  // posted yet): a waits, whatever the time.
  const std::map<std::string, Candidacy> alone{{"a", {3, 100}}};
  EXPECT_TRUE(streams_of<effect::Acquire>(a.at(ownerless(s, alone, 2), 10)).empty());
  EXPECT_TRUE(streams_of<effect::Acquire>(b.at(ownerless(s, alone, 2), 10)).empty());
  for (int64_t t = 1000; t < 30000; t += 1000) {
    EXPECT_TRUE(streams_of<effect::Acquire>(a.tick(t)).empty()) << t;
    EXPECT_TRUE(streams_of<effect::Acquire>(b.tick(t)).empty()) << t;
  }
  // b stands with more: a majority has stood, and b, the best, takes it
  // at once (the grace has long passed).
  const std::map<std::string, Candidacy> two{{"a", {3, 100}}, {"b", {3, 130}}};
  EXPECT_TRUE(streams_of<effect::Acquire>(a.at(ownerless(s, two, 3), 30000)).empty());
  EXPECT_EQ(streams_of<effect::Acquire>(b.at(ownerless(s, two, 3), 30000)),
            std::vector<std::string>{s});
  // a, the runner-up, has no majority besides b: it never takes it.
  for (int64_t t = 31000; t < 60000; t += 1000) {
    EXPECT_TRUE(streams_of<effect::Acquire>(a.tick(t)).empty()) << t;
  }
}

// After an etcd outage every lease may have expired: the first node to
// register again sees itself alone. It does not elect itself on what its
// own disk holds while the nodes it saw before may come back with more —
// until it has not seen them for member_memory_ms (10 lease TTLs).
TEST(ElectingCore, NodesSeenLatelyCountTowardTheMajority) {
  const std::string s = stream_first_for("a");
  Node a("a");
  ev::View owned = ownerless(s, {}, 2);
  owned.owners[s] = OwnerRecord{"b", 9};
  a.at(owned, 10);
  ev::View alone = ownerless(s, {{"a", {3, 100}}}, 3);
  alone.nodes = {"a"};
  a.c.on(ev::CandidacyDone{s, 7, true, true, ""}, 20);
  for (int64_t t = 1000; t <= 30000; t += 1000) {
    alone.revision += 1;
    EXPECT_TRUE(streams_of<effect::Acquire>(a.at(alone, t)).empty()) << t;
  }
  // b and c were last seen at 10: forgotten after 30 s, a is the cluster.
  alone.revision += 1;
  EXPECT_EQ(streams_of<effect::Acquire>(a.at(alone, 31000)), std::vector<std::string>{s});
}

TEST(Election, QuorumStoodIsMoreThanHalfOfTheLiveNodes) {
  EXPECT_FALSE(quorum_stood(1, 3));
  EXPECT_TRUE(quorum_stood(2, 3));
  EXPECT_FALSE(quorum_stood(1, 2));
  EXPECT_TRUE(quorum_stood(2, 2));
  EXPECT_FALSE(quorum_stood(2, 4));
  EXPECT_TRUE(quorum_stood(3, 5));
  EXPECT_TRUE(quorum_stood(1, 1));
  EXPECT_FALSE(quorum_stood(0, 0));
  const std::string s = "orders";
  std::map<std::string, Candidacy> stood{{"a", {3, 10}}, {"b", {3, 30}}, {"c", {3, 20}}};
  Election e = elect(s, kNodes, &stood);
  EXPECT_EQ(e.best, "b");
  EXPECT_EQ(e.runner_up, "c");
  EXPECT_EQ(e.stood, 3u);
  stood.erase("c");
  e = elect(s, kNodes, &stood);
  EXPECT_EQ(e.runner_up, "a");
  EXPECT_EQ(e.stood, 2u);
}

TEST(ElectingCore, AfterTheGraceTheBestOfThoseThatStoodTakesIt) {
  const std::string s = stream_first_for("c");
  Node b("b");
  // c never stands (hung); a stood with less.
  const std::map<std::string, Candidacy> stood{{"a", {3, 100}}, {"b", {3, 250}}};
  EXPECT_TRUE(streams_of<effect::Acquire>(b.at(ownerless(s, stood, 2), 10)).empty());
  EXPECT_TRUE(streams_of<effect::Acquire>(b.tick(1999)).empty());
  EXPECT_EQ(streams_of<effect::Acquire>(b.tick(2010)), std::vector<std::string>{s});
}

TEST(ElectingCore, WithdrawsOnceTheStreamHasAnOwnerAndStandsAgainWhenItHasNone) {
  const std::string s = "orders";
  Node a("a");
  a.at(ownerless(s, {}, 2), 10);
  a.c.on(ev::CandidacyDone{s, 7, true, true, ""}, 20);
  ev::View owned = ownerless(s, {{"a", {0, 0}}}, 3);
  owned.owners[s] = OwnerRecord{"b", 9};
  auto fx = a.at(owned, 30);
  EXPECT_EQ(streams_of<effect::Withdraw>(fx), std::vector<std::string>{s});
  // One at a time.
  EXPECT_TRUE(streams_of<effect::Withdraw>(a.tick(40)).empty());
  owned.candidacies.clear();
  owned.revision = 4;
  EXPECT_TRUE(streams_of<effect::Withdraw>(a.at(owned, 45)).empty());
  a.c.on(ev::CandidacyDone{s, 7, false, true, ""}, 50);
  // The owner died: a stands again.
  EXPECT_EQ(streams_of<effect::Stand>(a.at(ownerless(s, {}, 5), 70)), std::vector<std::string>{s});
}

TEST(ElectingCore, AFailedStandIsRetriedAfterTheRetryTime) {
  const std::string s = "orders";
  Node a("a");
  EXPECT_EQ(streams_of<effect::Stand>(a.at(ownerless(s, {}, 2), 10)), std::vector<std::string>{s});
  a.c.on(ev::CandidacyDone{s, 7, true, false, "etcd unreachable"}, 20);
  EXPECT_TRUE(streams_of<effect::Stand>(a.tick(60)).empty());
  EXPECT_EQ(streams_of<effect::Stand>(a.tick(130)), std::vector<std::string>{s});
}

TEST(ElectingCore, ADeletionRequestStillGoesToWhoeverAsked) {
  const std::string s = stream_first_for("c");
  Node a("a");
  ev::View v = ownerless(s, {{"c", {3, 999}}}, 2);
  v.deletions[s] = "a";
  EXPECT_EQ(streams_of<effect::Acquire>(a.at(v, 10)), std::vector<std::string>{s});
}

}  // namespace
}  // namespace strata::cluster
