// Live user changes in a cluster: a user added through one node's
// management API logs in on the other node (the overlay is in etcd and
// every node re-reads it), and a deletion on the second node closes the
// user out of the first.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "support/cli.h"
#include "support/http_get.h"
#include "support/serve_cluster.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace std::chrono_literals;

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
    auto list = strata_cli(
        {"--json", "list", "nodes", "--node", url, "--admin-password-file", admin});
    ASSERT_EQ(list.status, 0) << list.err;
    EXPECT_EQ(nlohmann::json::parse(list.out)["nodes"].size(), 2u) << list.out;
  }
}

}  // namespace
}  // namespace strata::test
