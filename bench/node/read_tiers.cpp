// node_bench read: one consumer reading a stream's remote fragments through
// the node's StreamReader, against reading the same chunks from local
// segments, and against raw ranged GETs of the same objects.
//
// A stream of --mib MiB (100 x 1 KiB records per chunk) is written, uploaded
// and then dropped from local disk by retention (tiered_stream.h); before
// that its directory is hard-linked aside, so a log with every segment
// remains. Each round reads the remote part, [remote_first, end of the last
// fragment below the local log), three ways, in an order rotated every
// round:
//   - remote: Node::open_reader at remote_first, next_chunk until that end
//     (ranged GETs with prefetch; every chunk's CRC verified);
//   - local:  a log::Reader of the hard-linked copy over the same offsets
//     (CRC verified too);
//   - raw:    the same byte ranges of the same fragment objects that the
//     reader fetches, GET with as many threads as the reader keeps ranges
//     in flight: the most the store delivers at that concurrency.
// Both readers split every chunk into its records (a consumer's work).
#include <fmt/format.h>

#include <functional>
#include <iostream>

#include "bench_env.h"
#include "log/reader.h"
#include "tiered_stream.h"

namespace strata::bench::read_tiers {

struct ReadRun {
  double seconds = 0;
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  double cpu_s = 0;
  double server_cpu_s = 0;
  tier::StreamReaderStats st;
};

ReadRun read_remote(TieredStream& t, uint64_t end, const tier::StreamReaderOptions& o,
                    int server_pid) {
  ReadRun r;
  double cpu0 = process_cpu_seconds(), scpu0 = cpu_of_pid(server_pid);
  auto t0 = Clk::now();
  auto reader =
      must(t.node->open_reader(kReadStream, log::OffsetSpec::at_offset(t.remote_first), o),
           "opening a reader at the remote tier");
  while (reader->next_offset() < end) {
    auto c = must(reader->next_chunk(), "reading the remote tier");
    if (!c) die(fmt::format("the reader ended at {}, before {}", reader->next_offset(), end));
    if (c->tier != tier::Tier::remote) die("the reader left the remote tier before its end");
    consume_records(c->header, c->data());
    r.bytes += c->bytes.size();
    r.chunks += 1;
  }
  r.seconds = secs(t0, Clk::now());
  r.st = reader->stats();
  reader.reset();
  r.cpu_s = process_cpu_seconds() - cpu0;
  r.server_cpu_s = cpu_of_pid(server_pid) - scpu0;
  return r;
}

ReadRun read_local(log::StreamLog& copy, uint64_t from, uint64_t end) {
  ReadRun r;
  double cpu0 = process_cpu_seconds();
  auto t0 = Clk::now();
  auto reader = must(copy.open_reader(log::OffsetSpec::at_offset(from)), "opening a local reader");
  while (reader->next_chunk_offset() < end) {
    auto c = must(reader->next_chunk(), "reading the local copy");
    if (!c) die(fmt::format("the local copy ended at {}, before {}", reader->next_offset(), end));
    consume_records(c->header, c->data());
    r.bytes += c->bytes.size();
    r.chunks += 1;
  }
  r.seconds = secs(t0, Clk::now());
  r.cpu_s = process_cpu_seconds() - cpu0;
  return r;
}

struct Row {
  std::string kind;
  uint32_t in_flight = 0;
  uint64_t prefetch = 0, range = 0;
  std::vector<double> remote_mb, local_mb, raw_mb, vs_local, vs_raw;
  std::vector<double> remote_cpu, local_cpu, raw_cpu, remote_scpu, raw_scpu;
  uint64_t range_gets = 0, bytes = 0, chunks = 0, peak_buffered = 0, fragments = 0;
};

json row_json(const Row& w) {
  return {{"kind", w.kind},
          {"max_ranges_in_flight", w.in_flight},
          {"prefetch_bytes", w.prefetch},
          {"range_bytes", w.range},
          {"bytes", w.bytes},
          {"chunks", w.chunks},
          {"fragments", w.fragments},
          {"range_gets", w.range_gets},
          {"peak_buffered_bytes", w.peak_buffered},
          {"remote_mb_per_s", median(w.remote_mb)},
          {"local_mb_per_s", median(w.local_mb)},
          {"raw_mb_per_s", median(w.raw_mb)},
          {"remote_over_local_median", median(w.vs_local)},
          {"remote_over_local_min", min_of(w.vs_local)},
          {"remote_over_local_max", max_of(w.vs_local)},
          {"remote_over_raw_median", median(w.vs_raw)},
          {"remote_over_raw_min", min_of(w.vs_raw)},
          {"remote_over_raw_max", max_of(w.vs_raw)},
          {"rounds",
           {{"remote_mb_per_s", w.remote_mb},
            {"local_mb_per_s", w.local_mb},
            {"raw_mb_per_s", w.raw_mb},
            {"remote_cpu_s_per_gib", w.remote_cpu},
            {"local_cpu_s_per_gib", w.local_cpu},
            {"raw_cpu_s_per_gib", w.raw_cpu},
            {"remote_server_cpu_s_per_gib", w.remote_scpu},
            {"raw_server_cpu_s_per_gib", w.raw_scpu}}}};
}

void print_table_row(const Row& w) {
  const bool s3 = w.kind == "s3";
  print_row(
      {w.kind, std::to_string(w.in_flight), fmt::format("{} / {}", w.prefetch >> 20, w.range >> 20),
       fmt_num(median(w.remote_mb), 0), fmt_num(median(w.local_mb), 0),
       "**" + fmt_num(median(w.vs_local), 2) + "**",
       fmt_num(min_of(w.vs_local), 2) + "–" + fmt_num(max_of(w.vs_local), 2),
       fmt_num(median(w.raw_mb), 0), "**" + fmt_num(median(w.vs_raw), 2) + "**",
       fmt_num(min_of(w.vs_raw), 2) + "–" + fmt_num(max_of(w.vs_raw), 2),
       std::to_string(w.range_gets),
       fmt_num(median(w.remote_cpu), 2) + " / " + fmt_num(median(w.local_cpu), 2) + " / " +
           fmt_num(median(w.raw_cpu), 2),
       s3 ? fmt_num(median(w.remote_scpu), 2) + " / " + fmt_num(median(w.raw_scpu), 2) : "—"});
}

}  // namespace strata::bench::read_tiers

