// Assertions and fixtures every layer's tests use: ASSERT_OK / EXPECT_OK on
// anything with ok() and error().to_string() (Status, Result, ObjectStatus),
// and QuietLogs for tests that fail on purpose.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#define ASSERT_OK(expr)                                                 \
  do {                                                                  \
    auto&& assert_ok_s_ = (expr);                                       \
    ASSERT_TRUE(assert_ok_s_.ok()) << assert_ok_s_.error().to_string(); \
  } while (0)
#define EXPECT_OK(expr)                                                 \
  do {                                                                  \
    auto&& expect_ok_s_ = (expr);                                       \
    EXPECT_TRUE(expect_ok_s_.ok()) << expect_ok_s_.error().to_string(); \
  } while (0)

namespace strata::test {

// Silences logging for its lifetime (crash tests log every truncation).
class QuietLogs {
 public:
  QuietLogs() : level_(spdlog::get_level()) { spdlog::set_level(spdlog::level::off); }
  ~QuietLogs() { spdlog::set_level(level_); }

 private:
  spdlog::level::level_enum level_;
};

}  // namespace strata::test
