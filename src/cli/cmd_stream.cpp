// `strata stream delete --config NODE.json NAME`: deletes a stream of a
// node's data directory — its local log, every object under its key prefix
// and its catalog entry (docs/FORMATS.md, "Deleting a stream"). It opens the
// node itself, so the node must not be running: the data directory's lock
// refuses a second process with an error that says so.
#include <fmt/format.h>

#include <iostream>

#include "cli/command.h"
#include "node/node.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

struct DeleteFlags {
  std::string config;
  std::string data_dir;
  std::string name;
};

void run_delete(const DeleteFlags& f, Context& ctx) {
  auto cfg = node::load_node_config_file(f.config, f.data_dir, objstore::process_env());
  if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("stream delete"));
  auto n = node::Node::open(*cfg);
  if (!n.ok()) {
    return ctx.fail(std::move(n).error().with_context("stream delete: opening the node"));
  }
  Status s = (*n)->delete_stream(f.name);
  if (Status c = (*n)->close(); !c.ok() && s.ok()) s = c;
  if (!s.ok()) return ctx.fail(std::move(s).error().with_context("stream delete " + f.name));
  if (ctx.json) {
    return ctx.print_json({{"stream", f.name}, {"deleted", true}, {"data_dir", cfg->data_dir}});
  }
  std::cout << fmt::format(
      "stream {} deleted: its local log, its objects and its catalog entry are gone\n", f.name);
}

Registrar reg_stream([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("stream", "Streams of a node's data directory (node not running)");
  cmd->require_subcommand(1);
  auto f = std::make_shared<DeleteFlags>();
  auto* del = cmd->add_subcommand(
      "delete",
      "Delete a stream: its local log, its remote objects and its catalog entry (crash-safe: an "
      "interrupted deletion finishes when the node next opens)");
  del->add_option("--config", f->config, "The node's JSON configuration file")->required();
  del->add_option("--data-dir", f->data_dir, "Data directory (overrides the file's data_dir)");
  del->add_option("NAME", f->name, "The stream")->required();
  del->callback([f, &ctx] { run_delete(*f, ctx); });
});

}  // namespace
}  // namespace strata::cli
