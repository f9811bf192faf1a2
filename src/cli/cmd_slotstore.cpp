// `strata slotstore inspect FILE [--records]`: a slot store's format
// version, schema, capacity and use, and optionally every record (table, or
// one JSON document with --json). It opens the file read-only: recovery runs
// in memory only and nothing is written.
#include <fmt/format.h>

#include <iostream>

#include "cli/command.h"
#include "slotstore/slotstore.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;
using namespace strata::slotstore;

bool printable_text(BytesView b) {
  for (char c : b) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

json scalar_json(const Scalar& s) {
  if (s.index() == 0) return std::get<0>(s);
  const std::string& b = std::get<1>(s);
  return printable_text(b) ? json(b) : json{{"hex", to_hex(b)}};
}

json value_json(const Value& v) {
  if (v.is_u64()) return v.as_u64();
  if (v.is_str()) return scalar_json(Scalar(v.as_str()));
  json a = json::array();
  for (const Scalar& s : v.elements()) a.push_back(scalar_json(s));
  return a;
}

json info_json(const Info& i, const Schema& schema) {
  json fields = json::array();
  for (const FieldSpec& f : schema.fields) {
    fields.push_back({{"name", f.name},
                      {"type", f.type.to_string()},
                      {"frequency", f.frequency == Frequency::low ? "low" : "high"}});
  }
  return {{"path", i.path},
          {"format_version", i.format_version},
          {"schema", {{"max_key_bytes", schema.max_key_len}, {"fields", fields}}},
          {"slots", {{"used", i.slots_used}, {"capacity", i.slots_total}}},
          {"strings", {{"used", i.strings_used}, {"capacity", i.strings_total}}},
          {"record_bytes", i.record_size},
          {"file_bytes", i.file_size},
          {"wal", {{"used_bytes", i.wal_bytes_used}, {"capacity_bytes", i.wal_bytes_total}}},
          {"last_lsn", i.last_lsn},
          {"stale_entries_skipped", i.stale_entries_skipped}};
}

void inspect(Context& ctx, const std::string& path, bool records) {
  slotstore::Options o;
  o.read_only = true;
  auto opened = SlotStore::open_existing(posix_fs(), path, o);
  if (!opened.ok()) return ctx.fail(opened.error());
  SlotStore& s = **opened;
  Info i = s.info();
  json out = info_json(i, s.schema());
  if (records) {
    json list = json::array();
    Status st = s.fold([&](BytesView key, const Record& r) {
      json fields = json::object();
      for (size_t f = 0; f < r.fields.size(); ++f) {
        fields[s.schema().fields[f].name] = r.fields[f] ? value_json(*r.fields[f]) : json(nullptr);
      }
      list.push_back({{"key", printable_text(key) ? json(std::string(key)) : json(nullptr)},
                      {"key_hex", to_hex(key)},
                      {"fields", fields}});
      return true;
    });
    if (!st.ok()) return ctx.fail(st.error());
    out["records"] = list;
  }
  if (ctx.json) return ctx.print_json(out);
  std::cout << fmt::format("{}: slotstore format {}\n", path, i.format_version);
  std::cout << fmt::format("  schema   {}\n", s.schema().to_string());
  std::cout << fmt::format("  slots    {} of {} used ({} B per record copy)\n", i.slots_used,
                           i.slots_total, i.record_size);
  std::cout << fmt::format("  strings  {} of {} interned\n", i.strings_used, i.strings_total);
  std::cout << fmt::format("  WAL      {} of {} in use, last lsn {}\n",
                           human_bytes(double(i.wal_bytes_used)),
                           human_bytes(double(i.wal_bytes_total)), i.last_lsn);
  std::cout << fmt::format("  file     {}\n", human_bytes(double(i.file_size)));
  if (i.stale_entries_skipped) {
    std::cout << fmt::format("  note     {} stale WAL entries skipped\n", i.stale_entries_skipped);
  }
  if (!records) return;
  for (const auto& rec : out["records"]) {
    std::string line = rec["key"].is_null() ? "0x" + rec["key_hex"].get<std::string>()
                                            : rec["key"].get<std::string>();
    for (const auto& [name, v] : rec["fields"].items()) {
      line += fmt::format(" {}={}", name, v.is_null() ? "-" : v.dump());
    }
    std::cout << "  " << line << "\n";
  }
}

Registrar reg_slotstore([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("slotstore", "Fixed-slot metadata store files");
  cmd->require_subcommand(1);
  auto* ins = cmd->add_subcommand(
      "inspect", "Show a slot store's format, schema, capacity and use (read-only)");
  static std::string path;
  static bool records = false;
  ins->add_option("file", path, "The store file")->required();
  ins->add_flag("--records", records, "Also list every key and its fields");
  ins->callback([&ctx] { inspect(ctx, path, records); });
});

}  // namespace
}  // namespace strata::cli
