// The catalog contract (catalog/catalog.h), one suite run against every
// backend: the embedded one on a real directory and the in-memory one (in
// catalog_test), and the etcd one on a real 3-member cluster (the same file
// compiled into catalog_etcd_test with CATALOG_CONTRACT_ETCD).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "catalog/embedded_catalog.h"
#include "catalog/memory_catalog.h"
#ifdef CATALOG_CONTRACT_ETCD
#include "etcd_contract_backend.h"
#endif
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::catalog {
namespace {

struct Backend {
  const char* name;
  std::function<std::unique_ptr<Catalog>(const std::string& dir)> open;
  // Revisions grow by exactly one per change of any entry of the backend
  // (embedded, memory); etcd's are global, so only per-entry order holds
  // when several entries change at once.
  bool consecutive_revisions = true;
};

#ifdef CATALOG_CONTRACT_ETCD
const Backend kBackends[] = {
    {"etcd", [](const std::string&) { return test::open_etcd_contract_catalog(); }, false},
};
#else
const Backend kBackends[] = {
    {"embedded",
     [](const std::string& dir) -> std::unique_ptr<Catalog> {
       EmbeddedCatalogOptions o;
       o.capacity = 64;
       o.wal_bytes = 64 * 1024;
       auto c = EmbeddedCatalog::open(posix_fs(), dir, o);
       EXPECT_TRUE(c.ok()) << c.error().to_string();
       return c.ok() ? std::move(c).value() : nullptr;
     }},
    {"memory",
     [](const std::string&) -> std::unique_ptr<Catalog> {
       return std::make_unique<MemoryCatalog>();
     }},
};
#endif

class CatalogContract : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    catalog_ = GetParam().open(dir_.sub("node"));
    ASSERT_NE(catalog_, nullptr);
  }
  Catalog& c() { return *catalog_; }
  // Creates `stream` at epoch 1 and persists one root; returns the entry.
  StreamEntry persisted(const std::string& stream) {
    auto e = c().create(stream, 1);
    EXPECT_TRUE(e.ok()) << e.error().to_string();
    auto r = c().put(stream, stream + "/meta/root.1.00000001", 1, e->revision);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    auto g = c().get(stream);
    EXPECT_TRUE(g.ok());
    return *g;
  }

  test::TempDir dir_;
  std::unique_ptr<Catalog> catalog_;
};

PutResult ok(uint64_t revision, uint64_t epoch) {
  return PutResult{PutOutcome::ok, revision, epoch};
}
PutResult conflict(uint64_t revision, uint64_t epoch) {
  return PutResult{PutOutcome::conflict, revision, epoch};
}
PutResult fenced(uint64_t revision, uint64_t epoch) {
  return PutResult{PutOutcome::fenced, revision, epoch};
}
const PutResult kNotFound{PutOutcome::not_found, 0, 0};

TEST_P(CatalogContract, CreateMakesAnEntryWithoutRootAtARevisionAboveZero) {
  auto e = c().create("orders", 3);
  ASSERT_OK(e);
  EXPECT_EQ(e->stream, "orders");
  EXPECT_EQ(e->epoch, 3u);
  EXPECT_EQ(e->root_key, "");
  EXPECT_GT(e->revision, 0u);
  auto g = c().get("orders");
  ASSERT_OK(g);
  EXPECT_EQ(*g, *e);
}

TEST_P(CatalogContract, CreateOfAnExistingStreamIsAlreadyExistsAndChangesNothing) {
  StreamEntry before = persisted("orders");
  auto again = c().create("orders", 9);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.code(), Errc::already_exists);
  EXPECT_NE(again.error().message.find("orders"), std::string::npos) << again.error().message;
  EXPECT_EQ(*c().get("orders"), before);
}

TEST_P(CatalogContract, GetOfAMissingStreamIsNotFoundNamingIt) {
  auto g = c().get("nope");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.code(), Errc::not_found);
  EXPECT_NE(g.error().message.find("\"nope\""), std::string::npos) << g.error().message;
}

TEST_P(CatalogContract, ListHoldsEveryEntryOrderedByName) {
  ASSERT_OK(c().list());
  EXPECT_TRUE(c().list()->empty());
  for (const char* s : {"m", "b", "z", "a", "b2"}) ASSERT_OK(c().create(s, 1));
  StreamEntry z = persisted("zz");
  auto l = c().list();
  ASSERT_OK(l);
  std::vector<std::string> names;
  for (const auto& e : *l) names.push_back(e.stream);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "b2", "m", "z", "zz"}));
  EXPECT_EQ(l->back(), z);
}

