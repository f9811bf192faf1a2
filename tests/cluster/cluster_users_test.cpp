// Live user changes in a cluster: a user added through one node's
// management API logs in on the other node (the overlay is in etcd and
// every node re-reads it), and a deletion on the second node closes the
// user out of the first.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/cli.h"
#include "support/http_get.h"
#include "support/serve_cluster.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace std::chrono_literals;

// `strata ARGS...` against the node at `url`, as guest (password file in
// `dir`).
std::function<CliOut(std::vector<std::string>)> admin_cli(const std::string& url, TempDir& dir) {
  const std::string admin = dir.sub("guest.pw");
  std::ofstream(admin) << "guest\n";
  return [url, admin](std::vector<std::string> args) {
    args.insert(args.end(), {"--node", url, "--admin-password-file", admin});
    return strata_cli(args);
  };
}

bool logs_in(int port, const std::string& user, const std::string& pw) {
  auto c = StreamClient::connect(port);
  return c.ok() && c->handshake(user, pw).ok();
}

TEST(ClusterUsers, AUserAddedOnOneNodeLogsInOnEveryNode) {
  TempDir dir;
  std::string error;
  auto cluster = ServeCluster::start(dir.path(), ServeClusterOptions::two_with_http(), &error);
  ASSERT_NE(cluster, nullptr) << error;
  const std::string a = cluster->node(0).http_url();
  const std::string b = cluster->node(1).http_url();
  ASSERT_FALSE(a.empty() || b.empty()) << cluster->node(0).process().stdout_text();
  const std::string pw = dir.sub("carol.pw");
  std::ofstream(pw) << "c4rol\n";
  const std::string admin = dir.sub("guest.pw");
  std::ofstream(admin) << "guest\n";

  auto r = strata_cli(
      {"user", "add", "carol", "--password-file", pw, "--node", a, "--admin-password-file", admin});
  ASSERT_EQ(r.status, 0) << r.err;
  r = strata_cli({"permissions", "set", "carol", ".*", ".*", ".*", "--node", a,
                  "--admin-password-file", admin});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(logs_in(cluster->port(0), "carol", "c4rol"));
  // The other node applies it at its next poll (every 2 s).
  EXPECT_TRUE(eventually(10s, [&] { return logs_in(cluster->port(1), "carol", "c4rol"); }));

  // Deleted through the second node: refused on the first too.
  r = strata_cli({"user", "delete", "carol", "--node", b, "--admin-password-file", admin});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(logs_in(cluster->port(1), "carol", "c4rol"));
  EXPECT_TRUE(eventually(10s, [&] { return !logs_in(cluster->port(0), "carol", "c4rol"); }));
  // Both nodes list the same users.
  auto la = strata_cli({"--json", "user", "list", "--node", a, "--admin-password-file", admin});
  auto lb = strata_cli({"--json", "user", "list", "--node", b, "--admin-password-file", admin});
  ASSERT_EQ(la.status, 0) << la.err;
  EXPECT_EQ(la.out, lb.out);
}

