// The bytes past a consumer (node/lag_bytes.h): exact from a chunk's end in
// a segment still there, estimated per segment otherwise.
#include "node/lag_bytes.h"

#include <gtest/gtest.h>

#include "log/log_files.h"

namespace strata::node {
namespace {

constexpr uint64_t kHead = log::kFileHeaderSize;

log::SegmentInfo seg(uint64_t first, uint64_t next, uint64_t chunk_bytes) {
  log::SegmentInfo s;
  s.first_offset = first;
  s.next_offset = next;
  s.size_bytes = kHead + chunk_bytes;
  return s;
}

// Two segments: offsets 0..100 in 1 000 bytes of chunks, 100..150 in 2 000.
const std::vector<log::SegmentInfo> kSegs = {seg(0, 100, 1000), seg(100, 150, 2000)};

TEST(LagBytes, NothingPastTheEndIsZero) {
  EXPECT_EQ(bytes_after(kSegs, std::nullopt, 150, 150).bytes, 0u);
  EXPECT_TRUE(bytes_after(kSegs, std::nullopt, 150, 150).exact);
}

TEST(LagBytes, FromAChunksEndItIsTheBytesAfterItExactly) {
  // 300 bytes of chunks into the first segment: 700 left there, all of the
  // second's chunks (not its file header).
  const LagBytes b = bytes_after(kSegs, LogMark{0, kHead + 300}, 30, 150);
  EXPECT_TRUE(b.exact);
  EXPECT_EQ(b.bytes, 700u + 2000u);
  // At the very end of the second segment.
  EXPECT_EQ(bytes_after(kSegs, LogMark{100, kHead + 2000}, 150, 151).bytes, 0u);
}

TEST(LagBytes, WithoutAMarkOrWhenItsSegmentIsGoneItIsEstimatedPerSegment) {
  // Half of the first segment at its 10 bytes per message, all of the second.
  LagBytes b = bytes_after(kSegs, std::nullopt, 50, 150);
  EXPECT_FALSE(b.exact);
  EXPECT_EQ(b.bytes, 500u + 2000u);
  // A mark in a segment retention removed: the same estimate.
  b = bytes_after(kSegs, LogMark{7, 99}, 120, 150);
  EXPECT_FALSE(b.exact);
  EXPECT_EQ(b.bytes, 1200u);  // 30 of the second's 50 messages of 40 bytes
  // Offsets below the local log (the remote tier): at the local log's
  // average, 3 000 bytes for 150 messages.
  b = bytes_after({seg(100, 150, 2000)}, std::nullopt, 50, 150);
  EXPECT_FALSE(b.exact);
  EXPECT_EQ(b.bytes, 2000u + 2000u);
}

}  // namespace
}  // namespace strata::node
