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
  ASSERT_TRUE(golden::matches(v, encode_tracking_file("orders", m)));
  golden::expect_fields(
      v, "tracking file",
      {{"magic", 0x5354524B}, {"version", 2}, {"name_len", 6}, {"count", 2}, {"ref_len", 2}});
  EXPECT_EQ(golden::field(v, "tracking file", "crc"), crc32c::value(v.bytes.data(), 37));
  auto back = decode_tracking_file(golden::pinned_bytes(v), "tracking-file.hex");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->stream, "orders");
  EXPECT_EQ(back->offsets, m);
}

// Version 1 (before names were encoded: no name) is still read.
TEST(ServerFormatGolden, TrackingFileVersion1IsStillRead) {
  Bytes v1;
  ByteWriter w(&v1);
  w.be32(0x5354524B);
  w.u8(1);
  w.be32(1);
  w.u8(2);
  w.bytes("c1");
  w.be64(42);
  w.be32(crc32c::value(v1));
  auto back = decode_tracking_file(v1, "v1");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->version, 1u);
  EXPECT_EQ(back->stream, "");
  EXPECT_EQ(back->offsets, (std::map<std::string, uint64_t, std::less<>>{{"c1", 42}}));
}

TEST(ServerFormatGolden, SuperStreamFileBytesArePinned) {
  const SuperStream s{"inv", {"inv-0", "inv-1"}, {"a", "bb"}};
  const golden::Vector v = golden::load("server/golden/super-stream-file.hex");
  ASSERT_TRUE(golden::matches(v, encode_super_stream_file(s)));
  golden::expect_fields(v, "super stream file",
                        {{"magic", 0x53535550}, {"version", 2}, {"name_len", 3}, {"count", 2}});
  EXPECT_EQ(golden::field(v, "super stream file", "crc"),
            crc32c::value(v.bytes.data(), v.bytes.size() - 4));
  auto back = decode_super_stream_file(golden::pinned_bytes(v), "super-stream-file.hex");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, s);
}

}  // namespace
}  // namespace strata::server
