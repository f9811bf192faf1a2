// Replica copies under `strata serve` (cluster.replica_copies,
// src/server/replica_copier.h): three nodes over a 3-member etcd confirm
// locally and upload nothing for a minute, so everything confirmed is a
// tail only the owner's disk holds — and the copies the other nodes keep.
// Once the copies hold the owner's whole log, the owner is killed -9 and
// not restarted: the node that takes the stream over keeps its copy's tail
// and uploads it, and every confirmed message is read back from it. Without
// copies that takeover drops the whole tail.
#include <gtest/gtest.h>

#include <iostream>

#include "cluster/cluster_workload.h"
#include "cluster/ownership_core.h"
#include "support/eventually.h"
#include "support/numbered_stream.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

ServeClusterOptions copies_on() {
  ServeClusterOptions o;
  o.lease_ttl_ms = 2000;
  o.patch = {{"http", {{"listen", "127.0.0.1:0"}}},
             {"cluster", {{"replica_copies", true}, {"rebalance", false}}},
             {"tiering",
              {{"confirm", "local"},
               {"fragment_max_age_ms", 60000},
               {"fragment_target_bytes", 64 << 20},
               {"persist_interval_ms", 60000}}}};
  return o;
}

// The node's JSON status field at `path`, or null.
nlohmann::json at(const nlohmann::json& j, std::initializer_list<std::string> path) {
  const nlohmann::json* p = &j;
  for (const auto& k : path) {
    if (!p->is_object() || !p->contains(k)) return nullptr;
    p = &(*p)[k];
  }
  return *p;
}

