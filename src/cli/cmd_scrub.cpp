// `strata scrub`: checks a node's remote tier against its catalog — for each
// stream (or one), its current manifest tree against the bucket's listing
// and the fragments' own bytes (src/tier/scrub.h has the rules). Works
// beside a running node: the catalog is opened read-only.
//
//   strata scrub --config NODE.json [--stream S] [--full | --sample N] [--json]
//
// Exit 0: clean (orphans alone are not damage); 1: damage found (or the
// scrub could not run); 2: no damage found, but some objects could not be
// read (the scrub is incomplete; run it again).
#include <fmt/format.h>

#include <iostream>

#include "cli/cmd_log_demo.h"
#include "cli/command.h"
#include "cli/node_tools.h"
#include "tier/scrub_run.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

struct ScrubFlags {
  std::string config;
  std::string data_dir;
  std::string stream;
  bool full = false;
  uint64_t sample = 8;
  uint64_t seed = 0;
  size_t concurrency = 4;
};

json finding_json(const tier::ScrubFinding& f) {
  json j = {{"kind", std::string(tier::finding_name(f.kind))},
            {"damage", tier::is_damage(f.kind)},
            {"key", f.key},
            {"detail", f.detail}};
  if (f.first_offset) j["first_offset"] = *f.first_offset;
  if (f.next_offset) j["next_offset"] = *f.next_offset;
  if (f.age_ms) j["age_ms"] = *f.age_ms;
  if (f.size) j["size"] = *f.size;
  return j;
}

json report_json(const tier::ScrubReport& r) {
  json findings = json::array();
  json counts = json::object();
  for (const auto& f : r.findings) {
    findings.push_back(finding_json(f));
    counts[std::string(tier::finding_name(f.kind))] =
        counts.value(std::string(tier::finding_name(f.kind)), 0) + 1;
  }
  return {{"stream", r.stream},
          {"in_catalog", r.in_catalog},
          {"epoch", r.epoch},
          {"revision", r.revision},
          {"root_key", r.root_key.empty() ? json(nullptr) : json(r.root_key)},
          {"first_offset", r.first_offset},
          {"next_offset", r.next_offset},
          {"fragments", r.fragments},
          {"groups", r.groups},
          {"fragment_bytes", r.fragment_bytes},
          {"objects_listed", r.objects_listed},
          {"headers_checked", r.headers_checked},
          {"fragments_verified", r.fragments_verified},
          {"damaged", r.damaged()},
          {"incomplete", r.incomplete()},
          {"counts", counts},
          {"findings", findings}};
}

std::string range_of(const tier::ScrubFinding& f) {
  if (f.first_offset && f.next_offset)
    return fmt::format(" [{}, {})", *f.first_offset, *f.next_offset);
  if (f.first_offset) return fmt::format(" @{}", *f.first_offset);
  return "";
}

void print_report(const tier::ScrubReport& r) {
  std::string verdict = r.damaged() ? "DAMAGED" : r.incomplete() ? "incomplete" : "clean";
  if (!r.in_catalog) {
    std::cout << fmt::format("stream {}: not in the catalog; {} objects listed: {}\n", r.stream,
                             r.objects_listed, verdict);
  } else if (r.root_key.empty()) {
    std::cout << fmt::format("stream {}: nothing persisted yet; {} objects listed: {}\n", r.stream,
                             r.objects_listed, verdict);
  } else {
    std::cout << fmt::format(
        "stream {}: [{}, {}) in {} fragments ({}) and {} groups, revision {}; {} objects "
        "listed, {} headers and indexes read, {} fragments verified whole: {}\n",
        r.stream, r.first_offset, r.next_offset, r.fragments, human_bytes(double(r.fragment_bytes)),
        r.groups, r.revision, r.objects_listed, r.headers_checked, r.fragments_verified, verdict);
  }
  for (const auto& f : r.findings) {
    if (f.kind == tier::FindingKind::orphan) {
      std::cout << fmt::format("  orphan          {}{} ({}{})\n", f.key, range_of(f),
                               f.size ? human_bytes(double(*f.size)) : "?",
                               f.age_ms ? ", " + human_age(*f.age_ms) + " old" : "");
      continue;
    }
    std::cout << fmt::format("  {:<15} {}{}: {}\n", tier::finding_name(f.kind), f.key, range_of(f),
                             f.detail);
  }
}

