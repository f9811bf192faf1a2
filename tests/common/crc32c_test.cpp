#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <string>

#include "common/random.h"

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

TEST(Crc32c, PortableMatchesHardwareOnRandomInput) {
  if (!crc32c::has_hardware()) GTEST_SKIP() << "CPU lacks SSE4.2; portable path is the only one";
  Random rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string s(rng.uniform(5000), '\0');
    for (auto& c : s) c = char(rng.next());
    size_t off = rng.uniform(s.size() + 1);  // unaligned starts too
    uint32_t seed = uint32_t(rng.next());
    EXPECT_EQ(crc32c::extend_portable(seed, s.data() + off, s.size() - off),
              crc32c::extend_hardware(seed, s.data() + off, s.size() - off));
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
