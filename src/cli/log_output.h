// The log line format `strata serve` takes with logging.format "json": one
// JSON object per line —
//   {"ts":"2026-12-05T19:55:01.123Z","level":"warn","thread":123,"msg":"..."}
// — with the time in UTC and the message escaped as JSON strings are.
#pragma once

#include <memory>
#include <spdlog/formatter.h>

namespace strata::cli {

std::unique_ptr<spdlog::formatter> json_log_formatter();

}  // namespace strata::cli
