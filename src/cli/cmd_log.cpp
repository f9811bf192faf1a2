// The local log from the command line:
//   strata produce <data-dir> <stream>   append stdin lines (or --generate N --size S)
//   strata consume <data-dir> <stream>   print records from --from SPEC [--follow] [--max N]
//   strata consume --config NODE.json <stream>   the same across a node's two tiers
//   strata inspect <data-dir>[/<stream>] | --config F   segments, chunks, indexes, CRCs
//                                       (a node's data directory: its streams/)
// consume and inspect open streams read-only (no repair, no writer lock), so
// they can run next to a live producer.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <string>
#include <thread>

#include "cli/cmd_log_demo.h"
#include "cli/command.h"
#include "cli/node_tools.h"
#include "log/inspect.h"
#include "log/reader.h"
#include "log/registry.h"
#include "node/node_config.h"
#include "node/node_read_view.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;

// The data directory must exist and be a directory (produce creates it).
Status check_data_dir(const std::string& dir, bool create) {
  auto st = posix_fs().stat(dir);
  if (!st.ok()) {
    if (st.code() == Errc::not_found && create) return create_dirs(posix_fs(), dir);
    if (st.code() == Errc::not_found) {
      return Error(Errc::not_found, fmt::format("data directory {} does not exist", dir));
    }
    return st.error();
  }
  if (!st->is_dir) {
    return Error(Errc::invalid_argument, fmt::format("data directory {} is not a directory", dir));
  }
  return Status::OK();
}

Result<std::shared_ptr<log::StreamLog>> open_for_reading(const std::string& data_dir,
                                                         const std::string& stream) {
  STRATA_TRY(check_data_dir(data_dir, false));
  // A node's data directory (`strata serve --data-dir`) keeps its logs under
  // streams/: accept it as well as the directory of logs itself.
  const std::string streams = path_join(data_dir, "streams");
  if (!log::is_stream_dir(posix_fs(), log::stream_dir(data_dir, stream)) &&
      log::is_stream_dir(posix_fs(), log::stream_dir(streams, stream))) {
    return log::open_stream_read_only(streams, stream);
  }
  return log::open_stream_read_only(data_dir, stream);
}

// ------------------------------------------------------------------ produce

struct ProduceFlags {
  std::string data_dir, stream;
  uint64_t generate = 0;
  uint64_t size = 100;
  uint64_t batch = 1000;
  std::string fsync = "always";
  int64_t interval_ms = 100;
  bool no_create = false;
  bool print_acks = false;
};

