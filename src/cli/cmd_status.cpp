// `strata status [--url URL | --config FILE]`: a running node's /status,
// for a person (a line per stream) or as JSON (--json). With --config the
// address is the node's own http.listen (a wildcard host reads as
// 127.0.0.1).
#include <fmt/format.h>

#include <iostream>

#include "cli/command.h"
#include "cli/node_tools.h"
#include "server/admin_http.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

std::string num(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_number_float()) return fmt::format("{:.1f}", v.get<double>());
  return v.dump();
}

void print_status(const json& s) {
  const json& n = s["node"];
  std::cout << fmt::format(
      "node {}: up {:.0f} s, {} threads, {} resident; object store {}, catalog {}\n",
      n["data_dir"].get<std::string>(), n["uptime_s"].get<double>(), num(n["threads"]),
      human_bytes(n["rss_bytes"].get<double>()), n["object_store"].get<std::string>(),
      n["catalog"].get<std::string>());
  const json& g = n["governor"];
  std::cout << fmt::format("governor: {} in flight, {} queued ({}), {} admitted\n",
                           num(g["in_flight"]), num(g["queued"]),
                           human_bytes(g["queued_bytes"].get<double>()),
                           human_bytes(g["granted_bytes"].get<double>()));
  std::cout << fmt::format("{:<24} {:>9} {:>14} {:>14} {:>10} {:>8} {:>10} {:>9}  {}\n", "stream",
                           "state", "local", "remote", "uploaded", "pending", "persist-s",
                           "stalled", "last error");
  for (auto it = s["streams"].begin(); it != s["streams"].end(); ++it) {
    const json& st = it.value();
    std::string local =
        fmt::format("[{},{})", num(st["local_first_offset"]), num(st["local_next_offset"]));
    if (!st.contains("tiering")) {
      std::cout << fmt::format("{:<24} {:>9} {:>14}\n", it.key(), "local", local);
      continue;
    }
    const json& t = st["tiering"];
    std::cout << fmt::format(
        "{:<24} {:>9} {:>14} {:>14} {:>10} {:>8} {:>10} {:>9}  {}\n", it.key(),
        t["state"].get<std::string>(), local,
        fmt::format("[{},{})", num(t["remote_first_offset"]), num(t["remote_next_offset"])),
        human_bytes(t["bytes_uploaded"].get<double>()), num(t["fragments_pending_persist"]),
        num(t["seconds_since_last_persist"]), num(t["upload_stalled_offset"]),
        t["last_error"].get<std::string>());
  }
  // Deletions not finished yet (node/node.h, delete_stream).
  if (!s.contains("deletions")) return;
  for (auto it = s["deletions"].begin(); it != s["deletions"].end(); ++it) {
    const json& d = it.value();
    std::cout << fmt::format("deleting {}: {} (step {}, {} objects removed, {} run(s)){}\n",
                             it.key(), d["state"].get<std::string>(), d["step"].get<std::string>(),
                             num(d["objects_removed"]), num(d["runs"]),
                             d["last_error"].get<std::string>().empty()
                                 ? ""
                                 : "; last error: " + d["last_error"].get<std::string>());
  }
}

Registrar reg_status([](CLI::App& app, Context& ctx) {
  auto url = std::make_shared<std::string>("http://127.0.0.1:9552");
  auto config = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("status", "Show a running node's streams and uploads");
  auto* url_opt = cmd->add_option("--url", *url, "The node's HTTP endpoint")->capture_default_str();
  cmd->add_option("--config", *config,
                  "The node's configuration file: its http.listen is the endpoint")
      ->excludes(url_opt);
  cmd->callback([url, config, &ctx] {
    if (!config->empty()) {
      auto cfg = load_tool_config(*config, "");
      if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("status"));
      if (cfg->http_listen.empty()) {
        return ctx.fail(fmt::format("status: {} sets no http.listen: the node has no HTTP "
                                    "endpoint to ask",
                                    *config));
      }
      std::string hp = cfg->http_listen;
      if (hp.starts_with("0.0.0.0:")) hp = "127.0.0.1:" + hp.substr(8);
      if (hp.starts_with("[::]:")) hp = "[::1]:" + hp.substr(5);
      *url = "http://" + hp;
    }
    auto body = server::admin_get(*url, "/status");
    if (!body.ok()) return ctx.fail(std::move(body).error().with_context("status"));
    json s = json::parse(*body, nullptr, false);
    if (s.is_discarded() || !s.contains("node")) {
      return ctx.fail(fmt::format("status: {}/status did not answer a node status document", *url));
    }
    if (ctx.json) return ctx.print_json(s);
    print_status(s);
  });
});

}  // namespace
}  // namespace strata::cli
