// Replica reads (src/server/replica_feed.h): a consumer on a node that does
// not own the stream, all real processes on 127.0.0.1 — a 3-member etcd
// cluster, one directory object store, three `strata serve` children with
// confirm = remote (every confirmed message is in the remote tier) and a
// 2 s lease.
//   - from `first` on a replica: every confirmed message exactly once,
//     across the remote tier (read from the bucket on the replica) and the
//     live tail published after the subscription (forwarded from the owner);
//   - kill -9 of the owner while a replica consumer reads: it continues from
//     the new owner's tail, nothing missing, nothing twice;
//   - `offset N`, `timestamp`, `last` and `next` resolved on a replica as on
//     the owner;
//   - Metadata names the owner as leader and the other nodes as replicas;
//   - QueryPublisherSequence and StreamStats answer on every node as on the
//     owner (a non-owner asks the owner: server/owner_asker.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/http_get.h"
#include "support/numbered_stream.h"
#include "support/serve_cluster.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace proto;
using json = nlohmann::json;

constexpr int kNodes = 3;
constexpr int64_t kTtlMs = 2000;
constexpr uint8_t kSub = 7;

class ReplicaReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    // Each node's /status on a port of its own (printed at start): the
    // replica counters show which path served a consumer.
    ServeClusterOptions o{.nodes = kNodes, .lease_ttl_ms = ttl_ms_};
    o.patch = {{"http", {{"listen", "127.0.0.1:0"}}}};
    cluster_ = ServeCluster::start(dir_.path(), o, &err);
    ASSERT_NE(cluster_, nullptr) << err;
  }

  StreamClient client(int i) {
    auto c = cluster_->client(i);
    EXPECT_TRUE(c.ok()) << c.error().to_string();
    if (!c.ok()) return {};
    return std::move(*c);
  }

  // Node i's "server" status section; null if it does not answer.
  json server_status(int i) {
    json j = node_status(*cluster_, i);
    return j.is_object() && j.contains("server") ? j["server"] : json();
  }

  std::optional<MetadataResponse> metadata(int i, const std::string& stream) {
    auto c = cluster_->client(i);
    if (!c.ok()) return std::nullopt;
    if (!c->send(MetadataRequest{c->corr(), {stream}}).ok()) return std::nullopt;
    auto r = c->expect<MetadataResponse>(5s);
    if (!r.ok() || r->streams.size() != 1 || r->streams[0].code != ResponseCode::ok) {
      return std::nullopt;
    }
    return *r;
  }

  int leader(int i, const std::string& stream) { return cluster_->leader(i, stream); }

  int create_and_find_leader(const std::string& stream) {
    Status st = cluster_->create_stream(0, stream);
    EXPECT_TRUE(st.ok()) << st.error().to_string();
    int l = cluster_->await_agreed_leader(stream, 20s);
    EXPECT_GE(l, 0) << "the nodes' Metadata never named one leader";
    return l;
  }

  bool publish_on_leader(int ask, const std::string& stream, uint64_t* next, uint64_t count,
                         std::set<uint64_t>* confirmed) {
    return test::publish_on_leader(*cluster_, ask, stream, next, count, confirmed);
  }

  StreamClient subscribe(int i, const std::string& stream, OffsetSpec spec) {
    return subscribe_numbered(*cluster_, i, stream, spec, kSub);
  }

  void read_until(StreamClient& c, Received* got, std::chrono::milliseconds timeout,
                  const std::function<bool(const Received&)>& done) {
    read_numbered_until(c, kSub, got, timeout, done);
  }

  int64_t ttl_ms_ = kTtlMs;
  TempDir dir_;
  std::unique_ptr<ServeCluster> cluster_;
};

// The window test needs no failover, and its 96 MB tail keeps a loaded
// machine busy for seconds: a 2 s lease could move the stream mid-test.
class ReplicaWindowTest : public ReplicaReadTest {
 protected:
  ReplicaWindowTest() { ttl_ms_ = 10000; }
};

