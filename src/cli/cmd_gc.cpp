// `strata gc`: deletes objects under a node's key prefix that no persisted
// manifest references and that are older than the grace period — never one
// a manifest references, including one persisted while gc runs (the rules
// are in src/tier/gc_plan.h). Works beside a running node: the catalog is
// opened read-only.
//
//   strata gc --config NODE.json [--dry-run] [--grace DURATION] [--json]
//
// Exit 0 when every candidate was deleted (or, with --dry-run, planned);
// 1 when some delete failed (they are left for the next run) or gc could
// not run.
#include <fmt/format.h>

#include <iostream>

#include "cli/cmd_log_demo.h"
#include "cli/command.h"
#include "cli/node_tools.h"
#include "common/stream_name.h"
#include "tier/gc_run.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

struct GcFlags {
  std::string config;
  std::string data_dir;
  bool dry_run = false;
  std::string grace = "1h";
};

json object_json(const tier::GcResult& r, const tier::GcObject& o) {
  json j = {{"key", o.key},
            {"stream", o.component.empty() ? json(nullptr) : json(r.stream_of(o))},
            {"size", o.size},
            {"verdict", std::string(tier::gc_verdict_name(o.verdict))}};
  if (o.age_ms) j["age_ms"] = *o.age_ms;
  return j;
}

json objects_json(const tier::GcResult& r, const std::vector<tier::GcObject>& v) {
  json a = json::array();
  for (const auto& o : v) a.push_back(object_json(r, o));
  return a;
}

uint64_t bytes_of(const std::vector<tier::GcObject>& v) {
  uint64_t n = 0;
  for (const auto& o : v) n += o.size;
  return n;
}

void print_objects(const char* what, const std::vector<tier::GcObject>& v) {
  for (const auto& o : v) {
    std::cout << fmt::format("  {:<16} {} ({}{}{})\n", what, o.key, human_bytes(double(o.size)),
                             o.age_ms ? ", " + human_age(*o.age_ms) + " old" : "",
                             std::string_view(what) == "kept"
                                 ? ", " + std::string(tier::gc_verdict_name(o.verdict))
                                 : "");
  }
}

void gc(Context& ctx, const GcFlags& f) {
  auto grace = parse_duration_ms("--grace", f.grace);
  if (!grace.ok()) return ctx.fail(grace.error());
  auto tools = open_node_tools(f.config, f.data_dir);
  if (!tools.ok()) return ctx.fail(std::move(tools).error().with_context("gc"));
  Progress progress(!ctx.json);
  tier::GcOptions o;
  o.prefix = tools->config.tiering.key_prefix;
  o.grace_ms = *grace;
  o.dry_run = f.dry_run;
  o.progress = [&](const std::string& line) { progress.update("gc: " + line); };
  auto r = tier::run_gc(*tools->store, tools->catalog, o);
  progress.done();
  if (!r.ok()) return ctx.fail(std::move(r).error().with_context("gc"));
  ctx.exit_code = r->failed.empty() ? 0 : 1;
  if (ctx.json) {
    json failed = json::array();
    for (const auto& x : r->failed) {
      json j = object_json(*r, x.object);
      j["error"] = x.error;
      failed.push_back(j);
    }
    json counts = json::object();
    for (auto [v, n] : r->counts) counts[std::string(tier::gc_verdict_name(v))] = n;
    json unknown = json::object();
    for (const auto& [s, why] : r->unknown_trees) unknown[s] = why;
    ctx.print_json({{"dry_run", f.dry_run},
                    {"grace_ms", *grace},
                    {"prefix", o.prefix},
                    {"listed", r->listed},
                    {"rounds", r->rounds},
                    {f.dry_run ? "would_delete" : "deleted", objects_json(*r, r->deleted)},
                    {"deleted_bytes", bytes_of(r->deleted)},
                    {"failed", failed},
                    {"kept", objects_json(*r, r->kept)},
                    {"skipped", objects_json(*r, r->skipped)},
                    {"counts", counts},
                    {"unknown_trees", unknown}});
    return;
  }
  print_objects(f.dry_run ? "would delete" : "deleted", r->deleted);
  for (const auto& x : r->failed) {
    std::cout << fmt::format("  {:<16} {}: {}\n", "FAILED", x.object.key, x.error);
  }
  print_objects("skipped", r->skipped);
  print_objects("kept", r->kept);
  for (const auto& [s, why] : r->unknown_trees) {
    std::cout << fmt::format("  stream {}: every object kept, its manifest could not be read: {}\n",
                             printable_name(s), why);
  }
  std::cout << fmt::format(
      "gc{}: {} objects listed under {}; {} {} ({}), {} failed, {} kept besides the referenced, "
      "{} skipped (their stream changed while planning); grace {}\n",
      f.dry_run ? " (dry run)" : "", r->listed, o.prefix.empty() ? "the bucket" : o.prefix + "/",
      f.dry_run ? "would delete" : "deleted", r->deleted.size(),
      human_bytes(double(bytes_of(r->deleted))), r->failed.size(), r->kept.size(),
      r->skipped.size(), human_age(*grace));
}

Registrar reg_gc([](CLI::App& app, Context& ctx) {
  auto f = std::make_shared<GcFlags>();
  auto* cmd = app.add_subcommand(
      "gc",
      "Delete objects under the node's key prefix that no persisted manifest references and that "
      "are\nolder than the grace. Never deletes what a manifest references, nor what a persist in "
      "flight will.\nSafe beside a running node. Exit 1 if a delete failed.");
  cmd->add_option("--config", f->config, "The node's JSON configuration file")->required();
  cmd->add_option("--data-dir", f->data_dir, "Overrides the configuration's data_dir");
  cmd->add_flag("--dry-run", f->dry_run, "Plan and print; delete nothing");
  cmd->add_option("--grace", f->grace, "Keep objects younger than this (ms, s, m, h, d; e.g. 90m)")
      ->capture_default_str();
  cmd->callback([&ctx, f] { gc(ctx, *f); });
});

}  // namespace
}  // namespace strata::cli
