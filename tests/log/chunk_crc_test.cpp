// The log's 3-way CRC32C must equal common/crc32c for every length,
// alignment and seed (the on-disk format depends on it).
#include "log/chunk_crc.h"

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "common/random.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

TEST(LogChunkCrc, MatchesReferenceForEveryLengthAndAlignment) {
  Random rng(strata::test::test_seed(5));
  std::string buf(3 * 8192 * 2 + 3 * 256 * 3 + 64, '\0');
  for (auto& c : buf) c = char(rng.uniform(256));
  // Lengths around every boundary of the long and short loops.
  std::vector<size_t> lens;
  for (size_t base : {size_t(0), size_t(768), size_t(3 * 8192), size_t(2 * 3 * 8192)}) {
    for (size_t d = 0; d < 40; ++d) {
      if (base + d <= buf.size() - 8) lens.push_back(base + d);
      if (base >= d) lens.push_back(base - d);
    }
  }
  for (int i = 0; i < strata::test::scaled(300); ++i) lens.push_back(rng.uniform(buf.size() - 8));
  for (size_t len : lens) {
    for (size_t align = 0; align < 8; ++align) {
      uint32_t seed = uint32_t(rng.next());
      ASSERT_EQ(chunk_crc_extend(seed, buf.data() + align, len),
                crc32c::extend(seed, buf.data() + align, len))
          << "len " << len << " align " << align;
    }
  }
  EXPECT_EQ(chunk_crc("123456789"), 0xE3069283u);  // the CRC-32C check value
}

}  // namespace
}  // namespace strata::log