TEST_P(CatalogContract, PutWithTheStoredRevisionStoresTheRootAndBumpsTheRevisionByOne) {
  auto e = c().create("s", 1);
  ASSERT_OK(e);
  auto r = c().put("s", "k/meta/root.1.0000000a", 1, e->revision);
  ASSERT_OK(r);
  EXPECT_EQ(*r, ok(e->revision + 1, 1));
  r = c().put("s", "k/meta/root.1.0000000b", 1, e->revision + 1);
  ASSERT_OK(r);
  EXPECT_EQ(*r, ok(e->revision + 2, 1));
  EXPECT_EQ(*c().get("s"), (StreamEntry{"s", 1, "k/meta/root.1.0000000b", e->revision + 2}));
}

TEST_P(CatalogContract, PutWithAStaleRevisionIsConflictAndChangesNothing) {
  StreamEntry e = persisted("s");
  auto r = c().put("s", "other", 1, e.revision - 1);
  ASSERT_OK(r);
  EXPECT_EQ(*r, conflict(e.revision, 1));
  r = c().put("s", "other", 1, e.revision + 1);
  ASSERT_OK(r);
  EXPECT_EQ(*r, conflict(e.revision, 1));
  EXPECT_EQ(*c().get("s"), e);
}

TEST_P(CatalogContract, PutOnAMissingStreamIsNotFound) {
  auto r = c().put("gone", "root", 1, 5);
  ASSERT_OK(r);
  EXPECT_EQ(*r, kNotFound);
  EXPECT_EQ(c().get("gone").code(), Errc::not_found);
}

TEST_P(CatalogContract, PutFromALowerEpochIsFencedBeforeTheRevisionIsCompared) {
  auto e = c().create("s", 5);
  ASSERT_OK(e);
  auto r = c().put("s", "root", 4, e->revision);
  ASSERT_OK(r);
  EXPECT_EQ(*r, fenced(e->revision, 5));
  // A stale revision too: still fenced (the order of the contract).
  r = c().put("s", "root", 4, e->revision + 7);
  ASSERT_OK(r);
  EXPECT_EQ(*r, fenced(e->revision, 5));
  EXPECT_EQ(*c().get("s"), *e);
}

TEST_P(CatalogContract, PutFromAHigherEpochIsAcceptedAndRaisesTheEpoch) {
  StreamEntry e = persisted("s");
  auto r = c().put("s", "root2", 7, e.revision);
  ASSERT_OK(r);
  EXPECT_EQ(*r, ok(e.revision + 1, 7));
  // The old epoch is fenced from now on.
  r = c().put("s", "root3", 1, e.revision + 1);
  ASSERT_OK(r);
  EXPECT_EQ(*r, fenced(e.revision + 1, 7));
}

TEST_P(CatalogContract, PutAtRevisionZeroCreatesIfAbsentAndConflictsIfPresent) {
  auto r = c().put("s", "root.a", 2, 0);
  ASSERT_OK(r);
  ASSERT_EQ(r->outcome, PutOutcome::ok);
  EXPECT_GT(r->revision, 0u);
  EXPECT_EQ(r->epoch, 2u);
  EXPECT_EQ(*c().get("s"), (StreamEntry{"s", 2, "root.a", r->revision}));
  auto again = c().put("s", "root.b", 3, 0);
  ASSERT_OK(again);
  EXPECT_EQ(*again, conflict(r->revision, 2));
  EXPECT_EQ(c().get("s")->root_key, "root.a");
}

TEST_P(CatalogContract, BumpEpochThenAPutFromTheOldEpochIsFenced) {
  StreamEntry e = persisted("s");
  auto b = c().bump_epoch("s", e.revision, 0);
  ASSERT_OK(b);
  EXPECT_EQ(*b, ok(e.revision + 1, 2));
  // The root is kept.
  EXPECT_EQ(*c().get("s"), (StreamEntry{"s", 2, e.root_key, e.revision + 1}));
  // The deposed writer, even with the current revision, is fenced.
  auto old = c().put("s", "late-root", 1, e.revision + 1);
  ASSERT_OK(old);
  EXPECT_EQ(*old, fenced(e.revision + 1, 2));
  // The new owner persists.
  auto now = c().put("s", "new-root", 2, e.revision + 1);
  ASSERT_OK(now);
  EXPECT_EQ(*now, ok(e.revision + 2, 2));
}

TEST_P(CatalogContract, BumpEpochTakesTheHigherOfStoredPlusOneAndMinEpoch) {
  auto e = c().create("s", 3);
  ASSERT_OK(e);
  auto b = c().bump_epoch("s", e->revision, 10);
  ASSERT_OK(b);
  EXPECT_EQ(*b, ok(e->revision + 1, 10));
  b = c().bump_epoch("s", e->revision + 1, 4);
  ASSERT_OK(b);
  EXPECT_EQ(*b, ok(e->revision + 2, 11));
}

