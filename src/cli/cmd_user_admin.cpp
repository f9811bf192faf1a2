// Live administration of a running node's users, through its management
// API (server/management_api.h) — RabbitMQ's rabbitmqctl verbs:
//   strata user add NAME [--tags a,b] [--password-file F | --no-password]
//   strata user passwd NAME [--password-file F]
//   strata user tags NAME [TAG...]
//   strata user delete NAME
//   strata user list
//   strata permissions set USER CONFIGURE WRITE READ [--vhost V]
//   strata permissions clear USER [--vhost V]
//   strata permissions list [--vhost V]
//   strata vhost add NAME [--description D]
//   strata vhost delete NAME        (its permissions, connections, streams and super streams)
//   strata vhost list
//   strata vhost limit NAME [--max-connections N|none] [--max-queues N|none]
//   strata user limit NAME --max-connections N|none
//   strata definitions export [--file F]
//   strata definitions import FILE [--from-vhost V]
// Every command logs in as --admin-user (default guest) with the password
// of --admin-password-file, else $STRATA_ADMIN_PASSWORD, else "guest",
// against --node (default http://127.0.0.1:9552, the node's --http). New
// passwords are read from a file or stdin, never from argv.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/admin_client.h"
#include "cli/command.h"
#include "cli/password_input.h"
#include "server/admin_http.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

std::vector<std::string> split_tags(const std::vector<std::string>& args) {
  std::vector<std::string> tags;
  for (const auto& a : args) {
    size_t i = 0;
    while (i <= a.size()) {
      size_t j = a.find(',', i);
      if (j == std::string::npos) j = a.size();
      if (j > i) tags.push_back(a.substr(i, j - i));
      i = j + 1;
    }
  }
  return tags;
}

struct UserFlags {
  AdminLogin login;
  std::string name;
  std::vector<std::string> tags;
  std::string password_file;
  bool no_password = false;
};

void user_put(const UserFlags& f, Context& ctx, bool keep_tags, bool keep_password) {
  json body = json::object();
  if (keep_tags || keep_password) {
    auto cur = admin_get_json(f.login, "/api/users/" + encode_segment(f.name));
    if (!cur.ok()) return ctx.fail(cur.error());
    if (keep_tags) body["tags"] = (*cur)["tags"];
    if (keep_password) {
      body["password_hash"] = (*cur)["password_hash"];
      body["hashing_algorithm"] = (*cur)["hashing_algorithm"];
    }
  }
  if (!keep_tags) body["tags"] = split_tags(f.tags);
  if (!keep_password && !f.no_password) {
    auto pw = read_password_input(f.password_file);
    if (!pw.ok()) return ctx.fail(std::move(pw).error().with_context("new password"));
    body["password"] = *pw;
  }
  auto r =
      admin_call(f.login, "PUT", "/api/users/" + encode_segment(f.name), body.dump(), {201, 204});
  if (!r.ok()) return ctx.fail(r.error());
  const bool created = r->status == 201;
  if (ctx.json) {
    ctx.print_json({{"user", f.name}, {"created", created}});
  } else {
    std::cout << fmt::format("user '{}' {}\n", f.name, created ? "added" : "changed");
  }
}

void user_delete(const UserFlags& f, Context& ctx) {
  auto r = admin_call(f.login, "DELETE", "/api/users/" + encode_segment(f.name), "", {204});
  if (!r.ok()) return ctx.fail(r.error());
  if (ctx.json) {
    ctx.print_json({{"user", f.name}, {"deleted", true}});
  } else {
    std::cout << fmt::format("user '{}' deleted\n", f.name);
  }
}

void user_list(const AdminLogin& l, Context& ctx) {
  auto users = admin_get_json(l, "/api/users");
  if (!users.ok()) return ctx.fail(users.error());
  if (ctx.json) {
    json out = json::array();
    for (const auto& u : *users) out.push_back({{"name", u["name"]}, {"tags", u["tags"]}});
    ctx.print_json({{"users", out}});
    return;
  }
  for (const auto& u : *users) {
    std::cout << fmt::format("{}  [{}]\n", u["name"].get<std::string>(),
                             fmt::join(u["tags"].get<std::vector<std::string>>(), ", "));
  }
}

struct PermFlags {
  AdminLogin login;
  std::string vhost = "/";
  std::string user, configure, write, read;
};

std::string permission_path(const PermFlags& f) {
  return "/api/permissions/" + encode_segment(f.vhost) + "/" + encode_segment(f.user);
}

