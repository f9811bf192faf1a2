// Key rules, URL canonicalization and digests: the pure helpers under both
// backends.
#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "objstore/digest.h"
#include "objstore/key.h"
#include "objstore/uri.h"

namespace strata::objstore {
namespace {

TEST(Key, AcceptsSlashesSpacesAndUnicode) {
  EXPECT_EQ(key_problem("a"), std::nullopt);
  EXPECT_EQ(key_problem("streams/ab12cd34/s1/data/00000000000000000000.1.deadbeef.frag"),
            std::nullopt);
  EXPECT_EQ(key_problem("with space/and  two"), std::nullopt);
  EXPECT_EQ(key_problem("unicod\xC3\xA9/\xE2\x82\xAC/\xF0\x9F\x98\x80"), std::nullopt);
  EXPECT_EQ(key_problem("odd+chars=&?#%[]!*'()"), std::nullopt);
  EXPECT_EQ(key_problem(" "), std::nullopt);
  EXPECT_EQ(key_problem("...a/.b/c."), std::nullopt);
}

TEST(Key, RejectsEmptyAndDotSegmentsWithAReason) {
  EXPECT_EQ(key_problem(""), "empty key");
  EXPECT_EQ(key_problem("/a"), "leading '/' (empty first segment)");
  EXPECT_EQ(key_problem("a/"), "trailing '/' (empty last segment at byte 2)");
  EXPECT_EQ(key_problem("a//b"), "empty segment ('//') at byte 2");
  EXPECT_EQ(key_problem("a/../b"), "segment '..' at byte 2");
  EXPECT_EQ(key_problem(".."), "segment '..' at byte 0");
  EXPECT_EQ(key_problem("a/."), "segment '.' at byte 2");
}

TEST(Key, RejectsControlCharactersAndBadUtf8) {
  EXPECT_EQ(key_problem(std::string("a\0b", 3)), "control character 0x00 at byte 1");
  EXPECT_EQ(key_problem("a\nb"), "control character 0x0a at byte 1");
  EXPECT_EQ(key_problem("a\x7f"), "control character 0x7f at byte 1");
  EXPECT_EQ(key_problem("\xC3"), "not valid UTF-8");              // truncated sequence
  EXPECT_EQ(key_problem("\xC0\xAF"), "not valid UTF-8");          // overlong '/'
  EXPECT_EQ(key_problem("\xED\xA0\x80"), "not valid UTF-8");      // surrogate
  EXPECT_EQ(key_problem("\xF4\x90\x80\x80"), "not valid UTF-8");  // > U+10FFFF
  EXPECT_EQ(key_problem("\xFF"), "not valid UTF-8");
}

TEST(Key, BoundsLengthOfKeyAndSegment) {
  EXPECT_EQ(key_problem(std::string(kMaxSegmentBytes, 'x')), std::nullopt);
  EXPECT_TRUE(key_problem(std::string(kMaxSegmentBytes + 1, 'x')).has_value());
  std::string k;
  while (k.size() + 100 <= kMaxKeyBytes) k += std::string(99, 'k') + "/";
  k += std::string(kMaxKeyBytes - k.size(), 'z');
  EXPECT_EQ(k.size(), kMaxKeyBytes);
  EXPECT_EQ(key_problem(k), std::nullopt);
  EXPECT_EQ(key_problem(k + "z"), "key is 1025 bytes (max 1024)");
}

TEST(Key, PrefixesMayBeEmptyOrEndInSlashOrMidSegment) {
  EXPECT_EQ(prefix_problem(""), std::nullopt);
  EXPECT_EQ(prefix_problem("a/"), std::nullopt);
  EXPECT_EQ(prefix_problem("a/b"), std::nullopt);
  EXPECT_EQ(prefix_problem("a/."), std::nullopt);  // may continue as "a/.x"
  EXPECT_TRUE(prefix_problem("/a").has_value());
  EXPECT_TRUE(prefix_problem("a//").has_value());
  EXPECT_TRUE(prefix_problem("a/../").has_value());
}

TEST(Uri, EncodesEverythingButUnreservedWithUppercaseHex) {
  EXPECT_EQ(uri_encode("AZaz09-._~", false), "AZaz09-._~");
  EXPECT_EQ(uri_encode("a b/c", false), "a%20b%2Fc");
  EXPECT_EQ(uri_encode("a b/c", true), "a%20b/c");
  EXPECT_EQ(uri_encode("+=&?#%", false), "%2B%3D%26%3F%23%25");
  EXPECT_EQ(uri_encode("\xE2\x82\xAC", true), "%E2%82%AC");
  std::string back;
  ASSERT_TRUE(uri_decode("a%20b%2Fc%e2%82%ac", &back));
  EXPECT_EQ(back, "a b/c\xE2\x82\xAC");
  EXPECT_FALSE(uri_decode("a%2", &back));
  EXPECT_FALSE(uri_decode("a%zz", &back));
}

TEST(Uri, CanonicalQueryIsSortedEncodedAndAlwaysHasEquals) {
  EXPECT_EQ(canonical_query({{"prefix", "dir/"}, {"list-type", "2"}, {"delete", ""}}),
            "delete=&list-type=2&prefix=dir%2F");
  EXPECT_EQ(canonical_query({{"continuation-token", "a+b/c=="}, {"max-keys", "10"}}),
            "continuation-token=a%2Bb%2Fc%3D%3D&max-keys=10");
  // Sorted by encoded name, then value.
  EXPECT_EQ(canonical_query({{"b", "2"}, {"a", "z"}, {"a", "y"}}), "a=y&a=z&b=2");
  EXPECT_EQ(canonical_query({}), "");
}

TEST(Digest, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), kEmptySha256);
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(md5_base64(""), "1B2M2Y8AsgTpgAmY7PhCfg==");
  // base64 itself: tests/net/base64_test.cpp.
  // x-amz-checksum-crc32c of "hello world" as AWS computes it.
  uint32_t crc = crc32c::value(std::string_view("hello world"));
  EXPECT_EQ(crc32c_base64(crc), "yZRlqg==");
  EXPECT_EQ(crc32c_from_base64("yZRlqg=="), crc);
  EXPECT_EQ(crc32c_from_base64("aGVsbG8="), std::nullopt);
}

}  // namespace
}  // namespace strata::objstore
