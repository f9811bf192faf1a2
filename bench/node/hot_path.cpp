// node_bench hot: append throughput of a node's stream with tiering on vs
// off, side by side in one run. Same log settings; 4 producer threads
// appending batches of 100 x 1 KiB records; fsync `always` and `never`.
// Three modes per round, the order rotated every round:
//   off       tiering disabled (the log alone);
//   on        tiering as in production: fragments cut (64 MiB / 10 s),
//             uploaded and persisted while the producers append, so the
//             uploads' CPU and I/O compete with the producers;
//   deferred  tiering on, but fragments are cut only by the flush after the
//             timed window (no size or age bound): the hot path's own cost
//             — commit hook, chunk queue, strand, fragment assembly —
//             without the uploads running beside it.
// The flush after the last append (drain) is reported, untimed in the
// ratio. Appends per chunk tells how the group commit coalesced batches
// (one chunk per group, so under `always` one fdatasync per chunk).
#include <fmt/format.h>

#include <iostream>

#include "bench_env.h"

namespace strata::bench::hot {

struct RunResult {
  double seconds = 0;
  double mb_per_s = 0;
  double records_per_s = 0;
  double cpu_s_per_gib = 0;  // during the appends
  double drain_s = 0;        // tiering on: flush after the last append
  double cpu_s_per_gib_with_drain = 0;
  double appends_per_chunk = 0;
  uint64_t bytes_uploaded = 0;
};

struct Settings {
  int threads = 4;
  size_t batch = 100;
  size_t record = 1024;
  uint64_t always_bytes = 0;
  uint64_t never_bytes = 0;
};

const std::vector<std::string> kModes = {"off", "on", "deferred"};

RunResult run(StoreUnderTest& store, const std::string& base, const Settings& s,
              const std::string& policy, const std::string& mode, int index) {
  const std::string data = base + "/hot-data";
  fresh_dir(data);
  auto place = store.place(fmt::format("hot-{}", index));
  json doc = node_doc(place);
  doc["log"] = {{"fsync", policy}};
  doc["tiering"]["enabled"] = mode != "off";
  if (mode == "deferred") {
    doc["tiering"]["fragment_target_bytes"] = uint64_t(1) << 40;
    doc["tiering"]["fragment_max_age_ms"] = 0;  // no age bound
  }
  auto n = open_node(doc, data);
  auto log = must(n->create_stream("s"), "creating the stream");
  const uint64_t total = policy == "always" ? s.always_bytes : s.never_bytes;
  const uint64_t batches = std::max<uint64_t>(1, total / (s.batch * s.record));
  const double bytes = double(batches * s.batch * s.record);
  double cpu0 = process_cpu_seconds();
  RunResult r;
  r.seconds = append_parallel(*log, s.threads, batches, s.batch, s.record);
  double cpu1 = process_cpu_seconds();
  r.mb_per_s = bytes / 1e6 / r.seconds;
  r.records_per_s = double(batches * s.batch) / r.seconds;
  const double gib = bytes / double(1ull << 30);
  r.cpu_s_per_gib = (cpu1 - cpu0) / gib;
  uint64_t chunks = 0;
  for (const auto& seg : log->segments()) chunks += seg.chunks;
  r.appends_per_chunk = chunks ? double(batches) / double(chunks) : 0;
  if (mode != "off") {
    auto t0 = Clk::now();
    must(n->flush("s", std::chrono::minutes(10)), "flushing the uploads");
    r.drain_s = secs(t0, Clk::now());
    r.bytes_uploaded = n->uploader("s")->status().bytes_uploaded;
  }
  r.cpu_s_per_gib_with_drain = (process_cpu_seconds() - cpu0) / gib;
  must(n->close(), "closing the node");
  n.reset();
  store.clear(place);
  return r;
}

json to_json(const RunResult& r) {
  return {{"seconds", r.seconds},
          {"mb_per_s", r.mb_per_s},
          {"records_per_s", r.records_per_s},
          {"cpu_s_per_gib", r.cpu_s_per_gib},
          {"drain_s", r.drain_s},
          {"cpu_s_per_gib_with_drain", r.cpu_s_per_gib_with_drain},
          {"appends_per_chunk", r.appends_per_chunk},
          {"bytes_uploaded", r.bytes_uploaded}};
}

std::vector<double> pick(const std::vector<RunResult>& v, double RunResult::*f) {
  std::vector<double> x;
  for (const auto& r : v) x.push_back(r.*f);
  return x;
}

}  // namespace strata::bench::hot

