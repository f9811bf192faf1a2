// `strata demo`: the README's main job. Runs a node on the embedded
// defaults (a directory as object store, the embedded catalog) — or against
// an S3 endpoint — writes a stream with small fragments, waits until it is
// persisted remotely, lets local retention drop the tiered segments, then
// reads every record back across both tiers (remote fragments, then local
// segments) and verifies each byte. Reports what it measured.
#include <fmt/format.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include "cli/cmd_log_demo.h"
#include "cli/command.h"
#include "common/fs.h"
#include "log/reader.h"
#include "log/registry.h"
#include "node/node.h"
#include "server/admin_http.h"
#include "tier/fragment_object.h"
#include "tier/object_keys.h"
#include "tier/remote_audit.h"
#include "tier/uploader.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct DemoFlags {
  std::string data_dir;
  bool keep = false;
  std::string stream = "demo";
  uint64_t records = 100000;
  uint64_t record_size = 1024;
  uint64_t batch = 500;
  int producers = 4;
  std::string fsync = "always";
  uint64_t segment_mib = 16;
  uint64_t fragment_mib = 4;
  uint64_t local_mib = 32;
  std::string s3_endpoint;
  std::string bucket;
  std::string region;
  std::string http;
};

// Verifies records in stream order: offsets contiguous, and each producer's
// records in sequence from 0 — so every record is seen exactly once.
class Verifier {
 public:
  Verifier(int producers, uint64_t size) : next_(size_t(producers), 0), size_(size) {}
  Status check(uint64_t offset, std::string_view value, const std::string& where) {
    int p;
    uint64_t seq;
    if (offset != offset_) {
      return Error(Errc::corrupt,
                   fmt::format("{}: offset {} where {} was expected", where, offset, offset_));
    }
    if (!check_demo_record(value, size_, &p, &seq) || p < 0 || size_t(p) >= next_.size() ||
        seq != next_[size_t(p)]) {
      return Error(Errc::corrupt, fmt::format("{}: the record at offset {} is not the one written",
                                              where, offset));
    }
    next_[size_t(p)] += 1;
    offset_ += 1;
    return Status::OK();
  }
  uint64_t offset() const { return offset_; }

 private:
  std::vector<uint64_t> next_;
  uint64_t size_;
  uint64_t offset_ = 0;
};

struct Demo {
  const DemoFlags& f;
  Context& ctx;
  Progress& progress;
  node::Node& node;
  std::shared_ptr<log::StreamLog> log;
  json report = json::object();
  Clock::time_point write_start{}, write_end{};
  uint64_t payload_bytes = 0;

  void line(const std::string& s) {
    progress.done();
    if (!ctx.json) std::cout << s << "\n" << std::flush;
  }

  std::string upload_progress() {
    auto u = node.uploader(f.stream);
    if (!u) return "";
    auto st = u->status();
    return fmt::format(", remote up to offset {}, {} fragments uploaded", st.remote_next_offset,
                       st.fragments_uploaded);
  }

