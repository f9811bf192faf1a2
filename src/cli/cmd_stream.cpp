// `strata stream create|alter|info|delete --config NODE.json NAME [--vhost V]`
// (a stream of another vhost than "/" is stored under its qualified name,
// common/stream_name.h):
//  - create: a stream with the protocol's stream arguments as flags
//    (server/stream_args.h: the same names, the same checks), persisted
//    with it (node/stream_settings_file.h);
//  - alter: its retention (max-age, max-length-bytes, local bytes) changed
//    while it runs (node/node.h, alter_stream), kept with it;
//  - info: what a stream was created with and what it runs with under the
//    node's configuration; reads the settings file only, so it works beside
//    a running node;
//  - delete: its local log, every object under its key prefix and its
//    catalog entry (docs/formats/stream-deletion.md).
// With --config, create and delete open the node themselves, so the node
// must not be running: the data directory's lock refuses a second process
// with an error that says so. Without --config they ask the running node
// at --node (its management API, PUT/PATCH/DELETE /api/streams/NAME, as an
// administrator): the same arguments, the same checks.
#include <fmt/format.h>

#include <iostream>

#include "cli/admin_client.h"
#include "cli/command.h"
#include "cli/node_tools.h"
#include "common/stream_name.h"
#include "log/inspect.h"
#include "log/registry.h"
#include "node/node.h"
#include "node/stream_settings_file.h"
#include "server/definitions_streams.h"
#include "server/stream_args.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

struct DeleteFlags {
  std::string config;
  std::string data_dir;
  std::string name;
  std::string vhost = "/";
  AdminLogin login;
};

// The API's ?vhost= for a stream of `vhost` ("" for "/").
std::string vhost_query(const std::string& vhost) {
  return vhost == kDefaultVhost ? "" : "?vhost=" + encode_segment(vhost);
}

void run_delete_live(const DeleteFlags& f, Context& ctx) {
  auto r = admin_call(f.login, "DELETE",
                      "/api/streams/" + encode_segment(f.name) + vhost_query(f.vhost), "", {204});
  if (!r.ok()) return ctx.fail(std::move(r).error().with_context("stream delete " + f.name));
  if (ctx.json)
    return ctx.print_json({{"stream", f.name}, {"deleted", true}, {"node", f.login.node}});
  std::cout << fmt::format("stream {} deleted by the node at {}\n", f.name, f.login.node);
}

void run_delete(const DeleteFlags& f, Context& ctx) {
  if (f.config.empty()) return run_delete_live(f, ctx);
  auto cfg = load_tool_config(f.config, f.data_dir);
  if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("stream delete"));
  auto n = node::Node::open(*cfg);
  if (!n.ok()) {
    return ctx.fail(std::move(n).error().with_context("stream delete: opening the node"));
  }
  Status s = (*n)->delete_stream(qualified_stream_name(f.vhost, f.name));
  if (Status c = (*n)->close(); !c.ok() && s.ok()) s = c;
  if (!s.ok()) return ctx.fail(std::move(s).error().with_context("stream delete " + f.name));
  if (ctx.json) {
    return ctx.print_json({{"stream", f.name}, {"deleted", true}, {"data_dir", cfg->data_dir}});
  }
  std::cout << fmt::format(
      "stream {} deleted: its local log, its objects and its catalog entry are gone\n", f.name);
}

// The stream arguments, as given (name, value), for parse_stream_args.
struct CreateFlags {
  std::string config;
  std::string data_dir;
  std::string name;
  std::string vhost = "/";
  std::vector<std::pair<std::string, std::string>> args;
  AdminLogin login;
};

void print_settings(const std::string& verb, const std::string& name, const std::string& data_dir,
                    const node::StreamSettings& s, const node::EffectiveSettings& e, Context& ctx) {
  json j = {{"stream", name},
            {"data_dir", data_dir},
            {"settings", node::settings_to_json(s)},
            {"effective", node::effective_to_json(e)}};
  if (ctx.json) return ctx.print_json(j);
  std::cout << fmt::format("stream {}{}\n  created with: {}\n  runs with:    {}\n", name, verb,
                           s.empty() ? "(the node's configuration)" : j["settings"].dump(),
                           j["effective"].dump());
}

// The stream arguments given, as the API's PUT takes them.
json create_arguments(const CreateFlags& f) {
  json arguments = json::object();
  for (const auto& [k, v] : f.args) arguments[queue_argument_name(k)] = v;
  return arguments;
}

