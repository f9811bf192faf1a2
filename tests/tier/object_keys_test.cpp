#include "tier/object_keys.h"

#include <gtest/gtest.h>

namespace strata::tier {

// Expected hashes were computed outside strata, with a bitwise CRC32C
// (reflected polynomial 0x82F63B78), so they check common/crc32c as well.
TEST(TierObjectKeys, KeysFollowTheSchemeByteForByte) {
  auto k = ObjectKeys::make("strata/prod", "orders-1");
  ASSERT_TRUE(k.ok()) << k.error().to_string();
  const std::string h = "0e4142bd";  // CRC32C("orders-1")
  EXPECT_EQ(k->stream_prefix(), "strata/prod/" + h + "/orders-1/");
  EXPECT_EQ(k->fragment(42, 7, 0xdeadbeef),
            "strata/prod/" + h + "/orders-1/data/00000000000000000042.7.deadbeef.frag");
  EXPECT_EQ(k->root(7, 0x1a), "strata/prod/" + h + "/orders-1/meta/root.7.0000001a");
  EXPECT_EQ(k->group(1024, 0xff, 2),
            "strata/prod/" + h + "/orders-1/meta/00000000000000001024.000000ff.g2");
  auto bare = ObjectKeys::make("", "s");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->root(1, 1), "30b5f4a8/s/meta/root.1.00000001");
}

// Any name is one key segment, its component (common/name_component.h):
// escaped, or hashed when long; the hash segment is the CRC32C of the
// component. Names of [A-Za-z0-9._~-] keep the keys they always had.
TEST(TierObjectKeys, EveryNameIsOneSegmentOfItsKeys) {
  const std::string odd = "orders 2026/Q1 \xe2\x82\xac";
  auto k = ObjectKeys::make("strata/prod", odd);
  ASSERT_TRUE(k.ok()) << k.error().to_string();
  const std::string c = "orders%202026%2FQ1%20%E2%82%AC";
  EXPECT_EQ(k->component(), c);
  EXPECT_EQ(k->stream(), odd);
  EXPECT_EQ(k->stream_prefix(), "strata/prod/" + stream_hash8(c) + "/" + c + "/");
  auto p = k->parse(k->root(3, 9));
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->epoch, 3u);
  for (const std::string& n :
       {std::string("."), std::string(".."), std::string("a/b"), std::string(255, 'x')}) {
    auto kk = ObjectKeys::make("p", n);
    ASSERT_TRUE(kk.ok()) << n;
    EXPECT_EQ(kk->stream_prefix().find('/', 2 + 9), kk->stream_prefix().size() - 1) << n;
    EXPECT_NE(kk->component(), ".");
    EXPECT_NE(kk->component(), "..");
    auto back = ObjectKeys::of_component("p", kk->component());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->stream_prefix(), kk->stream_prefix());
    EXPECT_EQ(back->stream(), n.size() == 255 ? "" : n) << "a hashed component has no name";
  }
  EXPECT_FALSE(ObjectKeys::of_component("p", "a b").ok());
  EXPECT_FALSE(ObjectKeys::of_component("p", ".x").ok());
  EXPECT_EQ(ObjectKeys::make("p", "orders-1")->component(), "orders-1");
}

TEST(TierObjectKeys, HashIsTheCrc32cOfTheNameInEightLowercaseHexDigits) {
  // CRC32C("123456789") = e3069283 (the standard check value).
  EXPECT_EQ(stream_hash8("123456789"), "e3069283");
  // Leading zero digits are kept: always 8 digits.
  EXPECT_EQ(stream_hash8("orders-1"), "0e4142bd");
  EXPECT_EQ(stream_hash8("a"), "c1d04330");
  // Similar names land on unrelated prefixes (S3 partitions by key prefix).
  EXPECT_EQ(stream_hash8("stream-1"), "27867b29");
  EXPECT_EQ(stream_hash8("stream-2"), "34d688dd");
}

TEST(TierObjectKeys, ParseInvertsEveryKeyKind) {
  auto k = ObjectKeys::make("p", "s.1_x~y-z");
  ASSERT_TRUE(k.ok());
  auto f = k->parse(k->fragment(UINT64_MAX, 123456789012ull, 7));
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ(*f, (ParsedKey{ObjectType::fragment, UINT64_MAX, 123456789012ull, 7, 0}));
  auto r = k->parse(k->root(0, 0xabcdef01));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (ParsedKey{ObjectType::root, 0, 0, 0xabcdef01, 0}));
  auto g = k->parse(k->group(5, 9, 11));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (ParsedKey{ObjectType::group, 5, 0, 9, 11}));
  ManifestEntry e{8, 1, 2, 3, 4, 5, 0};
  EXPECT_EQ(k->for_entry(e), k->fragment(8, 4, 5));
  e.kind = 2;
  EXPECT_EQ(k->for_entry(e), k->group(8, 5, 2));
}

TEST(TierObjectKeys, ParseRejectsForeignAndMalformedKeys) {
  auto k = ObjectKeys::make("p", "s");
  ASSERT_TRUE(k.ok());
  std::string base = k->stream_prefix();
  for (std::string bad :
       {std::string("other/key"), base + "data/12.1.00000001.frag",
        base + "data/00000000000000000012.1.0000001.frag",
        base + "data/00000000000000000012.x.00000001.frag", base + "meta/root.1.ABCDEF01",
        base + "meta/root.1", base + "meta/00000000000000000012.00000001.g0",
        base + "meta/00000000000000000012.00000001.g", base + "junk"}) {
    auto r = k->parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find(bad), std::string::npos);
    }
  }
}

TEST(TierObjectKeys, InvalidStreamNamesAndUnsafePrefixesAreRefused) {
  for (std::string bad :
       {std::string(""), std::string("amq.x"), std::string("\xc3"), std::string(256, 'x')}) {
    EXPECT_FALSE(ObjectKeys::make("p", bad).ok()) << bad;
  }
  for (std::string bad : {"/p", "p/", "p//q", "p q"}) {
    EXPECT_FALSE(ObjectKeys::make(bad, "s").ok()) << bad;
  }
  EXPECT_TRUE(ObjectKeys::make("a/b/c", "s").ok());
}

}  // namespace strata::tier
