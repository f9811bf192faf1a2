// EtcdClient against a real 3-member etcd cluster (started once for the
// suite; each test under its own key prefix) and against a fake server that
// misbehaves.
#include "etcd/etcd_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "fake_http.h"
#include "support/assertions.h"
#include "support/etcd_cluster.h"
#include "support/temp_dir.h"

namespace strata::etcd {
namespace {

using namespace std::chrono_literals;

class EtcdClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    std::string err;
    cluster_ = test::EtcdCluster::start(dir_->path(), 3, &err).release();
    if (!cluster_) start_error_ = new std::string(err);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
    delete start_error_;
    cluster_ = nullptr;
    dir_ = nullptr;
    start_error_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr) << *start_error_;
    prefix_ =
        std::string("t/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
    client_ = open(cluster_->endpoints());
    ASSERT_NE(client_, nullptr);
  }
  static std::unique_ptr<EtcdClient> open(std::vector<std::string> eps,
                                          std::chrono::milliseconds request = 5000ms,
                                          std::chrono::milliseconds attempt = 1000ms) {
    ClientOptions o;
    o.endpoints = std::move(eps);
    o.request_timeout = request;
    o.attempt_timeout = attempt;
    auto c = EtcdClient::open(o);
    EXPECT_TRUE(c.ok()) << c.error().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  std::string k(const std::string& name) const { return prefix_ + name; }

  static test::TempDir* dir_;
  static test::EtcdCluster* cluster_;
  static std::string* start_error_;
  std::string prefix_;
  std::unique_ptr<EtcdClient> client_;
};

test::TempDir* EtcdClientTest::dir_ = nullptr;
test::EtcdCluster* EtcdClientTest::cluster_ = nullptr;
std::string* EtcdClientTest::start_error_ = nullptr;

TEST_F(EtcdClientTest, PutRangeAndPrefixRangeRoundTripBinaryKeysAndValues) {
  const std::string bin("v\0\xff\x01", 4);
  auto rev = client_->put(k("a"), bin);
  ASSERT_OK(rev);
  ASSERT_OK(client_->put(k("b"), "2"));
  ASSERT_OK(client_->put(k("c"), ""));
  auto one = client_->range(k("a"));
  ASSERT_OK(one);
  ASSERT_EQ(one->kvs.size(), 1u);
  EXPECT_EQ(one->kvs[0].value, bin);
  EXPECT_EQ(one->kvs[0].mod_revision, *rev);
  EXPECT_EQ(one->kvs[0].create_revision, *rev);
  auto all = client_->range(prefix_, prefix_end(prefix_));
  ASSERT_OK(all);
  ASSERT_EQ(all->kvs.size(), 3u);
  EXPECT_EQ(all->kvs[2].key, k("c"));
  EXPECT_EQ(all->kvs[2].value, "");
  auto none = client_->range(k("missing"));
  ASSERT_OK(none);
  EXPECT_TRUE(none->kvs.empty());
  auto n = client_->remove(prefix_, prefix_end(prefix_));
  ASSERT_OK(n);
  EXPECT_EQ(*n, 3);
}

TEST_F(EtcdClientTest, TxnRunsTheBranchItsComparesChooseAndReportsAFailedOne) {
  TxnRequest t;
  t.compare.push_back(
      Compare::revision(k("x"), CompareTarget::create_revision, CompareOp::equal, 0));
  t.success.push_back(PutOp{k("x"), "first", 0});
  t.failure.push_back(RangeOp{k("x"), ""});
  auto r = client_->txn(t);
  ASSERT_OK(r);
  EXPECT_TRUE(r->succeeded);
  EXPECT_GT(r->revision, 0);
  // The same again fails (the gateway omits "succeeded") and reads the key.
  auto again = client_->txn(t);
  ASSERT_OK(again);
  EXPECT_FALSE(again->succeeded);
  ASSERT_EQ(again->ranges.size(), 1u);
  ASSERT_EQ(again->ranges[0].kvs.size(), 1u);
  EXPECT_EQ(again->ranges[0].kvs[0].value, "first");
  EXPECT_EQ(again->ranges[0].kvs[0].mod_revision, r->revision);
  // Value compares are bytewise.
  TxnRequest v;
  v.compare.push_back(Compare::value_is(k("x"), CompareOp::less, "g"));
  v.success.push_back(DeleteOp{k("x"), ""});
  auto del = client_->txn(v);
  ASSERT_OK(del);
  EXPECT_TRUE(del->succeeded);
  EXPECT_TRUE(client_->range(k("x"))->kvs.empty());
}

TEST_F(EtcdClientTest, ALeaseKeptAliveOutlivesItsTtlAndAnExpiredOneDeletesItsKey) {
  auto kept = client_->lease_grant(1);
  ASSERT_OK(kept);
  auto dropped = client_->lease_grant(1);
  ASSERT_OK(dropped);
  ASSERT_OK(client_->put(k("kept"), "1", kept->id));
  ASSERT_OK(client_->put(k("dropped"), "1", dropped->id));
  // Keep one alive until the other has expired (etcd deletes its key).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  bool expired = false;
  while (std::chrono::steady_clock::now() < deadline) {
    ASSERT_OK(client_->lease_keepalive(kept->id));
    auto ttl = client_->lease_time_to_live(dropped->id);
    if (!ttl.ok()) {
      ASSERT_EQ(ttl.code(), Errc::not_found) << ttl.error().to_string();
      expired = true;
      break;
    }
    std::this_thread::sleep_for(200ms);  // pacing the keepalives, not synchronisation
  }
  ASSERT_TRUE(expired);
  EXPECT_TRUE(client_->range(k("dropped"))->kvs.empty());
  EXPECT_EQ(client_->range(k("kept"))->kvs.size(), 1u);
  auto ka = client_->lease_keepalive(dropped->id);
  EXPECT_EQ(ka.code(), Errc::not_found);
  auto t = client_->lease_time_to_live(kept->id);
  ASSERT_OK(t);
  EXPECT_EQ(t->granted_ttl_seconds, 1);
  // Revoking deletes the attached key at once; a second revoke is not_found.
  ASSERT_OK(client_->lease_revoke(kept->id));
  EXPECT_TRUE(client_->range(k("kept"))->kvs.empty());
  auto again = client_->lease_revoke(kept->id);
  EXPECT_EQ(again.code(), Errc::not_found) << again.to_string();
}

// Collects watch events; waits (on a condition) for a count.
struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<WatchEvent> events;
  std::optional<Error> error;
  WatchEventsFn on_events() {
    return [this](const std::vector<WatchEvent>& evs) {
      std::lock_guard l(mu);
      events.insert(events.end(), evs.begin(), evs.end());
      cv.notify_all();
    };
  }
  WatchErrorFn on_error() {
    return [this](const Error& e) {
      std::lock_guard l(mu);
      error = e;
      cv.notify_all();
    };
  }
  bool wait_for(size_t n, std::chrono::milliseconds t = 10s) {
    std::unique_lock l(mu);
    return cv.wait_for(l, t, [&] { return events.size() >= n || error.has_value(); }) &&
           events.size() >= n;
  }
};

