// strata: the command-line face of every module (docs/ARCHITECTURE.md, cli/).
#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/command.h"
#include "common/version.h"

namespace strata::cli {

std::vector<Setup>& registry() {
  static std::vector<Setup> r;
  return r;
}

Registrar::Registrar(Setup setup) {
  registry().push_back(std::move(setup));
}

void Context::fail(const Error& e) {
  exit_code = 1;
  if (json) {
    print_json({{"error", {{"code", std::string(errc_name(e.code))}, {"message", e.message}}}});
  } else {
    std::cerr << "strata: " << e.to_string() << "\n";
  }
}

void Context::fail(const std::string& message) {
  fail(Error(Errc::invalid_argument, message));
}

void Context::print_json(const nlohmann::json& j) const {
  std::cout << j.dump() << std::endl;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

}  // namespace strata::cli

int main(int argc, char** argv) {
  using namespace strata::cli;
  CLI::App app{"strata: tiered stream storage (local log + object storage) and Raft metadata"};
  app.require_subcommand(1);
  app.fallthrough();
  Context ctx;
  app.add_flag("--json", ctx.json, "Machine-readable JSON output");
  std::string level = "warn";
  // A typo ("verbose") must be refused, not read by spdlog as "off".
  auto* level_opt = app.add_option("--log-level", level,
                                   "trace|debug|info|warn|error|critical|off (strata serve: its "
                                   "logging.level, else info)");
  level_opt->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.set_version_flag("--version", std::string(strata::kStrataVersion));
  for (auto& setup : registry()) setup(app, ctx);
  app.parse_complete_callback([&] {
    ctx.log_level_given = level_opt->count() > 0;
    spdlog::set_level(spdlog::level::from_str(level));
  });
  spdlog::set_default_logger(spdlog::default_logger());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return ctx.exit_code;
}
