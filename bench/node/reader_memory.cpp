// node_bench memory: the bytes one reader holds while it prefetches, against
// its configured budget.
//
// Each budget runs in a fresh process of this program, which writes a
// stream of --mib MiB (100 x 1 KiB records per chunk), uploads it and
// drops it from local disk (tiered_stream.h). For each budget
// (--budgets-mib, default 1, 4, 16, 64) a reader with prefetch_bytes =
// budget and range_bytes = min(4 MiB, budget / 4), 4 ranges in flight,
// reads the whole remote part, --rounds times. Reported: the reader's own
// count (stats().peak_buffered_bytes: prefetched ranges queued, in flight
// and ready, plus the buffer of a chunk that straddles two ranges), which
// must stay within budget + one chunk; and the process's resident set
// while it reads (VmRSS sampled every 8 chunks, minus the RSS just before
// the reader opened, after malloc_trim), which also counts the allocator's
// retained pages and the store client's buffers; and the RSS left after
// the reader closed, before and after malloc_trim (the allocator's cache,
// not the reader's).
#include <fmt/format.h>
#include <malloc.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "bench_env.h"
#include "tiered_stream.h"

namespace strata::bench::reader_memory {

struct Run {
  uint64_t peak_buffered = 0;
  uint64_t largest_chunk = 0;
  int64_t rss_peak_growth = 0;
  int64_t rss_after_growth = 0;
  int64_t rss_trimmed_growth = 0;  // after malloc_trim: what the allocator kept, released
  uint64_t range_gets = 0;
  double mb_per_s = 0;
};

Run run(TieredStream& t, uint64_t end, const tier::StreamReaderOptions& o) {
  Run r;
  ::malloc_trim(0);
  const int64_t rss0 = int64_t(rss_bytes());
  int64_t peak = rss0;
  uint64_t bytes = 0;
  auto t0 = Clk::now();
  {
    auto reader =
        must(t.node->open_reader(kReadStream, log::OffsetSpec::at_offset(t.remote_first), o),
             "opening a reader at the remote tier");
    for (uint64_t n = 0; reader->next_offset() < end; ++n) {
      auto c = must(reader->next_chunk(), "reading the remote tier");
      if (!c || c->tier != tier::Tier::remote) die("the reader left the remote tier early");
      consume_records(c->header, c->data());
      bytes += c->bytes.size();
      r.largest_chunk = std::max<uint64_t>(r.largest_chunk, c->bytes.size());
      if (n % 8 == 0) peak = std::max(peak, int64_t(rss_bytes()));
    }
    r.mb_per_s = double(bytes) / 1e6 / secs(t0, Clk::now());
    peak = std::max(peak, int64_t(rss_bytes()));
    r.peak_buffered = reader->stats().peak_buffered_bytes;
    r.range_gets = reader->stats().range_gets;
  }
  r.rss_peak_growth = peak - rss0;
  r.rss_after_growth = int64_t(rss_bytes()) - rss0;
  ::malloc_trim(0);
  r.rss_trimmed_growth = int64_t(rss_bytes()) - rss0;
  return r;
}

double mib(double bytes) {
  return bytes / double(1 << 20);
}

// One budget measured in this process (a child of run_reader_memory).
json measure_budget(const Args& args, const std::string& base, const TieredStreamSpec& spec,
                    const std::string& b_text) {
  const int rounds = int(args.integer("rounds", 3));
  const std::string kind = args.str("store", "fs");
  auto store = StoreUnderTest::make(kind, args, base);
  auto t = make_tiered_stream(*store, base, "memory-" + kind, spec);
  const auto frags = t->remote_fragments();
  const uint64_t end = frags.back().next_offset;
  const uint64_t budget = uint64_t(std::stod(b_text) * double(1 << 20));
  tier::StreamReaderOptions o;
  o.prefetch_bytes = budget;
  o.range_bytes = std::min<uint64_t>(4ull << 20, std::max<uint64_t>(budget / 4, 1));
  o.max_ranges_in_flight = uint32_t(args.integer("in-flight", 4));
  Run worst;
  std::vector<double> mbs;
  for (int r = 0; r < rounds; ++r) {
    Run x = run(*t, end, o);
    worst.peak_buffered = std::max(worst.peak_buffered, x.peak_buffered);
    worst.largest_chunk = std::max(worst.largest_chunk, x.largest_chunk);
    worst.rss_peak_growth = std::max(worst.rss_peak_growth, x.rss_peak_growth);
    worst.rss_after_growth = std::max(worst.rss_after_growth, x.rss_after_growth);
    worst.rss_trimmed_growth = std::max(worst.rss_trimmed_growth, x.rss_trimmed_growth);
    worst.range_gets = x.range_gets;
    mbs.push_back(x.mb_per_s);
    std::cerr << fmt::format(
        "budget {} MiB round {}: peak buffered {:.2f} MiB, RSS +{:.1f} MiB while reading, "
        "+{:.1f} MiB after, {:.0f} MB/s\n",
        b_text, r + 1, mib(double(x.peak_buffered)), mib(double(x.rss_peak_growth)),
        mib(double(x.rss_after_growth)), x.mb_per_s);
  }
  json out = {{"budget_bytes", budget},
              {"range_bytes", o.range_bytes},
              {"peak_buffered_bytes", worst.peak_buffered},
              {"largest_chunk_bytes", worst.largest_chunk},
              {"within_budget_plus_one_chunk", worst.peak_buffered <= budget + worst.largest_chunk},
              {"rss_peak_growth_bytes", worst.rss_peak_growth},
              {"rss_after_growth_bytes", worst.rss_after_growth},
              {"rss_after_trim_growth_bytes", worst.rss_trimmed_growth},
              {"range_gets", worst.range_gets},
              {"mb_per_s_median", median(mbs)},
              {"mb_per_s", mbs},
              {"store", store->describe()}};
  t->finish(*store);
  return out;
}

// Runs one budget in a new process of this program: what an earlier budget
// left in the allocator must not count as (or hide) a later one's growth.
json run_child(const Args& args, const std::string& base, const std::string& b_text) {
  std::string cmd = fmt::format(
      "'{}' memory --child --json --budgets-mib {} --rounds {} --mib {} --in-flight {} --store "
      "{} --dir '{}'",
      std::filesystem::read_symlink("/proc/self/exe").string(), b_text, args.integer("rounds", 3),
      args.num("mib", 256), args.integer("in-flight", 4), args.str("store", "fs"), base);
  for (const char* opt : {"s3-endpoint", "s3-bucket"}) {
    if (args.flag(opt)) cmd += fmt::format(" --{} '{}'", opt, args.str(opt, ""));
  }
  if (args.flag("verbose")) cmd += " --verbose";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) die("starting " + cmd);
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int status = ::pclose(p);
  auto last = text.find_last_of('\n', text.size() >= 2 ? text.size() - 2 : 0);
  std::string line = text.substr(last == std::string::npos ? 0 : last + 1);
  if (status != 0 || line.empty() || line[0] != '{') die("the run of budget " + b_text + " failed");
  return json::parse(line);
}

}  // namespace strata::bench::reader_memory

