// Rebalancing (cluster/ownership_core.h, "Handing streams over"): a node
// that joins takes the streams whose placement ranks it first, handed over
// by their owners without losing anything — with confirm = local, where the
// owner's unuploaded tail is exactly what a takeover would drop. Real
// processes on 127.0.0.1: a 3-member etcd cluster, one directory object
// store, three `strata serve` children (a 2 s lease, hand-over after 2 s).
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <set>

#include "cluster/ownership_core.h"
#include "support/numbered_stream.h"
#include "support/serve_cluster.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace proto;
using json = nlohmann::json;

constexpr uint8_t kSub = 3;

TEST(RebalanceTest, AJoiningNodeTakesItsStreamsAndNothingConfirmedIsLost) {
  TempDir dir;
  std::string err;
  ServeClusterOptions o{.nodes = 3, .lease_ttl_ms = 2000};
  // Local confirms and the default fragment bounds: what the owners hold
  // when the node joins is not in the bucket yet.
  o.patch = {{"tiering", {{"confirm", "local"}}},
             {"cluster", {{"rebalance_after_ms", 2000}}},
             {"http", {{"listen", "127.0.0.1:0"}}}};
  auto cluster = ServeCluster::start(dir.path(), o, &err);
  ASSERT_NE(cluster, nullptr) << err;
  // n2 leaves (a graceful stop revokes its lease at once).
  ASSERT_EQ(cluster->stop(2), 0) << cluster->logs(2);

  // Streams whose first choice among all three is n2, and others.
  const std::vector<std::string> ids{"n0", "n1", "n2"};
  std::vector<std::string> to_n2, stay;
  for (int i = 0; to_n2.size() < 3 || stay.size() < 2; ++i) {
    std::string s = "rb-" + std::to_string(i);
    auto& v = cluster::first_choice(s, ids) == "n2" ? to_n2 : stay;
    if (v.size() < 3) v.push_back(s);
  }
  std::vector<std::string> all = to_n2;
  all.insert(all.end(), stay.begin(), stay.end());
  std::map<std::string, std::set<uint64_t>> confirmed;
  std::map<std::string, uint64_t> next;
  std::map<std::string, int> before;
  for (const auto& s : all) {
    ASSERT_TRUE(cluster->create_stream(0, s).ok()) << s;
    before[s] = cluster->await_agreed_leader(s, 20s);
    ASSERT_GE(before[s], 0) << s;
    ASSERT_NE(before[s], 2);
    next[s] = 1;
    ASSERT_TRUE(publish_on_leader(*cluster, 0, s, &next[s], 300, &confirmed[s])) << s;
  }

  // n2 joins again (on its data: it never had these streams).
  ASSERT_TRUE(cluster->restart(2, &err)) << err;
  for (const auto& s : to_n2) {
    EXPECT_TRUE(eventually(60s, [&] { return cluster->leader(0, s) == 2; }))
        << s << " was not handed over to n2 (leader " << cluster->leader(0, s) << ")";
  }
  ASSERT_FALSE(HasFailure());
  for (const auto& s : stay) EXPECT_EQ(cluster->await_agreed_leader(s, 20s), before[s]) << s;

  // Everything confirmed on the old owners is read on the new, in order,
  // once — and publishing goes on there.
  for (const auto& s : all) {
    SCOPED_TRACE(s);
    ASSERT_TRUE(publish_on_leader(*cluster, 0, s, &next[s], 100, &confirmed[s]));
    const int l = cluster->await_agreed_leader(s, 20s);
    ASSERT_GE(l, 0);
    StreamClient c = subscribe_numbered(*cluster, l, s, {OffsetType::first, 0}, kSub);
    Received got;
    read_numbered_until(c, kSub, &got, 60s,
                        [&](const Received& g) { return has_all(g, confirmed[s]); });
    EXPECT_FALSE(got.metadata_update) << "the subscription on node " << l << " was ended";
    expect_exactly_once(got, confirmed[s]);
    EXPECT_EQ(confirmed[s].size(), 400u);
  }

  // The owners counted their hand-overs.
  uint64_t handoffs = 0;
  for (int i = 0; i < 2; ++i) {
    json st = node_status(*cluster, i);
    ASSERT_TRUE(st.is_object() && st.contains("cluster")) << "node " << i;
    handoffs += st["cluster"]["handoffs"].get<uint64_t>();
  }
  EXPECT_EQ(handoffs, to_n2.size());
  if (HasFailure()) {
    for (int i = 0; i < 3; ++i) {
      json st = node_status(*cluster, i);
      std::cout << "--- node " << i << "\n"
                << (st.is_object() && st.contains("cluster") ? st["cluster"].dump() : "no status")
                << "\n"
                << cluster->logs(i) << cluster->node(i).process().stdout_text();
    }
  }
}

}  // namespace
}  // namespace strata::test
