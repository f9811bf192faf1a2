// `strata recover --from-bucket`: rebuilds the embedded catalog's entries
// from the roots in the bucket, for a node whose disk — and the catalog on
// it — was lost while its bucket was not. Each stream under the node's key
// prefix gets an entry naming its newest root that decodes (highest epoch,
// then the latest written); the node then serves it again from the bucket
// at its next open (node/stream_open.cpp, recover_from_catalog). The etcd
// catalog outlives a disk: nothing to rebuild there.
//
//   strata recover --from-bucket --config NODE.json [--dry-run] [--json]
//
// The node must be stopped (the catalog file's lock says so). A stream
// already in the catalog is left as it is. The embedded catalog keeps no
// settings: a recovered stream runs with the node's configuration until its
// retention is altered. Exit 0 when every stream found was recovered (or
// was there); 1 when some could not be (named, with why).
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "catalog/embedded_catalog.h"
#include "cli/command.h"
#include "cli/node_tools.h"
#include "common/name_component.h"
#include "common/stream_name.h"
#include "tier/gc_plan.h"
#include "tier/manifest_codec.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

struct RecoverFlags {
  std::string config;
  std::string data_dir;
  bool from_bucket = false;
  bool dry_run = false;
};

struct RootSeen {
  std::string key;
  uint64_t epoch = 0;
  int64_t last_modified_ms = 0;
};

// One stream found in the bucket and what became of it.
struct Found {
  std::string component;
  std::string stream;   // empty when the component does not decode
  std::string outcome;  // recovered, would_recover, in_catalog, failed
  std::string root_key;
  uint64_t epoch = 0;
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  std::string error;
};

// The roots under `prefix`, by stream component, newest first.
Result<std::map<std::string, std::vector<RootSeen>>> list_roots(objstore::ObjectStore& store,
                                                                const std::string& prefix) {
  std::map<std::string, std::vector<RootSeen>> out;
  objstore::ListRequest req;
  req.prefix = prefix.empty() ? "" : prefix + "/";
  for (;;) {
    auto page = store.list(req);
    if (!page.ok()) return page.error().to_error().with_context("listing " + req.prefix);
    for (const auto& o : page->objects) {
      auto k = tier::parse_node_key(prefix, o.key);
      if (!k || k->parsed.type != tier::ObjectType::root) continue;
      out[k->component].push_back(RootSeen{o.key, k->parsed.epoch, o.last_modified_ms.value_or(0)});
    }
    if (page->next_token.empty()) break;
    req.continuation_token = page->next_token;
  }
  for (auto& [component, roots] : out) {
    std::sort(roots.begin(), roots.end(), [](const RootSeen& a, const RootSeen& b) {
      return a.epoch != b.epoch ? a.epoch > b.epoch : a.last_modified_ms > b.last_modified_ms;
    });
  }
  return out;
}

