// Live user changes in a cluster: a user added through one node's
// management API logs in on the other node (the overlay is in etcd and
// every node re-reads it), and a deletion on the second node closes the
// user out of the first.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "support/cli.h"
#include "support/serve_cluster.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace std::chrono_literals;

std::string node_http(ServeProcess& p) {
  static const std::regex re("http on (127\\.0\\.0\\.1:[0-9]+)\n");
  std::smatch m;
  const std::string out = p.process().stdout_text();
  return std::regex_search(out, m, re) ? "http://" + m[1].str() : "";
}

bool logs_in(int port, const std::string& user, const std::string& pw) {
  auto c = StreamClient::connect(port);
  return c.ok() && c->handshake(user, pw).ok();
}

TEST(ClusterUsers, AUserAddedOnOneNodeLogsInOnEveryNode) {
  TempDir dir;
  ServeClusterOptions o;
  o.nodes = 2;
  o.etcd_members = 1;
  o.patch = {{"http", {{"listen", "127.0.0.1:0"}}}};
  std::string error;
  auto cluster = ServeCluster::start(dir.path(), o, &error);
  ASSERT_NE(cluster, nullptr) << error;
  const std::string a = node_http(cluster->node(0));
  const std::string b = node_http(cluster->node(1));
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

}  // namespace
}  // namespace strata::test
