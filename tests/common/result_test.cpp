#include "common/result.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

Result<int> parse(int x) {
  if (x < 0) return Error(Errc::invalid_argument, "negative: " + std::to_string(x));
  return x * 2;
}

Result<int> twice(int x) {
  STRATA_ASSIGN_OR_RETURN(int y, parse(x));
  STRATA_ASSIGN_OR_RETURN(int z, parse(y));
  return z;
}

Status check(int x) {
  STRATA_TRY(parse(x));
  return Status::OK();
}

}  // namespace

TEST(Result, ValueAndErrorPropagation) {
  auto a = twice(3);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 12);
  auto b = twice(-1);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.code(), Errc::invalid_argument);
  EXPECT_EQ(b.error().message, "negative: -1");
  EXPECT_TRUE(check(1).ok());
  EXPECT_EQ(check(-5).code(), Errc::invalid_argument);
}

TEST(Result, ContextPrefixesMessage) {
  Error e = Error(Errc::corrupt, "bad crc").with_context("segment 00000000000000000000.segment");
  EXPECT_EQ(e.message, "segment 00000000000000000000.segment: bad crc");
  EXPECT_EQ(e.to_string(), "corrupt: segment 00000000000000000000.segment: bad crc");
}

TEST(Result, EveryCodeHasAName) {
  for (int c = 0; c <= int(Errc::internal); ++c) {
    EXPECT_NE(errc_name(Errc(c)), "unknown") << c;
  }
}

// Misuse stops the process with a message in every build type (not a plain
// assert, which a release build compiles out and then reads the wrong
// member of the variant).
TEST(ResultDeathTest, ValueOfAnErrorStopsWithTheError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Result<int> r = Error(Errc::not_found, "stream s1 is missing");
  EXPECT_DEATH((void)r.value(), "Result::value\\(\\) of an error: not_found: stream s1 is missing");
  EXPECT_DEATH((void)*r, "Result::value\\(\\) of an error");
}

TEST(ResultDeathTest, ErrorOfAValueStops) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Result<int> r = 7;
  EXPECT_DEATH((void)r.error(), "Result::error\\(\\) of a value");
  Status ok = Status::OK();
  EXPECT_DEATH((void)ok.error(), "Status::error\\(\\) of OK");
}

}  // namespace strata