void run_produce(const ProduceFlags& f, Context& ctx) {
  auto policy = log::parse_fsync_policy(f.fsync);
  if (!policy.ok()) return ctx.fail(policy.error());
  if (f.batch == 0 || f.batch > 65535) return ctx.fail("produce: --batch must be in 1..65535");
  if (f.generate && (f.size == 0 || f.size > (8u << 20) - 4)) {
    return ctx.fail("produce: --size must be in 1..8388604");
  }
  Status s = check_data_dir(f.data_dir, !f.no_create);
  if (!s.ok()) return ctx.fail(s.error());
  log::LogOptions lo;
  lo.fsync = *policy;
  lo.fsync_interval_ms = f.interval_ms;
  auto reg = log::StreamRegistry::open(f.data_dir, lo);
  if (!reg.ok()) return ctx.fail(reg.error());
  auto lg = f.no_create ? (*reg)->open_stream(f.stream) : (*reg)->open_or_create(f.stream);
  if (!lg.ok()) {
    if (lg.code() == Errc::not_found) return ctx.fail(log::no_such_stream(f.data_dir, f.stream));
    return ctx.fail(lg.error());
  }
  auto& log = *lg;
  Progress progress(!ctx.json);
  auto t0 = std::chrono::steady_clock::now();
  uint64_t records = 0, bytes = 0;
  std::optional<uint64_t> first, next;
  std::vector<std::string> recs;
  uint64_t batch_bytes = 0;
  auto flush = [&]() -> Status {
    if (recs.empty()) return Status::OK();
    std::vector<BytesView> views(recs.begin(), recs.end());
    STRATA_ASSIGN_OR_RETURN(log::AppendResult r, log->append(views));
    if (!first) first = r.first_offset;
    next = r.next_offset;
    records += recs.size();
    if (f.print_acks && !ctx.json)
      std::cout << "ack " << r.first_offset << " " << r.next_offset << "\n";
    recs.clear();
    batch_bytes = 0;
    progress.update(fmt::format("produce: {} records", records));
    return Status::OK();
  };
  auto add = [&](std::string r) -> Status {
    // Keep a batch within the chunk size limit as well as --batch records.
    if (!recs.empty() && batch_bytes + r.size() + 4 > lo.max_chunk_bytes) STRATA_TRY(flush());
    if (r.size() + 4 > lo.max_chunk_bytes) {
      return Error(Errc::invalid_argument,
                   fmt::format("record {} is {} bytes, over the {} byte chunk limit",
                               records + recs.size(), r.size(), lo.max_chunk_bytes - 4));
    }
    bytes += r.size();
    batch_bytes += r.size() + 4;
    recs.push_back(std::move(r));
    if (recs.size() >= f.batch) return flush();
    return Status::OK();
  };
  if (f.generate) {
    for (uint64_t i = 0; i < f.generate && s.ok(); ++i) s = add(demo_record(0, i, f.size));
  } else {
    std::string line;
    while (s.ok() && std::getline(std::cin, line)) s = add(std::move(line));
  }
  if (s.ok()) s = flush();
  progress.done();
  Status closed = (*reg)->close_all();
  if (!s.ok()) return ctx.fail(std::move(s).error().with_context("produce to " + f.stream));
  if (!closed.ok()) return ctx.fail(closed.error());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (ctx.json) {
    json j = {{"stream", f.stream}, {"records", records}, {"bytes", bytes}, {"seconds", secs}};
    if (first) j["first_offset"] = *first;
    if (next) j["next_offset"] = *next;
    ctx.print_json(j);
  } else if (records == 0) {
    std::cerr << "produce: no records (empty input)\n";
  } else {
    std::cerr << fmt::format(
        "produced {} records ({}) to '{}': offsets {}..{} in {:.2f} s ({:.0f} "
        "records/s, {:.1f} MB/s)\n",
        records, human_bytes(double(bytes)), f.stream, *first, *next - 1, secs, records / secs,
        bytes / secs / 1e6);
  }
}

// ------------------------------------------------------------------ consume

struct ConsumeFlags {
  std::string data_dir, stream;
  std::string config;  // a node's configuration: read across both tiers
  std::string from = "first";
  bool follow = false;
  uint64_t max = 0;
  bool show_offsets = false;
  bool no_verify = false;
};

// What the print loop reads from: a local log reader or a reader across
// both tiers of a node's stream.
struct RecordSource {
  std::function<Result<size_t>(std::vector<log::Record>*)> next;
  std::function<void()> wait;
  // Called when `next` failed; true when looking again may help (a newer
  // manifest), and the loop retries.
  std::function<bool(const Error&)> recover = [](const Error&) { return false; };
};

void print_records(const ConsumeFlags& f, Context& ctx, RecordSource src) {
  uint64_t printed = 0;
  std::vector<log::Record> recs;
  std::string out;
  while (f.max == 0 || printed < f.max) {
    recs.clear();
    auto n = src.next(&recs);
    if (!n.ok()) {
      std::cout << out << std::flush;
      out.clear();
      if (src.recover(n.error())) continue;
      return ctx.fail(n.error());
    }
    if (*n == 0) {
      std::cout << out << std::flush;
      out.clear();
      if (!f.follow) break;
      src.wait();
      continue;
    }
    for (const auto& r : recs) {
      if (f.max && printed >= f.max) break;
      if (ctx.json) {
        json j = {
            {"offset", r.offset}, {"timestamp", r.timestamp_ms}, {"value", std::string(r.value)}};
        out += j.dump(-1, ' ', false, json::error_handler_t::replace);
        out += '\n';
      } else {
        if (f.show_offsets) out += fmt::format("{}\t", r.offset);
        out.append(r.value.data(), r.value.size());
        out += '\n';
      }
      ++printed;
    }
    if (out.size() > (1 << 16) || f.follow) {
      std::cout << out << std::flush;
      out.clear();
    }
  }
  std::cout << out << std::flush;
}