namespace strata::bench {

json run_read_tiers(const Args& args, const std::string& base) {
  using namespace read_tiers;
  TieredStreamSpec spec;
  spec.mib = args.num("mib", 512);
  spec.segment_bytes = uint64_t(args.num("segment-mib", 32) * double(1 << 20));
  spec.fragment_bytes = uint64_t(args.num("fragment-mib", 64) * double(1 << 20));
  // A directory store reads 512 MiB in a tenth of a second: more rounds.
  const int rounds_dir = int(args.integer("rounds", 15));
  const int rounds_s3 = int(args.integer("rounds", 5));
  const uint64_t range = uint64_t(args.num("range-mib", 4) * double(1 << 20));
  const uint64_t prefetch_min = uint64_t(args.num("prefetch-mib", 16) * double(1 << 20));
  const auto stores = args.list("stores", args.str("store", "fs"));

  print_machine();
  std::cout << fmt::format(
      "read: {:.0f} MiB (100 x 1 KiB records per chunk) in {} MiB fragments, the uploaded part "
      "dropped from local disk; {} rounds ({} for s3) rotating remote (StreamReader) / local "
      "(log::Reader "
      "of a hard-linked copy) / raw ranged GETs of the same ranges with as many threads as "
      "ranges in flight; prefetch = max({} MiB, in flight x range)\n\n",
      spec.mib, spec.fragment_bytes >> 20, rounds_dir, rounds_s3, prefetch_min >> 20);
  print_row({"store", "ranges in flight", "prefetch / range MiB", "remote MB/s", "local MB/s",
             "**remote / local** (median)", "range", "raw GET MB/s", "**remote / raw**", "range",
             "range GETs", "CPU s/GiB remote / local / raw", "server CPU s/GiB remote / raw"});
  print_row({"---", "---:", "---:", "---:", "---:", "---:", "---", "---:", "---:", "---",
             "---:", "---:", "---:"});
  json out = {{"subcommand", "read"},
              {"machine", machine_json()},
              {"settings",
               {{"mib", spec.mib},
                {"fragment_bytes", spec.fragment_bytes},
                {"segment_bytes", spec.segment_bytes},
                {"range_bytes", range},
                {"prefetch_min_bytes", prefetch_min},
                {"rounds", rounds_dir},
                {"rounds_s3", rounds_s3}}},
              {"results", json::array()}};
  for (const auto& kind : stores) {
    const int rounds = kind == "s3" ? rounds_s3 : rounds_dir;
    auto store = StoreUnderTest::make(kind, args, base);
    spec.local_copy_dir = base + "/read-local-" + kind + "/" + kReadStream;
    auto t = make_tiered_stream(*store, base, "read-" + kind, spec);
    log::LogOptions lo;
    lo.read_only = true;
    auto copy = must(log::StreamLog::open(spec.local_copy_dir, lo), "opening the local copy");
    const auto frags = t->remote_fragments();
    const uint64_t end = frags.back().next_offset;
    const auto keys = t->keys();
    const auto ranges = reader_ranges(keys, frags, range);
    uint64_t frag_bytes = 0;
    for (const auto& f : frags) frag_bytes += f.size;
    std::cerr << fmt::format(
        "{}: wrote {:.0f} MiB in {:.1f} s, uploaded in {:.1f} s more; remote [{}, {}) in {} "
        "fragments, {:.0f} MiB; local from {}\n",
        kind, spec.mib, t->write_seconds, t->upload_seconds, t->remote_first, end, frags.size(),
        double(frag_bytes) / double(1 << 20), t->local_first);
    auto raw = store->open_raw(t->place);
    const auto in_flight = args.list("in-flight", kind == "s3" ? "1,2,4,8" : "4");
    for (const auto& k_text : in_flight) {
      Row w;
      w.kind = kind;
      w.in_flight = uint32_t(std::stoul(k_text));
      w.range = range;
      w.prefetch = std::max<uint64_t>(prefetch_min, uint64_t(w.in_flight) * range);
      w.fragments = frags.size();
      tier::StreamReaderOptions o;
      o.prefetch_bytes = w.prefetch;
      o.range_bytes = w.range;
      o.max_ranges_in_flight = w.in_flight;
      const double gib = double(frag_bytes) / double(1ull << 30);
      for (int r = 0; r < rounds; ++r) {
        ReadRun rem, loc;
        double raw_s = 0, raw_cpu = 0, raw_scpu = 0;
        auto do_remote = [&] { rem = read_remote(*t, end, o, store->server_pid()); };
        auto do_local = [&] { loc = read_local(*copy, t->remote_first, end); };
        auto do_raw = [&] {
          double c0 = process_cpu_seconds(), s0 = cpu_of_pid(store->server_pid());
          raw_s = raw_ranged_gets(*raw, ranges, int(w.in_flight));
          raw_cpu = process_cpu_seconds() - c0;
          raw_scpu = cpu_of_pid(store->server_pid()) - s0;
        };
        std::vector<std::function<void()>> order = {do_remote, do_local, do_raw};
        std::rotate(order.begin(), order.begin() + (r % 3), order.end());
        for (auto& f : order) f();
        if (rem.bytes != frag_bytes || loc.bytes != frag_bytes || rem.chunks != loc.chunks) {
          die(
              fmt::format("the readers disagree: remote {} bytes in {} chunks, local {} in {}, "
                          "fragments hold {}",
                          rem.bytes, rem.chunks, loc.bytes, loc.chunks, frag_bytes));
        }
        w.remote_mb.push_back(double(rem.bytes) / 1e6 / rem.seconds);
        w.local_mb.push_back(double(loc.bytes) / 1e6 / loc.seconds);
        w.raw_mb.push_back(double(frag_bytes) / 1e6 / raw_s);
        w.vs_local.push_back(w.remote_mb.back() / w.local_mb.back());
        w.vs_raw.push_back(w.remote_mb.back() / w.raw_mb.back());
        w.remote_cpu.push_back(rem.cpu_s / gib);
        w.local_cpu.push_back(loc.cpu_s / gib);
        w.raw_cpu.push_back(raw_cpu / gib);
        w.remote_scpu.push_back(rem.server_cpu_s / gib);
        w.raw_scpu.push_back(raw_scpu / gib);
        w.range_gets = rem.st.range_gets;
        w.peak_buffered = std::max(w.peak_buffered, rem.st.peak_buffered_bytes);
        w.bytes = rem.bytes;
        w.chunks = rem.chunks;
        std::cerr << fmt::format(
            "{} in flight {} round {}: remote {:.0f} MB/s, local {:.0f} MB/s, raw {:.0f} MB/s; "
            "remote/local {:.2f}, remote/raw {:.2f}\n",
            kind, w.in_flight, r + 1, w.remote_mb.back(), w.local_mb.back(), w.raw_mb.back(),
            w.vs_local.back(), w.vs_raw.back());
      }
      print_table_row(w);
      json rj = row_json(w);
      rj["store"] = store->describe();
      out["results"].push_back(rj);
    }
    raw.reset();
    copy.reset();
    t->finish(*store);
    remove_dir(base + "/read-local-" + kind);
  }
  std::cout << "\nGoal: remote / local >= 0.5 for the directory store (fs, shm).\n";
  return out;
}

}  // namespace strata::bench