void permissions_set(const PermFlags& f, Context& ctx) {
  json body = {{"configure", f.configure}, {"write", f.write}, {"read", f.read}};
  auto r = admin_call(f.login, "PUT", permission_path(f), body.dump(), {201, 204});
  if (!r.ok()) return ctx.fail(r.error());
  if (ctx.json) {
    ctx.print_json({{"user", f.user}, {"vhost", f.vhost}, {"set", true}});
  } else {
    std::cout << fmt::format("permissions of '{}' in vhost '{}' set\n", f.user, f.vhost);
  }
}

void permissions_clear(const PermFlags& f, Context& ctx) {
  auto r = admin_call(f.login, "DELETE", permission_path(f), "", {204});
  if (!r.ok()) return ctx.fail(r.error());
  if (ctx.json) {
    ctx.print_json({{"user", f.user}, {"vhost", f.vhost}, {"cleared", true}});
  } else {
    std::cout << fmt::format("permissions of '{}' in vhost '{}' cleared\n", f.user, f.vhost);
  }
}

void permissions_list(const PermFlags& f, Context& ctx) {
  auto perms = admin_get_json(f.login, "/api/permissions");
  if (!perms.ok()) return ctx.fail(perms.error());
  json out = json::array();
  for (const auto& p : *perms) {
    if (p["vhost"] == f.vhost) out.push_back(p);
  }
  if (ctx.json) {
    ctx.print_json({{"vhost", f.vhost}, {"permissions", out}});
    return;
  }
  for (const auto& p : out) {
    std::cout << fmt::format("{}  configure '{}'  write '{}'  read '{}'\n",
                             p["user"].get<std::string>(), p["configure"].get<std::string>(),
                             p["write"].get<std::string>(), p["read"].get<std::string>());
  }
}

struct VhostFlags {
  AdminLogin login;
  std::string name, description;
};

void vhost_add(const VhostFlags& f, Context& ctx) {
  json body = {{"description", f.description}};
  auto r =
      admin_call(f.login, "PUT", "/api/vhosts/" + encode_segment(f.name), body.dump(), {201, 204});
  if (!r.ok()) return ctx.fail(r.error());
  const bool created = r->status == 201;
  if (ctx.json) {
    ctx.print_json({{"vhost", f.name}, {"created", created}});
  } else {
    std::cout << fmt::format("vhost '{}' {}\n", f.name, created ? "added" : "changed");
  }
}

void vhost_delete(const VhostFlags& f, Context& ctx) {
  auto r = admin_call(f.login, "DELETE", "/api/vhosts/" + encode_segment(f.name), "", {204});
  if (!r.ok()) return ctx.fail(r.error());
  if (ctx.json) {
    ctx.print_json({{"vhost", f.name}, {"deleted", true}});
  } else {
    std::cout << fmt::format("vhost '{}' deleted with its streams\n", f.name);
  }
}

// RabbitMQ's limits through /api/user-limits and /api/vhost-limits: each
// given limit set ("none" removes it).
struct LimitFlags {
  AdminLogin login;
  std::string name;
  std::vector<std::pair<std::string, std::string>> limits;  // (limit, "N" | "none")
};

void set_limits(const LimitFlags& f, bool users, Context& ctx) {
  if (f.limits.empty()) {
    return ctx.fail(Error(Errc::invalid_argument, users
                                                      ? "give --max-connections"
                                                      : "give --max-connections or --max-queues"));
  }
  const std::string base =
      std::string(users ? "/api/user-limits/" : "/api/vhost-limits/") + encode_segment(f.name);
  json done = json::object();
  for (const auto& [limit, v] : f.limits) {
    Result<server::ApiReply> r = Error(Errc::invalid_argument, "");
    if (v == "none") {
      r = admin_call(f.login, "DELETE", base + "/" + limit, "", {204});
      done[limit] = nullptr;
    } else {
      int64_t n = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || p != v.data() + v.size() || n < 0) {
        return ctx.fail(Error(Errc::invalid_argument,
                              fmt::format("--{}: '{}' is not a count or none", limit, v)));
      }
      r = admin_call(f.login, "PUT", base + "/" + limit, json{{"value", n}}.dump(), {204});
      done[limit] = n;
    }
    if (!r.ok()) return ctx.fail(r.error());
  }
  if (ctx.json) return ctx.print_json({{users ? "user" : "vhost", f.name}, {"limits", done}});
  std::cout << fmt::format("{} '{}': limits {}\n", users ? "user" : "vhost", f.name, done.dump());
}