TEST_P(CatalogContract, BumpEpochWithAStaleRevisionIsConflictAndOnAMissingStreamNotFound) {
  StreamEntry e = persisted("s");
  auto b = c().bump_epoch("s", e.revision - 1, 0);
  ASSERT_OK(b);
  EXPECT_EQ(*b, conflict(e.revision, 1));
  EXPECT_EQ(*c().get("s"), e);
  b = c().bump_epoch("missing", 1, 0);
  ASSERT_OK(b);
  EXPECT_EQ(*b, kNotFound);
}

TEST_P(CatalogContract, RemoveNeedsTheStoredRevision) {
  StreamEntry e = persisted("s");
  auto r = c().remove("s", e.revision - 1);
  ASSERT_OK(r);
  EXPECT_EQ(*r, conflict(e.revision, 1));
  EXPECT_EQ(*c().get("s"), e);
  r = c().remove("s", e.revision);
  ASSERT_OK(r);
  EXPECT_EQ(*r, ok(0, 0));
  EXPECT_EQ(c().get("s").code(), Errc::not_found);
  EXPECT_TRUE(c().list()->empty());
  r = c().remove("s", e.revision);
  ASSERT_OK(r);
  EXPECT_EQ(*r, kNotFound);
  // A persist of the deleted stream finds it gone.
  auto p = c().put("s", "root", 1, e.revision);
  ASSERT_OK(p);
  EXPECT_EQ(*p, kNotFound);
}

TEST_P(CatalogContract, AStreamCreatedAgainNeverRepeatsARevisionItHad) {
  StreamEntry e = persisted("s");
  ASSERT_OK(c().put("s", "r2", 1, e.revision));
  ASSERT_OK(c().remove("s", e.revision + 1));
  auto again = c().create("s", 1);
  ASSERT_OK(again);
  EXPECT_GT(again->revision, e.revision + 1);
  // A writer of the old incarnation holding an old revision gets conflict.
  for (uint64_t rev = 1; rev <= e.revision + 1; ++rev) {
    auto p = c().put("s", "stale", 1, rev);
    ASSERT_OK(p);
    EXPECT_EQ(p->outcome, PutOutcome::conflict) << rev;
  }
  // The same for create-if-absent.
  ASSERT_OK(c().remove("s", again->revision));
  auto p = c().put("s", "root", 1, 0);
  ASSERT_OK(p);
  EXPECT_GT(p->revision, again->revision);
}