namespace strata::bench {

json run_reader_memory(const Args& args, const std::string& base) {
  using namespace reader_memory;
  TieredStreamSpec spec;
  spec.mib = args.num("mib", 256);
  const auto budgets = args.list("budgets-mib", "1,4,16,64");
  if (args.flag("child")) return measure_budget(args, base, spec, budgets.at(0));
  const int rounds = int(args.integer("rounds", 3));
  const uint32_t in_flight = uint32_t(args.integer("in-flight", 4));
  const std::string kind = args.str("store", "fs");

  print_machine();
  std::cout << fmt::format(
      "memory: one reader over the remote part of a {:.0f} MiB stream (100 x 1 KiB records per "
      "chunk, {} MiB fragments), {} ranges in flight, range = min(4 MiB, budget / 4); each "
      "budget in a fresh process, worst of {} rounds; store {}\n\n",
      spec.mib, spec.fragment_bytes >> 20, in_flight, rounds, kind);
  print_row({"budget MiB", "range MiB", "**peak buffered MiB** (stats)", "peak / budget",
             "largest chunk KiB", "within budget + one chunk", "**RSS growth while reading MiB**",
             "RSS growth after close MiB", "after malloc_trim MiB", "range GETs", "MB/s (median)"});
  print_row(
      {"---:", "---:", "---:", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---:"});
  json out = {{"subcommand", "memory"},
              {"machine", machine_json()},
              {"settings",
               {{"mib", spec.mib},
                {"fragment_bytes", spec.fragment_bytes},
                {"max_ranges_in_flight", in_flight},
                {"rounds", rounds},
                {"store", kind}}},
              {"results", json::array()}};
  bool all_within = true;
  for (const auto& b_text : budgets) {
    json r = run_child(args, base, b_text);
    const double budget = r["budget_bytes"].get<double>();
    const bool within = r["within_budget_plus_one_chunk"].get<bool>();
    all_within = all_within && within;
    print_row({b_text, fmt_num(mib(r["range_bytes"].get<double>()), 2),
               "**" + fmt_num(mib(r["peak_buffered_bytes"].get<double>()), 2) + "**",
               fmt_num(r["peak_buffered_bytes"].get<double>() / budget, 2),
               fmt_num(r["largest_chunk_bytes"].get<double>() / 1024.0, 1),
               within ? "yes" : "**no**",
               "**" + fmt_num(mib(r["rss_peak_growth_bytes"].get<double>()), 1) + "**",
               fmt_num(mib(r["rss_after_growth_bytes"].get<double>()), 1),
               fmt_num(mib(r["rss_after_trim_growth_bytes"].get<double>()), 1),
               std::to_string(r["range_gets"].get<uint64_t>()),
               fmt_num(r["mb_per_s_median"].get<double>(), 0)});
    out["results"].push_back(r);
  }
  std::cout << fmt::format("\nBound: peak buffered <= budget + one chunk: {}.\n",
                           all_within ? "held at every budget" : "**broken**");
  return out;
}

}  // namespace strata::bench
