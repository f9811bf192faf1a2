#include "cli/command.h"
#include "common/version.h"

namespace strata::cli {
namespace {

Registrar reg_version([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("version", "Print the strata version");
  cmd->callback([&ctx] {
    if (ctx.json) {
      ctx.print_json({{"version", kStrataVersion}});
    } else {
      std::cout << "strata " << kStrataVersion << "\n";
    }
  });
});

}  // namespace
}  // namespace strata::cli
