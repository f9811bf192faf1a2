// The etcd catalog beyond the contract suite: racing clients, a member
// killed (-9) or frozen (SIGSTOP) during a stream of operations, every
// member restarted, the watch across a member kill, and entries that are
// not what the catalog writes. Fault tests start their own cluster.
#include "catalog/etcd_catalog.h"

#include <gtest/gtest.h>

#include <barrier>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "etcd_contract_backend.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::catalog {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EtcdCatalog> open_catalog(const std::vector<std::string>& endpoints,
                                          const std::string& ns,
                                          std::chrono::milliseconds request = 5000ms,
                                          std::chrono::milliseconds attempt = 1000ms) {
  etcd::ClientOptions o;
  o.endpoints = endpoints;
  o.request_timeout = request;
  o.attempt_timeout = attempt;
  auto client = etcd::EtcdClient::open(o);
  EXPECT_TRUE(client.ok()) << client.error().to_string();
  if (!client.ok()) return nullptr;
  auto c = EtcdCatalog::open(std::shared_ptr<etcd::EtcdClient>(std::move(client).value()), {ns});
  EXPECT_TRUE(c.ok()) << c.error().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

struct OwnCluster {
  test::TempDir dir;
  std::unique_ptr<test::EtcdCluster> cluster;
  std::string error;
  OwnCluster() { cluster = test::EtcdCluster::start(dir.path(), 3, &error); }
};

TEST(EtcdCatalog, TwoClientsRacingForOneRevisionHaveExactlyOneWinner) {
  auto* cluster = test::shared_etcd_cluster();
  ASSERT_NE(cluster, nullptr);
  const std::string ns = test::fresh_namespace();
  auto a = open_catalog(cluster->endpoints(), ns);
  // The other client lists the members in another order.
  auto eps = cluster->endpoints();
  std::reverse(eps.begin(), eps.end());
  auto b = open_catalog(eps, ns);
  ASSERT_TRUE(a && b);
  auto e = a->create("race", 1);
  ASSERT_OK(e);
  uint64_t rev = e->revision;
  for (int round = 0; round < test::scaled(20); ++round) {
    std::barrier start(2);
    Result<PutResult> ra = Error(Errc::internal, "not run"), rb = ra;
    std::thread ta([&] {
      start.arrive_and_wait();
      ra = a->put("race", "a." + std::to_string(round), 1, rev);
    });
    std::thread tb([&] {
      start.arrive_and_wait();
      rb = b->put("race", "b." + std::to_string(round), 1, rev);
    });
    ta.join();
    tb.join();
    ASSERT_OK(ra);
    ASSERT_OK(rb);
    ASSERT_NE(ra->outcome == PutOutcome::ok, rb->outcome == PutOutcome::ok) << round;
    const PutResult& win = ra->outcome == PutOutcome::ok ? *ra : *rb;
    const PutResult& lose = ra->outcome == PutOutcome::ok ? *rb : *ra;
    EXPECT_EQ(lose.outcome, PutOutcome::conflict);
    EXPECT_EQ(lose.revision, win.revision);
    auto g = a->get("race");
    ASSERT_OK(g);
    EXPECT_EQ(g->revision, win.revision);
    EXPECT_EQ(g->root_key[0], ra->outcome == PutOutcome::ok ? 'a' : 'b');
    rev = win.revision;
  }
}

TEST(EtcdCatalog, AnEntryThatIsNotWhatTheCatalogWritesIsCorruptNamingTheKey) {
  auto client = test::shared_etcd_client();
  ASSERT_NE(client, nullptr);
  const std::string ns = test::fresh_namespace();
  auto c = EtcdCatalog::open(client, {ns});
  ASSERT_OK(c);
  ASSERT_OK(client->put(ns + "/streams/bad", "{\"epoch\":\"x\"}"));
  auto g = (*c)->get("bad");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.code(), Errc::corrupt);
  EXPECT_NE(g.error().message.find(ns + "/streams/bad"), std::string::npos) << g.error().message;
  EXPECT_EQ((*c)->list().code(), Errc::corrupt);
  // A put on it fails cleanly too, and leaves it as it was.
  auto p = (*c)->put("bad", "root", 1, 1);
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(client->range(ns + "/streams/bad")->kvs[0].value, "{\"epoch\":\"x\"}");
}

