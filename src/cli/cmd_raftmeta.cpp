// `strata raftmeta`: the per-node Raft server metadata store.
//   strata raftmeta inspect DIR            capacity, usage and every server (table or --json)
//   strata raftmeta migrate META.DETS DIR  migrate Ra's meta.dets into DIR/meta.slots
// inspect never writes (it does not migrate or recover into the file);
// migrate follows the crash-atomic procedure of raftmeta/dets_migration.h
// and reports progress on stderr.
#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "cli/command.h"
#include "raftmeta/dets_migration.h"
#include "raftmeta/inspect.h"
#include "raftmeta/raft_meta.h"
#include "raftmeta/store_options.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;
using namespace strata::raftmeta;

bool printable_id(BytesView b) {
  for (char c : b) {
    if (c < 0x21 || c > 0x7E) return false;
  }
  return !b.empty();
}

// A name as JSON: the text if it is valid UTF-8 (as JSON requires; Erlang
// atoms always are), else {"hex": ...}.
json text(const std::string& s) {
  try {
    (void)json(s).dump();
    return s;
  } catch (const json::exception&) {
    return json{{"hex", to_hex(s)}};
  }
}

std::string show_id(BytesView id) {
  return printable_id(id) ? std::string(id) : "0x" + to_hex(id);
}

std::string show_u64(const std::optional<uint64_t>& v) {
  return v ? std::to_string(*v) : "-";
}

json to_json(const InspectReport& r) {
  json servers = json::array();
  for (const auto& [id, m] : r.servers) {
    json s;
    s["id"] = printable_id(id) ? json(id) : json(nullptr);
    s["id_hex"] = to_hex(id);
    s["current_term"] = m.current_term ? json(*m.current_term) : json(nullptr);
    switch (m.voted_for.form) {
      case VotedFor::Form::none:
        s["voted_for"] = nullptr;
        break;
      case VotedFor::Form::bare_name:
        s["voted_for"] = text(m.voted_for.name);
        break;
      case VotedFor::Form::server_id:
        s["voted_for"] = {{"name", text(m.voted_for.name)}, {"node", text(m.voted_for.node)}};
        break;
    }
    s["last_applied"] = m.last_applied ? json(*m.last_applied) : json(nullptr);
    servers.push_back(std::move(s));
  }
  const auto& i = r.info;
  return {
      {"store", r.store},
      {"servers_used", i.slots_used},
      {"capacity", i.slots_total},
      {"node_names", {{"used", i.strings_used}, {"capacity", i.strings_total}}},
      {"bounds",
       {{"id_bytes", r.bounds.max_id_bytes},
        {"name_bytes", r.bounds.max_name_bytes},
        {"node_bytes", r.bounds.max_node_bytes}}},
      {"file_bytes", i.file_size},
      {"wal", {{"bytes", i.wal_bytes_total}, {"used", i.wal_bytes_used}, {"last_lsn", i.last_lsn}}},
      {"dets",
       {{"pending", r.dets_present},
        {"retired", r.dets_retired},
        {"migrating_leftover", r.migrating_leftover}}},
      {"servers", std::move(servers)},
  };
}

void print_table(const InspectReport& r) {
  const auto& i = r.info;
  std::cout << fmt::format("store       {}\n", r.store);
  std::cout << fmt::format("servers     {} of {} slots\n", i.slots_used, i.slots_total);
  std::cout << fmt::format("node names  {} of {}\n", i.strings_used, i.strings_total);
  std::cout << fmt::format("bounds      id {} B, vote name {} B, vote node {} B\n",
                           r.bounds.max_id_bytes, r.bounds.max_name_bytes, r.bounds.max_node_bytes);
  std::cout << fmt::format("file        {}, WAL {} of {} in use\n",
                           human_bytes(double(i.file_size)), human_bytes(double(i.wal_bytes_used)),
                           human_bytes(double(i.wal_bytes_total)));
  if (r.dets_present) std::cout << "meta.dets   present, not migrated yet\n";
  if (r.dets_retired) std::cout << "meta.dets   migrated (kept as meta.dets.migrated)\n";
  if (r.migrating_leftover)
    std::cout << "leftover    meta.slots.migrating (removed at next open)\n";
  size_t w = 9;
  for (const auto& [id, m] : r.servers) w = std::max(w, show_id(id).size());
  std::cout << "\n"
            << fmt::format("{:<{}}  {:>20}  {:>20}  {}\n", "SERVER ID", w, "CURRENT_TERM",
                           "LAST_APPLIED", "VOTED_FOR");
  for (const auto& [id, m] : r.servers) {
    std::cout << fmt::format("{:<{}}  {:>20}  {:>20}  {}\n", show_id(id), w,
                             show_u64(m.current_term), show_u64(m.last_applied),
                             m.voted_for.to_string());
  }
}

