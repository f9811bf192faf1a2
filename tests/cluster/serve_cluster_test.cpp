// `strata serve` in a cluster, all real processes on 127.0.0.1: a 3-member
// etcd cluster, one directory object store shared by every node, three
// `strata serve` children (distinct data directories and ports) with
// confirm = remote (the nodes' setting; x-strata-confirm=remote at create)
// and a 2 s lease.
//   - a created stream has one leader that Metadata from every node names;
//     a non-leader answers a publisher stream_not_available;
//   - kill -9 of the leader under load: another node leads within the
//     lease TTL + recovery, publishing resumes there, and a consumer from
//     `first` reads every confirmed message exactly once (the unconfirmed
//     in-flight ones at most once: nothing is retried here);
//   - SIGSTOP of the leader past its lease, then SIGCONT: it stops serving
//     the stream (its publisher gets a MetadataUpdate), the new leader keeps
//     serving, and `strata scrub --full` finds the manifest intact.
#include "support/serve_cluster.h"

#include <gtest/gtest.h>

#include <iostream>

#include <chrono>
#include <map>
#include <set>

#include "support/numbered_stream.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace proto;
using Clock = std::chrono::steady_clock;

constexpr int kNodes = 3;
constexpr int64_t kTtlMs = 2000;

class ServeClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    cluster_ = ServeCluster::start(dir_.path(), {.nodes = kNodes, .lease_ttl_ms = kTtlMs}, &err);
    ASSERT_NE(cluster_, nullptr) << err;
  }

  StreamClient client(int i) {
    auto c = cluster_->client(i);
    EXPECT_TRUE(c.ok()) << c.error().to_string();
    if (!c.ok()) return {};
    return std::move(*c);
  }

  // Reads the stream from `first` on node i until every id of `want` has
  // arrived; the count of each id delivered.
  std::map<uint64_t, int> consume(int i, const std::string& stream,
                                  const std::set<uint64_t>& want) {
    std::map<uint64_t, int> seen;
    StreamClient c = client(i);
    EXPECT_TRUE(c.send(SubscribeRequest{c.corr(), 7, stream, {OffsetType::first, 0}, 10, {}}).ok());
    auto deadline = Clock::now() + 30s;
    size_t have = 0;
    while (have < want.size() && Clock::now() < deadline) {
      auto f = c.read(10s);
      if (!f.ok()) break;
      if (auto* r = std::get_if<SubscribeResponse>(&*f)) {
        EXPECT_EQ(r->code, ResponseCode::ok);
        if (r->code != ResponseCode::ok) break;
        continue;
      }
      auto* d = std::get_if<DeliverFrame>(&*f);
      if (!d) continue;
      auto recs = chunk_records(*d);
      EXPECT_TRUE(recs.ok());
      if (!recs.ok()) break;
      for (const auto& b : *recs) {
        uint64_t id = std::stoull(b.substr(2));
        if (++seen[id] == 1 && want.count(id)) have += 1;
      }
      EXPECT_TRUE(c.send(CreditRequest{7, 1}).ok());
    }
    return seen;
  }

  void expect_exactly_once(const std::map<uint64_t, int>& seen,
                           const std::set<uint64_t>& confirmed) {
    size_t missing = 0;
    for (uint64_t id : confirmed) missing += seen.count(id) ? 0 : 1;
    EXPECT_EQ(missing, 0u) << "of " << confirmed.size() << " confirmed messages";
    for (const auto& [id, n] : seen)
      EXPECT_EQ(n, 1) << "message " << id << " delivered " << n << "x";
  }

  // Creates `stream` (x-strata-confirm = `confirm`) through node 0 and waits until every node's
  // Metadata names the same leader; its index.
  int create_and_find_leader(const std::string& stream, const std::string& confirm = "remote") {
    StreamClient c = client(0);
    // Arguments are kept with the stream in the catalog (every owner runs
    // them); ones the nodes cannot honour (a local stream with the nodes'
    // remote confirms) are refused.
    EXPECT_TRUE(
        c.send(CreateStreamRequest{c.corr(), stream, {{"x-strata-tiering", "false"}}}).ok());
    auto refused = c.expect<CreateStreamResponse>(60s);
    EXPECT_TRUE(refused.ok() && refused->code == ResponseCode::precondition_failed);
    EXPECT_TRUE(
        c.send(CreateStreamRequest{c.corr(), stream, {{"x-strata-confirm", confirm}}}).ok());
    auto r = c.expect<CreateStreamResponse>(60s);
    EXPECT_TRUE(r.ok() && r->code == ResponseCode::ok);
    int leader = cluster_->await_agreed_leader(stream, 20s);
    EXPECT_GE(leader, 0) << "the nodes' Metadata never named one leader";
    return leader;
  }

  // QueryOffset on node i: the offset, -1 for no_offset, -2 for another code.
  int64_t query_offset(int i, const std::string& stream, const std::string& ref) {
    StreamClient c = client(i);
    if (!c.send(QueryOffsetRequest{c.corr(), ref, stream}).ok()) return -2;
    auto r = c.expect<QueryOffsetResponse>(10s);
    if (!r.ok()) return -2;
    if (r->code == ResponseCode::no_offset) return -1;
    return r->code == ResponseCode::ok ? int64_t(r->offset) : -2;
  }

  TempDir dir_;
  std::unique_ptr<ServeCluster> cluster_;
};

