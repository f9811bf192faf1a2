// `strata import rabbitmq`: a stopped RabbitMQ node's streams into a
// stopped strata node (import/rabbit_import.h says what is kept and how).
//
//   strata import rabbitmq --rabbitmq-dir DIR --definitions FILE
//       [--config NODE.json] [--data-dir DIR] [--vhost /] [--stream NAME]...
//       [--dry-run] [--json]
//
// DIR is the RabbitMQ node's directory ($RABBITMQ_MNESIA_BASE/<node>) or
// its stream/ subdirectory; FILE what `rabbitmqctl export_definitions`
// wrote. Exit 0 when every stream was imported (or was there already), 1
// when one failed (each named with why; the others are imported).
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "cli/command.h"
#include "cli/node_tools.h"
#include "common/stream_name.h"
#include "import/rabbit_import.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

struct ImportFlags {
  std::string config;
  std::string data_dir;
  std::string rabbit_dir;
  std::string definitions;
  std::string vhost = "/";
  // The strata vhost the streams land in (common/stream_name.h).
  std::string into_vhost = "/";
  std::vector<std::string> streams;
  bool dry_run = false;
};

Result<json> read_definitions(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(Errc::not_found, fmt::format("{}: cannot be read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::parse_error& e) {
    return Error(Errc::invalid_argument,
                 fmt::format("{}: not JSON (byte {}): {}", path, e.byte, e.what()));
  }
}

json stream_json(const import::StreamImport& s) {
  const StreamPlace place = split_stream_name(s.name);
  return {{"name", std::string(place.name)},
          {"strata_vhost", std::string(place.vhost)},
          {"dir", s.dir},
          {"outcome", s.outcome},
          {"error", s.error},
          {"first_offset", s.first_offset},
          {"next_offset", s.next_offset},
          {"segments", s.segments},
          {"chunks", s.chunks},
          {"tracking_chunks", s.tracking_chunks},
          {"messages", s.messages},
          {"bytes", s.bytes},
          {"publishers", s.publishers},
          {"offsets", s.offsets},
          {"ignored_arguments", s.ignored_arguments},
          {"notes", s.notes}};
}

void import_rabbitmq(Context& ctx, const ImportFlags& f) {
  const auto t0 = std::chrono::steady_clock::now();
  // stdout is the report (one JSON document with --json); the node's log
  // lines go to stderr with the progress.
  {
    auto logger = std::make_shared<spdlog::logger>(
        "import", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    logger->set_level(spdlog::default_logger()->level());
    spdlog::set_default_logger(std::move(logger));
  }
  auto cfg = load_tool_config(f.config, f.data_dir);
  if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("import"));
  auto defs = read_definitions(f.definitions);
  if (!defs.ok()) return ctx.fail(std::move(defs).error().with_context("import"));
  FileSystem& fs = posix_fs();
  auto layout = import::read_rabbit_layout(fs, f.rabbit_dir, *defs, f.vhost);
  if (!layout.ok()) return ctx.fail(std::move(layout).error().with_context("import"));
  std::vector<import::RabbitStream> todo;
  {
    const bool all = f.streams.empty();
    std::set<std::string> wanted(f.streams.begin(), f.streams.end());
    for (const auto& s : layout->streams) {
      if (all || wanted.erase(s.name)) todo.push_back(s);
    }
    // Stored under their names in the strata vhost asked for.
    for (auto& s : todo) {
      s.name = qualified_stream_name(f.into_vhost, s.name);
      if (Status v = validate_stream_name(s.name); !v.ok()) {
        return ctx.fail(std::move(v).error().with_context("import"));
      }
    }
    if (!wanted.empty()) {
      return ctx.fail(
          Error(Errc::not_found, fmt::format("import: {} is not a stream of vhost {} in {}",
                                             *wanted.begin(), f.vhost, f.definitions)));
    }
  }

  std::unique_ptr<node::Node> node;
  std::unique_ptr<server::OffsetStore> offsets;
  std::vector<std::string> undone;
  if (!f.dry_run) {
    node::NodeConfig nc = *cfg;
    // Chunks are appended one by one; the node syncs every stream when it
    // closes, before the import says it is done.
    nc.fsync = log::FsyncPolicy::never;
    auto opened = node::Node::open(std::move(nc));
    if (!opened.ok()) {
      Error e = std::move(opened).error();
      if (e.code == Errc::conflict) e.message += " (stop the node before importing into it)";
      return ctx.fail(std::move(e).with_context("import: opening the node"));
    }
    node = std::move(opened).value();
    server::OffsetStoreOptions oo;
    oo.flush_interval = std::chrono::milliseconds(0);
    auto o = server::OffsetStore::open(path_join(cfg->data_dir, "tracking"), oo);
    if (!o.ok()) return ctx.fail(std::move(o).error().with_context("import: the offset store"));
    offsets = std::move(o).value();
    auto u = import::undo_unfinished_imports(fs, cfg->data_dir, *node, *offsets);
    if (!u.ok()) return ctx.fail(std::move(u).error().with_context("import"));
    undone = std::move(u).value();
    for (const auto& n : undone) {
      std::cerr << fmt::format(
          "import: {} was left half-imported by an earlier run: removed, "
          "imported again\n",
          printable_stream(n));
    }
  }

  import::ImportOptions io;
  io.dry_run = f.dry_run;
  auto last = std::chrono::steady_clock::now();
  io.progress = [&](const import::ImportProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (p.bytes_done < p.bytes_total && now - last < std::chrono::seconds(1)) return;
    last = now;
    std::cerr << fmt::format(
        "import: {}: {} of {} ({:.0f} %)\n", printable_stream(p.stream),
        human_bytes(double(p.bytes_done)), human_bytes(double(p.bytes_total)),
        p.bytes_total ? 100.0 * double(p.bytes_done) / double(p.bytes_total) : 100.0);
  };
  std::vector<import::StreamImport> results;
  for (const auto& s : todo) {
    results.push_back(import::import_stream(fs, cfg->data_dir, node.get(), offsets.get(), s, io));
  }
  if (offsets) {
    if (Status s = offsets->close(); !s.ok()) {
      return ctx.fail(std::move(s).error().with_context("import: writing consumer offsets"));
    }
  }
  if (node) {
    if (Status s = node->close(); !s.ok()) {
      return ctx.fail(std::move(s).error().with_context("import: closing the node"));
    }
    node.reset();
    if (Status s = import::finish_imports(fs, cfg->data_dir); !s.ok()) {
      return ctx.fail(std::move(s).error().with_context("import"));
    }
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t bytes = 0;
  size_t imported = 0, failed = 0;
  for (const auto& r : results) {
    bytes += r.bytes;
    imported += r.outcome == "imported" ? 1 : 0;
    failed += r.outcome == "failed" ? 1 : 0;
  }
  ctx.exit_code = failed == 0 ? 0 : 1;
  if (ctx.json) {
    json streams = json::array();
    for (const auto& r : results) streams.push_back(stream_json(r));
    ctx.print_json({{"dry_run", f.dry_run},
                    {"vhost", f.vhost},
                    {"stream_dir", layout->stream_root},
                    {"streams", streams},
                    {"imported", imported},
                    {"failed", failed},
                    {"undone", undone},
                    {"unmatched_dirs", layout->unmatched},
                    {"other_vhosts", layout->other_vhosts},
                    {"bytes", bytes},
                    {"seconds", seconds}});
    return;
  }
  for (const auto& r : results) {
    if (r.outcome == "failed") {
      std::cout << fmt::format("  FAILED        {}: {}\n", printable_stream(r.name), r.error);
      continue;
    }
    std::cout << fmt::format(
        "  {:<13} {} offsets [{}, {}): {} messages in {} chunks, {} publisher(s), {} stored "
        "offset(s), {}\n",
        r.outcome, printable_stream(r.name), r.first_offset, r.next_offset, r.messages, r.chunks,
        r.publishers, r.offsets, human_bytes(double(r.bytes)));
    for (const auto& a : r.ignored_arguments) {
      std::cout << fmt::format("                argument {} ignored\n", a);
    }
    for (const auto& n : r.notes) std::cout << fmt::format("                {}\n", n);
  }
  for (const auto& d : layout->unmatched) {
    std::cout << fmt::format(
        "  not imported: {}/{}: no stream of vhost {} in the definitions "
        "maps to it\n",
        layout->stream_root, d, f.vhost);
  }
  for (const auto& q : layout->other_vhosts) {
    std::cout << fmt::format(
        "  not imported: {} (another vhost: pass --vhost to import that one, "
        "--into-vhost to choose where it lands)\n",
        q);
  }
  std::cout << fmt::format(
      "import{}: {} of {} stream(s) imported, {} failed; {} read in {:.1f} s "
      "({}/s)\n",
      f.dry_run ? " (dry run)" : "", imported, results.size(), failed, human_bytes(double(bytes)),
      seconds, human_bytes(seconds > 0 ? double(bytes) / seconds : 0));
}

Registrar reg_import([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("import", "Bring another system's streams into a stopped node");
  cmd->require_subcommand(1);
  auto f = std::make_shared<ImportFlags>();
  auto* rabbit = cmd->add_subcommand(
      "rabbitmq",
      "Import a stopped RabbitMQ node's streams (osiris segment files and the definitions\n"
      "export): every message at its offset with its timestamp and bytes, the streams'\n"
      "arguments, publishers' sequences and consumers' stored offsets. The strata node\n"
      "must be stopped.");
  rabbit
      ->add_option("--rabbitmq-dir", f->rabbit_dir,
                   "The RabbitMQ node's directory ($RABBITMQ_MNESIA_BASE/<node>) or its stream/")
      ->required();
  rabbit
      ->add_option("--definitions", f->definitions,
                   "The file `rabbitmqctl export_definitions` wrote (names the streams)")
      ->required();
  rabbit->add_option("--config", f->config, "The strata node's JSON configuration file");
  rabbit->add_option("--data-dir", f->data_dir, "The strata node's data directory");
  rabbit->add_option("--vhost", f->vhost, "The RabbitMQ vhost whose streams come in (default /)");
  rabbit->add_option("--into-vhost", f->into_vhost,
                     "The strata vhost they land in (default /; define it on the node to reach "
                     "them)");
  rabbit->add_option("--stream", f->streams, "Only this stream (repeatable)");
  rabbit->add_flag("--dry-run", f->dry_run, "Read and check everything; write nothing");
  rabbit->callback([&ctx, f] { import_rabbitmq(ctx, *f); });
});

}  // namespace
}  // namespace strata::cli