namespace strata::bench {

json run_hot_path(const Args& args, const std::string& base) {
  using namespace hot;
  Settings s;
  s.threads = int(args.integer("threads", 4));
  s.batch = size_t(args.integer("batch", 100));
  s.record = size_t(args.integer("record", 1024));
  s.always_bytes = uint64_t(args.num("always-mib", 256)) << 20;
  s.never_bytes = uint64_t(args.num("never-mib", 512)) << 20;
  const int rounds = int(args.integer("rounds", 5));
  const auto policies = args.list("policies", "always,never");
  auto store = StoreUnderTest::make(args.str("store", "shm"), args, base);

  print_machine();
  std::cout << fmt::format(
      "hot path: {} producer threads, batches of {} x {} B records, {} MiB (always) / {} MiB "
      "(never) per run, {} rounds, modes off / on / deferred in rotated order; tiering uploads "
      "to {}\n\n",
      s.threads, s.batch, s.record, s.always_bytes >> 20, s.never_bytes >> 20, rounds,
      store->describe());

  json out = {{"subcommand", "hot"},
              {"machine", machine_json()},
              {"settings",
               {{"threads", s.threads},
                {"batch", s.batch},
                {"record", s.record},
                {"always_bytes", s.always_bytes},
                {"never_bytes", s.never_bytes},
                {"rounds", rounds},
                {"store", store->describe()}}},
              {"results", json::array()}};
  // results[policy][mode] per round, and the per-round ratios to `off`.
  std::map<std::string, std::map<std::string, std::vector<RunResult>>> res;
  std::map<std::string, std::map<std::string, std::vector<double>>> ratios;
  int index = 0;
  for (int r = 0; r < rounds; ++r) {
    for (const auto& p : policies) {
      std::map<std::string, RunResult> got;
      for (size_t k = 0; k < kModes.size(); ++k) {
        const std::string& m = kModes[(k + size_t(r)) % kModes.size()];
        got[m] = run(*store, base, s, p, m, index++);
      }
      for (const auto& m : kModes) res[p][m].push_back(got[m]);
      for (const auto& m : {"on", "deferred"}) {
        ratios[p][m].push_back(got[m].mb_per_s / got["off"].mb_per_s);
      }
      std::cerr << fmt::format(
          "round {} {}: off {:.1f}, on {:.1f} ({:.3f}), deferred {:.1f} ({:.3f}) MB/s\n", r + 1, p,
          got["off"].mb_per_s, got["on"].mb_per_s, ratios[p]["on"].back(), got["deferred"].mb_per_s,
          ratios[p]["deferred"].back());
    }
  }

  print_row({"fsync", "mode", "MB/s", "ratio to off (median of rounds)", "range", "CPU s/GiB",
             "CPU s/GiB incl. drain", "drain s", "appends per chunk"});
  print_row({"---", "---", "---:", "---:", "---", "---:", "---:", "---:", "---:"});
  for (const auto& p : policies) {
    json modes = json::object();
    for (const auto& m : kModes) {
      const auto& v = res[p][m];
      double mb = median(pick(v, &RunResult::mb_per_s));
      bool off = m == "off";
      const auto& rt = ratios[p][m];
      print_row({p, m, fmt_num(mb, 1), off ? "1" : "**" + fmt_num(median(rt), 3) + "**",
                 off ? "" : fmt_num(min_of(rt), 3) + "–" + fmt_num(max_of(rt), 3),
                 fmt_num(median(pick(v, &RunResult::cpu_s_per_gib)), 2),
                 fmt_num(median(pick(v, &RunResult::cpu_s_per_gib_with_drain)), 2),
                 off ? "" : fmt_num(median(pick(v, &RunResult::drain_s)), 2),
                 fmt_num(median(pick(v, &RunResult::appends_per_chunk)), 2)});
      json runs = json::array();
      for (const auto& x : v) runs.push_back(to_json(x));
      modes[m] = {{"mb_per_s", mb}, {"runs", runs}};
      if (!off) {
        modes[m]["ratio_median"] = median(rt);
        modes[m]["ratio_min"] = min_of(rt);
        modes[m]["ratio_max"] = max_of(rt);
        modes[m]["ratios"] = rt;
      }
    }
    out["results"].push_back({{"fsync", p}, {"modes", modes}});
  }
  std::cout << "\nGoal: on/off >= 0.97.\n";
  return out;
}

}  // namespace strata::bench
