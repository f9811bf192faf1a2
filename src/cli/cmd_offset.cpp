// `strata offset get|set --stream S --reference R [--offset N|first|next]`:
// a consumer group's tracked offset (what StoreOffset wrote and
// QueryOffset answers) on a running node, through the management API
// (GET/PUT /api/offsets). get needs a monitoring user or an administrator,
// set an administrator.
#include <fmt/format.h>

#include <charconv>
#include <iostream>

#include "cli/admin_client.h"
#include "cli/command.h"

namespace strata::cli {
namespace {

struct OffsetFlags {
  std::string stream;
  std::string reference;
  std::string offset;  // a number, "first" or "next"
  std::string vhost = "/";
  AdminLogin login;
};

std::string offsets_path(const OffsetFlags& f) {
  return fmt::format("/api/offsets?stream={}&reference={}&vhost={}", encode_segment(f.stream),
                     encode_segment(f.reference), encode_segment(f.vhost));
}

void print_offset(const nlohmann::json& j, Context& ctx) {
  if (ctx.json) return ctx.print_json(j);
  std::cout << fmt::format("stream {} reference {}: {}\n", j.value("stream", ""),
                           j.value("reference", ""),
                           j["offset"].is_null() ? "no offset stored" : j["offset"].dump());
}

void run_offset_get(const OffsetFlags& f, Context& ctx) {
  auto j = admin_get_json(f.login, offsets_path(f));
  if (!j.ok()) return ctx.fail(std::move(j).error().with_context("offset get"));
  print_offset(*j, ctx);
}

void run_offset_set(const OffsetFlags& f, Context& ctx) {
  nlohmann::json offset = f.offset;
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(f.offset.data(), f.offset.data() + f.offset.size(), n);
  if (ec == std::errc() && p == f.offset.data() + f.offset.size()) offset = n;
  auto r =
      admin_call(f.login, "PUT", offsets_path(f), nlohmann::json{{"offset", offset}}.dump(), {200});
  if (!r.ok()) return ctx.fail(std::move(r).error().with_context("offset set"));
  print_offset(nlohmann::json::parse(r->body, nullptr, false), ctx);
}

Registrar reg_offset([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "offset", "A consumer group's tracked offset on a running node (management API)");
  cmd->require_subcommand(1);
  auto g = std::make_shared<OffsetFlags>();
  auto* get = cmd->add_subcommand("get", "The offset stored for a reference on a stream");
  get->add_option("--stream", g->stream, "The stream")->required();
  get->add_option("--vhost,-p", g->vhost, "The stream's virtual host (default /)");
  get->add_option("--reference", g->reference, "The consumer's reference (its name)")->required();
  add_login_flags(get, &g->login);
  get->callback([g, &ctx] { run_offset_get(*g, ctx); });

  auto s = std::make_shared<OffsetFlags>();
  auto* set = cmd->add_subcommand(
      "set",
      "Reset a reference's offset (its consumers read it when they next query their offset, "
      "e.g. on subscribing again)");
  set->add_option("--stream", s->stream, "The stream")->required();
  set->add_option("--vhost,-p", s->vhost, "The stream's virtual host (default /)");
  set->add_option("--reference", s->reference, "The consumer's reference (its name)")->required();
  set->add_option("--offset", s->offset, "An offset, first (the stream's oldest) or next (its end)")
      ->required();
  add_login_flags(set, &s->login);
  set->callback([s, &ctx] { run_offset_set(*s, ctx); });
});

}  // namespace
}  // namespace strata::cli
