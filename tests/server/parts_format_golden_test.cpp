// The server's files pinned by golden vectors (docs/formats/server-state.md).
#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "server/offset_store.h"
#include "server/super_streams.h"
#include "support/golden.h"

namespace strata::server {
namespace {

namespace golden = ::strata::test::golden;

TEST(ServerFormatGolden, TrackingFileBytesArePinned) {
  const std::map<std::string, uint64_t, std::less<>> m{{"c1", 42}, {"z", 1ull << 40}};
  const golden::Vector v = golden::load("server/golden/tracking-file.hex");
  ASSERT_TRUE(golden::matches(v, encode_tracking_file(m)));
  golden::expect_fields(v, "tracking file",
                        {{"magic", 0x5354524B}, {"version", 1}, {"count", 2}, {"ref_len", 2}});
  EXPECT_EQ(golden::field(v, "tracking file", "crc"), crc32c::value(v.bytes.data(), 30));
  auto back = decode_tracking_file(golden::pinned_bytes(v), "tracking-file.hex");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, m);
}

TEST(ServerFormatGolden, SuperStreamFileBytesArePinned) {
  const SuperStream s{"inv", {"inv-0", "inv-1"}, {"a", "bb"}};
  const golden::Vector v = golden::load("server/golden/super-stream-file.hex");
  ASSERT_TRUE(golden::matches(v, encode_super_stream_file(s)));
  golden::expect_fields(v, "super stream file",
                        {{"magic", 0x53535550}, {"version", 1}, {"name_len", 3}, {"count", 2}});
  EXPECT_EQ(golden::field(v, "super stream file", "crc"),
            crc32c::value(v.bytes.data(), v.bytes.size() - 4));
  auto back = decode_super_stream_file(golden::pinned_bytes(v), "super-stream-file.hex");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, s);
}

}  // namespace
}  // namespace strata::server
