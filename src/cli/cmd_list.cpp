// `strata list connections|publishers|consumers|streams|super-streams|nodes`:
// a running node's stream protocol clients, as `rabbitmq-streams
// list_stream_connections` (and _publishers, _consumers) show RabbitMQ's,
// its streams with their tiers and lags, its super streams, and the
// cluster's nodes — through the management API (GET /api/stream/...,
// /api/streams, /api/super-streams, /api/cluster), as an administrator or a
// monitoring user. `strata connection close ID` closes one (an
// administrator).
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

// A stream's entry flattened for one line: its tiers' bytes and its lags.
nlohmann::json stream_row(const nlohmann::json& s) {
  nlohmann::json row = s;
  auto at = [&](const char* obj, const char* key) {
    return s.contains(obj) && s[obj].is_object() ? s[obj].value(key, nlohmann::json()) : nlohmann::json();
  };
  row["local_bytes"] = at("local", "bytes");
  row["remote_bytes"] = at("remote", "bytes");
  row["upload_lag"] = at("upload_lag", "offsets");
  return row;
}

std::string list_path(const std::string& what) {
  if (what == "streams") return "/api/streams";
  if (what == "super-streams") return "/api/super-streams";
  if (what == "nodes") return "/api/cluster";
  return "/api/stream/" + what;
}

void run_list_clients(const std::string& what, const AdminLogin& login, Context& ctx) {
  auto items = admin_get_json(login, list_path(what));
  if (!items.ok()) return ctx.fail(items.error());
  // The cluster document holds the nodes beside the node's own lease.
  if (what == "nodes") items = nlohmann::json((*items)["nodes"]);
  if (ctx.json) {
    ctx.print_json({{what, *items}});
    return;
  }
  if (items->empty()) {
    std::cout << fmt::format("no {}\n", what);
    return;
  }
  if (what == "connections") {
    print_rows(*items, {"id", "peer", "user", "vhost", "state", "tls", "recv_oct", "send_oct",
                       "publishers", "consumers"});
  } else if (what == "publishers") {
    print_rows(*items, {"connection", "publisher_id", "reference", "stream", "published",
                        "confirmed", "errored"});
  } else if (what == "consumers") {
    print_rows(*items, {"connection", "subscription_id", "stream", "offset_spec", "credit",
                        "messages_delivered", "offset", "offset_lag", "offset_lag_bytes",
                        "consumer_group", "single_active_consumer", "active"});
  } else if (what == "super-streams") {
    print_rows(*items, {"name", "partitions", "binding_keys"});
  } else if (what == "nodes") {
    print_rows(*items, {"name", "address", "this_node", "streams_owned"});
  } else {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& s : *items) rows.push_back(stream_row(s));
    print_rows(rows, {"name", "served_here", "messages", "first_offset", "next_offset",
                      "local_bytes", "remote_bytes", "upload_lag", "publishers", "consumers",
                      "consumer_max_lag"});
  }
}

Registrar reg_list([](CLI::App& app, Context& ctx) {
  auto* list = app.add_subcommand(
      "list",
      "A running node's stream connections, publishers, consumers, streams, super streams or "
      "the cluster's nodes (management API)");
  list->require_subcommand(1);
  for (const char* what :
       {"connections", "publishers", "consumers", "streams", "super-streams", "nodes"}) {
    auto login = std::make_shared<AdminLogin>();
    auto* cmd = list->add_subcommand(what, std::string("List the node's ") + what);
    add_login_flags(cmd, login.get());
    cmd->callback([what, login, &ctx] { run_list_clients(what, *login, ctx); });
  }
});

Registrar reg_connection([](CLI::App& app, Context& ctx) {
  auto* conn = app.add_subcommand("connection", "A running node's stream connections");
  conn->require_subcommand(1);
  auto login = std::make_shared<AdminLogin>();
  auto id = std::make_shared<uint64_t>(0);
  auto* close = conn->add_subcommand(
      "close", "Close a connection (its client sees a lost connection and may reconnect)");
  close->add_option("id", *id, "The connection's id (strata list connections)")->required();
  add_login_flags(close, login.get());
  close->callback([login, id, &ctx] {
    auto r = admin_call(*login, "DELETE", "/api/connections/" + std::to_string(*id), "", {204});
    if (!r.ok()) return ctx.fail(r.error());
    if (ctx.json) return ctx.print_json({{"closed", *id}});
    std::cout << fmt::format("connection {} closed\n", *id);
  });
});

}  // namespace
}  // namespace strata::cli
