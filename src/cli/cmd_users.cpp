// `strata users`: the users of `strata serve`'s configuration, offline.
//   hash-password  a password as RabbitMQ stores it (for "password_hash"),
//                  read from a file or the first line of stdin, never argv
//                  (which other users of the machine can read)
//   list           the users, tags and permissions a configuration file
//                  gives, as `strata serve` would read them
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "auth/password_hash.h"
#include "cli/command.h"
#include "cli/password_input.h"
#include "common/json_config.h"
#include "server/serve_users.h"

namespace strata::cli {
namespace {

struct HashFlags {
  std::string algorithm = "rabbit_password_hashing_sha256";
  std::string password_file;
};

void run_hash(const HashFlags& f, Context& ctx) {
  // Short names as well as RabbitMQ's module names.
  std::string name = f.algorithm;
  if (name.find("rabbit_password_hashing_") != 0) name = "rabbit_password_hashing_" + name;
  auto alg = auth::parse_hash_algorithm(name);
  if (!alg.ok()) return ctx.fail(std::move(alg).error().with_context("--algorithm"));
  auto pw = read_password_input(f.password_file);
  if (!pw.ok()) return ctx.fail(std::move(pw).error().with_context("users hash-password"));
  auto hash = auth::hash_password_random(*pw, *alg);
  if (!hash.ok()) return ctx.fail(std::move(hash).error());
  if (ctx.json) {
    ctx.print_json({{"password_hash", *hash}, {"hashing_algorithm", name}});
  } else {
    std::cout << *hash << "\n";
  }
}

void run_list(const std::string& config, Context& ctx) {
  auto doc = read_json_config_file(config);
  if (!doc.ok()) return ctx.fail(std::move(doc).error());
  auto users = server::load_user_settings(&*doc);
  if (!users.ok()) return ctx.fail(std::move(users).error());
  const auth::AccessControl& a = *users->access;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& u : a.users()) {
    nlohmann::json perms = nlohmann::json::array();
    for (const auto& p : a.permissions()) {
      if (p.user != u.name) continue;
      perms.push_back(
          {{"vhost", p.vhost}, {"configure", p.configure}, {"write", p.write}, {"read", p.read}});
    }
    const bool loopback_only = std::find(a.loopback_users().begin(), a.loopback_users().end(),
                                         u.name) != a.loopback_users().end();
    out.push_back({{"name", u.name},
                   {"tags", u.tags},
                   {"hashing_algorithm", auth::hash_algorithm_name(u.algorithm)},
                   {"loopback_only", loopback_only},
                   {"node_login", u.name == users->peer.user},
                   {"permissions", perms}});
  }
  if (ctx.json) {
    ctx.print_json({{"users", out}});
    return;
  }
  for (const auto& u : out) {
    std::cout << fmt::format("{}  tags [{}]{}{}\n", u["name"].get<std::string>(),
                             fmt::join(u["tags"].get<std::vector<std::string>>(), ", "),
                             u["loopback_only"].get<bool>() ? "  loopback only" : "",
                             u["node_login"].get<bool>() ? "  (the nodes' login)" : "");
    if (u["permissions"].empty()) std::cout << "  no permissions: cannot open any vhost\n";
    for (const auto& p : u["permissions"]) {
      std::cout << fmt::format("  vhost {}  configure '{}'  write '{}'  read '{}'\n",
                               p["vhost"].get<std::string>(), p["configure"].get<std::string>(),
                               p["write"].get<std::string>(), p["read"].get<std::string>());
    }
  }
}

Registrar reg_users([](CLI::App& app, Context& ctx) {
  auto* users = app.add_subcommand("users", "Users of strata serve's configuration (offline)");
  users->require_subcommand(1);

  auto hf = std::make_shared<HashFlags>();
  auto* hash = users->add_subcommand(
      "hash-password",
      "Print a password as RabbitMQ stores it, for a user's \"password_hash\" (the password is "
      "read from --password-file or the first line of stdin)");
  hash->add_option("--algorithm", hf->algorithm,
                   "sha256 (default), sha512 or md5, or RabbitMQ's module name "
                   "(rabbit_password_hashing_sha256)");
  hash->add_option("--password-file", hf->password_file, "Read the password from this file");
  hash->callback([hf, &ctx] { run_hash(*hf, ctx); });

  auto config = std::make_shared<std::string>();
  auto* list = users->add_subcommand(
      "list", "List the users, tags and permissions a configuration file gives strata serve");
  list->add_option("--config", *config, "strata serve's configuration file")->required();
  list->callback([config, &ctx] { run_list(*config, ctx); });
});

}  // namespace
}  // namespace strata::cli
