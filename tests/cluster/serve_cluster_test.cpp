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
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "server/stream_client.h"
#include "support/etcd_cluster.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace proto;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kNodes = 3;
constexpr int64_t kTtlMs = 2000;

// Waits for `pred` (another process's state, which nothing here can be told
// about by a callback), checking every 50 ms.
template <class F>
bool eventually(std::chrono::milliseconds timeout, F pred) {
  auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return pred();
}

std::string body_of(uint64_t id) {
  return "m-" + std::to_string(id);
}

class ServeClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    etcd_ = EtcdCluster::start(dir_.path(), 3, &err);
    ASSERT_NE(etcd_, nullptr) << err;
    std::filesystem::create_directories(dir_.sub("bucket"));
    std::filesystem::create_directories(dir_.sub("logs"));
    for (int i = 0; i < kNodes; ++i) {
      std::ofstream(config_path(i)) << node_doc(i, true).dump(2);
      nodes_[i] = ServeProcess::start(dir_.sub("data-" + std::to_string(i)),
                                      {"--config", config_path(i)}, dir_.sub("logs"));
      ASSERT_GT(nodes_[i].port(), 0) << nodes_[i].process().stderr_text();
    }
  }

  void TearDown() override {
    for (auto& n : nodes_) {
      if (n.port() > 0 && n.process().running()) {
        n.process().kill(SIGCONT);
        n.stop(20s);
      }
    }
  }

  std::string config_path(int i) const { return dir_.sub("node-" + std::to_string(i) + ".json"); }

  // The node's document; without the serve sections (cluster) for the
  // offline tools, which take a node configuration only.
  json node_doc(int i, bool serve) const {
    json doc = {{"objstore", {{"backend", "fs"}, {"fs", {{"root", dir_.sub("bucket")}}}}},
                {"catalog",
                 {{"backend", "etcd"},
                  {"endpoints", etcd_->endpoints()},
                  {"namespace", "sc"},
                  {"request_timeout_ms", 1500},
                  {"attempt_timeout_ms", 500}}},
                {"tiering",
                 {{"confirm", "remote"},
                  {"remote_confirm_cut_ms", 20},
                  {"remote_confirm_timeout_ms", 20000},
                  {"request_timeout_ms", 2000}}}};
    if (serve) {
      doc["cluster"] = {
          {"enabled", true}, {"node_id", "n" + std::to_string(i)}, {"lease_ttl_ms", kTtlMs}};
    }
    return doc;
  }

  StreamClient client(int i) {
    auto c = StreamClient::connect(nodes_[i].port());
    EXPECT_TRUE(c.ok()) << c.error().to_string();
    if (!c.ok()) return {};
    EXPECT_TRUE(c->handshake().ok());
    return std::move(*c);
  }

  // The leader's port as node i's Metadata names it; 0 when none.
  int leader_port(int i, const std::string& stream) {
    auto c = StreamClient::connect(nodes_[i].port());
    if (!c.ok() || !c->handshake().ok()) return 0;
    if (!c->send(MetadataRequest{c->corr(), {stream}}).ok()) return 0;
    auto r = c->expect<MetadataResponse>(5s);
    if (!r.ok() || r->streams.size() != 1 || r->streams[0].code != ResponseCode::ok) return 0;
    for (const auto& b : r->brokers) {
      if (b.reference == r->streams[0].leader_reference) {
        EXPECT_EQ(b.host, "127.0.0.1");
        return int(b.port);
      }
    }
    ADD_FAILURE() << "leader reference without a broker";
    return 0;
  }

  int index_of_port(int port) const {
    for (int i = 0; i < kNodes; ++i) {
      if (nodes_[i].port() == port) return i;
    }
    return -1;
  }

  // Declares publisher 1 on a leader that may still be opening the stream.
  bool declare_publisher(StreamClient& c, const std::string& stream) {
    return eventually(20s, [&] {
      if (!c.send(DeclarePublisherRequest{c.corr(), 1, "", stream}).ok()) return false;
      auto r = c.expect<DeclarePublisherResponse>();
      return r.ok() && r->code == ResponseCode::ok;
    });
  }

  // Publishes ids [*next, *next + count) in frames of 10, up to 4 frames in
  // flight, recording confirms; false on a publish error or a missing
  // confirm.
  bool publish(StreamClient& c, uint64_t* next, uint64_t count, std::set<uint64_t>* confirmed) {
    Bytes storage;
    const uint64_t end = *next + count;
    uint64_t sent_upto = *next;
    int in_flight = 0;
    while (sent_upto < end || in_flight > 0) {
      while (in_flight < 4 && sent_upto < end) {
        std::vector<std::string> bodies;
        for (uint64_t id = sent_upto; id < sent_upto + 10; ++id) bodies.push_back(body_of(id));
        if (!c.send(make_publish(1, sent_upto, bodies, &storage)).ok()) return false;
        sent_upto += 10;
        *next = sent_upto;
        in_flight += 1;
      }
      auto f = c.read(20s);
      if (!f.ok()) return false;
      if (auto* conf = std::get_if<PublishConfirm>(&*f)) {
        for (uint64_t id : conf->publishing_ids) confirmed->insert(id);
        in_flight -= int((conf->publishing_ids.size() + 9) / 10);
      } else if (std::holds_alternative<PublishError>(*f) ||
                 std::holds_alternative<MetadataUpdate>(*f)) {
        return false;
      }
    }
    return true;
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

  // Creates `stream` through node 0 and waits until every node's Metadata
  // names the same leader; its index.
  int create_and_find_leader(const std::string& stream) {
    StreamClient c = client(0);
    // Arguments are kept with the stream in the catalog (every owner runs
    // them); ones the nodes cannot honour (a local stream with the nodes'
    // remote confirms) are refused.
    EXPECT_TRUE(
        c.send(CreateStreamRequest{c.corr(), stream, {{"x-strata-tiering", "false"}}}).ok());
    auto refused = c.expect<CreateStreamResponse>(60s);
    EXPECT_TRUE(refused.ok() && refused->code == ResponseCode::precondition_failed);
    EXPECT_TRUE(
        c.send(CreateStreamRequest{c.corr(), stream, {{"x-strata-confirm", "remote"}}}).ok());
    auto r = c.expect<CreateStreamResponse>(60s);
    EXPECT_TRUE(r.ok() && r->code == ResponseCode::ok);
    int port = 0;
    bool agreed = eventually(20s, [&] {
      port = leader_port(0, stream);
      if (port == 0) return false;
      for (int i = 1; i < kNodes; ++i) {
        if (leader_port(i, stream) != port) return false;
      }
      return true;
    });
    EXPECT_TRUE(agreed) << "the nodes' Metadata never named one leader";
    return index_of_port(port);
  }

  // A live node other than `old` that Metadata (asked of node `ask`) names
  // leader of `stream`; -1 if none within `timeout`.
  int await_new_leader(int ask, int old, const std::string& stream,
                       std::chrono::milliseconds timeout) {
    int leader = -1;
    eventually(timeout, [&] {
      int p = leader_port(ask, stream);
      leader = p == 0 ? -1 : index_of_port(p);
      return leader >= 0 && leader != old;
    });
    return leader != old ? leader : -1;
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
  std::unique_ptr<EtcdCluster> etcd_;
  ServeProcess nodes_[kNodes];
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
    ASSERT_TRUE(publish(c, &next, 300, &confirmed));
    // Under load: frames in flight when the leader dies; they may or may
    // not be stored, but never confirmed here.
    Bytes storage;
    for (int f = 0; f < 4; ++f) {
      std::vector<std::string> bodies;
      for (uint64_t id = next; id < next + 10; ++id) bodies.push_back(body_of(id));
      ASSERT_TRUE(c.send(make_publish(1, next, bodies, &storage)).ok());
      next += 10;
    }
    auto killed_at = Clock::now();
    nodes_[leader].process().kill(SIGKILL);
    nodes_[leader].process().wait(10s);

    int ask = (leader + 1) % kNodes;
    int new_leader = await_new_leader(ask, leader, stream, 30s);
    ASSERT_GE(new_leader, 0) << "no node took the stream over";
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killed_at);
    // TTL + the placement grace (a TTL) + recovery, with room for a slow
    // machine.
    EXPECT_LT(took.count(), 4 * kTtlMs + 5000);

    StreamClient c2 = client(new_leader);
    ASSERT_TRUE(declare_publisher(c2, stream));
    ASSERT_TRUE(publish(c2, &next, 100, &confirmed));
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
  nodes_[leader].process().kill(SIGKILL);
  nodes_[leader].process().wait(10s);
  int new_leader = await_new_leader(other, leader, stream, 30s);
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
    return leader_port(new_leader, stream) == 0 && leader_port(third, stream) == 0;
  }));
  EXPECT_EQ(query_offset(new_leader, stream, "app"), -2);
  // Created again: served, with no offsets inherited.
  StreamClient c = client(third);
  ASSERT_TRUE(c.send(CreateStreamRequest{c.corr(), stream, {{"x-strata-confirm", "remote"}}}).ok());
  auto created = c.expect<CreateStreamResponse>(60s);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->code, ResponseCode::ok);
  EXPECT_EQ(query_offset(third, stream, "app"), -1);
  EXPECT_TRUE(eventually(20s, [&] { return leader_port(third, stream) != 0; }));
}