TEST_P(CatalogContract, ConcurrentCompareAndSetHasExactlyOneWinnerPerRevision) {
  auto e = c().create("hot", 1);
  ASSERT_OK(e);
  const int threads = 8;
  const int target = test::scaled(120);
  std::atomic<int> wins{0};
  std::vector<std::vector<uint64_t>> won(threads);
  std::vector<std::thread> ts;
  std::atomic<bool> failed{false};
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      while (wins.load() < target && !failed.load()) {
        auto cur = c().get("hot");
        if (!cur.ok()) {
          failed = true;
          return;
        }
        auto r = c().put("hot", "root.t" + std::to_string(t), 1, cur->revision);
        if (!r.ok()) {
          failed = true;
          return;
        }
        if (r->outcome == PutOutcome::ok) {
          won[size_t(t)].push_back(r->revision);
          wins.fetch_add(1);
        } else if (r->outcome != PutOutcome::conflict || r->revision <= cur->revision) {
          failed = true;  // a loser must see a newer revision
          return;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  ASSERT_FALSE(failed.load());
  std::set<uint64_t> all;
  size_t total = 0;
  for (const auto& w : won) {
    total += w.size();
    all.insert(w.begin(), w.end());
  }
  // Every revision from the first to the last was won exactly once.
  EXPECT_EQ(all.size(), total);
  auto final_entry = c().get("hot");
  ASSERT_OK(final_entry);
  EXPECT_EQ(final_entry->revision, e->revision + total);
  EXPECT_EQ(*all.begin(), e->revision + 1);
  EXPECT_EQ(*all.rbegin(), final_entry->revision);
}

TEST_P(CatalogContract, ConcurrentWritersOfDifferentStreamsDoNotDisturbEachOther) {
  const int threads = 6;
  const int puts = test::scaled(40);
  std::vector<std::thread> ts;
  std::atomic<int> errors{0};
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      const std::string s = "stream-" + std::to_string(t);
      auto e = c().create(s, 1);
      if (!e.ok()) {
        ++errors;
        return;
      }
      uint64_t rev = e->revision;
      for (int i = 0; i < puts; ++i) {
        auto r = c().put(s, s + "/root." + std::to_string(i), 1, rev);
        if (!r.ok() || r->outcome != PutOutcome::ok) {
          ++errors;
          return;
        }
        const bool next =
            GetParam().consecutive_revisions ? r->revision == rev + 1 : r->revision > rev;
        if (!next) {
          ++errors;
          return;
        }
        rev = r->revision;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors.load(), 0);
  auto l = c().list();
  ASSERT_OK(l);
  ASSERT_EQ(l->size(), size_t(threads));
  for (const auto& e : *l) {
    EXPECT_EQ(e.root_key, e.stream + "/root." + std::to_string(puts - 1));
  }
}

TEST_P(CatalogContract, BadStreamNamesAreInvalidArgumentNamingTheStreamAndTheRule) {
  const std::string long_name(256, 'a');
  struct Case {
    std::string name;
    std::string expect;  // in the message
  };
  const Case cases[] = {
      {"", "empty"},
      {long_name, "256 bytes; the limit is 255"},
      {"amq.s", "starts with \"amq.\""},
      {std::string("x\0y", 3), "\"x\\x00y\" has a NUL byte (0x00) at position 1"},
      {"caf\xc3", "not valid UTF-8: byte 0xc3 at position 3"},
      // A line feed only ever separates a vhost from a name
      // (common/stream_name.h): a client's name holding one, a second one,
      // the vhost "/" or an empty vhost are refused.
      {"\na\nb", "line feed (0x0a) at position 1"},
      {"v\na\nb", "line feed (0x0a) at position 1"},
      {"/\nb", "qualifies a name with the vhost \"/\""},
      {"\nb", "has an empty vhost"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.expect);
    std::vector<Error> errs;
    auto create = c().create(k.name, 1);
    ASSERT_FALSE(create.ok());
    errs.push_back(create.error());
    auto get = c().get(k.name);
    ASSERT_FALSE(get.ok());
    errs.push_back(get.error());
    auto put = c().put(k.name, "root", 1, 0);
    ASSERT_FALSE(put.ok());
    errs.push_back(put.error());
    auto bump = c().bump_epoch(k.name, 1, 0);
    ASSERT_FALSE(bump.ok());
    errs.push_back(bump.error());
    auto rm = c().remove(k.name, 1);
    ASSERT_FALSE(rm.ok());
    errs.push_back(rm.error());
    for (const Error& e : errs) {
      EXPECT_EQ(e.code, Errc::invalid_argument);
      EXPECT_NE(e.message.find(k.expect), std::string::npos) << e.message;
    }
  }
  // The longest allowed name and names as RabbitMQ allows them work,
  // including one named like the embedded backend's own record.
  const std::vector<std::string> good = {
      std::string(255, 'z'),         "AZaz09._~-",     "a/b", ".", "..",
      "orders 2026/Q1 \xe2\x82\xac", "/revision_floor"};
  for (const auto& g : good) ASSERT_OK(c().create(g, 1));
  auto l = c().list();
  ASSERT_OK(l);
  std::vector<std::string> names;
  for (const auto& e : *l) names.push_back(e.stream);
  std::vector<std::string> want = good;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names, want);
  for (const auto& g : good) EXPECT_EQ(c().get(g)->stream, g);
}

TEST_P(CatalogContract, RootKeysLongerThanTheBackendStoresAreRefusedNamingTheLimit) {
  auto e = c().create("s", 1);
  ASSERT_OK(e);
  const std::string longest(kMaxRootKeyBytes, 'r');
  auto r = c().put("s", longest, 1, e->revision);
  ASSERT_OK(r);
  EXPECT_EQ(r->outcome, PutOutcome::ok);
  EXPECT_EQ(c().get("s")->root_key, longest);
  auto too_long = c().put("s", longest + "r", 1, r->revision);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.code(), Errc::invalid_argument);
  EXPECT_NE(too_long.error().message.find("513 bytes"), std::string::npos)
      << too_long.error().message;
  EXPECT_NE(too_long.error().message.find("at most 512"), std::string::npos)
      << too_long.error().message;
  EXPECT_EQ(c().get("s")->revision, r->revision);
}

TEST_P(CatalogContract, EpochZeroAndAnEmptyRootKeyAreInvalidArguments) {
  auto create = c().create("s", 0);
  EXPECT_EQ(create.code(), Errc::invalid_argument);
  EXPECT_NE(create.error().message.find("epoch 0"), std::string::npos);
  ASSERT_OK(c().create("s", 1));
  auto put = c().put("s", "root", 0, 1);
  EXPECT_EQ(put.code(), Errc::invalid_argument);
  auto empty = c().put("s", "", 1, 1);
  EXPECT_EQ(empty.code(), Errc::invalid_argument);
  EXPECT_NE(empty.error().message.find("root key is empty"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, CatalogContract, ::testing::ValuesIn(kBackends),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                           return std::string(p.param.name);
                         });

}  // namespace
}  // namespace strata::catalog
