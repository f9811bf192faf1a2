// Stream administration in a cluster, through any node: a super stream
// created on one node routes on every node and is deleted through another
// (its definition is in etcd, server/super_stream_store.h); a retention
// alteration sent to a node that does not serve the stream is applied by
// the one that does (server/cluster_follow.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "proto/commands.h"
#include "support/cli.h"
#include "support/http_get.h"
#include "support/serve_cluster.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

// The partitions node `port` answers for `super` over the stream protocol;
// the response code when it answers none.
Result<std::vector<std::string>> partitions_on(int port, const std::string& super) {
  auto c = StreamClient::connect(port);
  if (!c.ok()) return std::move(c).error();
  STRATA_TRY(c->handshake());
  STRATA_TRY(c->send(proto::PartitionsRequest{c->corr(), super}));
  auto r = c->expect<proto::PartitionsResponse>();
  if (!r.ok()) return std::move(r).error();
  if (r->code != proto::ResponseCode::ok) {
    return Error(Errc::not_found, fmt::format("code {}", int(r->code)));
  }
  return r->streams;
}

Result<std::vector<std::string>> route_on(int port, const std::string& super,
                                          const std::string& key) {
  auto c = StreamClient::connect(port);
  if (!c.ok()) return std::move(c).error();
  STRATA_TRY(c->handshake());
  STRATA_TRY(c->send(proto::RouteRequest{c->corr(), key, super}));
  auto r = c->expect<proto::RouteResponse>();
  if (!r.ok()) return std::move(r).error();
  if (r->code != proto::ResponseCode::ok) {
    return Error(Errc::not_found, fmt::format("code {}", int(r->code)));
  }
  return r->streams;
}

TEST(ClusterStreamsAdmin, ASuperStreamCreatedOnOneNodeRoutesOnEveryNodeAndGoesFromAnother) {
  TempDir dir;
  std::string error;
  auto cluster = ServeCluster::start(dir.path(), ServeClusterOptions::two_with_http(), &error);
  ASSERT_NE(cluster, nullptr) << error;
  const std::string a = cluster->node(0).http_url();
  const std::string b = cluster->node(1).http_url();
  ASSERT_FALSE(a.empty() || b.empty());
  const std::string admin = dir.sub("guest.pw");
  std::ofstream(admin) << "guest\n";

  auto r = strata_cli({"super-stream", "create", "orders", "--partitions", "3", "--node", a,
                       "--admin-password-file", admin});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> parts = {"orders-0", "orders-1", "orders-2"};
  for (int i = 0; i < 2; ++i) {
    Result<std::vector<std::string>> got = Error(Errc::not_found, "not asked");
    EXPECT_TRUE(eventually(10s,
                           [&] {
                             got = partitions_on(cluster->port(i), "orders");
                             return got.ok() && *got == parts;
                           }))
        << "node " << i << ": " << (got.ok() ? "" : got.error().message);
    auto routed = route_on(cluster->port(i), "orders", "1");
    ASSERT_TRUE(routed.ok()) << "node " << i << ": " << routed.error().message;
    EXPECT_EQ(*routed, std::vector<std::string>{"orders-1"}) << "node " << i;
  }
  auto listed =
      strata_cli({"--json", "list", "super-streams", "--node", b, "--admin-password-file", admin});
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_NE(listed.out.find("orders-2"), std::string::npos) << listed.out;
  // The second node refuses the same name: the cluster has it.
  r = strata_cli({"super-stream", "create", "orders", "--partitions", "2", "--node", b,
                  "--admin-password-file", admin});
  EXPECT_NE(r.status, 0) << r.out;

  // Deleted through the second node: gone on the first too, partitions and all.
  r = strata_cli({"super-stream", "delete", "orders", "--node", b, "--admin-password-file", admin});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(eventually(10s, [&] { return !partitions_on(cluster->port(0), "orders").ok(); }));
  EXPECT_FALSE(partitions_on(cluster->port(1), "orders").ok());
  const std::string api = "http://guest:guest@" + a.substr(std::string("http://").size());
  EXPECT_TRUE(eventually(20s, [&] {
    auto doc = json::parse(http_get(api + "/api/streams", 5s), nullptr, false);
    if (!doc.is_array()) return false;
    for (const auto& s : doc) {
      if (s.value("name", "").rfind("orders-", 0) == 0) return false;
    }
    return true;
  }));

  // A node started after the creation knows it too: restart the first.
  r = strata_cli({"super-stream", "create", "late", "--binding-keys", "eu,us", "--node", b,
                  "--admin-password-file", admin});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(cluster->stop(0).has_value());
  ASSERT_TRUE(cluster->restart(0, &error)) << error;
  auto late = partitions_on(cluster->port(0), "late");
  ASSERT_TRUE(late.ok()) << late.error().message;
  EXPECT_EQ(*late, (std::vector<std::string>{"late-eu", "late-us"}));
}

