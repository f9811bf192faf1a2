// `strata cluster status --endpoints URL[,URL...] [--namespace NS] [--json]`:
// the cluster as etcd holds it — nodes (address, lease, remaining TTL) and
// streams (epoch, owner), read without any node running.
#include <fmt/format.h>

#include <iostream>

#include "cli/command.h"
#include "cluster/cluster_status.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

Registrar reg_cluster([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("cluster", "Several nodes over etcd");
  cmd->require_subcommand(1);
  auto endpoints = std::make_shared<std::vector<std::string>>();
  auto ns = std::make_shared<std::string>("strata");
  auto* st = cmd->add_subcommand("status", "Nodes, leases, stream owners and epochs");
  st->add_option("--endpoints", *endpoints, "etcd endpoints (http://host:port)")
      ->required()
      ->delimiter(',');
  st->add_option("--namespace", *ns, "The catalog's key namespace")->capture_default_str();
  st->callback([endpoints, ns, &ctx] {
    etcd::ClientOptions o;
    o.endpoints = *endpoints;
    auto c = etcd::EtcdClient::open(o);
    if (!c.ok()) return ctx.fail(std::move(c).error().with_context("cluster status"));
    auto s = cluster::read_cluster_status(**c, *ns);
    if (!s.ok()) return ctx.fail(std::move(s).error().with_context("cluster status"));
    if (ctx.json) return ctx.print_json(*s);
    const json& j = *s;
    std::cout << fmt::format("namespace {} at revision {}: {} node(s), {} stream(s)\n", *ns,
                             j["revision"].dump(), j["nodes"].size(), j["streams"].size());
    for (auto it = j["nodes"].begin(); it != j["nodes"].end(); ++it) {
      // etcdctl shows lease ids in hex; the JSON has them in decimal.
      const json& lease = it.value()["lease"];
      const std::string id =
          lease.is_string() ? fmt::format("{:x}", std::stoll(lease.get<std::string>())) : "none";
      // A TLS-only node registers no plain address.
      std::string where = it.value()["address"].get<std::string>();
      const std::string tls = it.value()["tls_address"].get<std::string>();
      if (!tls.empty()) where += (where.empty() ? "tls " : " tls ") + tls;
      std::cout << fmt::format("node {:<16} {:<22} lease {} ttl {} s\n", it.key(), where, id,
                               it.value()["ttl_s"].dump());
    }
    for (auto it = j["streams"].begin(); it != j["streams"].end(); ++it) {
      std::string owner = it.value()["owner"].get<std::string>();
      std::cout << fmt::format("stream {:<24} epoch {:<6} owner {}\n", it.key(),
                               it.value()["epoch"].dump(), owner.empty() ? "(none)" : owner);
    }
  });
});

}  // namespace
}  // namespace strata::cli