TEST_F(ReplicaReadTest, MetadataNamesTheOtherNodesReplicas) {
  const std::string stream = "named";
  int l = create_and_find_leader(stream);
  ASSERT_GE(l, 0);
  auto m = metadata((l + 1) % kNodes, stream);
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->brokers.size(), size_t(kNodes));
  std::set<uint16_t> replicas(m->streams[0].replica_references.begin(),
                              m->streams[0].replica_references.end());
  EXPECT_EQ(replicas.size(), size_t(kNodes - 1));
  EXPECT_FALSE(replicas.count(m->streams[0].leader_reference));
}

TEST_F(ReplicaReadTest, PublisherSequenceAndStreamStatsAreAnsweredOnEveryNode) {
  const std::string stream = "asked";
  const int l = create_and_find_leader(stream);
  ASSERT_GE(l, 0);
  StreamClient p = client(l);
  ASSERT_TRUE(p.send(DeclarePublisherRequest{p.corr(), 1, "ref-a", stream}).ok());
  auto declared = p.expect<DeclarePublisherResponse>(10s);
  ASSERT_TRUE(declared.ok() && declared->code == ResponseCode::ok);
  Bytes storage;
  std::vector<std::string> bodies;
  for (int i = 0; i < 30; ++i) bodies.push_back("m" + std::to_string(i));
  ASSERT_TRUE(p.send(make_publish(1, 100, bodies, &storage)).ok());
  std::set<uint64_t> confirmed;
  while (confirmed.size() < bodies.size()) {
    auto f = p.read(20s);
    ASSERT_TRUE(f.ok()) << f.error().to_string();
    ASSERT_FALSE(std::holds_alternative<PublishError>(*f));
    if (auto* c = std::get_if<PublishConfirm>(&*f)) {
      confirmed.insert(c->publishing_ids.begin(), c->publishing_ids.end());
    }
  }

  auto stats_of = [&](int i) -> std::optional<StreamStatsResponse> {
    StreamClient c = client(i);
    if (!c.send(StreamStatsRequest{c.corr(), stream}).ok()) return std::nullopt;
    auto r = c.expect<StreamStatsResponse>(10s);
    return r.ok() ? std::optional(*r) : std::nullopt;
  };
  const auto owner_stats = stats_of(l);
  ASSERT_TRUE(owner_stats && owner_stats->code == ResponseCode::ok);
  for (int i = 0; i < kNodes; ++i) {
    StreamClient c = client(i);
    ASSERT_TRUE(c.send(QueryPublisherSequenceRequest{c.corr(), "ref-a", stream}).ok());
    auto seq = c.expect<QueryPublisherSequenceResponse>(10s);
    ASSERT_TRUE(seq.ok()) << "node " << i << ": " << seq.error().to_string();
    EXPECT_EQ(seq->code, ResponseCode::ok) << "node " << i;
    EXPECT_EQ(seq->sequence, 129u) << "node " << i;
    // A reference the stream never saw: 0, as on the owner.
    ASSERT_TRUE(c.send(QueryPublisherSequenceRequest{c.corr(), "nobody", stream}).ok());
    seq = c.expect<QueryPublisherSequenceResponse>(10s);
    ASSERT_TRUE(seq.ok());
    EXPECT_EQ(seq->code, ResponseCode::ok) << "node " << i;
    EXPECT_EQ(seq->sequence, 0u) << "node " << i;
    // A stream no node has: not forwarded, refused here.
    ASSERT_TRUE(c.send(QueryPublisherSequenceRequest{c.corr(), "ref-a", "no-such"}).ok());
    seq = c.expect<QueryPublisherSequenceResponse>(10s);
    ASSERT_TRUE(seq.ok());
    EXPECT_EQ(seq->code, ResponseCode::stream_does_not_exist) << "node " << i;

    auto st = stats_of(i);
    ASSERT_TRUE(st.has_value()) << "node " << i;
    EXPECT_EQ(st->code, ResponseCode::ok) << "node " << i;
    EXPECT_EQ(st->stats, owner_stats->stats) << "node " << i;
  }
}

