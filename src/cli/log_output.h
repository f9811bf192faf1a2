// The log line format `strata serve` takes with logging.format "json": one
// JSON object per line —
//   {"ts":"2026-12-05T19:55:01.123Z","level":"warn","thread":123,"msg":"..."}
// — with the time in UTC and the message escaped as JSON strings are.
#pragma once

#include <spdlog/formatter.h>

#include <memory>

namespace strata::cli {

std::unique_ptr<spdlog::formatter> json_log_formatter();
// The text format (spdlog's default pattern) with the message's control
// characters escaped as \xNN, so that every event is one line.
std::unique_ptr<spdlog::formatter> text_log_formatter();

}  // namespace strata::cli