void vhost_list(const AdminLogin& l, Context& ctx) {
  auto vhosts = admin_get_json(l, "/api/vhosts");
  if (!vhosts.ok()) return ctx.fail(vhosts.error());
  if (ctx.json) {
    ctx.print_json({{"vhosts", *vhosts}});
    return;
  }
  for (const auto& v : *vhosts) std::cout << v["name"].get<std::string>() << "\n";
}

struct DefinitionsFlags {
  AdminLogin login;
  std::string file;
  std::string from_vhost;
};

void definitions_export(const DefinitionsFlags& f, Context& ctx) {
  auto r = admin_call(f.login, "GET", "/api/definitions", "", {200});
  if (!r.ok()) return ctx.fail(r.error());
  if (f.file.empty()) {
    std::cout << r->body << "\n";
    return;
  }
  std::ofstream out(f.file, std::ios::binary | std::ios::trunc);
  out << r->body << "\n";
  out.close();
  if (!out) return ctx.fail(Error(Errc::io, fmt::format("cannot write '{}'", f.file)));
  if (ctx.json) {
    ctx.print_json({{"file", f.file}, {"bytes", r->body.size() + 1}});
  } else {
    std::cout << fmt::format("definitions written to {}\n", f.file);
  }
}

void definitions_import(const DefinitionsFlags& f, Context& ctx) {
  std::ifstream in(f.file, std::ios::binary);
  if (!in) return ctx.fail(Error(Errc::io, fmt::format("cannot read '{}'", f.file)));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string path =
      "/api/definitions" +
      (f.from_vhost.empty() ? "" : "?from_vhost=" + encode_segment(f.from_vhost));
  auto r = admin_call(f.login, "POST", path, ss.str(), {200});
  if (!r.ok()) return ctx.fail(std::move(r).error().with_context(f.file));
  json j = json::parse(r->body, nullptr, false);
  if (ctx.json || !j.is_object()) {
    ctx.print_json(j);
    return;
  }
  std::cout << fmt::format(
      "{}: {} users, {} permission entries; streams created: {}; already "
      "there: {}\n",
      f.file, j["users"].get<int>(), j["permissions"].get<int>(), j["streams_created"].size(),
      j["streams_existing"].size());
  for (const auto& s : j["skipped"]) std::cout << "  skipped: " << s.get<std::string>() << "\n";
}