TEST_F(ServeClusterTest, KillLeaderUnderLoadLosesNoConfirmedMessage) {
  const std::string stream = "orders";
  int leader = create_and_find_leader(stream);
  ASSERT_GE(leader, 0);

  // A publisher on a non-leader is sent to the leader.
  int other = (leader + 1) % kNodes;
  StreamClient wrong = client(other);
  ASSERT_TRUE(wrong.send(DeclarePublisherRequest{wrong.corr(), 1, "", stream}).ok());
  auto refused = wrong.expect<DeclarePublisherResponse>();
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->code, ResponseCode::stream_not_available);

  std::set<uint64_t> confirmed;
  uint64_t next = 1;
  {
    StreamClient c = client(leader);
    ASSERT_TRUE(declare_publisher(c, stream));
    ASSERT_TRUE(publish_numbered(c, &next, 300, &confirmed));
    // Under load: frames in flight when the leader dies; they may or may
    // not be stored, but never confirmed here.
    Bytes storage;
    for (int f = 0; f < 4; ++f) {
      std::vector<std::string> bodies;
      for (uint64_t id = next; id < next + 10; ++id) bodies.push_back(numbered_body(id));
      ASSERT_TRUE(c.send(make_publish(1, next, bodies, &storage)).ok());
      next += 10;
    }
    auto killed_at = Clock::now();
    cluster_->kill(leader);

    int ask = (leader + 1) % kNodes;
    int new_leader = cluster_->await_leader(ask, leader, stream, 30s);
    ASSERT_GE(new_leader, 0) << "no node took the stream over";
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killed_at);
    // TTL + the placement grace (a TTL) + recovery, with room for a slow
    // machine.
    EXPECT_LT(took.count(), 4 * kTtlMs + 5000);

    StreamClient c2 = client(new_leader);
    ASSERT_TRUE(declare_publisher(c2, stream));
    ASSERT_TRUE(publish_numbered(c2, &next, 100, &confirmed));
    EXPECT_EQ(confirmed.size(), 400u);
    auto seen = consume(new_leader, stream, confirmed);
    expect_exactly_once(seen, confirmed);
  }
}

