// node_bench idle: what open streams cost a node when nothing happens.
// A node (embedded defaults: directory store, embedded catalog) is opened
// with no stream and measured; then --streams streams are created, each gets
// one record, and every one is flushed to the object store, so each has an
// uploader that has started, uploaded and persisted, and now waits. Then:
// threads, resident memory per stream ((RSS with N - RSS with 0) / N, also
// after malloc_trim), file descriptors, and the CPU the process uses per
// second over --idle-seconds of doing nothing (getrusage, all threads).
#include <fmt/format.h>
#include <malloc.h>

#include <atomic>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

#include "bench_env.h"

namespace strata::bench {

json run_idle_streams(const Args& args, const std::string& base) {
  const int streams = int(args.integer("streams", 1000));
  const double idle_s = args.num("idle-seconds", 10);
  auto store = StoreUnderTest::make(args.str("store", "fs"), args, base);
  print_machine();
  std::cout << fmt::format(
      "idle streams: {} streams with one persisted record each, default settings, {}; idle for "
      "{:.0f} s\n\n",
      streams, store->describe(), idle_s);

  const std::string data = base + "/idle-data";
  fresh_dir(data);
  auto place = store->place("idle");
  auto n = open_node(node_doc(place), data);
  ::malloc_trim(0);
  const uint64_t rss0 = rss_bytes();
  const int threads0 = thread_count(), fds0 = open_fds();

  auto t0 = Clk::now();
  std::string rec(1024, 'r');
  for (int i = 0; i < streams; ++i) {
    auto log = must(n->create_stream(fmt::format("s{:05}", i)), "creating a stream");
    must(log->append({BytesView(rec)}), "append");
  }
  const double create_s = secs(t0, Clk::now());
  // Flush every stream at once: register each wait, then cut.
  auto t1 = Clk::now();
  std::mutex mu;
  std::condition_variable cv;
  int done = 0, failed = 0;
  for (int i = 0; i < streams; ++i) {
    auto up = n->uploader(fmt::format("s{:05}", i));
    up->await_persisted(1, [&](Status s) {
      std::lock_guard l(mu);
      done += 1;
      failed += s.ok() ? 0 : 1;
      cv.notify_all();
    });
    up->force_cut();
  }
  {
    std::unique_lock l(mu);
    if (!cv.wait_for(l, std::chrono::minutes(5), [&] { return done == streams; })) {
      die(fmt::format("only {} of {} streams persisted within 5 minutes", done, streams));
    }
  }
  if (failed) die(fmt::format("{} streams failed to persist", failed));
  const double flush_s = secs(t1, Clk::now());

  const uint64_t rss_n = rss_bytes();
  const int threads_n = thread_count(), fds_n = open_fds();
  const auto pool = n->runtime().pool_stats();

  const double cpu0 = process_cpu_seconds();
  auto w0 = Clk::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));  // the idle window itself
  const double wall = secs(w0, Clk::now());
  const double cpu_per_s = (process_cpu_seconds() - cpu0) / wall;
  const uint64_t rss_idle = rss_bytes();
  ::malloc_trim(0);
  const uint64_t rss_trim = rss_bytes();
  const int threads_idle = thread_count();

  auto per = [&](uint64_t rss) { return double(int64_t(rss) - int64_t(rss0)) / double(streams); };
  print_row({"quantity", "0 streams", fmt::format("{} streams", streams), "per stream"});
  print_row({"---", "---:", "---:", "---:"});
  print_row({"threads", std::to_string(threads0), std::to_string(threads_n),
             fmt_num(double(threads_n - threads0) / streams, 3)});
  print_row({"threads after the idle window", std::to_string(threads0),
             std::to_string(threads_idle), fmt_num(double(threads_idle - threads0) / streams, 3)});
  print_row({"RSS MiB (after the flush)", fmt_num(double(rss0) / 1048576.0, 1),
             fmt_num(double(rss_n) / 1048576.0, 1), fmt_num(per(rss_n) / 1024.0, 1) + " KiB"});
  print_row({"RSS MiB (after the idle window)", fmt_num(double(rss0) / 1048576.0, 1),
             fmt_num(double(rss_idle) / 1048576.0, 1),
             fmt_num(per(rss_idle) / 1024.0, 1) + " KiB"});
  print_row({"RSS MiB (then malloc_trim)", fmt_num(double(rss0) / 1048576.0, 1),
             fmt_num(double(rss_trim) / 1048576.0, 1),
             fmt_num(per(rss_trim) / 1024.0, 1) + " KiB"});
  print_row({"open file descriptors", std::to_string(fds0), std::to_string(fds_n),
             fmt_num(double(fds_n - fds0) / streams, 2)});
  print_row({"CPU while idle, % of one core", "", fmt_num(cpu_per_s * 100, 3),
             fmt_num(cpu_per_s * 1e6 / streams, 3) + " µs/s"});
  std::cout << fmt::format(
      "\ncreate {} streams (one append each): {:.1f} s; flush all: {:.1f} s; blocking pool "
      "threads after the flush: {} (jobs run {})\n",
      streams, create_s, flush_s, pool.threads, pool.jobs_run);

  json out = {{"subcommand", "idle"},
              {"machine", machine_json()},
              {"streams", streams},
              {"store", store->describe()},
              {"threads_0", threads0},
              {"threads_n", threads_n},
              {"threads_after_idle", threads_idle},
              {"rss_0", rss0},
              {"rss_n", rss_n},
              {"rss_after_idle", rss_idle},
              {"rss_trimmed", rss_trim},
              {"rss_per_stream", per(rss_n)},
              {"rss_per_stream_trimmed", per(rss_trim)},
              {"fds_0", fds0},
              {"fds_n", fds_n},
              {"idle_seconds", wall},
              {"idle_cpu_s_per_s", cpu_per_s},
              {"create_seconds", create_s},
              {"flush_seconds", flush_s},
              {"pool_threads", pool.threads}};
  must(n->close(), "closing the node");
  n.reset();
  store->clear(place);
  remove_dir(data);
  return out;
}

}  // namespace strata::bench
