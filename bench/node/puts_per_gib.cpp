// node_bench puts: object-store PUTs per GiB uploaded at 64 MiB fragments,
// read from the node's own metrics (strata_objstore_requests_total{op=...}
// in metrics_text) and split by kind with the uploader's counters: fragment
// PUTs, root PUTs (one per persist attempt) and group PUTs. Two regimes:
//   live     4 producers write --gib GiB (fsync never) while the node
//            uploads, then a flush;
//   backlog  the same log uploaded again by a fresh node (new catalog and
//            object place): the uploader catching up as fast as it can.
// The number of roots depends on how often a persist triggers
// (persist_threshold fragments or persist_interval), so both are shown.
#include <fmt/format.h>

#include <iostream>

#include "bench_env.h"

namespace strata::bench::puts {

struct Count {
  double gib = 0;  // fragment object bytes uploaded
  uint64_t puts = 0;
  uint64_t fragments = 0, roots = 0, groups = 0;
  std::map<std::string, double> by_op;
  double seconds = 0;
};

Count count(node::Node& n, double seconds) {
  Count c;
  auto st = n.uploader("s")->status();
  c.by_op = prom_by_label(n.metrics_text(), "strata_objstore_requests_total", "op");
  c.puts = uint64_t(c.by_op["put"]);
  c.fragments = st.fragments_uploaded;
  c.roots = st.core.persists_completed + st.core.persists_failed;
  for (uint64_t g : st.core.groups_created) c.groups += g;
  c.gib = double(st.bytes_uploaded) / double(1ull << 30);
  c.seconds = seconds;
  return c;
}

json to_json(const Count& c) {
  return {
      {"gib_uploaded", c.gib},     {"puts", c.puts},      {"puts_per_gib", double(c.puts) / c.gib},
      {"fragments", c.fragments},  {"roots", c.roots},    {"groups", c.groups},
      {"requests_by_op", c.by_op}, {"seconds", c.seconds}};
}

}  // namespace strata::bench::puts

namespace strata::bench {

json run_puts_per_gib(const Args& args, const std::string& base) {
  using namespace puts;
  const double gib = args.num("gib", 2);
  const uint64_t fragment_bytes = uint64_t(args.num("fragment-mib", 64) * double(1 << 20));
  const int64_t threshold = args.integer("persist-threshold", 5);
  auto store = StoreUnderTest::make(args.str("store", "fs"), args, base);
  print_machine();
  std::cout << fmt::format(
      "PUTs per GiB: {:.1f} GiB of 100 x 1 KiB batches, {} MiB fragments, persist_threshold {}, "
      "other settings default; {}\n\n",
      gib, fragment_bytes >> 20, threshold, store->describe());

  const std::string data = base + "/puts-data";
  fresh_dir(data);
  auto doc_for = [&](const StoreUnderTest::Place& p) {
    json doc = node_doc(p);
    doc["log"] = {{"fsync", "never"}};
    doc["tiering"]["fragment_target_bytes"] = fragment_bytes;
    doc["tiering"]["persist_threshold"] = threshold;
    return doc;
  };

  std::vector<std::pair<std::string, Count>> results;
  {
    auto place = store->place("puts-live");
    auto n = open_node(doc_for(place), data);
    auto log = must(n->create_stream("s"), "creating the stream");
    auto t0 = Clk::now();
    append_parallel(*log, 4, uint64_t(gib * double(1ull << 30)) / (100 * 1024), 100, 1024);
    must(n->flush("s", std::chrono::minutes(10)), "flushing");
    results.emplace_back("live", count(*n, secs(t0, Clk::now())));
    must(n->close(), "closing the node");
    store->clear(place);
  }
  {
    remove_dir(data + "/catalog");
    auto place = store->place("puts-backlog");
    ::sync();
    auto t0 = Clk::now();
    auto n = open_node(doc_for(place), data);
    must(n->flush("s", std::chrono::minutes(10)), "flushing");
    results.emplace_back("backlog", count(*n, secs(t0, Clk::now())));
    must(n->close(), "closing the node");
    store->clear(place);
  }
  remove_dir(data);

  print_row({"regime", "GiB uploaded", "s", "PUTs", "fragments", "roots", "groups",
             "**PUTs per GiB**", "other requests"});
  print_row({"---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"});
  json out = {{"subcommand", "puts"},
              {"machine", machine_json()},
              {"settings",
               {{"gib", gib},
                {"fragment_bytes", fragment_bytes},
                {"persist_threshold", threshold},
                {"store", store->describe()}}},
              {"results", json::object()}};
  for (const auto& [name, c] : results) {
    std::string other;
    for (const auto& [op, v] : c.by_op) {
      if (op == "put") continue;
      other += fmt::format("{}{} {:.0f}", other.empty() ? "" : ", ", op, v);
    }
    print_row({name, fmt_num(c.gib, 3), fmt_num(c.seconds, 1), std::to_string(c.puts),
               std::to_string(c.fragments), std::to_string(c.roots), std::to_string(c.groups),
               "**" + fmt_num(double(c.puts) / c.gib, 2) + "**", other});
    out["results"][name] = to_json(c);
  }
  std::cout << fmt::format(
      "\nGoal: <= 16 PUTs per GiB. Fragment PUTs alone are GiB / fragment size = {:.1f}.\n",
      double(1ull << 30) / double(fragment_bytes));
  return out;
}

}  // namespace strata::bench