void run_create_live(const CreateFlags& f, Context& ctx) {
  const json arguments = create_arguments(f);
  auto r =
      admin_call(f.login, "PUT", "/api/streams/" + encode_segment(f.name) + vhost_query(f.vhost),
                 json{{"arguments", arguments}}.dump(), {201, 204});
  if (!r.ok()) return ctx.fail(std::move(r).error().with_context("stream create " + f.name));
  const bool created = r->status == 201;
  if (ctx.json) {
    return ctx.print_json({{"stream", f.name},
                           {"created", created},
                           {"arguments", arguments},
                           {"node", f.login.node}});
  }
  std::cout << fmt::format("stream {} {} on the node at {}\n", f.name,
                           created ? "created" : "already exists with these arguments",
                           f.login.node);
}

void run_create(const CreateFlags& f, Context& ctx) {
  if (f.config.empty()) return run_create_live(f, ctx);
  auto cfg = load_tool_config(f.config, f.data_dir);
  if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("stream create"));
  auto settings = server::parse_stream_args(f.args);
  if (!settings.ok()) return ctx.fail(std::move(settings).error().with_context("stream create"));
  auto n = node::Node::open(*cfg);
  if (!n.ok()) {
    return ctx.fail(std::move(n).error().with_context("stream create: opening the node"));
  }
  const std::string stored = qualified_stream_name(f.vhost, f.name);
  Status s = validate_stream_name(stored);
  if (s.ok()) {
    auto log = (*n)->create_stream(stored, *settings);
    if (!log.ok()) s = log.error();
  }
  auto eff = (*n)->effective_settings(stored);
  if (Status c = (*n)->close(); !c.ok() && s.ok()) s = c;
  if (!s.ok()) return ctx.fail(std::move(s).error().with_context("stream create " + f.name));
  print_settings(" created", f.name, cfg->data_dir, *settings, *eff, ctx);
}

void run_info(const CreateFlags& f, Context& ctx) {
  auto cfg = load_tool_config(f.config, f.data_dir);
  if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("stream info"));
  const std::string streams = path_join(cfg->data_dir, "streams");
  const std::string stored = qualified_stream_name(f.vhost, f.name);
  if (Status v = validate_stream_name(stored); !v.ok()) return ctx.fail(v.error());
  if (!log::is_stream_dir(posix_fs(), log::stream_dir(streams, stored))) {
    return ctx.fail(log::no_such_stream(streams, stored).with_context("stream info"));
  }
  auto s = node::read_settings_file(posix_fs(), log::stream_dir(streams, stored));
  if (!s.ok()) return ctx.fail(std::move(s).error().with_context("stream info " + f.name));
  print_settings("", f.name, cfg->data_dir, *s, node::effective_settings(*cfg, *s), ctx);
}

// The arguments of an alteration as the management API's PATCH takes them:
// RabbitMQ's queue-argument names, "none" as null (the limit removed).
json alter_arguments(const CreateFlags& f) {
  json arguments = json::object();
  for (const auto& [k, v] : f.args) {
    arguments[queue_argument_name(k)] = v == "none" ? json(nullptr) : json(v);
  }
  return arguments;
}

void run_alter_live(const CreateFlags& f, Context& ctx) {
  auto r =
      admin_call(f.login, "PATCH", "/api/streams/" + encode_segment(f.name) + vhost_query(f.vhost),
                 json{{"arguments", alter_arguments(f)}}.dump(), {200});
  if (!r.ok()) return ctx.fail(std::move(r).error().with_context("stream alter " + f.name));
  json body = json::parse(r->body, nullptr, false);
  const json now = body.is_object() ? body.value("arguments", json::object()) : json::object();
  if (ctx.json) {
    return ctx.print_json({{"stream", f.name}, {"arguments", now}, {"node", f.login.node}});
  }
  std::cout << fmt::format("stream {} altered on the node at {}; its arguments now: {}\n", f.name,
                           f.login.node, now.dump());
}

void run_alter(const CreateFlags& f, Context& ctx) {
  if (f.args.empty()) {
    return ctx.fail(Error(Errc::invalid_argument,
                          "stream alter: give at least one of --max-age, --max-length-bytes, "
                          "--x-strata-local-max-bytes"));
  }
  if (f.config.empty()) return run_alter_live(f, ctx);
  auto cfg = load_tool_config(f.config, f.data_dir);
  if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("stream alter"));
  auto n = node::Node::open(*cfg);
  if (!n.ok()) return ctx.fail(std::move(n).error().with_context("stream alter: opening the node"));
  const std::string stored = qualified_stream_name(f.vhost, f.name);
  auto cur = (*n)->stream_settings(stored);
  Status s = cur.ok() ? Status::OK() : Status(std::move(cur).error());
  node::StreamSettings to;
  if (s.ok()) {
    // The same merge as the management API's PATCH.
    auto altered = server::alter_retention(*cur, alter_arguments(f));
    if (altered.ok()) to = *altered;
    s = altered.ok() ? (*n)->alter_stream(stored, to) : Status(std::move(altered).error());
  }
  auto eff = (*n)->effective_settings(stored);
  if (Status c = (*n)->close(); !c.ok() && s.ok()) s = c;
  if (!s.ok()) return ctx.fail(std::move(s).error().with_context("stream alter " + f.name));
  print_settings(" altered", f.name, cfg->data_dir, to,
                 eff.ok() ? *eff : node::effective_settings(*cfg, to), ctx);
}

