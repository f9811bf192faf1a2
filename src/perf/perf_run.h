// One `strata perf` run: create the stream, connect consumers (subscribed
// first, so they see every message), then publishers; print a progress line
// every second; stop after the time or message count, wait for confirms and
// consumers to catch up, and return the summary.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "perf/options.h"

namespace strata::perf {

struct PerfSummary {
  nlohmann::json json;  // everything, for --json
  bool ok = false;      // no errors, everything published was confirmed and consumed
};

// Progress lines go to `progress`. Fails only if the run cannot start
// (connect, create stream); problems during the run are in the summary.
Result<PerfSummary> run_perf(const PerfOptions& o, std::ostream& progress);

// The summary as the human-readable block printed at the end.
std::string format_summary(const nlohmann::json& j);

}  // namespace strata::perf
