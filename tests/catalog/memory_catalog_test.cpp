// MemoryCatalog's fault injection, which the tests of the uploader's persist
// path rely on: transient failures of the next N calls, and calls that hang
// until the test releases them.
#include "catalog/memory_catalog.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "support/assertions.h"

namespace strata::catalog {
namespace {

using namespace std::chrono_literals;

TEST(MemoryCatalog, FailNextFailsExactlyThatManyCallsWithoutEffect) {
  MemoryCatalog c;
  auto e = c.create("s", 1);
  ASSERT_OK(e);
  c.fail_next(2);
  for (int i = 0; i < 2; ++i) {
    auto r = c.put("s", "root", 1, e->revision);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), Errc::unavailable);
    EXPECT_NE(r.error().message.find("injected"), std::string::npos);
  }
  EXPECT_EQ(*c.get("s"), *e);  // the third call is served
  auto r = c.put("s", "root", 1, e->revision);
  ASSERT_OK(r);
  EXPECT_EQ(r->outcome, PutOutcome::ok);
  EXPECT_EQ(c.calls(CatalogCall::put), 3u);
}

TEST(MemoryCatalog, FailNextCanTargetOneKindOfCallWithAChosenError) {
  MemoryCatalog c;
  auto e = c.create("s", 1);
  ASSERT_OK(e);
  c.fail_next(1, Error(Errc::io, "disk on fire"), CatalogCall::put);
  ASSERT_OK(c.get("s"));
  ASSERT_OK(c.list());
  auto r = c.put("s", "root", 1, e->revision);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::io);
  EXPECT_NE(r.error().message.find("disk on fire"), std::string::npos);
  EXPECT_EQ(c.put("s", "root", 1, e->revision)->outcome, PutOutcome::ok);
}

TEST(MemoryCatalog, AHeldCallWaitsForReleaseAndThenRuns) {
  MemoryCatalog c;
  auto e = c.create("s", 1);
  ASSERT_OK(e);
  c.hold(CatalogCall::put);
  auto pending = std::async(std::launch::async, [&] { return c.put("s", "root", 1, 1); });
  ASSERT_TRUE(c.wait_held(1, 10s));
  // Other calls are not held; the held put has not happened yet.
  EXPECT_EQ(c.get("s")->revision, e->revision);
  EXPECT_EQ(pending.wait_for(0s), std::future_status::timeout);
  c.release();
  auto r = pending.get();
  ASSERT_OK(r);
  EXPECT_EQ(r->outcome, PutOutcome::ok);
  // Released: new calls are not held.
  EXPECT_EQ(c.put("s", "root2", 1, r->revision)->outcome, PutOutcome::ok);
}

TEST(MemoryCatalog, AHeldCallCanBeReleasedIntoAnInjectedFailure) {
  MemoryCatalog c;
  ASSERT_OK(c.create("s", 1));
  c.hold();
  auto pending = std::async(std::launch::async, [&] { return c.put("s", "root", 1, 1); });
  ASSERT_TRUE(c.wait_held(1, 10s));
  c.fail_next(1, Error(Errc::timeout, "catalog request timed out"));
  c.release();
  EXPECT_EQ(pending.get().code(), Errc::timeout);
  EXPECT_EQ(c.get("s")->root_key, "");
}

TEST(MemoryCatalog, WaitHeldTimesOutWhenNothingIsHeld) {
  MemoryCatalog c;
  c.hold();
  EXPECT_FALSE(c.wait_held(1, 20ms));
}

TEST(MemoryCatalog, DestroyingTheCatalogReleasesHeldCalls) {
  auto c = std::make_unique<MemoryCatalog>();
  ASSERT_OK(c->create("s", 1));
  c->hold();
  std::promise<Result<PutResult>> done;
  auto done_f = done.get_future();
  std::thread t([&, raw = c.get()] { done.set_value(raw->put("s", "root", 1, 1)); });
  ASSERT_TRUE(c->wait_held(1, 10s));
  c.reset();  // must not hang: the held call runs and returns first
  t.join();
  EXPECT_TRUE(done_f.get().ok());
}

TEST(MemoryCatalog, RootKeyBoundIsConfigurable) {
  MemoryCatalog c(MemoryCatalogOptions{8});
  ASSERT_OK(c.create("s", 1));
  EXPECT_EQ(c.put("s", "12345678", 1, 1)->outcome, PutOutcome::ok);
  auto r = c.put("s", "123456789", 1, 2);
  EXPECT_EQ(r.code(), Errc::invalid_argument);
  EXPECT_NE(r.error().message.find("max_root_key_bytes"), std::string::npos);
}

}  // namespace
}  // namespace strata::catalog
