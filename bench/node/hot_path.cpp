// node_bench hot: append throughput of a node's stream with tiering on vs
// off, side by side in one run. Same log settings; 4 producer threads
// appending batches of 100 x 1 KiB records; fsync `always` and `never`;
// rounds alternate which of the two goes first. With tiering on, the
// uploader runs as it would in production (fragments cut, uploaded and
// persisted while the producers append), so what is measured is the hot
// path's own cost (commit hook) plus the CPU and I/O the uploads take from
// the producers. The time to drain the uploads after the last append is
// reported beside it, untimed in the ratio.
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
  uint64_t bytes_uploaded = 0;
};

struct Settings {
  int threads = 4;
  size_t batch = 100;
  size_t record = 1024;
  uint64_t always_bytes = 0;
  uint64_t never_bytes = 0;
};

RunResult run(StoreUnderTest& store, const std::string& base, const Settings& s,
              const std::string& policy, bool tiering, int index) {
  const std::string data = base + "/hot-data";
  fresh_dir(data);
  auto place = store.place(fmt::format("hot-{}", index));
  json doc = node_doc(place);
  doc["log"] = {{"fsync", policy}};
  doc["tiering"]["enabled"] = tiering;
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
  if (tiering) {
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
          {"bytes_uploaded", r.bytes_uploaded}};
}

}  // namespace strata::bench::hot

namespace strata::bench {

json run_hot_path(const Args& args, const std::string& base) {
  using namespace hot;
  Settings s;
  s.threads = int(args.integer("threads", 4));
  s.batch = size_t(args.integer("batch", 100));
  s.record = size_t(args.integer("record", 1024));
  s.always_bytes = uint64_t(args.num("always-mib", 128)) << 20;
  s.never_bytes = uint64_t(args.num("never-mib", 512)) << 20;
  const int rounds = int(args.integer("rounds", 5));
  const auto policies = args.list("policies", "always,never");
  auto store = StoreUnderTest::make(args.str("store", "shm"), args, base);

  print_machine();
  std::cout << fmt::format(
      "hot path: {} producer threads, batches of {} x {} B records, {} MiB (always) / {} MiB "
      "(never) per run, {} rounds alternating the order; tiering on uploads to {}\n\n",
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
  std::map<std::string, std::vector<RunResult>> off, on;
  std::map<std::string, std::vector<double>> ratios;
  int index = 0;
  for (int r = 0; r < rounds; ++r) {
    for (const auto& p : policies) {
      bool on_first = r % 2 == 1;
      RunResult a = run(*store, base, s, p, on_first, index++);
      RunResult b = run(*store, base, s, p, !on_first, index++);
      RunResult& ron = on_first ? a : b;
      RunResult& roff = on_first ? b : a;
      on[p].push_back(ron);
      off[p].push_back(roff);
      ratios[p].push_back(ron.mb_per_s / roff.mb_per_s);
      std::cerr << fmt::format(
          "round {} {}: off {:.1f} MB/s, on {:.1f} MB/s ({:.3f}), drain {:.2f} s\n", r + 1, p,
          roff.mb_per_s, ron.mb_per_s, ratios[p].back(), ron.drain_s);
    }
  }

  print_row({"fsync", "off MB/s", "on MB/s", "on/off (median of rounds)", "range", "off CPU s/GiB",
             "on CPU s/GiB", "on CPU s/GiB incl. drain", "drain after last append s"});
  print_row({"---", "---:", "---:", "---:", "---", "---:", "---:", "---:", "---:"});
  for (const auto& p : policies) {
    auto pick = [](const std::vector<RunResult>& v, double RunResult::*f) {
      std::vector<double> x;
      for (const auto& r : v) x.push_back(r.*f);
      return x;
    };
    double off_mb = median(pick(off[p], &RunResult::mb_per_s));
    double on_mb = median(pick(on[p], &RunResult::mb_per_s));
    double ratio = median(ratios[p]);
    print_row({p, fmt_num(off_mb, 1), fmt_num(on_mb, 1), "**" + fmt_num(ratio, 3) + "**",
               fmt_num(min_of(ratios[p]), 3) + "–" + fmt_num(max_of(ratios[p]), 3),
               fmt_num(median(pick(off[p], &RunResult::cpu_s_per_gib)), 2),
               fmt_num(median(pick(on[p], &RunResult::cpu_s_per_gib)), 2),
               fmt_num(median(pick(on[p], &RunResult::cpu_s_per_gib_with_drain)), 2),
               fmt_num(median(pick(on[p], &RunResult::drain_s)), 2)});
    json rounds_json = json::array();
    for (size_t i = 0; i < ratios[p].size(); ++i) {
      rounds_json.push_back(
          {{"off", to_json(off[p][i])}, {"on", to_json(on[p][i])}, {"ratio", ratios[p][i]}});
    }
    out["results"].push_back({{"fsync", p},
                              {"off_mb_per_s", off_mb},
                              {"on_mb_per_s", on_mb},
                              {"ratio_median", ratio},
                              {"ratio_min", min_of(ratios[p])},
                              {"ratio_max", max_of(ratios[p])},
                              {"rounds", rounds_json}});
  }
  std::cout << "\nGoal: on/off >= 0.97.\n";
  return out;
}

}  // namespace strata::bench