// --NAME VALUE for each stream argument, kept in the order given.
void add_arg_flag(CLI::App* cmd, const std::shared_ptr<CreateFlags>& f, const std::string& arg,
                  const std::string& help) {
  cmd->add_option_function<std::string>(
      "--" + arg, [f, arg](const std::string& v) { f->args.emplace_back(arg, v); }, help);
}

// The node a create or alter acts on (a stopped node's configuration, or
// the running node's address and login) and the stream's name.
void add_target_flags(CLI::App* cmd, const std::shared_ptr<CreateFlags>& f) {
  cmd->add_option("--config", f->config,
                  "The node's JSON configuration file (the node must not be running)");
  add_login_flags(cmd, &f->login);
  cmd->add_option("--data-dir", f->data_dir, "Data directory (overrides the file's data_dir)");
  cmd->add_option("NAME", f->name, "The stream")->required();
  cmd->add_option("--vhost,-p", f->vhost, "The stream's virtual host (default /)");
}

// The arguments a stream's retention is made of: given at create, changed
// by alter.
void add_retention_flags(CLI::App* cmd, const std::shared_ptr<CreateFlags>& f) {
  add_arg_flag(cmd, f, "max-length-bytes", "Retention of the whole stream by size (bytes)");
  add_arg_flag(cmd, f, "max-age", "Retention by age: N and one of Y M D h m s (e.g. 7D)");
  add_arg_flag(cmd, f, "x-strata-local-max-bytes",
               "Local disk kept of a tiered stream once uploaded (bytes)");
}

// The partitions of `strata super-stream create`: a count or binding keys.
struct PartitionFlags {
  uint32_t partitions = 0;
  std::vector<std::string> binding_keys;
};

// As `rabbitmq-streams add_super_stream NAME --partitions N` (or
// --binding-keys a,b): partitions NAME-0.. or NAME-a.. through the running
// node's API, each with the stream arguments given.
void run_super_create(const CreateFlags& f, const PartitionFlags& p, Context& ctx) {
  if (p.partitions == 0 && p.binding_keys.empty()) {
    return ctx.fail(
        Error(Errc::invalid_argument, "super-stream create: give --partitions or --binding-keys"));
  }
  json body = json::object();
  if (p.partitions > 0) body["partitions"] = p.partitions;
  if (!p.binding_keys.empty()) body["binding_keys"] = p.binding_keys;
  body["arguments"] = create_arguments(f);
  auto r = admin_call(f.login, "PUT",
                      "/api/super-streams/" + encode_segment(f.name) + vhost_query(f.vhost),
                      body.dump(), {201, 204});
  if (!r.ok()) return ctx.fail(std::move(r).error().with_context("super-stream create " + f.name));
  auto got = admin_get_json(f.login,
                            "/api/super-streams/" + encode_segment(f.name) + vhost_query(f.vhost));
  if (!got.ok()) return ctx.fail(got.error());
  const bool created = r->status == 201;
  if (ctx.json) return ctx.print_json({{"super_stream", *got}, {"created", created}});
  std::cout << fmt::format("super stream {} {}: partitions {}\n", f.name,
                           created ? "created" : "already exists with these partitions",
                           (*got)["partitions"].dump());
}