TEST_F(EtcdClientTest, WatchDeliversEveryChangeInRevisionOrderFromAStartRevision) {
  auto first = client_->put(k("w/a"), "1");
  ASSERT_OK(first);
  ASSERT_OK(client_->put(k("w/b"), "2"));
  ASSERT_OK(client_->remove(k("w/a")));
  Collector got;
  auto w = client_->watch({k("w/"), prefix_end(k("w/")), *first}, got.on_events(), got.on_error());
  ASSERT_OK(client_->put(k("w/c"), "3"));
  ASSERT_OK(client_->put(k("other"), "not watched"));
  ASSERT_TRUE(got.wait_for(4));
  std::lock_guard l(got.mu);
  ASSERT_EQ(got.events.size(), 4u);
  EXPECT_EQ(got.events[0].kv.key, k("w/a"));
  EXPECT_EQ(got.events[2].type, WatchEvent::Type::remove);
  EXPECT_EQ(got.events[3].kv.value, "3");
  for (size_t i = 1; i < got.events.size(); ++i) {
    EXPECT_GT(got.events[i].kv.mod_revision, got.events[i - 1].kv.mod_revision);
  }
  EXPECT_FALSE(got.error.has_value());
}

// A member frozen under an open watch keeps the connection up and silent:
// the watch's probe finds it unable to answer and moves to another member,
// so a change written through the others arrives while it is still frozen,
// and nothing is delivered twice after it thaws.
TEST_F(EtcdClientTest, AWatchOnAFrozenMemberMovesToAnotherAndMissesNothing) {
  // The watch's first endpoint is member 0 (its client prefers the first).
  auto watcher = open(cluster_->endpoints());
  ASSERT_NE(watcher, nullptr);
  auto writer = open({cluster_->endpoint(1), cluster_->endpoint(2)}, 10s, 2000ms);
  ASSERT_NE(writer, nullptr);
  auto first = writer->put(k("f/a"), "before");
  ASSERT_OK(first);
  Collector got;
  auto w = watcher->watch({k("f/"), prefix_end(k("f/")), *first}, got.on_events(), got.on_error());
  ASSERT_TRUE(got.wait_for(1));
  cluster_->freeze(0);
  auto thaw = [&] { cluster_->thaw(0); };
  struct Thaw {
    std::function<void()> f;
    ~Thaw() { f(); }
  } thaw_at_exit{thaw};
  // Writes through the other two members succeed once they have a leader
  // (member 0 may have been it).
  Result<int64_t> put = writer->put(k("f/b"), "while frozen");
  for (int i = 0; i < 10 && !put.ok(); ++i) put = writer->put(k("f/b"), "while frozen");
  ASSERT_OK(put);
  // Probe interval 2 s + one 1 s attempt + reconnect; the slack is for a
  // loaded machine (without the probe the watch waits until the thaw).
  EXPECT_TRUE(got.wait_for(2, 15s)) << "the watch stayed on the frozen member";
  thaw();
  ASSERT_OK(writer->put(k("f/c"), "after"));
  // A put whose attempt timed out while the members elected a leader may
  // have been applied as well as its retry, each as a revision of its own —
  // and the stale attempt can land after "after" (seen here: the proposal
  // queued on a leaderless member is applied once it has a leader). What
  // must hold: every revision once, in order, "after" among them.
  auto saw_after = [&] {
    return std::any_of(got.events.begin(), got.events.end(),
                       [](const WatchEvent& e) { return e.kv.value == "after"; });
  };
  {
    std::unique_lock l(got.mu);
    ASSERT_TRUE(got.cv.wait_for(l, 10s, saw_after));
  }
  std::lock_guard l(got.mu);
  EXPECT_EQ(got.events.front().kv.value, "before");
  bool frozen_write = false;
  for (size_t i = 0; i < got.events.size(); ++i) {
    frozen_write |= got.events[i].kv.value == "while frozen";
    if (i > 0) {
      EXPECT_GT(got.events[i].kv.mod_revision, got.events[i - 1].kv.mod_revision);
    }
  }
  EXPECT_TRUE(frozen_write);
  EXPECT_FALSE(got.error.has_value());
}

