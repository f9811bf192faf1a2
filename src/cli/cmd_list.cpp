// `strata list connections|publishers|consumers`: a running node's stream
// protocol clients, as `rabbitmq-streams list_stream_connections` (and
// _publishers, _consumers) show RabbitMQ's — through the management API
// (GET /api/stream/...), as an administrator or a monitoring user.
#include <fmt/format.h>

#include <iostream>

#include "cli/admin_client.h"
#include "cli/command.h"

namespace strata::cli {
namespace {

std::string text_of(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// One line per item: the columns named, "name=value".
void print_rows(const nlohmann::json& items, const std::vector<std::string>& columns) {
  for (const auto& item : items) {
    std::string line;
    for (const auto& c : columns) {
      if (!item.contains(c)) continue;
      if (!line.empty()) line += "  ";
      line += c + "=" + text_of(item[c]);
    }
    std::cout << line << "\n";
  }
}

void run_list_clients(const std::string& what, const AdminLogin& login, Context& ctx) {
  auto items = admin_get_json(login, "/api/stream/" + what);
  if (!items.ok()) return ctx.fail(items.error());
  if (ctx.json) {
    ctx.print_json({{what, *items}});
    return;
  }
  if (items->empty()) {
    std::cout << fmt::format("no {}\n", what);
    return;
  }
  if (what == "connections") {
    print_rows(*items, {"id", "peer", "user", "vhost", "state", "tls", "publishers", "consumers"});
  } else if (what == "publishers") {
    print_rows(*items, {"connection", "publisher_id", "reference", "stream", "published",
                        "confirmed", "errored"});
  } else {
    print_rows(*items, {"connection", "subscription_id", "stream", "offset_spec", "credit",
                        "messages_delivered", "single_active_consumer", "active"});
  }
}

Registrar reg_list([](CLI::App& app, Context& ctx) {
  auto* list = app.add_subcommand(
      "list", "A running node's stream connections, publishers or consumers (management API)");
  list->require_subcommand(1);
  for (const char* what : {"connections", "publishers", "consumers"}) {
    auto login = std::make_shared<AdminLogin>();
    auto* cmd = list->add_subcommand(what, std::string("List the node's ") + what);
    add_login_flags(cmd, login.get());
    cmd->callback([what, login, &ctx] { run_list_clients(what, *login, ctx); });
  }
});

}  // namespace
}  // namespace strata::cli
