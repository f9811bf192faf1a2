#include "log/offset_spec.h"

#include <gtest/gtest.h>

namespace strata::log {
namespace {

TEST(LogOffsetSpec, ParsesEveryForm) {
  EXPECT_EQ(*parse_offset_spec("first"), OffsetSpec::first());
  EXPECT_EQ(*parse_offset_spec("last"), OffsetSpec::last());
  EXPECT_EQ(*parse_offset_spec("next"), OffsetSpec::next());
  EXPECT_EQ(*parse_offset_spec("offset:17"), OffsetSpec::at_offset(17));
  EXPECT_EQ(*parse_offset_spec("17"), OffsetSpec::at_offset(17));
  EXPECT_EQ(*parse_offset_spec("timestamp:1700000000000"), OffsetSpec::at_timestamp(1700000000000));
  EXPECT_EQ(*parse_offset_spec("timestamp:-5"), OffsetSpec::at_timestamp(-5));
  for (auto s : {OffsetSpec::first(), OffsetSpec::last(), OffsetSpec::next(),
                 OffsetSpec::at_offset(UINT64_MAX), OffsetSpec::at_timestamp(3)}) {
    EXPECT_EQ(*parse_offset_spec(to_string(s)), s);
  }
}

TEST(LogOffsetSpec, RejectsGarbageWithTheTextInTheError) {
  for (auto bad : {"", "begin", "offset:", "offset:-1", "offset:1x", "timestamp:", "timestamp:abc",
                   "-3", "offset:99999999999999999999"}) {
    auto r = parse_offset_spec(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.code(), Errc::invalid_argument);
    EXPECT_NE(r.error().message.find(std::string("'") + bad + "'"), std::string::npos);
  }
}

}  // namespace
}  // namespace strata::log