// The race cluster ownership closes (docs/ARCHITECTURE.md, "Stream
// ownership"): node a's takeover, in flight across the end of its lease,
// bumps after node b has taken the stream over. Guarded by a's owner key it
// cannot; unguarded it would fence b.
TEST(EtcdCatalog, ATakeoverGuardedByTheOwnerKeyCannotBumpOnceTheKeyIsAnotherNodes) {
  auto client = test::shared_etcd_client();
  ASSERT_NE(client, nullptr);
  const std::string ns = test::fresh_namespace();
  auto c = EtcdCatalog::open(client, {ns});
  ASSERT_OK(c);
  EtcdCatalog& cat = **c;
  const std::string s = "owned";
  const std::string key = ns + "/owners/" + s;
  ASSERT_OK(cat.create(s, 1));
  auto la = client->lease_grant(60);
  auto lb = client->lease_grant(60);
  ASSERT_OK(la);
  ASSERT_OK(lb);
  const OwnerCondition a{key, "a", la->id}, b{key, "b", lb->id};

  // No owner key: nobody may bump under a condition.
  auto e = cat.get(s);
  ASSERT_OK(e);
  auto r = cat.bump_epoch_if_owner(s, e->revision, 0, a);
  ASSERT_OK(r);
  EXPECT_EQ(r->outcome, PutOutcome::fenced);
  EXPECT_EQ(r->epoch, 1u);
  EXPECT_EQ(r->revision, e->revision);

  // a owns: its takeover applies.
  ASSERT_OK(client->put(key, "a", la->id));
  r = cat.bump_epoch_if_owner(s, e->revision, 0, a);
  ASSERT_OK(r);
  ASSERT_EQ(r->outcome, PutOutcome::ok);
  EXPECT_EQ(r->epoch, 2u);

  // a's lease ends (its key goes with it); b acquires and takes over.
  ASSERT_OK(client->lease_revoke(la->id));
  ASSERT_OK(client->put(key, "b", lb->id));
  e = cat.get(s);
  ASSERT_OK(e);
  r = cat.bump_epoch_if_owner(s, e->revision, 0, b);
  ASSERT_OK(r);
  ASSERT_EQ(r->outcome, PutOutcome::ok);
  EXPECT_EQ(r->epoch, 3u);
  const uint64_t b_revision = r->revision;

  // a's late takeover, at the revision it reads now: fenced, nothing written.
  r = cat.bump_epoch_if_owner(s, b_revision, 0, a);
  ASSERT_OK(r);
  EXPECT_EQ(r->outcome, PutOutcome::fenced);
  EXPECT_EQ(r->epoch, 3u);
  EXPECT_EQ(r->revision, b_revision);
  // The same node id on a lease that is not the key's is not the owner either.
  r = cat.bump_epoch_if_owner(s, b_revision, 0, OwnerCondition{key, "b", la->id});
  ASSERT_OK(r);
  EXPECT_EQ(r->outcome, PutOutcome::fenced);
  e = cat.get(s);
  ASSERT_OK(e);
  EXPECT_EQ(e->epoch, 3u);
  EXPECT_EQ(e->revision, b_revision);
  // Unguarded, the same late bump would have fenced b (the gap closed above).
  r = cat.bump_epoch(s, b_revision, 0);
  ASSERT_OK(r);
  EXPECT_EQ(r->outcome, PutOutcome::ok);
  EXPECT_EQ(r->epoch, 4u);
  // A removed entry is not_found first.
  ASSERT_OK(cat.remove(s, r->revision));
  r = cat.bump_epoch_if_owner(s, b_revision, 0, b);
  ASSERT_OK(r);
  EXPECT_EQ(r->outcome, PutOutcome::not_found);
  ASSERT_OK(client->lease_revoke(lb->id));
}

TEST(EtcdCatalog, BadNamespacesAreRefusedNamingTheSetting) {
  for (const char* ns : {"", "/a", "a/", "a b", "ü"}) {
    auto s = validate_namespace(ns);
    ASSERT_FALSE(s.ok()) << ns;
    EXPECT_EQ(s.code(), Errc::invalid_argument);
    EXPECT_NE(s.error().message.find("catalog.namespace"), std::string::npos);
  }
  EXPECT_OK(validate_namespace("prod/strata-1"));
}

// A writer persisting roots one after another, as an uploader does; an
// operation that fails re-reads the entry and goes on from what is stored.
struct Writer {
  Writer(Catalog& cat, std::string s, uint64_t r) : c(cat), stream(std::move(s)), rev(r) {}
  Catalog& c;
  std::string stream;
  uint64_t epoch = 1;
  uint64_t rev = 0;
  int next = 0;
  int acked = -1;  // the index of the last root acknowledged with ok
  int failures = 0;
  std::vector<uint64_t> acked_revisions;

  ::testing::AssertionResult step() {
    const std::string root = "root." + std::to_string(next);
    auto r = c.put(stream, root, epoch, rev);
    if (r.ok()) {
      if (r->outcome != PutOutcome::ok) {
        return ::testing::AssertionFailure() << "put " << root << ": " << outcome_name(r->outcome);
      }
      rev = r->revision;
      acked = next++;
      acked_revisions.push_back(rev);
      return ::testing::AssertionSuccess();
    }
    // A clean failure: an error naming what happened, never a wrong outcome.
    ++failures;
    if (r.code() != Errc::unavailable && r.code() != Errc::transient) {
      return ::testing::AssertionFailure() << "unexpected error: " << r.error().to_string();
    }
    auto g = c.get(stream);
    if (g.ok()) {
      rev = g->revision;
      if (g->root_key == root) acked = next++;  // it was applied after all
    }
    return ::testing::AssertionSuccess();
  }
};