TEST_F(ReplicaReadTest, FromFirstOnAReplicaEveryConfirmedMessageOnceRemoteAndLiveTail) {
  const std::string stream = "tail";
  int l = create_and_find_leader(stream);
  ASSERT_GE(l, 0);
  const int replica = (l + 1) % kNodes;
  std::set<uint64_t> confirmed;
  uint64_t next = 1;
  ASSERT_TRUE(publish_on_leader(replica, stream, &next, 300, &confirmed));

  StreamClient c = subscribe(replica, stream, {OffsetType::first, 0});
  Received got;
  read_until(c, &got, 60s, [&](const Received& g) { return has_all(g, confirmed); });
  ASSERT_TRUE(has_all(got, confirmed)) << "the remote part did not arrive";
  EXPECT_EQ(got.first_chunk, 0u);
  // Stored as chunks of at most 40 messages (4 publishes of 10 in flight),
  // so at least 8, each delivered as stored (no chunk joined into another's
  // Deliver: server.coalesce_bytes is off by default), every message at its
  // offset (read_until checks).
  EXPECT_GE(got.delivers, 8u);
  // Read from the bucket on the replica, nothing forwarded by the owner.
  json st = server_status(replica);
  ASSERT_FALSE(st.is_null());
  EXPECT_GT(st["replica_remote_chunks"].get<uint64_t>(), 0u) << st.dump();
  EXPECT_EQ(st["replica_forwarded_chunks"].get<uint64_t>(), 0u) << st.dump();
  EXPECT_EQ(st["chunks_joined"].get<uint64_t>(), 0u) << st.dump();

  // Published after the subscription caught up: the owner's live tail.
  ASSERT_TRUE(publish_on_leader(replica, stream, &next, 200, &confirmed));
  read_until(c, &got, 60s, [&](const Received& g) { return has_all(g, confirmed); });
  EXPECT_FALSE(got.metadata_update);
  expect_exactly_once(got, confirmed);
  EXPECT_EQ(confirmed.size(), 500u);
  st = server_status(replica);
  ASSERT_FALSE(st.is_null());
  EXPECT_GT(st["replica_forwarded_chunks"].get<uint64_t>(), 0u) << st.dump();

  // The replica's management API shows the consumer caught up: its next
  // offset after the 500 messages, no lag, marked a lower bound.
  const std::string api = "http://guest:guest@" +
                          cluster_->node(replica).http_url().substr(std::string("http://").size());
  json consumer;
  EXPECT_TRUE(eventually(10s, [&] {
    json all = json::parse(http_get(api + "/api/stream/consumers", 5s), nullptr, false);
    if (!all.is_array() || all.size() != 1) return false;
    consumer = all[0];
    return consumer.value("offset", uint64_t(0)) == 500;
  })) << consumer.dump();
  EXPECT_EQ(consumer["replica"], true) << consumer.dump();
  EXPECT_EQ(consumer["offset_lag"], 0) << consumer.dump();
  EXPECT_EQ(consumer["offset_lag_estimated"], true) << consumer.dump();
}