// Consumer offsets are kept in etcd: stored on the leader, they survive its
// kill -9 and the new leader (and every node) answers them.
TEST_F(ServeClusterTest, StoredOffsetsFollowTheStreamToTheNewLeader) {
  const std::string stream = "tracked";
  int leader = create_and_find_leader(stream);
  ASSERT_GE(leader, 0);
  int other = (leader + 1) % kNodes;
  EXPECT_EQ(query_offset(other, stream, "app"), -1);
  {
    StreamClient c = client(leader);
    // Coalesced: the latest of many stores is what stays.
    for (uint64_t o = 1; o <= 200; ++o) {
      ASSERT_TRUE(c.send(StoreOffsetRequest{"app", stream, o}).ok());
    }
    ASSERT_TRUE(c.send(StoreOffsetRequest{"other", stream, 7}).ok());
    // Written once another node reads it from etcd.
    EXPECT_TRUE(eventually(10s, [&] {
      return query_offset(other, stream, "app") == 200 && query_offset(other, stream, "other") == 7;
    }));
  }
  cluster_->kill(leader);
  int new_leader = cluster_->await_leader(other, leader, stream, 30s);
  ASSERT_GE(new_leader, 0) << "no node took the stream over";
  EXPECT_EQ(query_offset(new_leader, stream, "app"), 200);
  EXPECT_EQ(query_offset(new_leader, stream, "other"), 7);
  // Stored on the new leader, read on the third node.
  {
    StreamClient c = client(new_leader);
    ASSERT_TRUE(c.send(StoreOffsetRequest{"app", stream, 250}).ok());
  }
  int third = 3 - leader - new_leader;
  EXPECT_TRUE(eventually(10s, [&] { return query_offset(third, stream, "app") == 250; }));
  EXPECT_EQ(query_offset(third, "nosuchstream", "app"), -2);

  // Delete on a node that does not serve the stream: forwarded through the
  // catalog to the leader, answered once done; the offsets go with it.
  {
    StreamClient c = client(third);
    ASSERT_TRUE(c.send(DeleteStreamRequest{c.corr(), stream}).ok());
    auto r = c.expect<DeleteStreamResponse>(90s);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->code, ResponseCode::ok);
    ASSERT_TRUE(c.send(DeleteStreamRequest{c.corr(), stream}).ok());
    r = c.expect<DeleteStreamResponse>(30s);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->code, ResponseCode::stream_does_not_exist);
  }
  EXPECT_TRUE(eventually(10s, [&] {
    return cluster_->leader_port(new_leader, stream) == 0 &&
           cluster_->leader_port(third, stream) == 0;
  }));
  EXPECT_EQ(query_offset(new_leader, stream, "app"), -2);
  // Created again: served, with no offsets inherited.
  StreamClient c = client(third);
  ASSERT_TRUE(c.send(CreateStreamRequest{c.corr(), stream, {{"x-strata-confirm", "remote"}}}).ok());
  auto created = c.expect<CreateStreamResponse>(60s);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->code, ResponseCode::ok);
  EXPECT_EQ(query_offset(third, stream, "app"), -1);
  EXPECT_TRUE(eventually(20s, [&] { return cluster_->leader_port(third, stream) != 0; }));
}

// The fencing hole of a frozen owner with `confirm = local` (issue 29):
// publishes that reached it while it was stopped past its lease were, after
// SIGCONT, appended and confirmed before its ownership shell noticed the
// lease was gone — confirmed messages another owner never saw. Every append
// and local confirm now checks the lease's end at that moment
// (node/stream_handle.h, lease_ended): none is confirmed. Which thread runs
// first after SIGCONT is the scheduler's choice, so a node without the check
// passes this too when its ownership shell wins the race (it did in two runs
// here); Node.NoAppendOnceTheLeaseHasEnded (tests/node/node_test.cpp) holds
// the check itself deterministically.
TEST_F(ServeClusterTest, AThawedOwnerConfirmsNothingItReceivedWhileFrozen) {
  const std::string stream = "frozen-local";
  const int leader = create_and_find_leader(stream, "local");
  ASSERT_GE(leader, 0);
  std::set<uint64_t> confirmed;
  uint64_t next = 1;
  StreamClient old = client(leader);
  ASSERT_TRUE(declare_publisher(old, stream));
  ASSERT_TRUE(publish_numbered(old, &next, 100, &confirmed));
  // A consumer on the owner with one credit: its first chunk arrives before
  // the freeze, the rest wait for credit it gives after the thaw.
  StreamClient reader = client(leader);
  ASSERT_TRUE(reader.send(SubscribeRequest{reader.corr(), 3, stream, {OffsetType::first, 0}, 1, {}})
                  .ok());
  auto subscribed = reader.expect<SubscribeResponse>(10s);
  ASSERT_TRUE(subscribed.ok() && subscribed->code == ResponseCode::ok);
  auto first_chunk = reader.expect<DeliverFrame>(10s);
  ASSERT_TRUE(first_chunk.ok()) << first_chunk.error().to_string();

  cluster_->freeze(leader);
  // Publishes that wait in the frozen node's socket.
  Bytes storage;
  const uint64_t first_frozen = next;
  for (int frame = 0; frame < 20; ++frame) {
    std::vector<std::string> bodies;
    for (uint64_t id = next; id < next + 10; ++id) bodies.push_back(numbered_body(id));
    ASSERT_TRUE(old.send(make_publish(1, next, bodies, &storage)).ok());
    next += 10;
  }
  const int new_leader = cluster_->await_leader((leader + 1) % kNodes, leader, stream, 30s);
  cluster_->thaw(leader);
  ASSERT_GE(new_leader, 0) << "no node took the stream over";

  // Whatever the thawed node answers for them, it is not a confirm — read
  // on past its MetadataUpdate, until it has nothing more to say.
  size_t refused = 0;
  for (;;) {
    auto f = old.read(3s);
    if (!f.ok()) break;
    if (auto* conf = std::get_if<PublishConfirm>(&*f)) {
      for (uint64_t id : conf->publishing_ids) {
        EXPECT_LT(id, first_frozen) << "the thawed owner confirmed publishing id " << id
                                    << ", received while it was frozen past its lease";
      }
    } else if (auto* e = std::get_if<PublishError>(&*f)) {
      // 6 while the stream is still open here (the lease check), 18 once
      // its release has dropped the publisher (after its MetadataUpdate).
      for (const auto& err : e->errors) {
        EXPECT_TRUE(err.code == ResponseCode::stream_not_available ||
                    err.code == ResponseCode::publisher_does_not_exist)
            << response_code_name(err.code);
        refused += 1;
      }
    }
  }
  std::cout << refused << " of " << next - first_frozen
            << " publishes sent while frozen refused by the thawed owner\n";
  // Nor does it deliver anything more (server/delivery_limit.h, lease_limit).
  ASSERT_TRUE(reader.send(CreditRequest{3, 10}).ok());
  for (;;) {
    auto f = reader.read(3s);
    if (!f.ok()) break;
    EXPECT_FALSE(std::holds_alternative<DeliverFrame>(*f))
        << "the thawed owner delivered a chunk after its lease had ended";
  }
}