Registrar reg_stream([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("stream", "Streams of a node's data directory");
  cmd->require_subcommand(1);

  auto c = std::make_shared<CreateFlags>();
  auto* create = cmd->add_subcommand(
      "create",
      "Create a stream with its own retention, segment size and tiering (the stream protocol's "
      "Create arguments): with --config in a stopped node's data directory, else through the "
      "running node at --node");
  add_target_flags(create, c);
  add_retention_flags(create, c);
  add_arg_flag(create, c, "stream-max-segment-size-bytes", "Local segment size (bytes)");
  add_arg_flag(create, c, "x-strata-tiering", "true or false: tier this stream or keep it local");
  add_arg_flag(create, c, "x-strata-fragment-target-bytes", "Fragment size (tiered streams)");
  add_arg_flag(create, c, "x-strata-fragment-max-age-ms",
               "Longest wait before a fragment is cut (tiered streams)");
  add_arg_flag(create, c, "x-strata-confirm",
               "local or remote: confirm a publish once it is on local disk, or in the bucket");
  create->callback([c, &ctx] { run_create(*c, ctx); });

  auto a = std::make_shared<CreateFlags>();
  auto* alter = cmd->add_subcommand(
      "alter",
      "Change a stream's retention while it runs, as a RabbitMQ policy changes max-age and "
      "max-length-bytes (\"none\" removes a limit): through the running node at --node, or "
      "with --config in a stopped node's data directory");
  add_target_flags(alter, a);
  add_retention_flags(alter, a);
  alter->callback([a, &ctx] { run_alter(*a, ctx); });

  auto i = std::make_shared<CreateFlags>();
  auto* info = cmd->add_subcommand(
      "info",
      "A stream's settings: what it was created with and what it runs with (reads the data "
      "directory only; works while the node runs)");
  info->add_option("--config", i->config, "The node's JSON configuration file")->required();
  info->add_option("--data-dir", i->data_dir, "Data directory (overrides the file's data_dir)");
  info->add_option("NAME", i->name, "The stream")->required();
  info->add_option("--vhost,-p", i->vhost, "The stream's virtual host (default /)");
  info->callback([i, &ctx] { run_info(*i, ctx); });

  auto f = std::make_shared<DeleteFlags>();
  auto* del = cmd->add_subcommand(
      "delete",
      "Delete a stream: its local log, its remote objects and its catalog entry (crash-safe: an "
      "interrupted deletion finishes when the node next opens): with --config in a stopped "
      "node's data directory, else through the running node at --node");
  del->add_option("--config", f->config,
                  "The node's JSON configuration file (the node must not be running)");
  add_login_flags(del, &f->login);
  del->add_option("--data-dir", f->data_dir, "Data directory (overrides the file's data_dir)");
  del->add_option("NAME", f->name, "The stream")->required();
  del->add_option("--vhost,-p", f->vhost, "The stream's virtual host (default /)");
  del->callback([f, &ctx] { run_delete(*f, ctx); });
});

Registrar reg_super_stream([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "super-stream", "A running node's super streams (partitioned streams; management API)");
  cmd->require_subcommand(1);
  auto c = std::make_shared<CreateFlags>();
  auto p = std::make_shared<PartitionFlags>();
  auto* create = cmd->add_subcommand(
      "create", "Create a super stream and its partitions, as rabbitmq-streams add_super_stream");
  create->add_option("NAME", c->name, "The super stream")->required();
  create->add_option("--vhost,-p", c->vhost, "Its virtual host (default /)");
  auto* parts = create->add_option("--partitions", p->partitions,
                                   "Partitions NAME-0 .. NAME-(N-1), binding keys 0 .. N-1");
  create
      // --routing-keys: the name RabbitMQ 3.10's add_super_stream gives it.
      ->add_option("--binding-keys,--routing-keys", p->binding_keys,
                   "Binding keys (comma-separated): a partition NAME-KEY each")
      ->delimiter(',')
      ->excludes(parts);
  // Each partition's stream arguments, as stream create takes them.
  add_retention_flags(create, c);
  add_arg_flag(create, c, "stream-max-segment-size-bytes", "Local segment size (bytes)");
  add_arg_flag(create, c, "x-strata-tiering",
               "true or false: tier the partitions or keep them local");
  add_arg_flag(create, c, "x-strata-confirm",
               "local or remote: confirm a publish once it is on local disk, or in the bucket");
  add_login_flags(create, &c->login);
  create->callback([c, p, &ctx] { run_super_create(*c, *p, ctx); });

  auto d = std::make_shared<DeleteFlags>();
  auto* del = cmd->add_subcommand("delete", "Delete a super stream and its partitions");
  del->add_option("NAME", d->name, "The super stream")->required();
  del->add_option("--vhost,-p", d->vhost, "Its virtual host (default /)");
  add_login_flags(del, &d->login);
  del->callback([d, &ctx] {
    auto r = admin_call(d->login, "DELETE",
                        "/api/super-streams/" + encode_segment(d->name) + vhost_query(d->vhost), "",
                        {204});
    if (!r.ok()) {
      return ctx.fail(std::move(r).error().with_context("super-stream delete " + d->name));
    }
    if (ctx.json) return ctx.print_json({{"super_stream", d->name}, {"deleted", true}});
    std::cout << fmt::format("super stream {} deleted with its partitions\n", d->name);
  });
});

}  // namespace
}  // namespace strata::cli