// Until every node but `owner` holds a copy of `stream` up to where the
// owner's log ends; false after `timeout`.
bool copies_caught_up(ServeCluster& cluster, int owner, const std::string& stream,
                      std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto end = at(node_status(cluster, owner), {"streams", stream, "local_next_offset"});
    bool all = end.is_number();
    for (int i = 0; all && i < cluster.size(); ++i) {
      if (i == owner) continue;
      auto copied = at(node_status(cluster, i), {"copies", stream, "local_next_offset"});
      all = copied.is_number() && copied == end;
    }
    if (all) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Once the others agree on a leader that is not `old` (they name a killed
// owner until its lease ends); -1 after 30 s.
int other_leader(ServeCluster& cluster, const std::string& stream, int old) {
  for (const auto deadline = Clock::now() + 30s; Clock::now() < deadline;) {
    const int l = cluster.await_agreed_leader(stream, 5s);
    if (l >= 0 && l != old) return l;
    std::this_thread::sleep_for(100ms);
  }
  return -1;
}

TEST(ServeCopiesTest, TheNodeThatTakesOverKeepsItsCopyOfTheDeadOwnersUnuploadedTail) {
  TempDir dir;
  const std::string stream = "copied";
  int owner = -1;
  auto cluster = start_serving(dir.path(), copies_on(), stream, &owner);
  ASSERT_NE(cluster, nullptr);
  Workload w(*cluster, {.stream = stream, .consume = false});
  w.start();
  ASSERT_TRUE(w.await_confirms(600, 60s));
  ASSERT_TRUE(w.drain(60s)) << "unconfirmed messages left";
  w.stop();
  ASSERT_TRUE(copies_caught_up(*cluster, owner, stream, 30s))
      << "the copies never reached the owner's end";
  // Nothing was uploaded: the tail is on the disks only.
  const auto end = at(node_status(*cluster, owner), {"streams", stream, "local_next_offset"});
  const uint64_t tail = end.get<uint64_t>();
  ASSERT_GT(tail, 0u);

  cluster->kill(owner);
  const int next = other_leader(*cluster, stream, owner);
  ASSERT_GE(next, 0) << "no other node took the stream over";
  // Named leader once its owner key is in etcd; its open (which keeps or
  // drops the tail) may still run.
  nlohmann::json st;
  EXPECT_TRUE(eventually(30s, [&] {
    st = node_status(*cluster, next);
    return at(st, {"streams", stream, "local_next_offset"}).is_number();
  })) << "the new owner never served the stream";
  EXPECT_EQ(at(st, {"node", "takeover_dropped_offsets"}), 0u);
  EXPECT_EQ(at(st, {"node", "takeover_kept_offsets"}), tail)
      << "the new owner kept its copy's whole tail";
  EXPECT_EQ(at(st, {"streams", stream, "local_next_offset"}), tail);

  ASSERT_TRUE(w.final_read(next, 60s));
  auto report = check_history(w.history(), DuplicatePolicy::none, ReadPolicy::committed_only);
  EXPECT_TRUE(report.ok()) << report.to_string();
  std::cout << stream << ": " << report.to_string() << "\n";
}

// The copies fall behind (their nodes frozen for less than a lease) while
// the owner confirms more; the owner is killed -9 and another node takes
// the stream over with the shorter copy, writing its own chunks at the
// offsets the dead owner had others at. Restarted, the old owner's log (now
// its copy) no longer lines up with the new owner's: its copier finds the
// last chunk differs — or, when the old log runs past the new owner's end,
// is refused by the owner at once (replica_copier.h) — drops the copy and
// copies the new owner's log from the remote tier's end: the copy ends
// where the owner's log ends, with the new tenure's epoch, though the new
// owner writes nothing more once the old one is back.
TEST(ServeCopiesTest, ARestartedOwnerWhoseLogDivergedCopiesTheNewOwnersLogAfresh) {
  TempDir dir;
  std::string err;
  const std::string stream = "diverged";
  int old_owner = -1;
  // A lease the frozen nodes keep through the freeze even where every
  // process runs slower (sanitizers).
  ServeClusterOptions o = copies_on();
  o.lease_ttl_ms = 8000;
  auto cluster = start_serving(dir.path(), o, stream, &old_owner);
  ASSERT_NE(cluster, nullptr);
  Workload w(*cluster, {.stream = stream, .consume = false});
  w.start();
  ASSERT_TRUE(w.await_confirms(300, 60s));
  ASSERT_TRUE(copies_caught_up(*cluster, old_owner, stream, 30s));
  // The others stop copying for a moment (well within their lease) while
  // the owner confirms more.
  std::vector<int> others;
  for (int i = 0; i < cluster->size(); ++i) {
    if (i != old_owner) others.push_back(i);
  }
  for (int i : others) cluster->freeze(i);
  const size_t before = w.confirms();
  // More confirms than the copies can still receive: a frozen node's
  // kernel keeps taking what the owner sends it, up to the copier's credit
  // (32 chunks, of at most two frames of 5 here), and the thawed copier
  // appends it — with 50 (the publishers' windows) a sanitizer run once
  // found the copies complete and nothing diverged. 400 is more than 32 x
  // 10: the owner's log surely holds chunks no copy has.
  const bool more = w.await_confirms(before + 400, 2500ms);
  cluster->kill(old_owner);
  for (int i : others) cluster->thaw(i);
  ASSERT_TRUE(more) << "the owner confirmed " << w.confirms() - before
                    << " messages while the copies were frozen";

  const int next = other_leader(*cluster, stream, old_owner);
  ASSERT_GE(next, 0) << "no other node took the stream over";
  // Publishing goes on at the new owner for a little while, over some of
  // the offsets the old one had (its publishers' windows, resent), then
  // stops: the old owner's diverged tail may well run past the new owner's
  // end, and nothing is written there to show the copier.
  const size_t after = w.confirms();
  ASSERT_TRUE(w.await_confirms(after + 20, 60s));
  ASSERT_TRUE(w.drain(60s));
  w.stop();

  ASSERT_TRUE(cluster->restart(old_owner, &err)) << err;
  ASSERT_TRUE(copies_caught_up(*cluster, next, stream, 60s))
      << "the restarted node's copy never reached the new owner's end";
  auto st = node_status(*cluster, old_owner);
  EXPECT_GE(at(st, {"cluster", "copies", "dropped_copies"}).get<uint64_t>(), 1u) << st.dump();
  auto owner_st = node_status(*cluster, next);
  const auto epoch = at(owner_st, {"streams", stream, "tiering", "epoch"});
  ASSERT_TRUE(epoch.is_number()) << owner_st.dump();
  EXPECT_EQ(at(st, {"copies", stream, "last_epoch"}), epoch);
}

// confirm = replicated: a publish is confirmed once every other node's copy
// holds it, and consumers read only that far. Three times, under
// publishers and a consumer with nothing uploaded, the other nodes stop
// copying (frozen for less than a lease) and the owner is killed -9 while
// they are (then restarted once another node serves the stream): every
// confirmed message is read back once, and no consumer saw an offset
// change its message. (With local confirms the owner confirms what no copy
// holds while the others are frozen, and the kill loses it.)
TEST(ServeCopiesTest, ReplicatedConfirmsSurviveKillingTheOwner) {
  TempDir dir;
  std::string err;
  ServeClusterOptions o = copies_on();
  o.patch["tiering"]["confirm"] = "replicated";
  o.patch["cluster"].erase("replica_copies");  // implied by replicated confirms
  const std::string stream = "replicated";
  auto cluster = start_serving(dir.path(), o, stream);
  ASSERT_NE(cluster, nullptr);
  Workload w(*cluster, {.stream = stream});
  w.start();
  ASSERT_TRUE(w.await_confirms(300, 60s));
  for (int round = 0; round < 3; ++round) {
    const int owner = cluster->await_agreed_leader(stream, 30s);
    ASSERT_GE(owner, 0) << "round " << round;
    std::vector<int> others;
    for (int i = 0; i < cluster->size(); ++i) {
      if (i != owner) others.push_back(i);
    }
    for (int i : others) cluster->freeze(i);
    std::this_thread::sleep_for(500ms);
    cluster->kill(owner);
    for (int i : others) cluster->thaw(i);
    const int next = other_leader(*cluster, stream, owner);
    ASSERT_GE(next, 0) << "round " << round << ": no other node took the stream over";
    ASSERT_TRUE(cluster->restart(owner, &err)) << err;
    const size_t now = w.confirms();
    ASSERT_TRUE(w.await_confirms(now + 300, 60s)) << "round " << round << ": publishing stopped";
  }
  drain_and_check(w, stream);
  for (int i = 0; i < cluster->size(); ++i) {
    EXPECT_EQ(at(node_status(*cluster, i), {"node", "takeover_dropped_offsets"}), 0u) << i;
  }
}

// confirm = replicated with a quorum: of three nodes, the owner and one
// copy hold a confirmed message. One copy (the node that ranks first for
// the stream after the owner, so the one a first-choice placement would
// pick) is frozen while the owner goes on confirming with the other's
// acknowledgements; then the owner is killed -9 and the frozen node
// thawed. Both stand for the stream (cluster/election.h): the node whose
// copy reaches further takes it over, though it is not the first choice,
// and every confirmed message is read back.
TEST(ServeCopiesTest, AQuorumConfirmsAndTheMostCompleteCopyTakesOver) {
  TempDir dir;
  std::string err;
  ServeClusterOptions o = copies_on();
  // A longer lease than the others': the frozen copy must keep its lease
  // through the freeze even where every process runs slower (sanitizers).
  o.lease_ttl_ms = 8000;
  o.patch["tiering"]["confirm"] = "replicated";
  const std::string stream = "quorum";
  int owner = -1;
  auto cluster = start_serving(dir.path(), o, stream, &owner);
  ASSERT_NE(cluster, nullptr);
  std::vector<std::string> others;
  for (int i = 0; i < cluster->size(); ++i) {
    if (i != owner) others.push_back("n" + std::to_string(i));
  }
  const std::string lagging_id = cluster::first_choice(stream, others);
  const int lagging = std::stoi(lagging_id.substr(1));
  const int complete = 3 - owner - lagging;

  Workload w(*cluster, {.stream = stream});
  w.start();
  ASSERT_TRUE(w.await_confirms(300, 60s));
  // A majority of three: the owner and one copy of two.
  const auto replication = at(node_status(*cluster, owner), {"streams", stream, "replication"});
  EXPECT_EQ(at(replication, {"copies_needed"}), 1u) << replication.dump();
  EXPECT_EQ(at(replication, {"acked"}).size(), 2u) << replication.dump();
  cluster->freeze(lagging);
  const auto frozen_at = Clock::now();
  // The frozen copy ends at or before the owner's end now.
  const uint64_t frozen_end =
      at(node_status(*cluster, owner), {"streams", stream, "local_next_offset"}).get<uint64_t>();
  const size_t before = w.confirms();
  // Confirms go on with one copy of two: a majority of three nodes. More
  // than the publishers' windows (2 x 20) could hold at the freeze, so
  // these were acknowledged by the other copy alone.
  const bool went_on = w.await_confirms(before + 60, 2000ms);
  // The other copy goes past the frozen one. (Confirms alone do not make
  // sure of it: under load the client may count confirms the server sent
  // before the freeze, and with equal copies the first choice, the frozen
  // node, rightly wins the election.)
  const auto complete_end = [&] {
    return at(node_status(*cluster, complete), {"copies", stream, "local_next_offset"})
        .get<uint64_t>();
  };
  const bool ahead = eventually(
      std::chrono::duration_cast<std::chrono::milliseconds>(frozen_at + 5500ms - Clock::now()),
      [&] { return complete_end() > frozen_end; });
  const uint64_t lag = complete_end();
  cluster->kill(owner);
  cluster->thaw(lagging);
  ASSERT_TRUE(went_on) << "confirms stopped with one of two copies frozen";
  ASSERT_TRUE(ahead) << "the other copy (" << lag << ") never passed the frozen one's end ("
                     << frozen_end << ")";
  ASSERT_LT(Clock::now() - frozen_at, 6000ms) << "frozen for longer than the lease";

  const int next = other_leader(*cluster, stream, owner);
  ASSERT_EQ(next, complete) << "the node with the shorter copy took the stream over";
  // The election is over: no candidacy is left in etcd (the owner key's txn
  // deleted them, or their nodes withdrew).
  EXPECT_TRUE(eventually(10s, [&] {
    const auto c = at(node_status(*cluster, next), {"cluster", "candidacies"});
    return c.is_object() && c.empty();
  })) << node_status(*cluster, next)["cluster"].dump();
  EXPECT_EQ(at(node_status(*cluster, next), {"node", "takeover_dropped_offsets"}), 0u);
  ASSERT_TRUE(cluster->restart(owner, &err)) << err;
  const size_t now = w.confirms();
  ASSERT_TRUE(w.await_confirms(now + 300, 60s)) << "publishing stopped";
  std::cout << "the complete copy ended at " << lag << " (the frozen one at most at " << frozen_end
            << ") when the owner was killed\n";
  drain_and_check(w, stream, next);
}

// confirm = replicated, the owner frozen (SIGSTOP) for twice its lease with
// publishers and a consumer on it, then thawed: the others elect the most
// complete copy meanwhile and go on. Whatever the thawed owner had in its
// sockets it confirms and delivers nothing more (its lease is gone before
// it acts), so every confirmed message is read back once and no consumer
// saw an offset change its message. (With local confirms and no copies the
// same rounds show consumers offsets whose message changed.)
TEST(ServeCopiesTest, AnOwnerFrozenPastItsLeaseLosesNoReplicatedConfirm) {
  TempDir dir;
  ServeClusterOptions o = copies_on();
  o.patch["tiering"]["confirm"] = "replicated";
  const std::string stream = "frozen";
  auto cluster = start_serving(dir.path(), o, stream);
  ASSERT_NE(cluster, nullptr);
  Workload w(*cluster, {.stream = stream});
  w.start();
  ASSERT_TRUE(w.await_confirms(300, 60s));
  for (int round = 0; round < 2; ++round) {
    const int owner = cluster->await_agreed_leader(stream, 30s);
    ASSERT_GE(owner, 0) << "round " << round;
    cluster->freeze(owner);
    // Asked of a node that is not frozen (an agreement would need the frozen one).
    const int next = cluster->await_leader((owner + 1) % cluster->size(), owner, stream, 30s);
    std::this_thread::sleep_for(std::chrono::milliseconds(o.lease_ttl_ms));
    cluster->thaw(owner);
    ASSERT_GE(next, 0) << "round " << round << ": no other node took the stream over";
    const size_t now = w.confirms();
    ASSERT_TRUE(w.await_confirms(now + 300, 60s)) << "round " << round << ": publishing stopped";
  }
  drain_and_check(w, stream);
  for (int i = 0; i < cluster->size(); ++i) {
    EXPECT_EQ(at(node_status(*cluster, i), {"node", "takeover_dropped_offsets"}), 0u) << i;
  }
}

// A copy keeps only what the remote tier lacks: with fragments uploaded
// within a few hundred ms and 8 KiB segments, each copier deletes the
// segments wholly below the remote tier's end (every 5 s), so its first
// offset moves up while it still ends where the owner's log ends.
TEST(ServeCopiesTest, CopiesAreTrimmedToWhatTheRemoteTierLacks) {
  TempDir dir;
  ServeClusterOptions o = copies_on();
  o.patch["log"] = {{"segment_bytes", 8192}};
  o.patch["tiering"]["fragment_max_age_ms"] = 200;
  o.patch["tiering"]["fragment_target_bytes"] = 16384;
  o.patch["tiering"]["persist_interval_ms"] = 100;
  const std::string stream = "trimmed";
  int owner = -1;
  auto cluster = start_serving(dir.path(), o, stream, &owner);
  ASSERT_NE(cluster, nullptr);
  Workload w(*cluster, {.stream = stream, .consume = false});
  w.start();
  ASSERT_TRUE(w.await_confirms(2000, 60s));
  auto trimmed = [&] {
    for (int i = 0; i < cluster->size(); ++i) {
      if (i == owner) continue;
      auto first = at(node_status(*cluster, i), {"copies", stream, "local_first_offset"});
      if (!first.is_number() || first.get<uint64_t>() == 0) return false;
    }
    return true;
  };
  EXPECT_TRUE(eventually(30s, trimmed)) << "no copy was trimmed below the remote tier's end";
  w.stop();
  ASSERT_TRUE(copies_caught_up(*cluster, owner, stream, 30s));
  const auto remote_next =
      at(node_status(*cluster, owner), {"streams", stream, "tiering", "remote_next_offset"});
  ASSERT_TRUE(remote_next.is_number());
  for (int i = 0; i < cluster->size(); ++i) {
    if (i == owner) continue;
    auto first = at(node_status(*cluster, i), {"copies", stream, "local_first_offset"});
    ASSERT_TRUE(first.is_number());
    EXPECT_LE(first.get<uint64_t>(), remote_next.get<uint64_t>()) << "node " << i;
  }
}

}  // namespace
}  // namespace strata::test
