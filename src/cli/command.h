// How a module adds subcommands to `strata`: a cmd_<area>.cpp defines
//   static strata::cli::Registrar reg([](CLI::App& app, strata::cli::Context& ctx) { ... });
// Callbacks report failure by setting ctx.exit_code (and printing the error
// through ctx.fail), never by throwing out of main.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace strata::cli {

struct Context {
  bool json = false;  // --json: machine-readable output on stdout
  int exit_code = 0;
  // --log-level was given (it wins over a configuration's logging.level).
  bool log_level_given = false;

  // Prints an error (as {"error":{...}} with --json) and sets exit code 1.
  void fail(const Error& e);
  void fail(const std::string& message);
  // Prints a JSON document (one line) to stdout.
  void print_json(const nlohmann::json& j) const;
};

using Setup = std::function<void(CLI::App&, Context&)>;

struct Registrar {
  explicit Registrar(Setup setup);
};

// Every registered setup, in registration order.
std::vector<Setup>& registry();

// "1.5 MiB", "312 KiB" — for progress and summaries.
std::string human_bytes(double bytes);

}  // namespace strata::cli