void recover(Context& ctx, const RecoverFlags& f) {
  if (!f.from_bucket) {
    return ctx.fail(Error(Errc::invalid_argument,
                          "recover: say what from: --from-bucket (the only source there is)"));
  }
  auto cfg = load_tool_config(f.config, f.data_dir);
  if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("recover"));
  if (cfg->catalog_backend != "embedded") {
    return ctx.fail(Error(Errc::invalid_argument,
                          fmt::format("recover: the node's catalog is {}: it outlives the "
                                      "node's disk, and a node serves every stream it names at "
                                      "open; nothing to rebuild",
                                      cfg->catalog_backend)));
  }
  auto opened = objstore::open_object_store(cfg->objstore);
  if (!opened.ok()) return ctx.fail(std::move(opened).error().with_context("recover"));
  std::unique_ptr<objstore::ObjectStore> store = std::move(opened).value();
  catalog::EmbeddedCatalogOptions co;
  co.capacity = cfg->catalog_capacity;
  co.read_only = f.dry_run;
  co.create_if_missing = !f.dry_run;
  const std::string catalog_dir = cfg->data_dir + "/catalog";
  std::unique_ptr<catalog::EmbeddedCatalog> catalog;
  {
    auto c = catalog::EmbeddedCatalog::open(posix_fs(), catalog_dir, co);
    if (!c.ok() && !(f.dry_run && c.code() == Errc::not_found)) {
      Error e = std::move(c).error();
      if (e.code == Errc::conflict) {
        e = Error(Errc::conflict, e.message + " (stop the node before recovering its catalog)");
      }
      return ctx.fail(std::move(e).with_context("recover"));
    }
    if (c.ok()) catalog = std::move(c).value();
  }
  const std::string& prefix = cfg->tiering.key_prefix;
  auto roots = list_roots(*store, prefix);
  if (!roots.ok()) return ctx.fail(std::move(roots).error().with_context("recover"));

  std::vector<Found> found;
  for (const auto& [component, seen] : *roots) {
    Found x;
    x.component = component;
    auto name = name_of_component(component);
    if (!name) {
      x.outcome = "failed";
      x.error =
          "its directory name is a hash of a long stream name, which cannot be decoded: "
          "create the stream again under its name (its objects stay until gc)";
      found.push_back(std::move(x));
      continue;
    }
    x.stream = *name;
    if (catalog) {
      auto e = catalog->get(*name);
      if (e.ok()) {
        x.outcome = "in_catalog";
        x.root_key = e->root_key;
        x.epoch = e->epoch;
        found.push_back(std::move(x));
        continue;
      }
    }
    // The newest root that reads back whole: a newer one that does not
    // (torn, never committed) is passed over, naming it.
    std::string skipped;
    for (const auto& r : seen) {
      auto body = store->get(r.key);
      if (!body.ok()) {
        skipped += fmt::format("{}: {}; ", r.key, body.error().to_string());
        continue;
      }
      auto root = tier::decode_root(*body, r.key);
      if (!root.ok()) {
        skipped += fmt::format("{}: {}; ", r.key, root.error().to_string());
        continue;
      }
      x.root_key = r.key;
      x.epoch = std::max(r.epoch, root->writer_epoch);
      x.first_offset = root->manifest.first_offset;
      x.next_offset = root->manifest.next_offset;
      break;
    }
    if (x.root_key.empty()) {
      x.outcome = "failed";
      x.error = "no root of it reads back: " + skipped;
      found.push_back(std::move(x));
      continue;
    }
    if (f.dry_run) {
      x.outcome = "would_recover";
      found.push_back(std::move(x));
      continue;
    }
    auto created = catalog->create(*name, x.epoch);
    auto put = created.ok() ? catalog->put(*name, x.root_key, x.epoch, created->revision)
                            : Result<catalog::PutResult>(created.error());
    if (!put.ok() || put->outcome != catalog::PutOutcome::ok) {
      x.outcome = "failed";
      x.error = put.ok() ? "the catalog refused the root" : put.error().to_string();
    } else {
      x.outcome = "recovered";
    }
    found.push_back(std::move(x));
  }
  if (catalog) {
    if (Status s = catalog->close(); !s.ok()) {
      return ctx.fail(std::move(s).error().with_context("recover"));
    }
  }

  size_t failed = 0;
  for (const auto& x : found) failed += x.outcome == "failed" ? 1 : 0;
  ctx.exit_code = failed == 0 ? 0 : 1;
  if (ctx.json) {
    json streams = json::array();
    for (const auto& x : found) {
      streams.push_back({{"stream", x.stream.empty() ? json(nullptr) : json(x.stream)},
                         {"component", x.component},
                         {"outcome", x.outcome},
                         {"root_key", x.root_key.empty() ? json(nullptr) : json(x.root_key)},
                         {"epoch", x.epoch},
                         {"first_offset", x.first_offset},
                         {"next_offset", x.next_offset},
                         {"error", x.error}});
    }
    ctx.print_json({{"dry_run", f.dry_run},
                    {"prefix", prefix},
                    {"catalog", catalog_dir + "/" + catalog::kCatalogFile},
                    {"streams", streams},
                    {"failed", failed}});
    return;
  }
  for (const auto& x : found) {
    const std::string who = x.stream.empty() ? "component " + x.component : x.stream;
    if (x.outcome == "failed") {
      std::cout << fmt::format("  FAILED          {}: {}\n", printable_name(who), x.error);
    } else {
      std::cout << fmt::format("  {:<15} {} epoch {}, offsets [{}, {}), root {}\n", x.outcome,
                               printable_name(who), x.epoch, x.first_offset, x.next_offset,
                               x.root_key);
    }
  }
  std::cout << fmt::format(
      "recover{}: {} stream(s) found under {} , {} failed; the node serves the recovered ones "
      "from the bucket at its next start, with its configuration's settings (the embedded "
      "catalog kept none)\n",
      f.dry_run ? " (dry run)" : "", found.size(), prefix.empty() ? "the bucket" : prefix + "/",
      failed);
}

Registrar reg_recover([](CLI::App& app, Context& ctx) {
  auto f = std::make_shared<RecoverFlags>();
  auto* cmd = app.add_subcommand(
      "recover",
      "Rebuild a stopped node's embedded catalog from the roots in its bucket (after the loss of\n"
      "the disk that held it); the node then serves every recovered stream from the bucket.");
  cmd->add_option("--config", f->config, "The node's JSON configuration file")->required();
  cmd->add_option("--data-dir", f->data_dir, "Overrides the configuration's data_dir");
  cmd->add_flag("--from-bucket", f->from_bucket, "Rebuild from the roots in the bucket");
  cmd->add_flag("--dry-run", f->dry_run, "Say what would be recovered; write nothing");
  cmd->callback([&ctx, f] { recover(ctx, *f); });
});

}  // namespace
}  // namespace strata::cli
