// MeteredStore counts each read once, by the call that reached the backend:
// get() and get_to() as get, get_range() and read_range() as get_range,
// with bytes on success and errors by class.
#include "objstore/metered_store.h"

#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "objstore/fs_store.h"
#include "support/temp_dir.h"

namespace strata::objstore {
namespace {

TEST(MeteredStore, CountsStreamingAndBufferedReadsOnce) {
  test::TempDir dir;
  auto fs = FsObjectStore::open(posix_fs(), dir.sub("objects"), true, 8192);
  ASSERT_TRUE(fs.ok()) << fs.error().to_string();
  MeteredStore m(std::shared_ptr<ObjectStore>(std::move(fs).value()));
  EXPECT_EQ(m.max_get_bytes(), 8192u);
  const std::string data(5000, 'm');
  ASSERT_TRUE(m.put("m/obj", data).ok());
  ASSERT_TRUE(m.put("m/big", std::string(9000, 'b')).ok());

  ASSERT_TRUE(m.get("m/obj").ok());
  GetSink sink;
  sink.on_piece = [](BytesView) { return Status::OK(); };
  ASSERT_TRUE(m.get_to("m/obj", sink, GetLimits{}).ok());
  EXPECT_EQ(m.get("m/absent").retry(), RetryClass::not_found);
  // Over the store's cap of 8192: fatal.
  EXPECT_EQ(m.get("m/big").retry(), RetryClass::fatal);
  OpStats g = m.stats(Op::get);
  EXPECT_EQ(g.requests, 4u);
  EXPECT_EQ(g.bytes, 2 * data.size());
  EXPECT_EQ(g.not_found, 1u);
  EXPECT_EQ(g.fatal_errors, 1u);

  std::vector<uint8_t> buf(1000);
  auto n = m.read_range("m/obj", 4500, std::span<uint8_t>(buf));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 500u);
  auto r = m.get_range("m/obj", 0, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(m.read_range("m/obj", 5000, std::span<uint8_t>(buf)).retry(), RetryClass::fatal);
  OpStats gr = m.stats(Op::get_range);
  EXPECT_EQ(gr.requests, 3u);
  EXPECT_EQ(gr.bytes, 600u);
  EXPECT_EQ(gr.fatal_errors, 1u);
}

}  // namespace
}  // namespace strata::objstore