TEST_F(EtcdClientTest, AWatchFromACompactedRevisionEndsWithOutOfRange) {
  auto a = client_->put(k("c"), "1");
  ASSERT_OK(a);
  auto b = client_->put(k("c"), "2");
  ASSERT_OK(b);
  ASSERT_OK(client_->compact(*b));
  Collector got;
  auto w = client_->watch({k("c"), "", *a}, got.on_events(), got.on_error());
  std::unique_lock l(got.mu);
  ASSERT_TRUE(got.cv.wait_for(l, 10s, [&] { return got.error.has_value(); }));
  EXPECT_EQ(got.error->code, Errc::out_of_range);
  EXPECT_NE(got.error->message.find("compacted"), std::string::npos) << got.error->message;
}

TEST_F(EtcdClientTest, AnEndpointThatRefusesConnectionsIsSkipped) {
  std::vector<std::string> eps = {"http://127.0.0.1:" + std::to_string(test::free_port())};
  for (const auto& e : cluster_->endpoints()) eps.push_back(e);
  auto c = open(eps);
  ASSERT_NE(c, nullptr);
  ASSERT_OK(c->put(k("skip"), "1"));
  EXPECT_EQ(c->range(k("skip"))->kvs.size(), 1u);
}

TEST_F(EtcdClientTest, WithEveryEndpointDownACallFailsAtItsDeadlineNamingThem) {
  const std::string dead = "http://127.0.0.1:" + std::to_string(test::free_port());
  auto c = open({dead}, 400ms, 100ms);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = c->range("strata/streams/s1");
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::unavailable);
  EXPECT_NE(r.error().message.find(dead), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("etcd range of key \"strata/streams/s1\""), std::string::npos)
      << r.error().message;
  EXPECT_LT(took, 2s);
  // Several rounds over the one dead endpoint: its cause is said once, with
  // a count, not once per attempt.
  EXPECT_NE(r.error().message.find(" times)"), std::string::npos) << r.error().message;
  EXPECT_LT(r.error().message.size(), 400u) << r.error().message;
}