TEST(EtcdCatalogFaults, KillingMembersAndRestartingEveryMemberLosesNoAcknowledgedWrite) {
  OwnCluster own;
  ASSERT_NE(own.cluster, nullptr) << own.error;
  auto& cluster = *own.cluster;
  auto c = open_catalog(cluster.endpoints(), "strata", 4000ms, 800ms);
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_OK(c->create("s" + std::to_string(i), 1));
  auto e = c->create("hot", 1);
  ASSERT_OK(e);
  Writer w(*c, "hot", e->revision);
  const int n = test::scaled(30);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(w.step());
  // Kill -9 the member the client prefers (the first), mid-stream.
  cluster.kill(0);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(w.step());
  ASSERT_GE(w.acked, n);  // two members left: progress, not just clean failures
  std::string err;
  ASSERT_TRUE(cluster.restart(0, &err)) << err;
  auto before = c->list();
  ASSERT_OK(before);
  EXPECT_EQ(before->size(), 6u);
  EXPECT_EQ(c->get("hot")->root_key, "root." + std::to_string(w.acked));
  // Every member down at once, then back on its data.
  for (int i = 0; i < 3; ++i) cluster.kill(i);
  // A lone member is not healthy until a quorum is back: start all, then wait.
  for (int i = 0; i < 3; ++i) cluster.relaunch(i);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cluster.wait_healthy(i, 20s)) << cluster.logs(i);
  auto after = c->list();
  ASSERT_OK(after);
  EXPECT_EQ(*after, *before);
  ASSERT_TRUE(w.step());
  EXPECT_EQ(c->get("hot")->root_key, "root." + std::to_string(w.acked));
}

TEST(EtcdCatalogFaults, WithAFrozenMemberCallsFinishWithinTheirDeadlineThroughTheOthers) {
  OwnCluster own;
  ASSERT_NE(own.cluster, nullptr) << own.error;
  auto& cluster = *own.cluster;
  const auto deadline = 3000ms;
  auto c = open_catalog(cluster.endpoints(), "strata", deadline, 500ms);
  ASSERT_NE(c, nullptr);
  auto e = c->create("s", 1);
  ASSERT_OK(e);
  cluster.freeze(0);
  uint64_t rev = e->revision;
  int ok = 0;
  for (int i = 0; i < test::scaled(10); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c->put("s", "root." + std::to_string(i), 1, rev);
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, deadline + 500ms) << i;
    if (r.ok()) {
      ASSERT_EQ(r->outcome, PutOutcome::ok) << outcome_name(r->outcome);
      rev = r->revision;
      ++ok;
    } else {
      // Only while the frozen member was the leader and a new one was elected.
      EXPECT_EQ(r.code(), Errc::unavailable) << r.error().to_string();
      auto g = c->get("s");
      if (g.ok()) rev = g->revision;
    }
  }
  cluster.thaw(0);
  EXPECT_GE(ok, test::scaled(10) - 1);
  EXPECT_OK(c->get("s"));
}

TEST(EtcdCatalogFaults, TheWatchDeliversEveryChangeInOrderAcrossAMemberKill) {
  OwnCluster own;
  ASSERT_NE(own.cluster, nullptr) << own.error;
  auto& cluster = *own.cluster;
  auto c = open_catalog(cluster.endpoints(), "strata", 4000ms, 800ms);
  ASSERT_NE(c, nullptr);
  auto e = c->create("w", 1);
  ASSERT_OK(e);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<CatalogChange> seen;
  std::optional<Error> failed;
  auto handle = c->watch(
      e->revision,
      [&](const CatalogChange& ch) {
        std::lock_guard l(mu);
        seen.push_back(ch);
        cv.notify_all();
      },
      [&](const Error& err) {
        std::lock_guard l(mu);
        failed = err;
        cv.notify_all();
      });
  Writer w(*c, "w", e->revision);
  const int n = test::scaled(20);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(w.step());
  // The watch streams from the first member; kill it.
  cluster.kill(0);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(w.step());
  ASSERT_OK(c->remove("w", w.rev));
  auto last = c->get("w");
  EXPECT_EQ(last.code(), Errc::not_found);
  std::unique_lock l(mu);
  ASSERT_TRUE(cv.wait_for(l, 20s,
                          [&] {
                            return failed || (!seen.empty() &&
                                              seen.back().kind == CatalogChange::Kind::removed);
                          }))
      << "changes seen: " << seen.size();
  ASSERT_FALSE(failed) << failed->to_string();
  // Strictly increasing revisions, and every acknowledged one among them.
  std::map<uint64_t, std::string> by_rev;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (i > 0) {
      ASSERT_GT(seen[i].entry.revision, seen[i - 1].entry.revision);
    }
    EXPECT_EQ(seen[i].entry.stream, "w");
    by_rev[seen[i].entry.revision] = seen[i].entry.root_key;
  }
  EXPECT_EQ(seen.front().entry.revision, e->revision);
  for (uint64_t r : w.acked_revisions) EXPECT_TRUE(by_rev.count(r)) << r;
}

}  // namespace
}  // namespace strata::catalog