// A replica consumer that grants the largest credit (65535) and reads
// nothing while the owner's tail grows by 1500 chunks of 64 KB. Before,
// the link to the owner took the consumer's whole credit, so the replica's
// node took in the owner's whole tail and queued it for a consumer that
// did not read. Now the link holds at most kReplicaLinkWindow (32) chunks
// beyond those written to the consumer: the node takes in what the
// consumer's socket and its connection's backlog hold, and a window more.
// Once the consumer reads, every message arrives once, in order.
TEST_F(ReplicaWindowTest, ASlowReplicaConsumerHoldsTheOwnersLinkToAWindow) {
  const std::string stream = "window";
  const int l = create_and_find_leader(stream);
  ASSERT_GE(l, 0);
  const int replica = (l + 1) % kNodes;
  StreamClient c = client(replica);
  ASSERT_TRUE(
      c.send(SubscribeRequest{c.corr(), kSub, stream, {OffsetType::next, 0}, 65535, {}}).ok());
  auto sub = c.expect<SubscribeResponse>(10s);
  ASSERT_TRUE(sub.ok()) << sub.error().message;
  ASSERT_EQ(sub->code, ResponseCode::ok);

  // One message a chunk: each publish goes out on its own (the appender
  // lingers 2 ms for more).
  constexpr int kChunks = 1500;
  StreamClient p = client(l);
  ASSERT_TRUE(declare_publisher(p, stream));
  const std::string pad(64 * 1024, 'w');
  for (int i = 0; i < kChunks; ++i) {
    Bytes storage;
    ASSERT_TRUE(
        p.send(make_publish(1, uint64_t(i) + 1, {fmt::format("{:06}", i) + pad}, &storage)).ok());
    std::this_thread::sleep_for(3ms);
  }
  // Every chunk confirmed: the owner wrote all of them (and its status
  // need not be polled, which a moved stream would leave without entry).
  std::set<uint64_t> confirmed;
  while (confirmed.size() < size_t(kChunks)) {
    auto f = p.read(60s);
    ASSERT_TRUE(f.ok()) << "after " << confirmed.size() << " confirms: " << f.error().to_string();
    ASSERT_FALSE(std::holds_alternative<PublishError>(*f)) << "after " << confirmed.size();
    if (auto* cf = std::get_if<PublishConfirm>(&*f)) {
      confirmed.insert(cf->publishing_ids.begin(), cf->publishing_ids.end());
    }
  }
  std::this_thread::sleep_for(2s);
  json st = server_status(replica);
  ASSERT_FALSE(st.is_null());
  const uint64_t forwarded = st["replica_forwarded_chunks"].get<uint64_t>();
  EXPECT_LT(forwarded, uint64_t(kChunks) * 2 / 5)
      << "the replica's node took in " << forwarded << " of " << kChunks
      << " chunks for a consumer that reads nothing";

  uint64_t got = 0;
  while (got < uint64_t(kChunks)) {
    auto d = c.expect<DeliverFrame>(30s);
    ASSERT_TRUE(d.ok()) << "after " << got << " messages: " << d.error().message;
    auto recs = chunk_records(*d);
    ASSERT_TRUE(recs.ok()) << recs.error().message;
    for (const auto& r : *recs) {
      ASSERT_EQ(r.substr(0, 6), fmt::format("{:06}", got)) << "message " << got;
      got += 1;
    }
  }
  EXPECT_EQ(got, uint64_t(kChunks));
}

TEST_F(ReplicaReadTest, KillOwnerWhileAReplicaConsumerReadsLosesAndRepeatsNothing) {
  const std::string stream = "failover";
  int l = create_and_find_leader(stream);
  ASSERT_GE(l, 0);
  const int replica = (l + 1) % kNodes;
  const int third = (l + 2) % kNodes;
  std::set<uint64_t> confirmed;
  uint64_t next = 1;
  ASSERT_TRUE(publish_on_leader(replica, stream, &next, 200, &confirmed));

  StreamClient c = subscribe(replica, stream, {OffsetType::first, 0});
  Received got;
  read_until(c, &got, 60s, [&](const Received& g) { return has_all(g, confirmed); });
  ASSERT_TRUE(has_all(got, confirmed));
  // Forwarded now: messages the owner delivers live.
  ASSERT_TRUE(publish_on_leader(replica, stream, &next, 100, &confirmed));
  read_until(c, &got, 60s, [&](const Received& g) { return has_all(g, confirmed); });
  ASSERT_TRUE(has_all(got, confirmed));

  cluster_->kill(l);
  int new_leader = -1;
  ASSERT_TRUE(eventually(30s, [&] {
    new_leader = leader(third, stream);
    return new_leader >= 0 && new_leader != l;
  })) << "no node took the stream over";

  ASSERT_TRUE(publish_on_leader(third, stream, &next, 200, &confirmed));
  read_until(c, &got, 60s, [&](const Received& g) { return has_all(g, confirmed); });
  EXPECT_FALSE(got.metadata_update) << "the replica gave up instead of following the new owner";
  expect_exactly_once(got, confirmed);
  EXPECT_EQ(confirmed.size(), 500u);
  json st = server_status(replica);
  ASSERT_FALSE(st.is_null());
  EXPECT_GE(st["replica_links"].get<uint64_t>(), 2u) << "subscribed at the old and the new owner";
}