  Status write() {
    std::vector<std::thread> ts;
    std::atomic<uint64_t> written{0};
    std::atomic<bool> failed{false};
    std::mutex mu;
    Error first;
    write_start = Clock::now();
    for (int p = 0; p < f.producers; ++p) {
      ts.emplace_back([&, p] {
        uint64_t share =
            f.records / uint64_t(f.producers) + (uint64_t(p) < f.records % uint64_t(f.producers));
        std::vector<std::string> recs;
        std::vector<BytesView> views;
        for (uint64_t seq = 0; seq < share && !failed;) {
          recs.clear();
          views.clear();
          for (uint64_t i = 0; i < f.batch && seq < share; ++i, ++seq) {
            recs.push_back(demo_record(p, seq, f.record_size));
          }
          for (const auto& r : recs) views.push_back(r);
          auto r = log->append(views);
          if (!r.ok()) {
            std::lock_guard g(mu);
            if (!failed.exchange(true)) first = r.error();
            return;
          }
          written += recs.size();
        }
      });
    }
    while (written < f.records && !failed) {
      progress.update(
          fmt::format("write: {}/{} records{}", written.load(), f.records, upload_progress()));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (auto& t : ts) t.join();
    write_end = Clock::now();
    if (failed) return std::move(first).with_context("demo write");
    double secs = since(write_start);
    payload_bytes = f.records * f.record_size;
    line(fmt::format("write    {:>9} records {:>10} in {:6.2f} s {:>8.1f} MB/s {:>10.0f} records/s",
                     f.records, human_bytes(double(payload_bytes)), secs,
                     double(payload_bytes) / secs / 1e6, double(f.records) / secs));
    report["write"] = {{"records", f.records},
                       {"payload_bytes", payload_bytes},
                       {"seconds", secs},
                       {"mb_per_s", double(payload_bytes) / secs / 1e6},
                       {"records_per_s", double(f.records) / secs}};
    return Status::OK();
  }

  Status upload() {
    // Wait for everything written to be persisted, showing progress.
    std::atomic<bool> done{false};
    Status result;
    std::thread waiter([&] {
      result = node.flush(f.stream, std::chrono::minutes(10));
      done = true;
    });
    while (!done) {
      progress.update("upload: waiting for the remote tier" + upload_progress());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    waiter.join();
    STRATA_TRY(result);
    double lag = since(write_end);
    double total = since(write_start);
    auto st = node.uploader(f.stream)->status();
    auto& ttr = st.time_to_remote;
    line(fmt::format(
        "upload   {:>9} fragments {:>8} in {:6.2f} s {:>8.1f} MB/s; remote caught up {:.2f} s "
        "after the last write; time-to-remote p50 {:.0f} ms p99 {:.0f} ms",
        st.fragments_uploaded, human_bytes(double(st.bytes_uploaded)), total,
        double(st.bytes_uploaded) / total / 1e6, lag, ttr.quantile_ms(0.5), ttr.quantile_ms(0.99)));
    report["upload"] = {{"fragments", st.fragments_uploaded},
                        {"bytes", st.bytes_uploaded},
                        {"seconds", total},
                        {"mb_per_s", double(st.bytes_uploaded) / total / 1e6},
                        {"caught_up_after_write_s", lag},
                        {"persists", st.core.persists_completed},
                        {"time_to_remote_p50_ms", ttr.quantile_ms(0.5)},
                        {"time_to_remote_p99_ms", ttr.quantile_ms(0.99)},
                        {"remote_next_offset", st.remote_next_offset}};
    return Status::OK();
  }

  Status local() {
    // The log runs retention as it rolls segments and the uploader after
    // each persist (the tiering hook vetoes what is not persisted); run it
    // once more now that everything is persisted.
    STRATA_TRY(log->apply_retention());
    uint64_t bytes = 0;
    auto segs = log->segments();
    for (const auto& s : segs) bytes += s.size_bytes;
    line(
        fmt::format("local    {:>9} left in {} segment(s): the local log starts at offset {} "
                    "(older segments deleted once uploaded; local retention {} MiB)",
                    human_bytes(double(bytes)), segs.size(), log->first_offset(), f.local_mib));
    report["local"] = {
        {"bytes", bytes}, {"segments", segs.size()}, {"first_offset", log->first_offset()}};
    return Status::OK();
  }

  Status bucket(tier::AuditReport* out) {
    progress.update("bucket: auditing the manifest against the bucket");
    STRATA_ASSIGN_OR_RETURN(auto keys,
                            tier::ObjectKeys::make(node.config().tiering.key_prefix, f.stream));
    STRATA_ASSIGN_OR_RETURN(auto audit, tier::audit_stream(node.store(), node.catalog(), keys));
    if (audit.damaged()) {
      const auto& p = audit.problems.front();
      return Error(Errc::corrupt, fmt::format("bucket audit: {} problem(s), first: {} {}: {}",
                                              audit.problems.size(), p.kind, p.key, p.detail));
    }
    STRATA_ASSIGN_OR_RETURN(auto listed, objstore::list_all(node.store(), keys.stream_prefix()));
    uint64_t bytes = 0;
    for (const auto& o : listed) bytes += o.size;
    line(fmt::format(
        "bucket   {:>9} objects {:>10} ({} fragments, 1 root, {} unreferenced: old "
        "roots within their delete grace); manifest [{}, {}) at revision {}, every "
        "object's CRC verified",
        listed.size(), human_bytes(double(bytes)), audit.fragments, audit.orphans.size(),
        audit.manifest.first_offset, audit.manifest.next_offset, audit.revision));
    report["bucket"] = {{"objects", listed.size()},
                        {"bytes", bytes},
                        {"fragments", audit.fragments},
                        {"orphans", audit.orphans.size()},
                        {"first_offset", audit.manifest.first_offset},
                        {"next_offset", audit.manifest.next_offset},
                        {"revision", audit.revision}};
    *out = std::move(audit);
    return Status::OK();
  }

  // Every record, in offset order, across both tiers, through one reader
  // from offset 0 (tier/stream_reader.h): the remote tier's fragments by
  // ranged GETs below the local log's first offset, then the local log.
  // Time and bytes are counted per tier, chunk by chunk.
  Status verify() {
    Verifier v(f.producers, f.record_size);
    STRATA_ASSIGN_OR_RETURN(auto reader, node.open_reader(f.stream, log::OffsetSpec::at_offset(0)));
    double secs[2] = {0, 0};
    uint64_t bytes[2] = {0, 0}, records[2] = {0, 0};
    for (;;) {
      auto t0 = Clock::now();
      STRATA_ASSIGN_OR_RETURN(auto c, reader->next_chunk());
      if (!c) break;
      const int t = c->tier == tier::Tier::remote ? 1 : 0;
      const std::string where =
          fmt::format("{} chunk at offset {}", t ? "remote" : "local", c->header.first_offset);
      STRATA_ASSIGN_OR_RETURN(auto values, log::parse_records(c->header, c->data(), where));
      for (size_t i = 0; i < values.size(); ++i) {
        STRATA_TRY(v.check(c->header.first_offset + i, values[i], where));
      }
      secs[t] += since(t0);
      bytes[t] += c->bytes.size();
      records[t] += values.size();
      if (v.offset() % 8192 < values.size()) {
        progress.update(
            fmt::format("verify: {} tier, offset {}", t ? "remote" : "local", v.offset()));
      }
    }
    if (v.offset() != f.records) {
      return Error(Errc::corrupt, fmt::format("verify: {} records read back across both tiers, "
                                              "{} written",
                                              v.offset(), f.records));
    }
    auto mbps = [&](int t) { return double(bytes[t]) / std::max(secs[t], 1e-9) / 1e6; };
    const auto st = reader->stats();
    line(fmt::format(
        "verify   {:>9} records from offset 0 through one reader: {} remote ({:.1f} MB/s, {} "
        "ranged GETs), {} local ({:.1f} MB/s); every byte verified, none missing, none twice",
        v.offset(), records[1], mbps(1), st.range_gets, records[0], mbps(0)));
    report["verify"] = {{"records", v.offset()},
                        {"remote_records", records[1]},
                        {"local_records", records[0]},
                        {"remote_mb_per_s", mbps(1)},
                        {"local_mb_per_s", mbps(0)},
                        {"range_gets", st.range_gets},
                        {"peak_prefetch_bytes", st.peak_buffered_bytes},
                        {"verified", true}};
    return Status::OK();
  }
};

json node_document(const DemoFlags& f) {
  json doc = {
      {"log",
       {{"fsync", f.fsync},
        {"segment_bytes", f.segment_mib << 20},
        {"retention", {{"max_bytes", f.local_mib << 20}}}}},
      {"tiering",
       {{"fragment_target_bytes", f.fragment_mib << 20},
        {"fragment_max_age_ms", 1000},
        {"persist_interval_ms", 500},
        {"delete_grace_ms", 1000}}},
  };
  if (!f.s3_endpoint.empty()) {
    doc["objstore"] = {{"backend", "s3"}, {"s3", {{"endpoint", f.s3_endpoint}}}};
    if (!f.bucket.empty()) doc["objstore"]["s3"]["bucket"] = f.bucket;
    if (!f.region.empty()) doc["objstore"]["s3"]["region"] = f.region;
  }
  if (!f.http.empty()) doc["http"] = {{"listen", f.http}};
  return doc;
}

void run_demo(const DemoFlags& f, Context& ctx) {
  if (f.records == 0 || f.record_size == 0 || f.batch == 0 || f.batch > 65535 || f.producers < 1 ||
      f.producers > 256 || f.segment_mib == 0 || f.fragment_mib == 0 || f.local_mib == 0) {
    return ctx.fail(
        "demo: --records, --record-size, --segment-mib, --fragment-mib, --local-mib must be > 0, "
        "--batch in 1..65535, --producers in 1..256");
  }
  if (f.batch * (f.record_size + 4) > (8ull << 20)) {
    return ctx.fail(
        fmt::format("demo: a batch of {} records of {} bytes exceeds the 8 MiB chunk limit",
                    f.batch, f.record_size));
  }
  // A fresh temporary directory unless one is given; removed afterwards.
  std::string dir = f.data_dir;
  bool temp = dir.empty();
  if (temp) {
    char tmpl[] = "/tmp/strata-demo-XXXXXX";
    if (!::mkdtemp(tmpl)) return ctx.fail("demo: cannot create a temporary directory in /tmp");
    dir = tmpl;
  }
  struct Cleanup {
    std::string dir;
    bool on;
    ~Cleanup() {
      if (on) (void)remove_all(posix_fs(), dir);
    }
  } cleanup{dir, temp && !f.keep};

  auto cfg = node::load_node_config(node_document(f), dir, objstore::process_env());
  if (!cfg.ok()) return ctx.fail(std::move(cfg).error().with_context("demo"));
  if (exists(posix_fs(), log::stream_dir(path_join(dir, "streams"), f.stream))) {
    return ctx.fail(Error(Errc::already_exists,
                          fmt::format("demo: stream '{}' already exists in {}; use another "
                                      "--stream or a fresh --data-dir",
                                      f.stream, dir)));
  }
  auto node = node::Node::open(*cfg);
  if (!node.ok()) return ctx.fail(std::move(node).error().with_context("demo"));
  std::unique_ptr<server::AdminHttp> http;
  if (!cfg->http_listen.empty()) {
    node::Node* n = node->get();
    auto h = server::AdminHttp::start(cfg->http_listen, {[n] { return n->metrics_text(); },
                                                         [n] { return n->status_json().dump(); },
                                                         /*api=*/nullptr});
    if (!h.ok()) return ctx.fail(std::move(h).error().with_context("demo"));
    http = std::move(h).value();
  }
  auto log = (*node)->create_stream(f.stream);
  if (!log.ok()) return ctx.fail(std::move(log).error().with_context("demo"));

  Progress progress(!ctx.json);
  Demo d{f, ctx, progress, **node, *log};
  if (!ctx.json) {
    std::cout << fmt::format(
                     "strata demo: stream '{}' in {}{}: {} records x {} B, batches of {}, {} "
                     "producer(s), fsync={}\n  object store {}, catalog {}; fragments of {} MiB, "
                     "segments of {} MiB, {} MiB kept on local disk{}\n",
                     f.stream, dir, temp && !f.keep ? " (temporary)" : "", f.records, f.record_size,
                     f.batch, f.producers, f.fsync, (*node)->store().describe(),
                     (*node)->catalog().describe(), f.fragment_mib, f.segment_mib, f.local_mib,
                     http ? "; status at " + http->url() + "/status" : "")
              << std::flush;
  }
  tier::AuditReport audit;
  const std::pair<const char*, std::function<Status()>> phases[] = {
      {"write", [&] { return d.write(); }},   {"upload", [&] { return d.upload(); }},
      {"local", [&] { return d.local(); }},   {"bucket", [&] { return d.bucket(&audit); }},
      {"verify", [&] { return d.verify(); }},
  };
  for (const auto& [name, run] : phases) {
    Status s = run();
    progress.done();
    if (!s.ok()) {
      return ctx.fail(std::move(s).error().with_context(fmt::format("demo phase '{}'", name)));
    }
  }
  if (http) http->stop();
  if (Status s = (*node)->close(); !s.ok()) return ctx.fail(s.error());
  json out = {{"data_dir", dir},
              {"stream", f.stream},
              {"temporary", temp && !f.keep},
              {"config", node::describe_node_config(*cfg)},
              {"phases", d.report},
              {"ok", true}};
  if (ctx.json) {
    ctx.print_json(out);
  } else {
    std::cout << "ok: every record was uploaded, read back across both tiers and verified\n";
  }
}

Registrar reg_demo([](CLI::App& app, Context& ctx) {
  auto f = std::make_shared<DemoFlags>();
  auto* cmd = app.add_subcommand(
      "demo",
      "Run a node on embedded defaults: write a stream, upload it, drop tiered local segments, "
      "read everything back across both tiers and verify it");
  cmd->add_option("--data-dir", f->data_dir,
                  "Data directory (default: a fresh temporary one, removed afterwards)");
  cmd->add_flag("--keep", f->keep, "Keep the temporary data directory");
  cmd->add_option("--stream", f->stream, "Stream name")->capture_default_str();
  cmd->add_option("--records", f->records, "Records to write")->capture_default_str();
  cmd->add_option("--record-size", f->record_size, "Bytes per record")->capture_default_str();
  cmd->add_option("--batch", f->batch, "Records per append")->capture_default_str();
  cmd->add_option("--producers", f->producers, "Concurrent appending threads")
      ->capture_default_str();
  cmd->add_option("--fsync", f->fsync, "always|interval|never")->capture_default_str();
  cmd->add_option("--segment-mib", f->segment_mib, "Local segment size (MiB)")
      ->capture_default_str();
  cmd->add_option("--fragment-mib", f->fragment_mib, "Remote fragment target size (MiB)")
      ->capture_default_str();
  cmd->add_option("--local-mib", f->local_mib, "Local retention: MiB kept on disk once uploaded")
      ->capture_default_str();
  cmd->add_option("--s3-endpoint", f->s3_endpoint,
                  "Use an S3 endpoint instead of a local directory (credentials from "
                  "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)");
  cmd->add_option("--bucket", f->bucket, "S3 bucket (with --s3-endpoint)");
  cmd->add_option("--region", f->region, "S3 region (with --s3-endpoint)");
  cmd->add_option("--http", f->http, "Serve /metrics and /status on host:port while running");
  cmd->callback([f, &ctx] { run_demo(*f, ctx); });
});

}  // namespace
}  // namespace strata::cli