// A vhost added through one node holds streams on both: under replicated
// confirms a publish in it is confirmed only once the other node's copy
// holds it — the copy is made over the nodes' own link, which names the
// stream by its stored name ("v\ns") from the vhost "/" — and a consumer of
// the vhost on the other node reads it.
TEST(ClusterUsers, AVhostsStreamsAreCopiedAndReadOnEveryNode) {
  TempDir dir;
  std::string error;
  ServeClusterOptions o = ServeClusterOptions::two_with_http();
  o.patch["tiering"]["confirm"] = "replicated";
  // Nothing reaches the object store during the test: the copy can only
  // come over the link (a copier also fills a copy from the remote tier).
  o.patch["tiering"]["fragment_max_age_ms"] = 60000;
  o.patch["tiering"]["fragment_target_bytes"] = 64 << 20;
  o.patch["tiering"]["persist_interval_ms"] = 60000;
  auto cluster = ServeCluster::start(dir.path(), o, &error);
  ASSERT_NE(cluster, nullptr) << error;
  auto cli = admin_cli(cluster->node(0).http_url(), dir);
  ASSERT_EQ(cli({"vhost", "add", "v"}).status, 0);
  auto r = cli({"permissions", "set", "guest", ".*", ".*", ".*", "--vhost", "v"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto open = [&](int node) -> Result<StreamClient> {
    STRATA_ASSIGN_OR_RETURN(StreamClient c, StreamClient::connect(cluster->port(node)));
    STRATA_TRY(c.handshake("guest", "guest", true, "v"));
    return c;
  };
  ASSERT_TRUE(eventually(10s, [&] { return open(1).ok(); }));
  auto c = open(0);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->send(proto::CreateStreamRequest{c->corr(), "s", {}}).ok());
  ASSERT_EQ(c->expect<proto::CreateStreamResponse>()->code, proto::ResponseCode::ok);
  // Published through the stream's owner (the node that takes the
  // publisher).
  std::vector<std::string> msgs;
  for (int i = 0; i < 20; ++i) msgs.push_back("v-" + std::to_string(i));
  int at = -1;
  ASSERT_TRUE(eventually(10s, [&] {
    for (int i = 0; i < 2; ++i) {
      auto p = open(i);
      if (!p.ok()) continue;
      if (!p->send(proto::DeclarePublisherRequest{p->corr(), 1, "", "s"}).ok()) continue;
      auto d = p->expect<proto::DeclarePublisherResponse>();
      if (d.ok() && d->code == proto::ResponseCode::ok) {
        at = i;
        c = std::move(p);
        return true;
      }
    }
    return false;
  }));
  Bytes storage;
  ASSERT_TRUE(c->send(make_publish(1, 0, msgs, &storage)).ok());
  size_t confirmed = 0;
  while (confirmed < msgs.size()) {
    auto conf = c->expect<proto::PublishConfirm>(15s);
    ASSERT_TRUE(conf.ok()) << "confirmed " << confirmed << " on node " << at << ": "
                           << conf.error().message << "\n"
                           << cluster->logs(0) << cluster->logs(1);
    confirmed += conf->publishing_ids.size();
  }
  // The other node holds the copy, under the stored name, without a
  // refusal on the way.
  const std::string other_status = cluster->node(1 - at).http_url() + "/status";
  nlohmann::json st;
  EXPECT_TRUE(eventually(10s, [&] {
    st = nlohmann::json::parse(http_get(other_status, 5s), nullptr, false);
    return st.is_object() && st["copies"].contains("v\ns") &&
           st["copies"]["v\ns"].value("local_next_offset", uint64_t(0)) >= msgs.size();
  })) << st.dump();
  EXPECT_EQ(st["cluster"]["copies"]["dropped_copies"], 0u) << st.dump();
  // Read on each node, in the vhost, by its name there.
  for (int i = 0; i < 2; ++i) {
    auto rd = open(i);
    ASSERT_TRUE(rd.ok()) << rd.error().message;
    ASSERT_TRUE(rd->send(proto::SubscribeRequest{
                             rd->corr(), 1, "s", {proto::OffsetType::first, 0}, 100, {}})
                    .ok());
    auto sub = rd->expect<proto::SubscribeResponse>();
    ASSERT_TRUE(sub.ok()) << sub.error().message;
    ASSERT_EQ(sub->code, proto::ResponseCode::ok) << "node " << i;
    std::vector<std::string> got;
    while (got.size() < msgs.size()) {
      auto d = rd->expect<proto::DeliverFrame>(15s);
      ASSERT_TRUE(d.ok()) << "node " << i << " after " << got.size() << ": " << d.error().message;
      auto recs = chunk_records(*d);
      ASSERT_TRUE(recs.ok());
      got.insert(got.end(), recs->begin(), recs->end());
    }
    EXPECT_EQ(got, msgs) << "node " << i;
  }
}

// A vhost deleted through one node while clients of the other node create
// streams in it. The other node learns of the deletion at its next poll of
// the rules (every 2 s); before, a create it ran after the deleting node
// had listed the vhost's streams was left behind, in a vhost that no
// longer exists. Now a create in a vhost re-reads the rules from etcd once
// the stream is made, and deletes it again when the vhost is gone.
TEST(ClusterUsers, CreatesOnAnotherNodeRacingAVhostsDeletionLeaveNoStreamBehind) {
  TempDir dir;
  std::string error;
  auto cluster = ServeCluster::start(dir.path(), ServeClusterOptions::two_with_http(), &error);
  ASSERT_NE(cluster, nullptr) << error;
  auto cli = admin_cli(cluster->node(0).http_url(), dir);
  auto open_b = [&]() -> Result<StreamClient> {
    STRATA_ASSIGN_OR_RETURN(StreamClient c, StreamClient::connect(cluster->port(1)));
    STRATA_TRY(c.handshake("guest", "guest", true, "racy"));
    return c;
  };
  // Creates whose answer came, or never came, after the deletion began.
  int racing = 0;
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(cli({"vhost", "add", "racy"}).status, 0);
    ASSERT_EQ(cli({"permissions", "set", "guest", ".*", ".*", ".*", "--vhost", "racy"}).status, 0);
    ASSERT_TRUE(eventually(10s, [&] { return open_b().ok(); }));
    // Two clients of node b create streams one after another until, once
    // the deletion began, an answer is not ok, or their connection closes.
    std::atomic<bool> deleted{false};
    std::atomic<int> in_flight_at_deletion{0}, made{0};
    std::vector<std::thread> creators;
    for (int i = 0; i < 2; ++i) {
      creators.emplace_back([&, i] {
        auto c = open_b();
        if (!c.ok()) return;
        for (int j = 0; j < 2000; ++j) {
          const std::string name = fmt::format("r{}-c{}-{}", round, i, j);
          if (!c->send(proto::CreateStreamRequest{c->corr(), name, {}}).ok()) return;
          auto r = c->expect<proto::CreateStreamResponse>(20s);
          if (deleted) in_flight_at_deletion += 1;
          if (!r.ok()) return;
          if (r->code == proto::ResponseCode::ok) {
            made += 1;
          } else if (deleted) {
            return;
          } else {
            // Before the deletion every create should succeed: say which did not.
            ADD_FAILURE() << name << ": " << proto::response_code_name(r->code);
          }
        }
      });
    }
    ASSERT_TRUE(eventually(10s, [&] { return made >= 4; }));
    deleted = true;
    auto r = cli({"vhost", "delete", "racy"});
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    for (auto& t : creators) t.join();
    racing += in_flight_at_deletion;
    std::this_thread::sleep_for(1s);
    const std::string out = dir.sub("export.json");
    ASSERT_EQ(cli({"definitions", "export", "--file", out}).status, 0);
    auto exported = nlohmann::json::parse(std::ifstream(out));
    std::vector<std::string> left;
    for (const auto& q : exported["queues"]) {
      if (q["vhost"] == "racy") left.push_back(q["name"]);
    }
    EXPECT_TRUE(left.empty()) << "round " << round << ": " << left.size() << " of " << made
                              << " streams left, " << nlohmann::json(left).dump();
  }
  // The race was run: node b had creates in hand as the deletion ran.
  EXPECT_GT(racing, 0);
}