// Across both tiers: the node's configuration names the data directory,
// the object store and the key prefix.
void run_consume_tiered(ConsumeFlags f, const log::OffsetSpec& spec, Context& ctx) {
  auto cfg = load_tool_config(f.config, f.data_dir);
  if (!cfg.ok()) return ctx.fail(cfg.error());
  auto view = node::NodeReadView::open(*cfg);
  if (!view.ok()) return ctx.fail(view.error());
  tier::StreamReaderOptions ro;
  ro.verify_crc = !f.no_verify;
  auto reader = (*view)->open_reader(f.stream, spec, ro);
  if (!reader.ok()) return ctx.fail(reader.error());
  // The node moves on while this reads: when the reader needs a manifest
  // newer than the one loaded (unavailable, or the local log moved past
  // it), load it again, a bounded number of times in a row.
  int retries = 0;
  RecordSource src;
  src.next = [&](std::vector<log::Record>* out) {
    auto n = (*reader)->next_records(out);
    if (n.ok()) retries = 0;
    return n;
  };
  src.wait = [&] { (*reader)->wait(std::chrono::seconds(1)); };
  src.recover = [&](const Error& e) {
    if (e.code != Errc::unavailable && e.code != Errc::out_of_range && e.code != Errc::transient)
      return false;
    if (++retries > 50) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return (*view)->refresh(f.stream).ok();
  };
  print_records(f, ctx, std::move(src));
}

void run_consume(ConsumeFlags f, Context& ctx) {
  auto spec = log::parse_offset_spec(f.from);
  if (!spec.ok()) return ctx.fail(spec.error());
  if (!f.config.empty()) {
    // `consume --config F STREAM`: the one positional is the stream.
    if (f.stream.empty()) std::swap(f.stream, f.data_dir);
    if (f.stream.empty())
      return ctx.fail(Error(Errc::invalid_argument, "consume: no stream named"));
    return run_consume_tiered(std::move(f), *spec, ctx);
  }
  if (f.data_dir.empty() || f.stream.empty()) {
    return ctx.fail(Error(Errc::invalid_argument,
                          "consume: give <data-dir> <stream>, or --config NODE.json <stream>"));
  }
  auto lg = open_for_reading(f.data_dir, f.stream);
  if (!lg.ok()) return ctx.fail(lg.error());
  log::ReaderOptions ro;
  ro.verify_crc = !f.no_verify;
  auto reader = (*lg)->open_reader(*spec, ro);
  if (!reader.ok()) return ctx.fail(reader.error());
  RecordSource src;
  src.next = [&](std::vector<log::Record>* out) { return (*reader)->next_records(out); };
  src.wait = [&] { (*reader)->wait(std::chrono::seconds(1)); };
  print_records(f, ctx, std::move(src));
}

// ------------------------------------------------------------------ inspect

struct InspectFlags {
  std::string path;
  std::string config;
  bool chunks = false;
  bool no_verify = false;
};

json segment_json(const log::SegmentReport& s, bool chunks) {
  json j = {{"file", s.file},
            {"first_offset", s.first_offset},
            {"next_offset", s.next_offset},
            {"size", s.size},
            {"valid_end", s.valid_end},
            {"chunks", s.chunks},
            {"records", s.records},
            {"first_timestamp", s.first_timestamp_ms},
            {"last_timestamp", s.last_timestamp_ms},
            {"epochs", {s.min_epoch, s.max_epoch}},
            {"index",
             {{"file", s.index_file}, {"present", s.index_present}, {"records", s.index_records}}}};
  if (s.header_error) j["header_error"] = *s.header_error;
  if (s.damage) j["damage"] = *s.damage;
  if (s.index_problem) j["index"]["problem"] = *s.index_problem;
  if (s.maybe_unsynced) j["maybe_unsynced"] = true;
  if (s.dropped_by_open) j["dropped_by_open"] = true;
  if (chunks) {
    j["chunk_list"] = json::array();
    for (const auto& c : s.chunk_list) {
      j["chunk_list"].push_back({{"first_offset", c.first_offset},
                                 {"records", c.num_records},
                                 {"timestamp", c.timestamp_ms},
                                 {"epoch", c.epoch},
                                 {"position", c.position},
                                 {"size", c.chunk_size},
                                 {"type", int(c.type)}});
    }
  }
  return j;
}

