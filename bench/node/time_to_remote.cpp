// node_bench ttr: time-to-remote under a steady load. One producer appends
// at a fixed rate for --seconds; the node runs the default tiering settings
// with the two clocks scaled down (fragment_max_age 2 s instead of 10 s,
// persist_interval 400 ms instead of 2 s). Two measurements of the same
// run:
//   - the uploader's time_to_remote histogram (status; per fragment, from
//     its first chunk's timestamp to the persist that covers it; quantiles
//     are bucket upper bounds, so up to 19 % high);
//   - direct: for every append, from the call to append() until
//     await_persisted() of its next offset reports it persisted.
// Both against the bound fragment_max_age + persist_interval + one upload,
// "one upload" being the p99 PUT latency the node's object-store metrics
// recorded in the same run.
#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

#include "bench_env.h"
#include "objstore/metered_store.h"

namespace strata::bench::ttr {

struct Settings {
  double seconds = 30;
  double rate_bytes = 1 << 20;  // per second
  size_t batch = 10;
  size_t record = 1024;
  int64_t max_age_ms = 2000;
  int64_t persist_interval_ms = 400;
};

struct Result {
  uint64_t appends = 0;
  uint64_t errors = 0;
  std::vector<double> direct_ms;
  double hist_p50 = 0, hist_p99 = 0, hist_max = 0;
  uint64_t hist_count = 0;
  double put_p50 = 0, put_p99 = 0;
  double bound_ms = 0;
  uint64_t fragments = 0, persists = 0;
  double achieved_rate = 0;
};

Result run(StoreUnderTest& store, const std::string& base, const Settings& s, bool trace) {
  const std::string data = base + "/ttr-data";
  fresh_dir(data);
  auto place = store.place("ttr");
  json doc = node_doc(place);
  doc["tiering"]["fragment_max_age_ms"] = s.max_age_ms;
  doc["tiering"]["persist_interval_ms"] = s.persist_interval_ms;
  auto n = open_node(doc, data);
  auto log = must(n->create_stream("s"), "creating the stream");
  auto up = n->uploader("s");

  std::string rec(s.record, 'r');
  std::vector<BytesView> views(s.batch, rec);
  // Warm-up: the uploader is started and has persisted once before timing.
  must(log->append(std::span<const BytesView>(views)), "append");
  must(n->flush("s", std::chrono::minutes(1)), "warm-up flush");
  auto base_status = up->status();

  std::mutex mu;
  std::condition_variable cv;
  Result r;
  uint64_t done = 0;
  const auto interval = std::chrono::duration<double>(double(s.batch * s.record) / s.rate_bytes);
  const auto t0 = Clk::now();
  const auto end = t0 + std::chrono::duration<double>(s.seconds);
  std::atomic<bool> stop{false};
  std::thread tracer;
  if (trace) {
    // --trace: every change of the uploader's progress, polled each 5 ms.
    tracer = std::thread([&] {
      uint64_t frags = 0, next = 0, cuts = 0;
      while (!stop.load()) {
        auto u = up->status();
        if (u.fragments_uploaded != frags || u.remote_next_offset != next ||
            u.core.fragments_cut != cuts) {
          frags = u.fragments_uploaded;
          next = u.remote_next_offset;
          cuts = u.core.fragments_cut;
          std::cerr << fmt::format("  {:8.3f} s: cut {} uploaded {} remote next {} (log next {})\n",
                                   secs(t0, Clk::now()), cuts, frags, next, log->committed_next());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  for (uint64_t i = 0;; ++i) {
    auto due = t0 + std::chrono::duration_cast<Clk::duration>(interval * double(i));
    if (due >= end) break;
    std::this_thread::sleep_until(due);  // pacing the producer, not synchronisation
    auto start = Clk::now();
    auto a = must(log->append(std::span<const BytesView>(views)), "append");
    r.appends += 1;
    up->await_persisted(a.next_offset, [&, start](Status st) {
      double ms = std::chrono::duration<double, std::milli>(Clk::now() - start).count();
      std::lock_guard l(mu);
      if (st.ok()) {
        r.direct_ms.push_back(ms);
      } else {
        r.errors += 1;
      }
      done += 1;
      cv.notify_all();
    });
  }
  r.achieved_rate = double(r.appends * s.batch * s.record) / secs(t0, Clk::now());
  must(n->flush("s", std::chrono::minutes(2)), "final flush");
  {
    std::unique_lock l(mu);
    if (!cv.wait_for(l, std::chrono::minutes(2), [&] { return done == r.appends; })) {
      die("not every append was reported persisted");
    }
  }
  stop = true;
  if (tracer.joinable()) tracer.join();
  auto st = up->status();
  // The histogram includes the warm-up fragment; it is one of many.
  r.hist_p50 = st.time_to_remote.quantile_ms(0.5);
  r.hist_p99 = st.time_to_remote.quantile_ms(0.99);
  r.hist_max = double(st.time_to_remote.max_us) / 1000.0;
  r.hist_count = st.time_to_remote.count;
  r.fragments = st.fragments_uploaded - base_status.fragments_uploaded;
  r.persists = st.core.persists_completed - base_status.core.persists_completed;
  auto* metered = dynamic_cast<objstore::MeteredStore*>(&n->store());
  if (!metered) die("the node's store is not metered");
  auto puts = metered->stats(objstore::Op::put).latency;
  r.put_p50 = puts.quantile_ms(0.5);
  r.put_p99 = puts.quantile_ms(0.99);
  r.bound_ms = double(s.max_age_ms + s.persist_interval_ms) + r.put_p99;
  // The uploader must not outlive its node: its strand and timers belong to
  // the node's io_context (destroying it afterwards aborts).
  up.reset();
  must(n->close(), "closing the node");
  n.reset();
  store.clear(place);
  remove_dir(data);
  return r;
}

}  // namespace strata::bench::ttr

namespace strata::bench {

json run_time_to_remote(const Args& args, const std::string& base) {
  using namespace ttr;
  Settings s;
  s.seconds = args.num("seconds", 30);
  s.rate_bytes = args.num("rate-mib", 1) * double(1 << 20);
  s.batch = size_t(args.integer("batch", 10));
  s.record = size_t(args.integer("record", 1024));
  s.max_age_ms = args.integer("fragment-max-age-ms", 2000);
  s.persist_interval_ms = args.integer("persist-interval-ms", 400);
  const auto stores = args.list("stores", "fs,s3");

  print_machine();
  std::cout << fmt::format(
      "time-to-remote: one producer, {:.2f} MiB/s in appends of {} x {} B for {:.0f} s; "
      "fragment_max_age {} ms, persist_interval {} ms, other tiering settings default\n\n",
      s.rate_bytes / double(1 << 20), s.batch, s.record, s.seconds, s.max_age_ms,
      s.persist_interval_ms);
  print_row({"store", "appends", "direct p50 ms", "direct p99 ms", "direct max ms",
             "histogram p50 ms", "histogram p99 ms", "PUT p50 / p99 ms", "bound ms",
             "direct p99 / bound", "fragments", "persists"});
  print_row({"---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:",
             "---:"});
  json out = {{"subcommand", "ttr"},
              {"machine", machine_json()},
              {"settings",
               {{"seconds", s.seconds},
                {"rate_bytes_per_s", s.rate_bytes},
                {"batch", s.batch},
                {"record", s.record},
                {"fragment_max_age_ms", s.max_age_ms},
                {"persist_interval_ms", s.persist_interval_ms}}},
              {"results", json::array()}};
  for (const auto& kind : stores) {
    auto store = StoreUnderTest::make(kind, args, base);
    Result r = run(*store, base, s, args.flag("trace"));
    double p50 = percentile(r.direct_ms, 0.5), p99 = percentile(r.direct_ms, 0.99),
           mx = max_of(r.direct_ms);
    print_row({kind, std::to_string(r.appends), fmt_num(p50, 0), fmt_num(p99, 0), fmt_num(mx, 0),
               fmt_num(r.hist_p50, 0), fmt_num(r.hist_p99, 0),
               fmt_num(r.put_p50, 1) + " / " + fmt_num(r.put_p99, 1), fmt_num(r.bound_ms, 0),
               "**" + fmt_num(p99 / r.bound_ms, 2) + "**", std::to_string(r.fragments),
               std::to_string(r.persists)});
    if (r.errors) std::cout << fmt::format("{} appends were reported failed\n", r.errors);
    out["results"].push_back({{"store", store->describe()},
                              {"kind", kind},
                              {"appends", r.appends},
                              {"errors", r.errors},
                              {"achieved_rate_bytes_per_s", r.achieved_rate},
                              {"direct_p50_ms", p50},
                              {"direct_p99_ms", p99},
                              {"direct_max_ms", mx},
                              {"histogram_p50_ms", r.hist_p50},
                              {"histogram_p99_ms", r.hist_p99},
                              {"histogram_max_ms", r.hist_max},
                              {"histogram_count", r.hist_count},
                              {"put_p50_ms", r.put_p50},
                              {"put_p99_ms", r.put_p99},
                              {"bound_ms", r.bound_ms},
                              {"fragments", r.fragments},
                              {"persists", r.persists}});
  }
  std::cout << "\nBound: fragment_max_age + persist_interval + one upload (the run's p99 PUT).\n";
  return out;
}

}  // namespace strata::bench