// GET /api/cluster (and `strata list nodes`) on every node: the same
// nodes, each stream's owner with its lease as a string (63-bit ids), the
// streams each node owns adding up to all of them.
TEST(ClusterUsers, EveryNodeShowsTheClusterItsNodesAndTheStreamsOwners) {
  TempDir dir;
  std::string error;
  auto cluster = ServeCluster::start(dir.path(), ServeClusterOptions::two_with_http(), &error);
  ASSERT_NE(cluster, nullptr) << error;
  const std::vector<std::string> streams = {"view-a", "view-b", "view-c"};
  for (const auto& s : streams) ASSERT_TRUE(cluster->create_stream(0, s).ok()) << s;
  const std::string admin = dir.sub("guest.pw");
  std::ofstream(admin) << "guest\n";
  for (int i = 0; i < 2; ++i) {
    const std::string url = cluster->node(i).http_url();
    ASSERT_FALSE(url.empty());
    const std::string api = "http://guest:guest@" + url.substr(std::string("http://").size());
    nlohmann::json doc;
    // Owners appear as the nodes acquire the streams.
    EXPECT_TRUE(eventually(20s, [&] {
      doc = nlohmann::json::parse(http_get(api + "/api/cluster", 5s), nullptr, false);
      if (!doc.is_object() || doc["streams"].size() != streams.size()) return false;
      for (const auto& s : doc["streams"]) {
        if (s["node"] == doc["node"] && s["state"] != "serving") return false;
      }
      return true;
    })) << doc.dump();
    EXPECT_EQ(doc["clustered"], true);
    ASSERT_EQ(doc["nodes"].size(), 2u) << doc.dump();
    std::set<std::string> names;
    uint64_t owned = 0, this_node = 0;
    for (const auto& n : doc["nodes"]) {
      names.insert(n["name"].get<std::string>());
      owned += n["streams_owned"].get<uint64_t>();
      this_node += n["this_node"].get<bool>();
      EXPECT_FALSE(n["address"].get<std::string>().empty()) << n.dump();
    }
    EXPECT_EQ(owned, streams.size()) << doc.dump();
    EXPECT_EQ(this_node, 1u) << doc.dump();
    EXPECT_TRUE(names.count(doc["node"].get<std::string>())) << doc.dump();
    EXPECT_TRUE(doc["lease"].is_string()) << doc.dump();
    for (const auto& s : doc["streams"]) {
      EXPECT_TRUE(names.count(s["node"].get<std::string>())) << s.dump();
      EXPECT_TRUE(s["lease"].is_string()) << s.dump();
      // This node's own streams carry its state of them.
      if (s["node"] == doc["node"]) {
        EXPECT_EQ(s["state"], "serving") << s.dump();
      }
    }
    auto list =
        strata_cli({"--json", "list", "nodes", "--node", url, "--admin-password-file", admin});
    ASSERT_EQ(list.status, 0) << list.err;
    EXPECT_EQ(nlohmann::json::parse(list.out)["nodes"].size(), 2u) << list.out;
  }
}

}  // namespace
}  // namespace strata::test