// The retention a stream's serving node runs with, from its /api/streams
// entry: max_age_ms of the tier that holds the stream's history.
std::optional<int64_t> running_max_age(const std::string& api, const std::string& stream) {
  auto e = json::parse(http_get(api + "/api/streams/" + stream, 5s), nullptr, false);
  if (!e.is_object() || !e.value("served_here", false)) return std::nullopt;
  const json eff = e.value("effective", json::object());
  const json r = eff.value("tiering", false) ? eff.value("remote_retention", json::object())
                                             : eff.value("local_retention", json::object());
  const json age = r.value("max_age_ms", json());
  return age.is_number() ? std::optional<int64_t>(age.get<int64_t>()) : std::nullopt;
}

TEST(ClusterStreamsAdmin, AnAlterationSentToANodeThatDoesNotServeTheStreamAppliesOnItsOwner) {
  TempDir dir;
  std::string error;
  auto cluster = ServeCluster::start(dir.path(), ServeClusterOptions::two_with_http(), &error);
  ASSERT_NE(cluster, nullptr) << error;
  ASSERT_TRUE(cluster->create_stream(0, "alt").ok());
  const int owner = cluster->await_agreed_leader("alt", 20s);
  ASSERT_GE(owner, 0);
  const int other = 1 - owner;
  const std::string owner_api =
      "http://guest:guest@" + cluster->node(owner).http_url().substr(std::string("http://").size());
  const std::string other_url = cluster->node(other).http_url();
  const std::string admin = dir.sub("guest.pw");
  std::ofstream(admin) << "guest\n";
  EXPECT_TRUE(eventually(10s, [&] { return !running_max_age(owner_api, "alt").has_value(); }));

  auto r = strata_cli({"--json", "stream", "alter", "alt", "--max-age", "1h", "--node", other_url,
                       "--admin-password-file", admin});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"x-max-age\":\"3600s\""), std::string::npos) << r.out;
  std::optional<int64_t> age;
  EXPECT_TRUE(eventually(10s, [&] {
    age = running_max_age(owner_api, "alt");
    return age == 3600 * 1000;
  })) << (age ? std::to_string(*age) : "none");

  // Removed the same way; and a second change in quick succession ends
  // with the latest.
  r = strata_cli({"stream", "alter", "alt", "--max-age", "none", "--node", other_url,
                  "--admin-password-file", admin});
  ASSERT_EQ(r.status, 0) << r.err;
  r = strata_cli({"stream", "alter", "alt", "--max-age", "2h", "--node", other_url,
                  "--admin-password-file", admin});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(eventually(10s, [&] {
    age = running_max_age(owner_api, "alt");
    return age == 2 * 3600 * 1000;
  })) << (age ? std::to_string(*age) : "none");
  // An alteration that is not one is refused on the non-owner as on the owner.
  r = strata_cli({"stream", "alter", "alt", "--max-age", "soon", "--node", other_url,
                  "--admin-password-file", admin});
  EXPECT_NE(r.status, 0) << r.out;
}

}  // namespace
}  // namespace strata::test
