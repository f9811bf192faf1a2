// `strata demo`: writes a stream, reads it back, verifies every record and
// reports what it measured. The main job of the README's first command.
#include "cli/cmd_log_demo.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli/command.h"
#include "common/clock.h"
#include "log/reader.h"

namespace strata::cli {

using json = nlohmann::json;

std::vector<DemoPhase>& extra_demo_phases() {
  static std::vector<DemoPhase> v;
  return v;
}

Progress::Progress(bool enabled) : enabled_(enabled), tty_(::isatty(2) == 1) {}

void Progress::update(const std::string& msg) {
  if (!enabled_) return;
  int64_t now = system_clock().monotonic_ns();
  int64_t gap = tty_ ? 100'000'000 : 2'000'000'000;
  if (last_ns_ != 0 && now - last_ns_ < gap) return;
  if (last_ns_ == 0 && !tty_) {
    // Non-interactive: skip the first report, so short operations print nothing.
    last_ns_ = now;
    return;
  }
  last_ns_ = now;
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", msg.c_str());
    dirty_ = true;
  } else {
    std::fprintf(stderr, "%s\n", msg.c_str());
  }
  std::fflush(stderr);
}

void Progress::done() {
  if (dirty_) std::fprintf(stderr, "\r\033[K");
  dirty_ = false;
  last_ns_ = 0;
}

namespace {

// The 16-byte pattern that fills the record of (producer, seq) after its
// header; cheap to generate and to compare, and different for every record.
void demo_pattern(int producer, uint64_t seq, char out[16]) {
  uint64_t x = uint64_t(producer) * 0x9E3779B97F4A7C15ull + seq * 0xBF58476D1CE4E5B9ull + 1;
  for (int i = 0; i < 16; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = char('a' + (x % 26));
  }
}

}  // namespace

std::string demo_record(int producer, uint64_t seq, uint64_t size) {
  std::string s = fmt::format("p{}:{}:", producer, seq);
  char pat[16];
  demo_pattern(producer, seq, pat);
  size_t head = s.size();
  s.resize(std::max<size_t>(size, 1));
  for (size_t i = head; i < s.size(); ++i) s[i] = pat[(i - head) & 15];
  return s;
}

