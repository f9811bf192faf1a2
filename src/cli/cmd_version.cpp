#include "cli/command.h"

namespace strata::cli {
namespace {

Registrar reg_version([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("version", "Print the strata version");
  cmd->callback([&ctx] {
    if (ctx.json) {
      ctx.print_json({{"version", "0.1.0"}});
    } else {
      std::cout << "strata 0.1.0\n";
    }
  });
});

}  // namespace
}  // namespace strata::cli