json stream_json(const log::StreamReport& r, bool chunks) {
  json j = {{"dir", r.dir},
            {"first_offset", r.first_offset},
            {"next_offset", r.next_offset},
            {"bytes", r.bytes},
            {"chunks", r.chunks},
            {"records", r.records},
            {"ok", r.ok()},
            {"problems", r.problems},
            {"segments", json::array()}};
  if (r.synced_below) j["synced_below"] = *r.synced_below;
  for (const auto& s : r.segments) j["segments"].push_back(segment_json(s, chunks));
  return j;
}

void print_stream(const log::StreamReport& r, bool chunks) {
  std::cout << fmt::format(
      "stream {}: offsets {}..{} ({} records), {} chunks, {} in {} segment(s): {}\n", r.dir,
      r.first_offset, r.next_offset, r.records, r.chunks, human_bytes(double(r.bytes)),
      r.segments.size(), r.ok() ? "OK" : fmt::format("{} problem(s)", r.problems.size()));
  if (r.synced_below) {
    std::cout << fmt::format("  sync mark: segments from offset {} on may be unsynced\n",
                             *r.synced_below);
  }
  for (const auto& s : r.segments) {
    std::cout << fmt::format(
        "  {}  offsets {}..{}  {} chunks  {}  index {} records{}{}{}\n", path_basename(s.file),
        s.first_offset, s.next_offset, s.chunks, human_bytes(double(s.size)), s.index_records,
        s.index_problem ? " (mismatch)" : "", s.maybe_unsynced ? "  (maybe unsynced)" : "",
        s.dropped_by_open ? "  (open drops it)" : "");
    if (chunks) {
      for (const auto& c : s.chunk_list) {
        std::cout << fmt::format(
            "    chunk {:>12} +{:<6} pos {:>10} size {:>8} ts {} epoch {} type {}\n",
            c.first_offset, c.num_records, c.position, c.chunk_size, c.timestamp_ms, c.epoch,
            int(c.type));
      }
    }
  }
  for (const auto& p : r.problems) std::cout << "  problem: " << p << "\n";
}

// A node's data directory (`strata serve`'s): its LOCK beside a streams/
// folder. Its logs are in streams/; its other folders (catalog, objects,
// tracking, super_streams, …) are not streams and are not damage.
bool is_node_data_dir(const std::string& dir) {
  auto streams = posix_fs().stat(path_join(dir, "streams"));
  auto lock = posix_fs().stat(path_join(dir, "LOCK"));
  return streams.ok() && streams->is_dir && lock.ok() && !lock->is_dir;
}

void run_inspect(InspectFlags f, Context& ctx) {
  if (!f.config.empty()) {
    auto cfg = load_tool_config(f.config, f.path);
    if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("inspect"));
    f.path = cfg->data_dir;
  } else if (f.path.empty()) {
    return ctx.fail(Error(Errc::invalid_argument, "inspect: give a path or --config"));
  }
  auto st = posix_fs().stat(f.path);
  if (!st.ok())
    return ctx.fail(Error(st.code(), fmt::format("inspect: {} does not exist", f.path)));
  if (!st->is_dir)
    return ctx.fail(
        Error(Errc::invalid_argument, fmt::format("inspect: {} is not a directory", f.path)));
  const std::string node_dir = is_node_data_dir(f.path) ? f.path : "";
  const std::string logs = node_dir.empty() ? f.path : path_join(node_dir, "streams");
  log::InspectOptions io;
  io.verify_crc = !f.no_verify;
  io.include_chunks = f.chunks;
  Progress progress(!ctx.json);
  io.progress = [&](uint64_t done, uint64_t total) {
    progress.update(fmt::format("inspect: {} of {} verified", human_bytes(double(done)),
                                human_bytes(double(total))));
  };
  std::vector<std::string> dirs;
  std::vector<std::string> names;
  bool single = node_dir.empty() && log::is_stream_dir(posix_fs(), f.path);
  if (single) {
    dirs.push_back(f.path);
  } else {
    auto entries = posix_fs().list_dir(logs);
    if (!entries.ok()) return ctx.fail(entries.error());
    for (const auto& n : *entries) {
      std::string d = path_join(logs, n);
      auto s = posix_fs().stat(d);
      if (!s.ok() || !s->is_dir) continue;
      if (auto name = log::stream_of_entry(posix_fs(), logs, n)) {
        dirs.push_back(d);
        names.push_back(*name);
      }
    }
  }
  json all = json::array();
  bool ok = true;
  for (size_t i = 0; i < dirs.size(); ++i) {
    auto r = log::inspect_stream(posix_fs(), dirs[i], io);
    progress.done();
    if (!r.ok()) return ctx.fail(r.error());
    ok = ok && r->ok();
    if (ctx.json) {
      json j = stream_json(*r, f.chunks);
      if (!single) j["name"] = names[i];
      all.push_back(std::move(j));
    } else {
      print_stream(*r, f.chunks);
    }
  }
  if (ctx.json) {
    json whole = {{"data_dir", f.path}, {"ok", ok}, {"streams", all}};
    if (!node_dir.empty()) whole["node"] = true;
    ctx.print_json(single ? all.at(0) : whole);
  } else if (!single) {
    std::cout << fmt::format("{} stream(s) in {}{}: {}\n", dirs.size(), f.path,
                             node_dir.empty() ? "" : " (a node's data directory)",
                             ok ? "OK" : "PROBLEMS");
  }
  // Problems are findings, not a failure to inspect: exit 2 so scripts can tell.
  if (!ok) ctx.exit_code = 2;
}