TEST_F(ServeClusterTest, FrozenLeaderStopsServingAndTheNewLeaderKeepsServing) {
  const std::string stream = "frozen";
  int leader = create_and_find_leader(stream);
  ASSERT_GE(leader, 0);
  std::set<uint64_t> confirmed;
  uint64_t next = 1;
  StreamClient old = client(leader);
  ASSERT_TRUE(declare_publisher(old, stream));
  ASSERT_TRUE(publish_numbered(old, &next, 100, &confirmed));

  cluster_->freeze(leader);
  int ask = (leader + 1) % kNodes;
  // Past its lease: another node leads (its key expired with the lease).
  int new_leader = cluster_->await_leader(ask, leader, stream, 30s);
  cluster_->thaw(leader);
  ASSERT_GE(new_leader, 0) << "no node took the stream over";

  // The thawed node stops serving the stream on its own clock: its
  // publisher is told the stream is no longer available here.
  bool told = false;
  for (;;) {
    auto f = old.read(15s);
    if (!f.ok()) break;
    if (auto* u = std::get_if<MetadataUpdate>(&*f)) {
      EXPECT_EQ(u->stream, stream);
      EXPECT_EQ(u->code, ResponseCode::stream_not_available);
      told = true;
      break;
    }
  }
  EXPECT_TRUE(told) << "the fenced leader's publisher got no MetadataUpdate";
  // And it answers a new publisher as a non-leader.
  StreamClient again = client(leader);
  ASSERT_TRUE(again.send(DeclarePublisherRequest{again.corr(), 1, "", stream}).ok());
  auto refused = again.expect<DeclarePublisherResponse>();
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->code, ResponseCode::stream_not_available);

  StreamClient c2 = client(new_leader);
  ASSERT_TRUE(declare_publisher(c2, stream));
  ASSERT_TRUE(publish_numbered(c2, &next, 100, &confirmed));
  auto seen = consume(new_leader, stream, confirmed);
  expect_exactly_once(seen, confirmed);

  // The manifest the two owners wrote is intact (every fragment read whole).
  std::string scrub_cfg = cluster_->offline_config("scrub.json");
  Process scrub = Process::spawn({STRATA_BIN, "scrub", "--config", scrub_cfg, "--data-dir",
                                  dir_.sub("scrub-data"), "--stream", stream, "--full"},
                                 dir_.sub("logs"));
  auto rc = scrub.wait(60s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0) << scrub.stdout_text() << scrub.stderr_text();
}

}  // namespace
}  // namespace strata::test