TEST_F(ReplicaReadTest, OffsetTimestampLastAndNextResolveOnAReplica) {
  const std::string stream = "specs";
  int l = create_and_find_leader(stream);
  ASSERT_GE(l, 0);
  const int replica = (l + 1) % kNodes;
  std::set<uint64_t> confirmed;
  uint64_t next = 1;
  ASSERT_TRUE(publish_on_leader(replica, stream, &next, 100, &confirmed));

  {
    // offset 55 (remote): from the chunk holding it; offsets 55..99 once.
    StreamClient c = subscribe(replica, stream, {OffsetType::offset, 55});
    Received got;
    read_until(c, &got, 30s, [&](const Received& g) { return g.count.count(100) > 0; });
    ASSERT_TRUE(got.first_chunk.has_value());
    EXPECT_LE(*got.first_chunk, 55u);
    for (uint64_t id = 56; id <= 100; ++id) EXPECT_EQ(got.count[id], 1) << "message " << id;
  }
  {
    // timestamp 0 (older than every chunk): the remote search finds the
    // stream's first chunk.
    StreamClient c = subscribe(replica, stream, {OffsetType::timestamp, 0});
    Received got;
    read_until(c, &got, 30s, [&](const Received& g) { return g.count.count(100) > 0; });
    EXPECT_EQ(got.first_chunk, 0u);
    for (uint64_t id = 1; id <= 100; ++id) EXPECT_EQ(got.count[id], 1) << "message " << id;
  }
  {
    // last: the owner's last chunk first.
    StreamClient owner = client(l);
    ASSERT_TRUE(owner.send(StreamStatsRequest{owner.corr(), stream}).ok());
    auto stats = owner.expect<StreamStatsResponse>();
    ASSERT_TRUE(stats.ok());
    int64_t last_chunk = -1;
    for (const auto& [k, v] : stats->stats) {
      if (k == "last_chunk_id") last_chunk = v;
    }
    ASSERT_GE(last_chunk, 0);
    StreamClient c = subscribe(replica, stream, {OffsetType::last, 0});
    Received got;
    read_until(c, &got, 30s, [&](const Received& g) { return g.first_chunk.has_value(); });
    ASSERT_TRUE(got.first_chunk.has_value());
    EXPECT_EQ(int64_t(*got.first_chunk), last_chunk);
  }
  {
    // next: only what is published after the subscription. It is answered
    // before its link to the owner is up, so batches are published until
    // the first arrives; then every later one arrives once.
    const uint64_t from = next;
    StreamClient c = subscribe(replica, stream, {OffsetType::next, 0});
    Received got;
    std::set<uint64_t> ignored;
    ASSERT_TRUE(eventually(30s, [&] {
      if (!publish_on_leader(replica, stream, &next, 10, &ignored)) return false;
      read_until(c, &got, 1s, [](const Received& g) { return g.first_chunk.has_value(); });
      return got.first_chunk.has_value();
    }));
    EXPECT_GE(*got.first_chunk, from - 1) << "a message from before the subscription";
    std::set<uint64_t> later;
    ASSERT_TRUE(publish_on_leader(replica, stream, &next, 50, &later));
    read_until(c, &got, 30s, [&](const Received& g) { return has_all(g, later); });
    expect_exactly_once(got, later);
  }
}

}  // namespace
}  // namespace strata::test
