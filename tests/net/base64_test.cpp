// Base64 as S3 (checksums, continuation tokens) and etcd's gateway (keys and
// values) use it: padded, and a malformed text is refused, not guessed at.
#include "net/base64.h"

#include <gtest/gtest.h>

namespace strata::net {
namespace {

TEST(Base64, KnownVectors) {
  EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
  EXPECT_EQ(base64_decode("aGVsbG8="), "hello");
  EXPECT_EQ(base64_decode("aGVsbA=="), "hell");
  EXPECT_EQ(base64_decode("aGVs"), "hel");
  EXPECT_EQ(base64_decode("a"), std::nullopt);
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_decode(""), "");
}

TEST(Base64, EveryByteRoundTrips) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(char(i));
  for (size_t n = 0; n <= all.size(); n += 37) {
    const std::string s = all.substr(0, n);
    EXPECT_EQ(base64_decode(base64_encode(s)), s) << n;
  }
}

TEST(Base64, TextOutsideTheAlphabetIsRefused) {
  EXPECT_EQ(base64_decode("aGV*"), std::nullopt);
  EXPECT_EQ(base64_decode("aGVsbG8"), std::nullopt);
}

}  // namespace
}  // namespace strata::net
