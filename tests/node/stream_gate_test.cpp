// StreamGate and the gated store and catalog: a closed gate refuses new
// calls with a clear error and lets nothing through, and wait_idle returns
// only once the calls admitted before the close have ended.
#include "node/stream_gate.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "catalog/memory_catalog.h"
#include "objstore/config.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

TEST(StreamGate, WaitsForCallsAdmittedBeforeTheCloseAndRefusesLaterOnes) {
  auto gate = std::make_shared<StreamGate>("s1");
  std::promise<void> admitted, release;
  std::shared_future<void> released = release.get_future().share();
  std::thread call([&] {
    StreamGate::Pass p(*gate);
    EXPECT_TRUE(p.admitted());
    admitted.set_value();
    released.wait();
  });
  admitted.get_future().wait();
  EXPECT_EQ(gate->in_flight(), 1u);
  gate->close();
  {
    StreamGate::Pass late(*gate);
    EXPECT_FALSE(late.admitted());
  }
  EXPECT_EQ(gate->in_flight(), 1u) << "a refused call is not counted";
  EXPECT_FALSE(gate->wait_idle(std::chrono::milliseconds(20)));
  release.set_value();
  EXPECT_TRUE(gate->wait_idle(std::chrono::seconds(30)));
  call.join();
  EXPECT_EQ(gate->in_flight(), 0u);
  EXPECT_TRUE(gate->wait_idle(std::chrono::milliseconds(0)));
}

TEST(StreamGate, AClosedGateLetsNoWriteThrough) {
  strata::test::TempDir tmp;
  objstore::ObjectStoreConfig c;
  c.fs.root = tmp.sub("objects");
  auto inner = objstore::open_object_store(c);
  ASSERT_OK(inner);
  std::shared_ptr<objstore::ObjectStore> shared(std::move(inner).value());
  auto gate = std::make_shared<StreamGate>("s1");
  GatedStore store(shared, gate);
  auto cat = std::make_shared<catalog::MemoryCatalog>();
  GatedCatalog gated_cat(cat, gate);

  ASSERT_OK(store.put("a/1", BytesView("x")));
  ASSERT_OK(gated_cat.create("s1", 1));
  gate->close();

  auto put = store.put("a/2", BytesView("y"));
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.retry(), objstore::RetryClass::fatal);
  EXPECT_NE(put.error().to_string().find("stream s1 is being deleted"), std::string::npos)
      << put.error().to_string();
  EXPECT_EQ(shared->head("a/2").retry(), objstore::RetryClass::not_found);
  auto removed = store.remove_many(std::vector<std::string>{"a/1"});
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_FALSE(removed[0].ok());
  ASSERT_OK(shared->head("a/1"));
  EXPECT_FALSE(store.list({"a/", "", 10}).ok());

  auto created = gated_cat.create("s2", 1);
  EXPECT_EQ(created.code(), Errc::cancelled);
  EXPECT_EQ(cat->get("s2").code(), Errc::not_found);
  EXPECT_EQ(gated_cat.bump_epoch("s1", 1, 0).code(), Errc::cancelled);
  EXPECT_EQ(gated_cat.remove("s1", 1).code(), Errc::cancelled);
  EXPECT_EQ(cat->get("s1")->epoch, 1u);
}

}  // namespace
}  // namespace strata::node