struct MigrateFlags {
  std::string dets;
  std::string dir;
  StoreOptions store;
};

void migrate(Context& ctx, const MigrateFlags& f) {
  if (!exists(posix_fs(), f.dets)) {
    ctx.fail(Error(Errc::not_found, f.dets + ": no such file"));
    return;
  }
  if (Status s = create_dirs(posix_fs(), f.dir); !s.ok()) {
    ctx.fail(s.error());
    return;
  }
  // A server running on this directory must not see its store replaced.
  auto lock = lock_store_dir(posix_fs(), f.dir);
  if (!lock.ok()) {
    ctx.fail(lock.error());
    return;
  }
  auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    // Large files only, at most twice a second, and each phase's end.
    if (total < 4096) return;
    auto now = std::chrono::steady_clock::now();
    if (done != total && now - last < std::chrono::milliseconds(500)) return;
    last = now;
    std::cerr << fmt::format("migrating {}: {} {}/{} rows ({}%)\n", f.dets, phase, done, total,
                             total ? done * 100 / total : 100);
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto r = migrate_dets(posix_fs(), f.dets, f.dir, f.store, progress);
  if (!r.ok()) {
    ctx.fail(r.error());
    return;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string store = store_path(f.dir);
  if (ctx.json) {
    ctx.print_json({{"action", std::string(action_name(r->action))},
                    {"source", r->source},
                    {"store", store},
                    {"rows", r->rows},
                    {"source_bytes", r->source_bytes},
                    {"source_closed_properly", r->source_closed_properly},
                    {"capacity", r->created.capacity},
                    {"node_names", r->created.node_names},
                    {"removed_leftovers", r->removed_leftovers},
                    {"seconds", secs}});
    return;
  }
  switch (r->action) {
    case MigrationReport::Action::migrated:
      std::cout << fmt::format(
          "migrated {} rows ({}) from {} into {} in {:.2f} s (capacity {} servers, {} node "
          "names); source kept as {}{}\n",
          r->rows, human_bytes(double(r->source_bytes)), f.dets, store, secs, r->created.capacity,
          r->created.node_names, f.dets, kRetiredSuffix);
      break;
    case MigrationReport::Action::retired_only:
      std::cout << fmt::format(
          "{} already holds every row of {} (an earlier migration stopped before retiring "
          "it); renamed it to {}{}\n",
          store, f.dets, f.dets, kRetiredSuffix);
      break;
    case MigrationReport::Action::none:
      std::cout << "nothing to do\n";
      break;
  }
}

Registrar reg_raftmeta([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("raftmeta", "Raft server metadata store (term, vote, applied)");
  cmd->require_subcommand(1);

  auto* ins = cmd->add_subcommand("inspect", "Show a raftmeta store (read-only)");
  static std::string inspect_dir;
  ins->add_option("dir", inspect_dir, "Directory holding meta.slots")->required();
  ins->callback([&ctx] {
    auto r = inspect(posix_fs(), inspect_dir);
    if (!r.ok()) {
      ctx.fail(r.error());
      return;
    }
    if (ctx.json) {
      ctx.print_json(to_json(*r));
    } else {
      print_table(*r);
    }
  });

  auto* mig = cmd->add_subcommand("migrate", "Migrate Ra's meta.dets into DIR/meta.slots");
  static MigrateFlags flags;
  mig->add_option("meta_dets", flags.dets, "Ra's meta.dets file")->required();
  mig->add_option("dir", flags.dir, "Directory of the new store")->required();
  mig->add_option("--capacity", flags.store.capacity,
                  "Servers the store can hold (raised to fit the rows)")
      ->capture_default_str();
  mig->add_option("--node-names", flags.store.node_names,
                  "Distinct vote node names the store can hold")
      ->capture_default_str();
  mig->add_option("--wal-bytes", flags.store.wal_bytes, "WAL size in bytes")->capture_default_str();
  mig->callback([&ctx] { migrate(ctx, flags); });
});

}  // namespace
}  // namespace strata::cli
