// `strata catalog`: look at a node's embedded catalog (read-only).
//   strata catalog ls DIR [--json]            capacity, usage and every stream
//   strata catalog show DIR STREAM [--json]   one stream's epoch, revision, root key
// Both open DIR/catalog.slots read-only: they take no lock, so they work
// beside a running node, and never write (not even recovery).
#include <fmt/format.h>

#include <iostream>

#include "catalog/embedded_catalog.h"
#include "cli/command.h"
#include "common/stream_name.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;
using namespace strata::catalog;

// Root keys are bytes to the catalog, and a damaged file's stream names
// could be; JSON needs UTF-8 text.
json text_or_hex(const std::string& s) {
  try {
    (void)json(s).dump();
    return s;
  } catch (const json::exception&) {
    return json{{"hex", to_hex(s)}};
  }
}

json entry_json(const StreamEntry& e) {
  return {{"stream", text_or_hex(e.stream)},
          {"epoch", e.epoch},
          {"revision", e.revision},
          {"root_key", e.root_key.empty() ? json(nullptr) : text_or_hex(e.root_key)}};
}

Result<std::unique_ptr<EmbeddedCatalog>> open_read_only(const std::string& dir) {
  EmbeddedCatalogOptions o;
  o.read_only = true;
  return EmbeddedCatalog::open(posix_fs(), dir, o);
}

void ls(Context& ctx, const std::string& dir) {
  auto c = open_read_only(dir);
  if (!c.ok()) return ctx.fail(c.error());
  auto entries = (*c)->list();
  if (!entries.ok()) return ctx.fail(entries.error());
  const EmbeddedCatalogInfo i = (*c)->info();
  if (ctx.json) {
    json streams = json::array();
    for (const auto& e : *entries) streams.push_back(entry_json(e));
    ctx.print_json({{"catalog", (*c)->describe()},
                    {"capacity", i.capacity},
                    {"streams_used", i.streams},
                    {"revision_floor", i.revision_floor},
                    {"file_bytes", i.file_bytes},
                    {"wal", {{"bytes", i.wal_bytes}, {"used", i.wal_bytes_used}}},
                    {"streams", std::move(streams)}});
    return;
  }
  std::cout << fmt::format("catalog   {}\n", (*c)->describe());
  // The file's size now; it grows with the streams up to catalog.capacity.
  std::cout << fmt::format("streams   {} of {} the file holds now\n", i.streams, i.capacity);
  std::cout << fmt::format("file      {}, WAL {} of {} in use\n", human_bytes(double(i.file_bytes)),
                           human_bytes(double(i.wal_bytes_used)), human_bytes(double(i.wal_bytes)));
  size_t w = 6;
  for (const auto& e : *entries) w = std::max(w, printable_name(e.stream).size());
  std::cout << "\n"
            << fmt::format("{:<{}}  {:>20}  {:>20}  {}\n", "STREAM", w, "EPOCH", "REVISION",
                           "ROOT_KEY");
  for (const auto& e : *entries) {
    std::cout << fmt::format("{:<{}}  {:>20}  {:>20}  {}\n", printable_name(e.stream), w, e.epoch,
                             e.revision, e.root_key.empty() ? "-" : printable_name(e.root_key));
  }
}

void show(Context& ctx, const std::string& dir, const std::string& stream) {
  auto c = open_read_only(dir);
  if (!c.ok()) return ctx.fail(c.error());
  auto e = (*c)->get(stream);
  if (!e.ok()) return ctx.fail(e.error());
  if (ctx.json) {
    ctx.print_json(entry_json(*e));
    return;
  }
  std::cout << fmt::format("stream    {}\n", printable_name(e->stream));
  std::cout << fmt::format("epoch     {}\n", e->epoch);
  std::cout << fmt::format("revision  {}\n", e->revision);
  std::cout << fmt::format("root_key  {}\n", e->root_key.empty() ? "- (not persisted yet)"
                                                                 : printable_name(e->root_key));
}

Registrar reg_catalog([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("catalog", "The node's stream catalog (epoch, root, revision)");
  cmd->require_subcommand(1);

  static std::string ls_dir;
  auto* l = cmd->add_subcommand("ls", "List every stream of DIR/catalog.slots (read-only)");
  l->add_option("dir", ls_dir, "Directory holding catalog.slots")->required();
  l->callback([&ctx] { ls(ctx, ls_dir); });

  static std::string show_dir, show_stream;
  auto* s = cmd->add_subcommand("show", "Show one stream of DIR/catalog.slots (read-only)");
  s->add_option("dir", show_dir, "Directory holding catalog.slots")->required();
  s->add_option("stream", show_stream, "Stream name")->required();
  s->callback([&ctx] { show(ctx, show_dir, show_stream); });
});

}  // namespace
}  // namespace strata::cli
