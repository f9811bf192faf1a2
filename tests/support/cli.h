// Running the real `strata` binary from tests (STRATA_BIN, set by the test's
// CMakeLists): combined output, or stdout and stderr apart, and the last
// JSON document it printed.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::test {

// stdout and stderr together.
inline RunResult strata_cmd(std::vector<std::string> args) {
  args.insert(args.begin(), STRATA_BIN);
  return run(args);
}

struct CliOut {
  int status;
  std::string out, err;
};

// stdout and stderr kept apart.
inline CliOut strata_cli(const std::vector<std::string>& args) {
  TempDir logs;
  std::vector<std::string> argv = {STRATA_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  auto p = Process::spawn(argv, logs.path());
  auto st = p.wait(std::chrono::seconds(120));
  return CliOut{st.value_or(-1), p.stdout_text(), p.stderr_text()};
}

inline bool contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

// The last line of `out` that parses as a JSON object (null if none).
inline nlohmann::json last_json(const std::string& out) {
  size_t end = out.size();
  while (end > 0) {
    size_t start = out.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string line = out.substr(start, end - start);
    if (!line.empty() && line[0] == '{') return nlohmann::json::parse(line, nullptr, false);
    if (start == 0) break;
    end = start - 1;
  }
  return nlohmann::json();
}

}  // namespace strata::test
