// judge_range_answer: what the S3 backend makes of a ranged GET's status and
// headers before it reads the body (src/objstore/s3_range.h), case by case.
#include "objstore/s3_range.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace strata::objstore {
namespace {

struct Answer {
  int status;
  std::optional<std::string> content_range, content_length;
};

std::variant<RangePlan, RangeRefusal> judge(const Answer& a, uint64_t offset, uint64_t window) {
  return judge_range_answer(a.status, a.content_range ? &*a.content_range : nullptr,
                            a.content_length ? &*a.content_length : nullptr, offset, window);
}

void expect_plan(const Answer& a, uint64_t offset, uint64_t window, uint64_t expected,
                 bool cut_after = false) {
  auto j = judge(a, offset, window);
  const auto* plan = std::get_if<RangePlan>(&j);
  ASSERT_TRUE(plan) << "refused: " << std::get<RangeRefusal>(j).message;
  EXPECT_EQ(plan->expected, expected);
  EXPECT_EQ(plan->cut_after, cut_after);
}

void expect_refusal(const Answer& a, uint64_t offset, uint64_t window, RetryClass rc,
                    const std::string& says) {
  auto j = judge(a, offset, window);
  const auto* no = std::get_if<RangeRefusal>(&j);
  ASSERT_TRUE(no) << "accepted an answer that should be refused: " << says;
  EXPECT_EQ(no->retry, rc) << no->message;
  EXPECT_NE(no->message.find(says), std::string::npos) << no->message;
}

TEST(RangeAnswer, PartialContentCoveringTheWindowIsRead) {
  expect_plan({206, "bytes 10-19/100", "10"}, 10, 10, 10);
  // The object ends inside the window: a short count.
  expect_plan({206, "bytes 90-99/100", "10"}, 90, 50, 10);
  // Unknown total, no Content-Length (chunked).
  expect_plan({206, "bytes 0-4/*", std::nullopt}, 0, 5, 5);
}

TEST(RangeAnswer, PartialContentNotCoveringTheWindowIsTransient) {
  expect_refusal({206, "bytes 5-9/100", "5"}, 0, 10, RetryClass::transient,
                 "does not cover bytes=0-9");
  expect_refusal({206, "bytes 5-9/100", "5"}, 5, 10, RetryClass::transient,
                 "does not cover bytes=5-14");
  expect_refusal({206, std::nullopt, "5"}, 0, 5, RetryClass::transient,
                 "206 with Content-Range '(none)'");
  expect_refusal({206, "bytes x-y/z", "5"}, 0, 5, RetryClass::transient,
                 "206 with Content-Range 'bytes x-y/z'");
  expect_refusal({206, "bytes 0-9/100", "1010"}, 0, 10, RetryClass::transient,
                 "Content-Length 1010 does not match Content-Range bytes 0-9/100 (10 bytes)");
  expect_refusal({206, "bytes 0-9/100", "ten"}, 0, 10, RetryClass::transient,
                 "Content-Length 'ten'");
}

TEST(RangeAnswer, MoreThanAskedIsFatal) {
  expect_refusal({206, "bytes 0-99/100", "100"}, 0, 10, RetryClass::fatal,
                 "more than asked: it answered bytes=0-9 (10 bytes) with Content-Range bytes "
                 "0-99/100 (100 bytes)");
  expect_refusal({206, "bytes 0-19/100", "20"}, 10, 10, RetryClass::fatal, "more than asked");
  // A Range the server dropped: 200 with the whole object.
  expect_refusal({200, std::nullopt, "100"}, 10, 10, RetryClass::fatal,
                 "ignored the Range header: it answered bytes=10-19 (10 bytes asked) with 200 "
                 "and the whole object of 100 bytes");
  expect_refusal({200, std::nullopt, "100"}, 0, 99, RetryClass::fatal, "ignored the Range header");
  expect_refusal({200, std::nullopt, std::nullopt}, 0, 1000, RetryClass::fatal,
                 "200 and no Content-Length");
}

TEST(RangeAnswer, WholeObjectThatIsExactlyTheWindowIsRead) {
  expect_plan({200, std::nullopt, "100"}, 0, 100, 100);
  expect_plan({200, std::nullopt, "100"}, 0, 1 << 20, 100);
  // An empty object has no byte 0, as a 416 would say.
  expect_refusal({200, std::nullopt, "0"}, 0, 1, RetryClass::fatal,
                 "range start 0 is not below the object size 0");
}

TEST(RangeAnswer, StartAtOrPastTheEndIsFatal) {
  expect_refusal({200, std::nullopt, "100"}, 100, 10, RetryClass::fatal,
                 "range start 100 is not below the object size 100");
  expect_refusal({206, "bytes 0-9/10", "10"}, 10, 5, RetryClass::fatal,
                 "range start 10 is not below the object size 10");
}

TEST(RangeAnswer, S3rversAnswerToTheFirstByteIsCutAfterIt) {
  // s3rver 3.7.1 reads bytes=0-0 as bytes=0-.
  expect_plan({206, "bytes 0-9/10", "10"}, 0, 1, 1, /*cut_after=*/true);
  // Only that request: bytes=1-1 answered with 1-9 is more than asked.
  expect_refusal({206, "bytes 1-9/10", "9"}, 1, 1, RetryClass::fatal, "more than asked");
}

TEST(RangeAnswer, OtherSuccessStatusesAreTransient) {
  expect_refusal({204, std::nullopt, "0"}, 0, 10, RetryClass::transient,
                 "HTTP 204 to a ranged GET");
}

}  // namespace
}  // namespace strata::objstore
