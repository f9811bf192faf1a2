// ServerTable: the lock-free reader table. A model test of inserts, removes
// (backward-shift deletion) and updates, and a concurrent test where
// readers must never see a torn entry or miss a server that exists.
#include "raftmeta/server_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "common/random.h"
#include "support/temp_dir.h"

namespace strata::raftmeta {
namespace {

ServerMeta meta(uint64_t k, VotedFor v) {
  ServerMeta m;
  m.current_term = k;
  m.last_applied = k;
  m.voted_for = std::move(v);
  return m;
}

TEST(ServerTable, InsertSetReadRemove) {
  ServerTable t(4, Bounds{16, 32, 16}, 2);
  EXPECT_FALSE(t.read("a").has_value());
  auto e = t.insert("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(t.find("a"), e);
  auto m = t.read("a");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m, ServerMeta{});  // a new server: every field absent
  ASSERT_TRUE(t.intern_node("n1"));
  t.set(*e, meta(3, VotedFor::server("s", "n1")));
  EXPECT_EQ(*t.read("a"), meta(3, VotedFor::server("s", "n1")));
  // Without the vote, the counters only.
  EXPECT_EQ(*t.read("a", false), meta(3, VotedFor::none()));
  t.set(*e, meta(4, VotedFor::bare("legacy")));
  EXPECT_EQ(*t.read("a"), meta(4, VotedFor::bare("legacy")));
  t.remove(*e);
  EXPECT_FALSE(t.read("a").has_value());
  EXPECT_FALSE(t.find("a").has_value());
  EXPECT_EQ(t.size(), 0u);
}

// read_vote: the vote without strings, and a version that changes with
// every vote (never with the term or applied index) and is never reused,
// also by a new server in a reused entry — what a reader's cache keys on.
TEST(ServerTable, ReadVoteGivesAVersionThatChangesWithTheVoteOnly) {
  ServerTable t(2, Bounds{16, 32, 16}, 2);
  ASSERT_TRUE(t.intern_node("n1"));
  auto e = t.insert("a");
  ASSERT_TRUE(e.has_value());
  char name[32];
  auto v0 = t.read_vote("a", name);
  ASSERT_TRUE(v0.has_value());
  EXPECT_EQ(v0->form, VotedFor::Form::none);
  EXPECT_EQ(v0->entry, *e);
  t.set(*e, meta(3, VotedFor::server("s", "n1")));
  auto v1 = t.read_vote("a", name);
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(v1->form, VotedFor::Form::server_id);
  EXPECT_EQ(std::string_view(name, v1->name_len), "s");
  EXPECT_EQ(t.node_name(v1->node), "n1");
  EXPECT_NE(v1->version, v0->version);
  // Without a buffer: the same vote, the name's length only.
  auto v1b = t.read_vote("a", nullptr);
  ASSERT_TRUE(v1b.has_value());
  EXPECT_EQ(v1b->version, v1->version);
  EXPECT_EQ(v1b->name_len, 1u);
  // Term and applied index change, the vote does not: same version.
  t.set(*e, meta(4, VotedFor::server("s", "n1")));
  t.set_last_applied(*e, 99);
  EXPECT_EQ(t.read_vote("a", name)->version, v1->version);
  // Same name, another form; then cleared; then the first vote again: a
  // new version each time.
  std::set<uint64_t> seen{v0->version, v1->version};
  for (const VotedFor& v : {VotedFor::bare("s"), VotedFor::none(), VotedFor::server("s", "n1")}) {
    t.set(*e, meta(4, v));
    auto r = t.read_vote("a", name);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->form, v.form);
    EXPECT_TRUE(seen.insert(r->version).second) << "version reused";
  }
  // A new server in the same entry: a version never seen either.
  t.remove(*e);
  EXPECT_FALSE(t.read_vote("a", name).has_value());
  auto e2 = t.insert("b");
  ASSERT_EQ(e2, e);
  auto vb = t.read_vote("b", name);
  ASSERT_TRUE(vb.has_value());
  EXPECT_EQ(vb->form, VotedFor::Form::none);
  EXPECT_TRUE(seen.insert(vb->version).second) << "version reused by a new server";
}

TEST(ServerTable, CapacityAndNodeTableAreBounded) {
  ServerTable t(3, Bounds{}, 2);
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(t.insert(id).has_value());
  EXPECT_FALSE(t.insert("d").has_value());
  t.remove(*t.find("b"));
  auto e = t.insert("d");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(*t.read("d"), ServerMeta{});  // the reused entry starts empty
  EXPECT_TRUE(t.intern_node("n1"));
  EXPECT_TRUE(t.intern_node("n2"));
  EXPECT_TRUE(t.intern_node("n1"));  // known: no room needed
  EXPECT_FALSE(t.intern_node("n3"));
  EXPECT_EQ(t.nodes(), 2u);
}

// Random inserts, removes and updates against a std::map; every id is
// looked up after every step (removals shift colliding entries back).
TEST(ServerTable, MatchesAModelUnderRandomOperations) {
  const uint64_t seed = test::test_seed(7);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rng(seed);
  const uint32_t cap = 24;
  ServerTable t(cap, Bounds{12, 20, 8}, 8);
  for (int n = 0; n < 8; ++n) ASSERT_TRUE(t.intern_node("node" + std::to_string(n)));
  std::map<std::string, ServerMeta> model;
  for (int step = 0; step < test::scaled(20000); ++step) {
    const std::string id = "id" + std::to_string(rng.uniform(40));
    auto e = t.find(id);
    ASSERT_EQ(e.has_value(), model.count(id) == 1) << id;
    const uint64_t what = rng.uniform(10);
    if (what < 3 && e) {
      t.remove(*e);
      model.erase(id);
    } else if (!e) {
      e = t.insert(id);
      ASSERT_EQ(e.has_value(), model.size() < cap);
      if (e) model[id] = ServerMeta{};
    } else {
      VotedFor v;
      const uint64_t k = rng.uniform(1000);
      if (k % 3 == 1) v = VotedFor::bare(std::string(size_t(k % 21), 'x'));
      if (k % 3 == 2) v = VotedFor::server("s" + std::to_string(k), "node" + std::to_string(k % 8));
      ServerMeta m = meta(k, v);
      if (k % 5 == 0) m.last_applied.reset();
      t.set(*e, m);
      model[id] = m;
    }
    for (int i = 0; i < 40; ++i) {
      const std::string q = "id" + std::to_string(i);
      auto got = t.read(q);
      auto it = model.find(q);
      ASSERT_EQ(got.has_value(), it != model.end()) << q << " at step " << step;
      if (got) {
        ASSERT_EQ(*got, it->second) << q;
      }
    }
    ASSERT_EQ(t.size(), model.size());
  }
  size_t visited = 0;
  t.for_each([&](BytesView id, const ServerMeta& m) {
    ++visited;
    EXPECT_EQ(model.at(std::string(id)), m);
  });
  EXPECT_EQ(visited, model.size());
}

// One writer keeps updating "stable" servers (term == applied == k, vote
// name "v<k>") while adding and removing "churn" servers that collide with
// them in the index; readers must always find every stable server, with
// the three fields from the same update.
TEST(ServerTable, ReadersNeverSeeTornEntriesOrMissPresentServers) {
  const uint32_t cap = 64;
  ServerTable t(cap, Bounds{16, 64, 16}, 4);
  ASSERT_TRUE(t.intern_node("n"));
  std::vector<uint32_t> stable;
  for (int i = 0; i < 16; ++i) {
    auto e = t.insert("stable" + std::to_string(i));
    ASSERT_TRUE(e.has_value());
    t.set(*e, meta(0, VotedFor::server("v0", "n")));
    stable.push_back(*e);
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      Random rng(100 + r);
      while (!stop.load()) {
        const std::string id = "stable" + std::to_string(rng.uniform(16));
        auto m = t.read(id);
        if (!m || m->current_term != m->last_applied ||
            m->voted_for.name != "v" + std::to_string(*m->current_term) ||
            m->voted_for.node != "n") {
          ++bad;
        }
        ++reads;
      }
    });
  }
  Random rng(test::test_seed(11));
  std::vector<uint32_t> churn;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
  for (uint64_t k = 1; std::chrono::steady_clock::now() < end; ++k) {
    t.set(stable[rng.uniform(stable.size())],
          meta(k, VotedFor::server("v" + std::to_string(k), "n")));
    if (rng.chance(1, 2) && !churn.empty()) {
      size_t i = rng.uniform(churn.size());
      t.remove(churn[i]);
      churn.erase(churn.begin() + long(i));
    } else if (auto e = t.insert("churn" + std::to_string(k))) {
      churn.push_back(*e);
    }
  }
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 1000u);
}

}  // namespace
}  // namespace strata::raftmeta
