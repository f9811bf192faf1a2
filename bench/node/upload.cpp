// node_bench upload: how fast a node uploads a backlog, against the object
// store client alone PUTting the same bytes.
//
// A stream of --gib GiB (100 x 1 KiB records per batch) is written once with
// tiering disabled. Each node run then starts a node on that data with
// tiering on and a fresh catalog and object place, so the uploader finds
// the whole stream as its backlog; it is timed from the start of
// Node::open until flush() reports everything persisted (fragments, group
// and root PUTs, catalog compare-and-sets included). Two raw peers PUT
// bodies of exactly the fragment sizes that node run produced, with the
// governor's concurrency (--concurrency, default 8) of threads on one
// client opened with the same configuration:
//   - from memory (one random buffer, CRC32Cs precomputed): the goal's peer;
//   - from the segment files, mapped as the node maps them (the store
//     computes the CRC32C): the same source, so what remains is the node.
// A discarded warm-up round first, then rounds rotating the three; ratios
// are per round, then the median.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <thread>

#include "bench_env.h"
#include "common/crc32c.h"
#include "common/mapped_range.h"
#include "common/random.h"
#include "log/log_files.h"
#include "tier/object_keys.h"

namespace strata::bench::upload {

struct NodeRun {
  double seconds = 0;       // open + upload until everything is persisted
  double open_seconds = 0;  // Node::open alone
  uint64_t fragment_bytes = 0;
  std::vector<uint64_t> fragment_sizes;
  uint64_t puts = 0;
  uint64_t persists = 0;
  double cpu_s = 0;         // this process
  double server_cpu_s = 0;  // s3rver, when it is the store
};

struct RawRun {
  double seconds = 0;
  double cpu_s = 0;
  double server_cpu_s = 0;
};

void write_template(const std::string& data, const std::string& base, double gib) {
  fresh_dir(data);
  json doc = {
      {"objstore", {{"backend", "fs"}, {"fs", {{"root", base + "/upload-template-objects"}}}}},
      {"log", {{"fsync", "never"}}},
      {"tiering", {{"enabled", false}}}};
  auto n = open_node(doc, data);
  auto log = must(n->create_stream("s"), "creating the stream");
  const size_t batch = 100, record = 1024;
  uint64_t batches = uint64_t(gib * double(1ull << 30)) / (batch * record);
  double s = append_parallel(*log, 4, batches, batch, record);
  std::cerr << fmt::format("wrote {:.2f} GiB in {:.1f} s (tiering off)\n", gib, s);
  must(n->close(), "closing the node");
  ::sync();
}

NodeRun run_node(StoreUnderTest& store, const std::string& data, const std::string& name,
                 uint64_t fragment_bytes, int concurrency, int blocking_threads, bool trace) {
  remove_dir(data + "/catalog");
  auto place = store.place(name);
  json doc = node_doc(place);
  doc["log"] = {{"fsync", "never"}};
  doc["tiering"]["fragment_target_bytes"] = fragment_bytes;
  doc["governor"] = {{"max_concurrent", concurrency}};
  if (blocking_threads > 0) doc["threads"] = {{"blocking", blocking_threads}};
  ::sync();
  NodeRun r;
  double cpu0 = process_cpu_seconds(), scpu0 = cpu_of_pid(store.server_pid());
  auto t0 = Clk::now();
  auto n = open_node(doc, data);
  r.open_seconds = secs(t0, Clk::now());
  std::atomic<bool> flushed{false};
  std::thread tracer;
  if (trace) {
    // --trace: the uploader's progress every 100 ms, to see where time goes.
    tracer = std::thread([&] {
      while (!flushed.load()) {
        auto u = n->uploader("s")->status();
        auto g = n->status_json()["node"];
        std::cerr << fmt::format(
            "  {:6.2f} s: uploaded {} frags {} MB, in flight {}, pending persist {}, remote next "
            "{}, catching up {}, catch-up reads {}, governor queued {} in flight {}, pool busy "
            "{} queued {}\n",
            secs(t0, Clk::now()), u.fragments_uploaded, u.bytes_uploaded / 1000000,
            u.core.transfers_in_flight, u.core.fragments_unpersisted, u.remote_next_offset,
            u.catching_up, u.catchup_reads, g["governor"]["queued"].get<uint64_t>(),
            g["governor"]["in_flight"].get<uint64_t>(), g["pool"]["busy"].get<uint64_t>(),
            g["pool"]["queued"].get<uint64_t>());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  must(n->flush("s", std::chrono::minutes(30)), "waiting for the backlog to be persisted");
  r.seconds = secs(t0, Clk::now());
  flushed = true;
  if (tracer.joinable()) tracer.join();
  r.cpu_s = process_cpu_seconds() - cpu0;
  r.server_cpu_s = cpu_of_pid(store.server_pid()) - scpu0;
  auto st = n->uploader("s")->status();
  r.persists = st.core.persists_completed;
  r.puts =
      uint64_t(prom_by_label(n->metrics_text(), "strata_objstore_requests_total", "op")["put"]);
  auto keys = must(tier::ObjectKeys::make(place.key_prefix, "s"), "object keys");
  auto all = objstore::list_all(n->store(), keys.stream_prefix());
  if (!all.ok()) die("listing the uploaded objects: " + all.error().to_string());
  for (const auto& o : *all) {
    auto k = keys.parse(o.key);
    if (k.ok() && k->type == tier::ObjectType::fragment) {
      r.fragment_sizes.push_back(o.size);
      r.fragment_bytes += o.size;
    }
  }
  if (r.fragment_sizes.size() != st.fragments_uploaded || r.fragment_bytes != st.bytes_uploaded) {
    die(fmt::format("the bucket holds {} fragments / {} bytes, the uploader reports {} / {}",
                    r.fragment_sizes.size(), r.fragment_bytes, st.fragments_uploaded,
                    st.bytes_uploaded));
  }
  must(n->close(), "closing the node");
  n.reset();
  store.clear(place);
  return r;
}

RawRun run_raw(StoreUnderTest& store, const std::string& name, const std::vector<uint64_t>& sizes,
               const std::string& body, int concurrency) {
  auto place = store.place(name);
  auto client = store.open_raw(place);
  std::map<uint64_t, uint32_t> crcs;
  for (uint64_t s : sizes) {
    if (!crcs.count(s)) crcs[s] = crc32c::value(body.data(), s);
  }
  ::sync();
  std::atomic<size_t> next{0};
  RawRun r;
  double cpu0 = process_cpu_seconds(), scpu0 = cpu_of_pid(store.server_pid());
  auto t0 = Clk::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < concurrency; ++t) {
    ts.emplace_back([&] {
      for (size_t i = next.fetch_add(1); i < sizes.size(); i = next.fetch_add(1)) {
        objstore::PutOptions po;
        po.crc32c = crcs.at(sizes[i]);
        std::string key = fmt::format("{}/raw/{:06}", place.key_prefix, i);
        auto p = client->put(key, BytesView(body.data(), sizes[i]), po);
        if (!p.ok()) die("raw PUT: " + p.error().to_string());
      }
    });
  }
  for (auto& t : ts) t.join();
  r.seconds = secs(t0, Clk::now());
  r.cpu_s = process_cpu_seconds() - cpu0;
  r.server_cpu_s = cpu_of_pid(store.server_pid()) - scpu0;
  client.reset();
  store.clear(place);
  return r;
}

// The raw peer with the node's source: each body is the next range of the
// stream's segment files (mapped, as the node maps them), so the only
// difference left to the node is the node's own work. CRC32C left to the
// store (one pass, as the node's fragment encoder makes one).
RawRun run_raw_mapped(StoreUnderTest& store, const std::string& name,
                      const std::vector<uint64_t>& sizes,
                      const std::vector<std::pair<std::string, uint64_t>>& files, int concurrency) {
  auto place = store.place(name);
  auto client = store.open_raw(place);
  uint64_t total_file_bytes = 0;
  for (const auto& f : files) total_file_bytes += f.second;
  std::vector<uint64_t> starts;
  uint64_t at = 0;
  for (uint64_t s : sizes) {
    starts.push_back(at % total_file_bytes);
    at += s;
  }
  ::sync();
  std::atomic<size_t> next{0};
  RawRun r;
  double cpu0 = process_cpu_seconds(), scpu0 = cpu_of_pid(store.server_pid());
  auto t0 = Clk::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < concurrency; ++t) {
    ts.emplace_back([&] {
      for (size_t i = next.fetch_add(1); i < sizes.size(); i = next.fetch_add(1)) {
        std::vector<MappedRange> maps;
        std::vector<BytesView> parts;
        uint64_t want = sizes[i], pos = starts[i];
        while (want > 0) {
          // The file holding virtual position `pos` of the concatenation.
          uint64_t base = 0;
          size_t f = 0;
          while (pos >= base + files[f].second) base += files[f++].second;
          uint64_t len = std::min(want, base + files[f].second - pos);
          maps.push_back(must(MappedRange::map(files[f].first, pos - base, len), "mapping"));
          parts.push_back(maps.back().view());
          want -= len;
          pos = (pos + len) % total_file_bytes;
        }
        std::string key = fmt::format("{}/raw/{:06}", place.key_prefix, i);
        auto p = client->put(key, objstore::BodyParts(parts.data(), parts.size()));
        if (!p.ok()) die("raw PUT: " + p.error().to_string());
      }
    });
  }
  for (auto& t : ts) t.join();
  r.seconds = secs(t0, Clk::now());
  r.cpu_s = process_cpu_seconds() - cpu0;
  r.server_cpu_s = cpu_of_pid(store.server_pid()) - scpu0;
  client.reset();
  store.clear(place);
  return r;
}

}  // namespace strata::bench::upload

namespace strata::bench {

json run_upload(const Args& args, const std::string& base) {
  using namespace upload;
  const double gib = args.num("gib", 1);
  const uint64_t fragment_bytes = uint64_t(args.num("fragment-mib", 64) * double(1 << 20));
  const int rounds = int(args.integer("rounds", 5));
  const int concurrency = int(args.integer("concurrency", 8));
  const int blocking_threads = int(args.integer("blocking-threads", 0));
  const auto stores = args.list("stores", "fs,s3");

  print_machine();
  std::cout << fmt::format(
      "upload: a {:.2f} GiB backlog (100 x 1 KiB records per chunk), {} MiB fragments, {} "
      "concurrent transfers, {} rounds rotating node / raw PUT from memory / raw PUT from the "
      "segment maps (after one discarded warm-up round)\n\n",
      gib, fragment_bytes >> 20, concurrency, rounds);
  const std::string data = base + "/upload-data";
  write_template(data, base, gib);
  std::vector<std::pair<std::string, uint64_t>> files;
  for (const auto& e : std::filesystem::directory_iterator(data + "/streams/s")) {
    auto n = log::parse_log_file_name(e.path().filename().string());
    if (n.ok() && *n && (*n)->kind == log::LogFileKind::segment) {
      files.emplace_back(e.path().string(), e.file_size());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) die("no segment files under " + data + "/streams/s");

  std::string body;
  json out = {{"subcommand", "upload"},
              {"machine", machine_json()},
              {"settings",
               {{"gib", gib},
                {"fragment_bytes", fragment_bytes},
                {"concurrency", concurrency},
                {"rounds", rounds}}},
              {"results", json::array()}};
  print_row({"store", "node MB/s", "raw PUT MB/s", "**node / raw** (median of rounds)", "range",
             "raw PUT from segment maps MB/s", "node / that", "node CPU s/GiB",
             "raw CPU s/GiB (memory / maps)", "server CPU s/GiB node / raw", "fragments", "PUTs"});
  print_row({"---", "---:", "---:", "---:", "---",
             "---:", "---:", "---:", "---:", "---:", "---:", "---:"});
  for (const auto& kind : stores) {
    auto store = StoreUnderTest::make(kind, args, base);
    std::vector<NodeRun> nodes;
    std::vector<RawRun> raws, mapped;
    std::vector<double> ratios, ratios_mapped, node_mb, raw_mb, mapped_mb;
    std::vector<uint64_t> sizes;
    double total = 0;
    // Round -1 warms up (discarded): the first run after writing the
    // backlog was always the slowest, whichever client ran it (memory the
    // VM had not touched yet), so no client gets it.
    for (int r = args.flag("no-warmup") ? 0 : -1; r < rounds; ++r) {
      auto do_node = [&] {
        nodes.push_back(run_node(*store, data, fmt::format("up-node-{}", r), fragment_bytes,
                                 concurrency, blocking_threads, args.flag("trace")));
        if (sizes.empty()) {
          sizes = nodes.back().fragment_sizes;
          for (uint64_t s : sizes) total += double(s);
        }
      };
      auto do_raw = [&] {
        if (body.empty()) {
          uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
          body.resize(largest);
          Random rng(42);
          for (size_t i = 0; i + 8 <= body.size(); i += 8) {
            uint64_t v = rng.next();
            std::memcpy(&body[i], &v, 8);
          }
        }
        raws.push_back(run_raw(*store, fmt::format("up-raw-{}", r), sizes, body, concurrency));
      };
      auto do_mapped = [&] {
        mapped.push_back(
            run_raw_mapped(*store, fmt::format("up-map-{}", r), sizes, files, concurrency));
      };
      if (args.flag("node-only")) {
        // For profiling the node's side alone; no ratio.
        do_node();
        continue;
      }
      // The node goes first once (it learns the fragment sizes), then the
      // order rotates.
      std::vector<std::function<void()>> order = {do_node, do_raw, do_mapped};
      if (r > 0) std::rotate(order.begin(), order.begin() + (r % 3), order.end());
      for (auto& f : order) f();
      if (r < 0) {
        std::cerr << fmt::format(
            "{} warm-up: node {:.2f} s, raw {:.2f} s, raw from maps {:.2f} s (discarded)\n", kind,
            nodes.back().seconds, raws.back().seconds, mapped.back().seconds);
        nodes.pop_back();
        raws.pop_back();
        mapped.pop_back();
        continue;
      }
      const NodeRun& n = nodes.back();
      node_mb.push_back(double(n.fragment_bytes) / 1e6 / n.seconds);
      raw_mb.push_back(total / 1e6 / raws.back().seconds);
      mapped_mb.push_back(total / 1e6 / mapped.back().seconds);
      ratios.push_back(node_mb.back() / raw_mb.back());
      ratios_mapped.push_back(node_mb.back() / mapped_mb.back());
      std::cerr << fmt::format(
          "{} round {}: node {:.1f} MB/s ({:.2f} s, open {:.2f} s), raw {:.1f} MB/s, raw from "
          "maps {:.1f} MB/s; node/raw {:.3f}, node/maps {:.3f}\n",
          kind, r + 1, node_mb.back(), n.seconds, n.open_seconds, raw_mb.back(), mapped_mb.back(),
          ratios.back(), ratios_mapped.back());
    }
    if (raws.empty()) {
      for (const auto& n : nodes) {
        std::cout << fmt::format("{}: node {:.1f} MB/s, CPU {:.2f} s\n", kind,
                                 double(n.fragment_bytes) / 1e6 / n.seconds, n.cpu_s);
      }
      continue;
    }
    const double up_gib = total / double(1ull << 30);
    std::vector<double> ncpu, rcpu, mcpu, nscpu, rscpu;
    for (const auto& n : nodes) {
      ncpu.push_back(n.cpu_s / up_gib);
      nscpu.push_back(n.server_cpu_s / up_gib);
    }
    for (const auto& w : raws) {
      rcpu.push_back(w.cpu_s / up_gib);
      rscpu.push_back(w.server_cpu_s / up_gib);
    }
    for (const auto& w : mapped) mcpu.push_back(w.cpu_s / up_gib);
    print_row({kind, fmt_num(median(node_mb), 1), fmt_num(median(raw_mb), 1),
               "**" + fmt_num(median(ratios), 3) + "**",
               fmt_num(min_of(ratios), 3) + "–" + fmt_num(max_of(ratios), 3),
               fmt_num(median(mapped_mb), 1), fmt_num(median(ratios_mapped), 3),
               fmt_num(median(ncpu), 2),
               fmt_num(median(rcpu), 2) + " / " + fmt_num(median(mcpu), 2),
               kind == "s3" ? fmt_num(median(nscpu), 2) + " / " + fmt_num(median(rscpu), 2) : "—",
               std::to_string(sizes.size()), std::to_string(nodes[0].puts)});
    json rj = json::array();
    for (size_t i = 0; i < nodes.size(); ++i) {
      rj.push_back({{"node_mb_per_s", node_mb[i]},
                    {"node_seconds", nodes[i].seconds},
                    {"node_open_seconds", nodes[i].open_seconds},
                    {"node_cpu_s", nodes[i].cpu_s},
                    {"node_server_cpu_s", nodes[i].server_cpu_s},
                    {"node_puts", nodes[i].puts},
                    {"node_persists", nodes[i].persists},
                    {"raw_mb_per_s", raw_mb[i]},
                    {"raw_cpu_s", raws[i].cpu_s},
                    {"raw_server_cpu_s", raws[i].server_cpu_s},
                    {"raw_mapped_mb_per_s", mapped_mb[i]},
                    {"raw_mapped_cpu_s", mapped[i].cpu_s},
                    {"ratio", ratios[i]},
                    {"ratio_to_mapped", ratios_mapped[i]}});
    }
    out["results"].push_back({{"store", store->describe()},
                              {"kind", kind},
                              {"fragments", sizes.size()},
                              {"fragment_bytes", uint64_t(total)},
                              {"node_mb_per_s", median(node_mb)},
                              {"raw_mb_per_s", median(raw_mb)},
                              {"raw_mapped_mb_per_s", median(mapped_mb)},
                              {"ratio_median", median(ratios)},
                              {"ratio_min", min_of(ratios)},
                              {"ratio_max", max_of(ratios)},
                              {"ratio_to_mapped_median", median(ratios_mapped)},
                              {"rounds", rj}});
  }
  remove_dir(data);
  remove_dir(base + "/upload-template-objects");
  std::cout << "\nGoal: node / raw >= 0.9.\n";
  return out;
}

}  // namespace strata::bench