TEST_F(ServeClusterTest, FrozenLeaderStopsServingAndTheNewLeaderKeepsServing) {
  const std::string stream = "frozen";
  int leader = create_and_find_leader(stream);
  ASSERT_GE(leader, 0);
  std::set<uint64_t> confirmed;
  uint64_t next = 1;
  StreamClient old = client(leader);
  ASSERT_TRUE(declare_publisher(old, stream));
  ASSERT_TRUE(publish(old, &next, 100, &confirmed));

  nodes_[leader].process().kill(SIGSTOP);
  int ask = (leader + 1) % kNodes;
  // Past its lease: another node leads (its key expired with the lease).
  int new_leader = await_new_leader(ask, leader, stream, 30s);
  nodes_[leader].process().kill(SIGCONT);
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
  ASSERT_TRUE(publish(c2, &next, 100, &confirmed));
  auto seen = consume(new_leader, stream, confirmed);
  expect_exactly_once(seen, confirmed);

  // The manifest the two owners wrote is intact (every fragment read whole).
  std::string scrub_cfg = dir_.sub("scrub.json");
  std::ofstream(scrub_cfg) << node_doc(0, false).dump(2);
  Process scrub = Process::spawn({STRATA_BIN, "scrub", "--config", scrub_cfg, "--data-dir",
                                  dir_.sub("scrub-data"), "--stream", stream, "--full"},
                                 dir_.sub("logs"));
  auto rc = scrub.wait(60s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0) << scrub.stdout_text() << scrub.stderr_text();
}

}  // namespace
}  // namespace strata::test