Registrar reg_log([](CLI::App& app, Context& ctx) {
  {
    auto f = std::make_shared<ProduceFlags>();
    auto* cmd =
        app.add_subcommand("produce", "Append records to a stream: stdin lines, or generated");
    cmd->add_option("data-dir", f->data_dir, "Data directory (created if missing)")->required();
    cmd->add_option("stream", f->stream, "Stream name (created if missing)")->required();
    cmd->add_option("--generate", f->generate,
                    "Write N generated records instead of reading stdin");
    cmd->add_option("--size", f->size, "Bytes per generated record")->capture_default_str();
    cmd->add_option("--batch", f->batch, "Records per append")->capture_default_str();
    cmd->add_option("--fsync", f->fsync, "always|interval|never")->capture_default_str();
    cmd->add_option("--fsync-interval-ms", f->interval_ms, "Interval for --fsync interval")
        ->capture_default_str();
    cmd->add_flag("--no-create", f->no_create, "Fail if the stream does not exist");
    cmd->add_flag("--print-acks", f->print_acks, "Print 'ack <first> <next>' per committed batch");
    cmd->callback([f, &ctx] { run_produce(*f, ctx); });
  }
  {
    auto f = std::make_shared<ConsumeFlags>();
    auto* cmd = app.add_subcommand(
        "consume",
        "Print a stream's records from an offset spec (with --config: across both tiers of a "
        "node's stream)");
    cmd->add_option("data-dir", f->data_dir,
                    "Data directory (with --config: optional, overrides the node's)");
    cmd->add_option("stream", f->stream, "Stream name");
    cmd->add_option("--config", f->config,
                    "A node's configuration (JSON): read remote fragments, then local segments");
    cmd->add_option("--from", f->from, "first|last|next|offset:N|timestamp:T (ms)")
        ->capture_default_str();
    cmd->add_flag("--follow", f->follow, "Keep waiting for new records");
    cmd->add_option("--max", f->max, "Stop after N records");
    cmd->add_flag("--show-offsets", f->show_offsets,
                  "Prefix each record with its offset and a tab");
    cmd->add_flag("--no-verify", f->no_verify, "Skip CRC verification of chunks");
    cmd->callback([f, &ctx] { run_consume(*f, ctx); });
  }
  {
    auto f = std::make_shared<InspectFlags>();
    auto* cmd = app.add_subcommand(
        "inspect", "Check a data directory or stream: segments, chunks, indexes, CRCs (read-only)");
    cmd->add_option("path", f->path,
                    "<data-dir> (a node's or produce's) or <data-dir>/<stream>; with --config: "
                    "overrides the file's data_dir");
    cmd->add_option("--config", f->config, "The node's configuration file (its data_dir)");
    cmd->add_flag("--chunks", f->chunks, "List every chunk");
    cmd->add_flag("--no-verify", f->no_verify, "Skip reading chunk bodies (headers only)");
    cmd->callback([f, &ctx] { run_inspect(*f, ctx); });
  }
});

}  // namespace
}  // namespace strata::cli