bool check_demo_record(std::string_view r, uint64_t size, int* producer, uint64_t* seq) {
  unsigned long long q;
  int p;
  char head[48];
  size_t hn = std::min(r.size(), sizeof head - 1);
  std::memcpy(head, r.data(), hn);
  head[hn] = 0;
  int used = 0;
  if (std::sscanf(head, "p%d:%llu:%n", &p, &q, &used) != 2 || used == 0) return false;
  if (r.size() != std::max<size_t>(size, 1)) return false;
  if (std::string_view(head, size_t(used)) != fmt::format("p{}:{}:", p, q)) return false;
  char pat[16];
  demo_pattern(p, q, pat);
  for (size_t i = size_t(used); i < r.size(); ++i) {
    if (r[i] != pat[(i - size_t(used)) & 15]) return false;
  }
  *producer = p;
  *seq = q;
  return true;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string rate_line(uint64_t records, uint64_t bytes, double secs) {
  return fmt::format("{:>9.1f} MB/s {:>11.0f} records/s", bytes / secs / 1e6, records / secs);
}

Result<DemoPhaseResult> phase_write(DemoContext& c) {
  std::vector<std::thread> ts;
  std::atomic<uint64_t> written{0};
  std::atomic<bool> failed{false};
  std::mutex err_mu;
  Error first_error;
  auto t0 = std::chrono::steady_clock::now();
  for (int p = 0; p < c.producers; ++p) {
    ts.emplace_back([&, p] {
      // Producer p writes records seq = 0.. of its share, in batches.
      uint64_t share =
          c.records / uint64_t(c.producers) + (uint64_t(p) < c.records % uint64_t(c.producers));
      std::vector<std::string> recs;
      std::vector<BytesView> views;
      for (uint64_t seq = 0; seq < share && !failed;) {
        recs.clear();
        views.clear();
        for (uint64_t i = 0; i < c.batch && seq < share; ++i, ++seq) {
          recs.push_back(demo_record(p, seq, c.record_size));
        }
        for (const auto& r : recs) views.push_back(r);
        auto r = c.log->append(views);
        if (!r.ok()) {
          std::lock_guard<std::mutex> g(err_mu);
          if (!failed.exchange(true)) first_error = r.error();
          return;
        }
        written += recs.size();
      }
    });
  }
  while (written < c.records && !failed) {
    c.progress(fmt::format("write: {}/{} records", written.load(), c.records));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& t : ts) t.join();
  double secs = seconds_since(t0);
  if (failed) return std::move(first_error).with_context("demo write");
  uint64_t bytes = c.records * c.record_size;
  DemoPhaseResult r;
  r.line = fmt::format("write    {:>10} records {:>10} in {:6.2f} s {}", c.records,
                       human_bytes(double(bytes)), secs, rate_line(c.records, bytes, secs));
  r.json = {{"records", c.records},
            {"payload_bytes", bytes},
            {"seconds", secs},
            {"mb_per_s", bytes / secs / 1e6},
            {"records_per_s", c.records / secs}};
  return r;
}

Result<DemoPhaseResult> phase_read(DemoContext& c) {
  auto t0 = std::chrono::steady_clock::now();
  STRATA_ASSIGN_OR_RETURN(auto reader, c.log->open_reader(log::OffsetSpec::first()));
  std::vector<uint64_t> next_seq(size_t(c.producers), 0);
  std::vector<log::Record> recs;
  uint64_t n = 0, bytes = 0, expect_offset = c.log->first_offset();
  while (true) {
    recs.clear();
    STRATA_ASSIGN_OR_RETURN(size_t got, reader->next_records(&recs));
    if (got == 0) break;
    for (const auto& r : recs) {
      int p;
      uint64_t seq;
      if (r.offset != expect_offset) {
        return Error(Errc::corrupt, fmt::format("demo read: offset {} where {} was expected",
                                                r.offset, expect_offset));
      }
      if (!check_demo_record(r.value, c.record_size, &p, &seq) || p < 0 || p >= c.producers ||
          seq != next_seq[size_t(p)]) {
        return Error(
            Errc::corrupt,
            fmt::format("demo read: record at offset {} is not the expected record", r.offset));
      }
      ++next_seq[size_t(p)];
      ++expect_offset;
      ++n;
      bytes += r.value.size();
    }
    if ((n & 0xFFF) < got) c.progress(fmt::format("read: {}/{} records", n, c.records));
  }
  double secs = seconds_since(t0);
  if (n != c.records) {
    return Error(Errc::corrupt,
                 fmt::format("demo read: {} records read back, {} written", n, c.records));
  }
  DemoPhaseResult r;
  r.line =
      fmt::format("read     {:>10} records {:>10} in {:6.2f} s {}  (CRC and every byte verified)",
                  n, human_bytes(double(bytes)), secs, rate_line(n, bytes, secs));
  r.json = {{"records", n},
            {"payload_bytes", bytes},
            {"seconds", secs},
            {"mb_per_s", bytes / secs / 1e6},
            {"records_per_s", n / secs},
            {"verified", true}};
  return r;
}

Result<DemoPhaseResult> phase_disk(DemoContext& c) {
  auto segs = c.log->segments();
  uint64_t bytes = 0, chunks = 0, index_bytes = 0;
  for (const auto& s : segs) {
    bytes += s.size_bytes;
    chunks += s.chunks;
    index_bytes += 24 + 48 * s.chunks;
  }
  uint64_t payload = c.records * c.record_size;
  DemoPhaseResult r;
  r.line = fmt::format(
      "disk     {:>10} in {} segment(s), {} chunks (avg {} records/chunk), indexes "
      "{}, overhead {:.2f}%",
      human_bytes(double(bytes)), segs.size(), chunks, chunks ? c.records / chunks : 0,
      human_bytes(double(index_bytes)),
      payload ? 100.0 * (double(bytes + index_bytes) - double(payload)) / double(payload) : 0.0);
  r.json = {{"segment_bytes", bytes},
            {"index_bytes", index_bytes},
            {"segments", segs.size()},
            {"chunks", chunks}};
  return r;
}

struct DemoFlags {
  std::string data_dir;
  std::string stream = "demo";
  uint64_t records = 100000;
  uint64_t record_size = 1024;
  uint64_t batch = 500;
  int producers = 4;
  std::string fsync = "always";
  int64_t interval_ms = 100;
  uint64_t segment_mib = 256;
};

void run_demo(const DemoFlags& f, Context& ctx) {
  auto policy = log::parse_fsync_policy(f.fsync);
  if (!policy.ok()) return ctx.fail(policy.error());
  if (f.records == 0 || f.record_size == 0 || f.batch == 0 || f.batch > 65535 || f.producers < 1 ||
      f.producers > 256 || f.segment_mib == 0) {
    return ctx.fail(
        "demo: --records, --record-size, --segment-mib must be > 0, --batch in 1..65535, "
        "--producers in 1..256");
  }
  if (f.batch * (f.record_size + 4) > (8ull << 20)) {
    return ctx.fail(
        fmt::format("demo: a batch of {} records of {} bytes exceeds the 8 MiB chunk limit",
                    f.batch, f.record_size));
  }
  Progress progress(!ctx.json);
  DemoContext c;
  c.data_dir = f.data_dir;
  c.stream = f.stream;
  c.records = f.records;
  c.record_size = f.record_size;
  c.batch = f.batch;
  c.producers = f.producers;
  c.fsync = *policy;
  c.progress = [&](const std::string& m) { progress.update(m); };
  log::LogOptions lo;
  lo.fsync = *policy;
  lo.fsync_interval_ms = f.interval_ms;
  lo.max_segment_bytes = f.segment_mib << 20;
  auto reg = log::StreamRegistry::open(f.data_dir, lo);
  if (!reg.ok()) return ctx.fail(std::move(reg).error().with_context("demo"));
  c.registry = std::move(*reg);
  if (c.registry->exists(f.stream)) {
    return ctx.fail(Error(Errc::already_exists,
                          fmt::format("demo: stream '{}' already exists in {}; use another "
                                      "--stream or a fresh --data-dir",
                                      f.stream, f.data_dir)));
  }
  auto log = c.registry->create(f.stream);
  if (!log.ok()) return ctx.fail(std::move(log).error().with_context("demo"));
  c.log = *log;

  std::vector<DemoPhase> phases = {
      {"write", phase_write}, {"read", phase_read}, {"disk", phase_disk}};
  for (const auto& p : extra_demo_phases()) phases.push_back(p);
  json report = {{"data_dir", f.data_dir},
                 {"stream", f.stream},
                 {"config",
                  {{"records", f.records},
                   {"record_size", f.record_size},
                   {"batch", f.batch},
                   {"producers", f.producers},
                   {"fsync", f.fsync},
                   {"max_segment_bytes", lo.max_segment_bytes}}},
                 {"phases", json::object()}};
  if (!ctx.json) {
    std::cout << fmt::format(
                     "strata demo: stream '{}' in {}: {} records x {} B, batches of {}, {} "
                     "producer(s), fsync={}\n",
                     f.stream, f.data_dir, f.records, f.record_size, f.batch, f.producers, f.fsync)
              << std::flush;
  }
  for (const auto& p : phases) {
    auto r = p.run(c);
    progress.done();
    if (!r.ok()) {
      return ctx.fail(std::move(r).error().with_context(fmt::format("demo phase '{}'", p.name)));
    }
    report["phases"][p.name] = r->json;
    if (!ctx.json) std::cout << r->line << "\n" << std::flush;
  }
  Status closed = c.registry->close_all();
  if (!closed.ok()) return ctx.fail(closed.error());
  report["ok"] = true;
  if (ctx.json) {
    ctx.print_json(report);
  } else {
    std::cout << "ok: every record was read back and verified\n";
  }
}

Registrar reg_log_demo([](CLI::App& app, Context& ctx) {
  auto f = std::make_shared<DemoFlags>();
  auto* cmd = app.add_subcommand(
      "demo", "Write a stream, read it back, verify every record, and report throughput and sizes");
  cmd->add_option("--data-dir", f->data_dir, "Data directory (created if missing)")->required();
  cmd->add_option("--stream", f->stream, "Stream name")->capture_default_str();
  cmd->add_option("--records", f->records, "Records to write")->capture_default_str();
  cmd->add_option("--record-size", f->record_size, "Bytes per record")->capture_default_str();
  cmd->add_option("--batch", f->batch, "Records per append (one batch = one chunk or less)")
      ->capture_default_str();
  cmd->add_option("--producers", f->producers, "Concurrent appending threads (group commit)")
      ->capture_default_str();
  cmd->add_option("--fsync", f->fsync, "always|interval|never")->capture_default_str();
  cmd->add_option("--fsync-interval-ms", f->interval_ms, "Interval for --fsync interval")
      ->capture_default_str();
  cmd->add_option("--segment-mib", f->segment_mib, "Max segment size in MiB")
      ->capture_default_str();
  cmd->callback([f, &ctx] { run_demo(*f, ctx); });
});

}  // namespace
}  // namespace strata::cli
