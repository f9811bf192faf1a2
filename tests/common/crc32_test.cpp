#include "common/crc32.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "common/random.h"
#include "support/temp_dir.h"

namespace strata {
namespace {

uint32_t zlib_crc(const char* p, size_t n, uint32_t seed = 0) {
  return uint32_t(crc32(seed, reinterpret_cast<const Bytef*>(p), uInt(n)));
}

}  // namespace

TEST(Crc32Zlib, KnownVectors) {
  // The CRC-32/ISO-HDLC check value, and zlib's for the empty input.
  EXPECT_EQ(crc32_zlib(BytesView("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32_zlib(BytesView("")), 0u);
  EXPECT_EQ(crc32_zlib(BytesView("The quick brown fox jumps over the lazy dog")), 0x414FA339u);
}

// Every length 0..300 at every alignment within a 16-byte line, with and
// without a seed, equals zlib: the wire CRC must match what any client
// (zlib, Erlang's erlang:crc32) computes.
TEST(Crc32Zlib, EqualsZlibForEveryShortLengthAndAlignment) {
  Random rng(test::test_seed(11));
  std::string buf(300 + 16, '\0');
  for (auto& c : buf) c = char(rng.uniform(256));
  for (size_t len = 0; len <= 300; ++len) {
    for (size_t align = 0; align < 16; ++align) {
      const char* p = buf.data() + align;
      ASSERT_EQ(crc32_zlib(p, len), zlib_crc(p, len)) << "len " << len << " align " << align;
      uint32_t seed = uint32_t(rng.next());
      ASSERT_EQ(crc32_zlib(p, len, seed), zlib_crc(p, len, seed))
          << "len " << len << " align " << align << " seed " << seed;
    }
  }
}

TEST(Crc32Zlib, EqualsZlibOnOneMibRandomAndExtends) {
  Random rng(test::test_seed(12));
  std::string buf(1 << 20, '\0');
  for (auto& c : buf) c = char(rng.uniform(256));
  const uint32_t whole = crc32_zlib(BytesView(buf));
  EXPECT_EQ(whole, zlib_crc(buf.data(), buf.size()));
  for (int i = 0; i < test::scaled(50); ++i) {
    size_t cut = rng.uniform(buf.size() + 1);
    uint32_t a = crc32_zlib(buf.data(), cut);
    ASSERT_EQ(crc32_zlib(buf.data() + cut, buf.size() - cut, a), whole) << "cut " << cut;
  }
}

// The CRC of a joined chunk (server/delivery.cpp) comes from its parts'
// CRCs: equal to the CRC over the joined bytes at every cut, including
// empty parts.
TEST(Crc32Zlib, CombineEqualsTheCrcOfTheJoinedBytes) {
  Random rng(test::test_seed(13));
  std::string buf(256 << 10, '\0');
  for (auto& c : buf) c = char(rng.uniform(256));
  const uint32_t whole = crc32_zlib(BytesView(buf));
  for (size_t cut : {size_t(0), size_t(1), buf.size() - 1, buf.size()}) {
    ASSERT_EQ(crc32_zlib_combine(crc32_zlib(buf.data(), cut),
                                 crc32_zlib(buf.data() + cut, buf.size() - cut), buf.size() - cut),
              whole)
        << "cut " << cut;
  }
  for (int i = 0; i < test::scaled(50); ++i) {
    size_t cut = rng.uniform(buf.size() + 1);
    ASSERT_EQ(crc32_zlib_combine(crc32_zlib(buf.data(), cut),
                                 crc32_zlib(buf.data() + cut, buf.size() - cut), buf.size() - cut),
              whole)
        << "cut " << cut;
  }
}

}  // namespace strata
