#include "cli/node_tools.h"

#include <fmt/format.h>

#include <charconv>

#include "catalog/embedded_catalog.h"
#include "common/fs.h"
#include "node/catalog_open.h"
#include "server/serve_config.h"

namespace strata::cli {

namespace {

Result<std::unique_ptr<catalog::EmbeddedCatalog>> open_catalog(const std::string& dir) {
  catalog::EmbeddedCatalogOptions o;
  o.read_only = true;
  o.create_if_missing = false;
  auto c = catalog::EmbeddedCatalog::open(posix_fs(), dir, o);
  if (!c.ok()) return std::move(c).error().with_context("opening the catalog in " + dir);
  return c;
}

}  // namespace

Result<node::NodeConfig> load_tool_config(const std::string& path, const std::string& data_dir) {
  server::ServeFlags flags;
  flags.data_dir = data_dir;
  auto cfg = server::load_serve_config_file(path, flags, objstore::process_env());
  if (!cfg.ok()) return std::move(cfg).error().with_context(path.empty() ? "config" : path);
  return std::move(cfg->node);
}

Result<NodeTools> open_node_tools(const std::string& config_path, const std::string& data_dir) {
  NodeTools t;
  STRATA_ASSIGN_OR_RETURN(t.config, load_tool_config(config_path, data_dir));
  auto store = objstore::open_object_store(t.config.objstore);
  if (!store.ok()) return std::move(store).error().with_context("opening the object store");
  t.store = std::move(store).value();
  // The etcd catalog is a live service: one client serves every read (each
  // read is current), nothing is written.
  if (t.config.catalog_backend == "etcd") {
    STRATA_ASSIGN_OR_RETURN(auto cat, node::open_etcd_catalog(t.config.catalog_etcd));
    t.catalog.list = [cat]() { return cat->list(); };
    t.catalog.get =
        [cat](const std::string& stream) -> Result<std::optional<catalog::StreamEntry>> {
      auto e = cat->get(stream);
      if (e.ok()) return std::optional<catalog::StreamEntry>(std::move(e).value());
      if (e.error().code == Errc::not_found) return std::optional<catalog::StreamEntry>();
      return std::move(e).error();
    };
    return t;
  }
  const std::string dir = path_join(t.config.data_dir, "catalog");
  STRATA_TRY(open_catalog(dir));
  t.catalog.list = [dir]() -> Result<std::vector<catalog::StreamEntry>> {
    STRATA_ASSIGN_OR_RETURN(auto c, open_catalog(dir));
    return c->list();
  };
  t.catalog.get = [dir](const std::string& stream) -> Result<std::optional<catalog::StreamEntry>> {
    STRATA_ASSIGN_OR_RETURN(auto c, open_catalog(dir));
    auto e = c->get(stream);
    if (e.ok()) return std::optional<catalog::StreamEntry>(std::move(e).value());
    if (e.error().code == Errc::not_found) return std::optional<catalog::StreamEntry>();
    return std::move(e).error();
  };
  return t;
}

Result<int64_t> parse_duration_ms(const std::string& flag, const std::string& text) {
  auto bad = [&] {
    return Error(Errc::invalid_argument,
                 fmt::format("{} '{}': expected a number and a unit (ms, s, m, h, d), e.g. 90m",
                             flag, text));
  };
  int64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || n < 0) return bad();
  std::string_view unit(p, size_t(text.data() + text.size() - p));
  int64_t scale = 0;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else if (unit == "d") {
    scale = 86'400'000;
  } else if (unit.empty() && n == 0) {
    return 0;
  } else {
    return bad();
  }
  int64_t ms = 0;
  if (__builtin_mul_overflow(n, scale, &ms)) return bad();
  return ms;
}

std::string human_age(int64_t ms) {
  if (ms < 0) return fmt::format("{} ms in the future", -ms);
  if (ms < 1000) return fmt::format("{} ms", ms);
  if (ms < 120'000) return fmt::format("{:.0f} s", double(ms) / 1e3);
  if (ms < 7'200'000) return fmt::format("{:.0f} min", double(ms) / 6e4);
  if (ms < 172'800'000) return fmt::format("{:.1f} h", double(ms) / 3.6e6);
  return fmt::format("{:.1f} d", double(ms) / 8.64e7);
}

}  // namespace strata::cli