Registrar reg_user_admin([](CLI::App& app, Context& ctx) {
  auto* user = app.add_subcommand("user", "Users of a running node (its management API)");
  user->require_subcommand(1);

  auto ulim = std::make_shared<LimitFlags>();
  auto* ulimit = user->add_subcommand(
      "limit", "Set a user's max-connections (RabbitMQ's user limit; none: no limit)");
  ulimit->add_option("name", ulim->name, "The user's name")->required();
  ulimit->add_option_function<std::string>(
      "--max-connections",
      [ulim](const std::string& v) { ulim->limits.emplace_back("max-connections", v); },
      "A count, or none");
  add_login_flags(ulimit, &ulim->login);
  ulimit->callback([ulim, &ctx] { set_limits(*ulim, true, ctx); });

  auto uf = std::make_shared<UserFlags>();
  auto* add = user->add_subcommand(
      "add", "Add a user, or replace one (password read from --password-file or stdin)");
  add->add_option("name", uf->name, "User name")->required();
  add->add_option("--tags", uf->tags, "Tags (administrator, monitoring, ...)")->delimiter(',');
  add->add_option("--password-file", uf->password_file, "Read the password from this file");
  add->add_flag("--no-password", uf->no_password,
                "No password: the user can log in only by certificate (EXTERNAL)");
  add_login_flags(add, &uf->login);
  add->callback([uf, &ctx] { user_put(*uf, ctx, false, false); });

  auto* passwd = user->add_subcommand(
      "passwd", "Change a user's password (read from --password-file or stdin); tags stay");
  passwd->add_option("name", uf->name, "User name")->required();
  passwd->add_option("--password-file", uf->password_file, "Read the password from this file");
  add_login_flags(passwd, &uf->login);
  passwd->callback([uf, &ctx] { user_put(*uf, ctx, true, false); });

  auto* tags = user->add_subcommand("tags", "Set a user's tags (none: clear them); password stays");
  tags->add_option("name", uf->name, "User name")->required();
  tags->add_option("tags", uf->tags, "Tags");
  add_login_flags(tags, &uf->login);
  tags->callback([uf, &ctx] { user_put(*uf, ctx, false, true); });

  auto* del = user->add_subcommand("delete", "Delete a user and its permissions");
  del->add_option("name", uf->name, "User name")->required();
  add_login_flags(del, &uf->login);
  del->callback([uf, &ctx] { user_delete(*uf, ctx); });

  auto* list = user->add_subcommand("list", "List the users and their tags");
  add_login_flags(list, &uf->login);
  list->callback([uf, &ctx] { user_list(uf->login, ctx); });

  auto* perms = app.add_subcommand("permissions", "Permissions on a running node");
  perms->require_subcommand(1);
  auto pf = std::make_shared<PermFlags>();
  auto* set = perms->add_subcommand(
      "set", "Set a user's configure, write and read regexes in a vhost (RabbitMQ's meaning)");
  set->add_option("user", pf->user, "User name")->required();
  set->add_option("configure", pf->configure, "Configure regex")->required();
  set->add_option("write", pf->write, "Write regex")->required();
  set->add_option("read", pf->read, "Read regex")->required();
  set->add_option("--vhost,-p", pf->vhost, "Virtual host (default /)");
  add_login_flags(set, &pf->login);
  set->callback([pf, &ctx] { permissions_set(*pf, ctx); });

  auto* clear = perms->add_subcommand("clear", "Clear a user's permissions in a vhost");
  clear->add_option("user", pf->user, "User name")->required();
  clear->add_option("--vhost,-p", pf->vhost, "Virtual host (default /)");
  add_login_flags(clear, &pf->login);
  clear->callback([pf, &ctx] { permissions_clear(*pf, ctx); });

  auto* plist = perms->add_subcommand("list", "List the permissions in a vhost");
  plist->add_option("--vhost,-p", pf->vhost, "Virtual host (default /)");
  add_login_flags(plist, &pf->login);
  plist->callback([pf, &ctx] { permissions_list(*pf, ctx); });

  auto* vhost = app.add_subcommand("vhost", "Virtual hosts of a running node");
  vhost->require_subcommand(1);
  auto vl = std::make_shared<AdminLogin>();
  auto* vlist = vhost->add_subcommand("list", "List the virtual hosts");
  add_login_flags(vlist, vl.get());
  vlist->callback([vl, &ctx] { vhost_list(*vl, ctx); });
  auto vf = std::make_shared<VhostFlags>();
  auto* vadd = vhost->add_subcommand(
      "add", "Add a virtual host (nobody has permissions in it until they are set)");
  vadd->add_option("name", vf->name, "The vhost's name")->required();
  vadd->add_option("--description", vf->description, "Its description");
  add_login_flags(vadd, &vf->login);
  vadd->callback([vf, &ctx] { vhost_add(*vf, ctx); });
  auto* vdel = vhost->add_subcommand(
      "delete",
      "Delete a virtual host with its permissions, connections, streams and super streams");
  vdel->add_option("name", vf->name, "The vhost's name")->required();
  add_login_flags(vdel, &vf->login);
  vdel->callback([vf, &ctx] { vhost_delete(*vf, ctx); });
  auto vlim = std::make_shared<LimitFlags>();
  auto* vlimit = vhost->add_subcommand(
      "limit",
      "Set a vhost's max-connections or max-queues (RabbitMQ's vhost limits; none: no limit)");
  vlimit->add_option("name", vlim->name, "The vhost's name")->required();
  for (const char* l : {"max-connections", "max-queues"}) {
    vlimit->add_option_function<std::string>(
        std::string("--") + l, [vlim, l](const std::string& v) { vlim->limits.emplace_back(l, v); },
        "A count, or none");
  }
  add_login_flags(vlimit, &vlim->login);
  vlimit->callback([vlim, &ctx] { set_limits(*vlim, false, ctx); });

  auto* defs = app.add_subcommand(
      "definitions",
      "RabbitMQ definitions JSON (users, vhosts, permissions, streams) of a running node");
  defs->require_subcommand(1);
  auto df = std::make_shared<DefinitionsFlags>();
  auto* exp = defs->add_subcommand("export", "Export the node's definitions (stdout or --file)");
  exp->add_option("--file", df->file, "Write to this file");
  add_login_flags(exp, &df->login);
  exp->callback([df, &ctx] { definitions_export(*df, ctx); });
  auto* imp = defs->add_subcommand(
      "import",
      "Import a definitions file (RabbitMQ's export_definitions): users, permissions, "
      "streams; the rest is listed as skipped");
  imp->add_option("file", df->file, "The definitions file")->required();
  imp->add_option("--from-vhost", df->from_vhost,
                  "Take this vhost's permissions and streams as those of / (strata serves /)");
  add_login_flags(imp, &df->login);
  imp->callback([df, &ctx] { definitions_import(*df, ctx); });
});

}  // namespace
}  // namespace strata::cli
