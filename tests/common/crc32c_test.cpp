#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/random.h"
#include "support/temp_dir.h"

namespace strata {

TEST(Crc32c, KnownVectors) {
  // RFC 3720 (iSCSI) appendix B.4 and the common check value.
  EXPECT_EQ(crc32c::value("123456789"), 0xE3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::value(zeros), 0x8A9136AAu);
  std::string ones(32, '\xff');
  EXPECT_EQ(crc32c::value(ones), 0x62A8AB43u);
  std::string inc;
  for (int i = 0; i < 32; ++i) inc.push_back(char(i));
  EXPECT_EQ(crc32c::value(inc), 0x46DD794Eu);
  EXPECT_EQ(crc32c::value(""), 0u);
}

TEST(Crc32c, ExtendEqualsWhole) {
  std::string s = "hello, tiered world: chunks, fragments and manifests";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    uint32_t a = crc32c::value(s.substr(0, cut));
    EXPECT_EQ(crc32c::extend(a, s.data() + cut, s.size() - cut), crc32c::value(s)) << cut;
  }
}

// Every implementation must equal the portable table for every length,
// alignment and seed around the loop boundaries of the fast paths (the
// on-disk formats depend on it).
TEST(Crc32c, EveryImplementationMatchesPortable) {
  Random rng(test::test_seed(5));
  std::string buf(3 * 8192 * 2 + 3 * 256 * 3 + 64, '\0');
  for (auto& c : buf) c = char(rng.uniform(256));
  std::vector<size_t> lens;
  for (size_t base : {size_t(0), size_t(256), size_t(768), size_t(1024), size_t(3 * 8192),
                      size_t(2 * 3 * 8192)}) {
    for (size_t d = 0; d < 40; ++d) {
      if (base + d <= buf.size() - 8) lens.push_back(base + d);
      if (base >= d) lens.push_back(base - d);
    }
  }
  for (int i = 0; i < test::scaled(300); ++i) lens.push_back(rng.uniform(buf.size() - 8));
  for (size_t len : lens) {
    for (size_t align = 0; align < 8; ++align) {
      const char* p = buf.data() + align;
      uint32_t seed = uint32_t(rng.next());
      uint32_t want = crc32c::extend_portable(seed, p, len);
      ASSERT_EQ(crc32c::extend(seed, p, len), want) << "len " << len << " align " << align;
      if (crc32c::has_sse42()) {
        ASSERT_EQ(crc32c::extend_sse42(seed, p, len), want) << len;
        ASSERT_EQ(crc32c::extend_sse42_3way(seed, p, len), want) << len;
      }
      if (crc32c::has_avx512()) {
        ASSERT_EQ(crc32c::extend_avx512(seed, p, len), want) << len;
      }
    }
  }
}

TEST(Crc32c, DetectsSingleBitFlip) {
  std::string s(4096, 'x');
  uint32_t base = crc32c::value(s);
  for (size_t bit = 0; bit < s.size() * 8; bit += 97) {
    std::string t = s;
    t[bit / 8] ^= char(1 << (bit % 8));
    EXPECT_NE(crc32c::value(t), base);
  }
}

}  // namespace strata