void scrub(Context& ctx, const ScrubFlags& f) {
  auto tools = open_node_tools(f.config, f.data_dir);
  if (!tools.ok()) return ctx.fail(std::move(tools).error().with_context("scrub"));
  std::vector<std::string> streams;
  if (!f.stream.empty()) {
    streams.push_back(f.stream);
  } else {
    auto entries = tools->catalog.list();
    if (!entries.ok()) return ctx.fail(std::move(entries).error().with_context("scrub"));
    for (const auto& e : *entries) streams.push_back(e.stream);
  }
  Progress progress(!ctx.json);
  tier::ScrubOptions o;
  o.full = f.full;
  o.sample = f.sample;
  o.seed = f.seed;
  o.concurrency = f.concurrency;
  std::string current;
  o.progress = [&](uint64_t done, uint64_t total) {
    progress.update(fmt::format("scrub {}: {}/{} fragments checked", current, done, total));
  };
  json out_streams = json::array();
  bool damaged = false, incomplete = false;
  size_t damaged_streams = 0, findings = 0, orphans = 0;
  for (const auto& name : streams) {
    auto keys = tier::ObjectKeys::make(tools->config.tiering.key_prefix, name);
    if (!keys.ok()) return ctx.fail(std::move(keys).error().with_context("scrub"));
    current = name;
    auto r = tier::scrub_stream(*tools->store, tools->catalog, *keys, o);
    progress.done();
    if (!r.ok()) {
      return ctx.fail(std::move(r).error().with_context("scrub of stream " + name));
    }
    damaged = damaged || r->damaged();
    incomplete = incomplete || r->incomplete();
    damaged_streams += r->damaged() ? 1 : 0;
    orphans += r->count(tier::FindingKind::orphan);
    findings += r->findings.size() - r->count(tier::FindingKind::orphan);
    if (ctx.json) {
      out_streams.push_back(report_json(*r));
    } else {
      print_report(*r);
    }
  }
  ctx.exit_code = damaged ? 1 : incomplete ? 2 : 0;
  if (ctx.json) {
    ctx.print_json({{"mode", f.full ? "full" : "sample"},
                    {"sample", f.full ? json(nullptr) : json(f.sample)},
                    {"streams", out_streams},
                    {"damaged", damaged},
                    {"incomplete", incomplete},
                    {"exit", ctx.exit_code}});
    return;
  }
  std::cout << fmt::format(
      "scrub: {} stream(s), {} with damage, {} finding(s) besides {} "
      "orphan(s){}\n",
      streams.size(), damaged_streams, findings, orphans,
      incomplete ? "; some objects could not be read: incomplete" : "");
}

Registrar reg_scrub([](CLI::App& app, Context& ctx) {
  auto f = std::make_shared<ScrubFlags>();
  auto* cmd = app.add_subcommand(
      "scrub",
      "Check a node's remote tier: every stream's manifest against the bucket and the fragments' "
      "bytes.\nReports missing objects, size and CRC mismatches, headers disagreeing with the "
      "manifest, gaps, overlaps,\nunparsable keys (damage) and orphans (objects nothing "
      "references: reported, not damage).\nExit 0 clean, 1 damage, 2 incomplete (objects that "
      "could not be read). Safe beside a running node.");
  cmd->add_option("--config", f->config, "The node's JSON configuration file")->required();
  cmd->add_option("--data-dir", f->data_dir, "Overrides the configuration's data_dir");
  cmd->add_option("--stream", f->stream, "Scrub this stream only");
  auto* full = cmd->add_flag("--full", f->full, "Read every fragment whole and verify every CRC");
  auto* sample = cmd->add_option("--sample", f->sample,
                                 "Otherwise: headers and indexes of every fragment, and this many "
                                 "fragments at random read whole")
                     ->capture_default_str();
  full->excludes(sample);
  cmd->add_option("--seed", f->seed, "Seed of the sample (0: random)");
  cmd->add_option("--concurrency", f->concurrency, "Requests in flight")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->callback([&ctx, f] { scrub(ctx, *f); });
});

}  // namespace
}  // namespace strata::cli