// The fake server's misbehaviours, each answered with a clear error.
TEST(EtcdClientFake, GarbageErrorsAndSlownessBecomeClearErrors) {
  test::FakeHttp bad_json([](const std::string&) {
    return test::FakeReply{200, "{\"kvs\": [", {}};
  });
  test::FakeHttp http500([](const std::string&) { return test::FakeReply{500, "oops", {}}; });
  test::FakeHttp wrong_types([](const std::string&) {
    return test::FakeReply{200, "{\"kvs\":[{\"key\":\"!!notbase64\",\"mod_revision\":\"x\"}]}", {}};
  });
  test::FakeHttp grpc_error([](const std::string&) {
    return test::FakeReply{
        400, "{\"error\":\"bad\",\"message\":\"etcdserver: bad thing\",\"code\":3}", {}};
  });
  test::FakeHttp slow([](const std::string&) { return test::FakeReply{200, "{}", 3000ms}; });
  struct Case {
    test::FakeHttp* server;
    Errc code;
    std::string expect;
  };
  const Case cases[] = {
      {&bad_json, Errc::unavailable, "unparsable JSON"},
      {&http500, Errc::unavailable, "HTTP 500"},
      {&wrong_types, Errc::corrupt, "not valid base64"},
      {&grpc_error, Errc::invalid_argument, "etcdserver: bad thing"},
      {&slow, Errc::unavailable, "imed out"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expect);
    ClientOptions o;
    o.endpoints = {c.server->endpoint()};
    o.request_timeout = 600ms;
    o.attempt_timeout = 250ms;
    auto client = EtcdClient::open(o);
    ASSERT_OK(client);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = (*client)->range("ns/streams/s");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), c.code) << r.error().to_string();
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(c.server->endpoint()), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("ns/streams/s"), std::string::npos) << r.error().message;
  }
}

// A watch message whose events go back in revision is not etcd's order: it
// is dropped and the watch reconnects from where it was, so on_events only
// ever sees revisions in order (the cluster's view relies on it).
TEST(EtcdClientFake, AWatchMessageOutOfRevisionOrderIsDroppedAndTheWatchResumes) {
  std::atomic<int> watches{0};
  auto event = [](int rev) {
    return "{\"kv\":{\"key\":\"az0=\",\"mod_revision\":\"" + std::to_string(rev) + "\"}}";
  };
  test::FakeHttp server([&](const std::string& path) {
    if (path != "/v3/watch") return test::FakeReply{200, "{}", {}};
    const bool first = watches.fetch_add(1) == 0;
    const std::string evs = first ? event(10) + "," + event(5) : event(5) + "," + event(10);
    return test::FakeReply{200, "{\"result\":{\"events\":[" + evs + "]}}", {}};
  });
  ClientOptions o;
  o.endpoints = {server.endpoint()};
  o.watch_probe_interval = 0ms;
  auto client = EtcdClient::open(o);
  ASSERT_OK(client);
  std::mutex mu;
  std::vector<int64_t> seen;
  auto w = (*client)->watch(
      {"k", "", 1},
      [&](const std::vector<WatchEvent>& evs) {
        std::lock_guard l(mu);
        for (const auto& e : evs) seen.push_back(e.kv.mod_revision);
      },
      [](const Error&) {});
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    {
      std::lock_guard l(mu);
      if (seen.size() >= 2) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  w.reset();
  EXPECT_EQ(seen, (std::vector<int64_t>{5, 10}));
  EXPECT_GE(watches.load(), 2);
}

TEST(EtcdClientFake, BadOptionsAreInvalidArgumentNamingTheSetting) {
  ClientOptions o;
  EXPECT_EQ(EtcdClient::open(o).code(), Errc::invalid_argument);
  o.endpoints = {"127.0.0.1:2379"};
  auto r = EtcdClient::open(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("\"127.0.0.1:2379\" is not http://host:port"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace strata::etcd
