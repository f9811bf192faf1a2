// raftmeta_bench: 10 000 simulated Raft servers on one node.
//
//  election storm  64 threads; per server and round: store(current_term)
//                  then store_sync(voted_for), as Ra's ra_server does.
//                  One durable update = one (term, vote) pair acknowledged.
//  baseline        the same updates kept one file per server the way braft
//                  (and canonical/raft) keep term and vote: write a temp
//                  file, fsync it, rename it over the old one. Same threads,
//                  same disk, same run.
//  steady state    last_applied updates (store, no fsync; periodic fsync
//                  every 5 s), from 2 and from 64 threads, against the same
//                  loop updating a std::unordered_map under a mutex (the
//                  in-memory ceiling for a locked table).
//  memory          VmRSS of the process once the 10 000 servers are loaded.
//
// Each measurement is repeated --runs times; the median is reported.
//   raftmeta_bench [--servers N] [--threads N] [--runs N] [--seconds S]
//                  [--baseline-updates N] [--dir DIR] [--json]
#include <fcntl.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/fs.h"
#include "common/random.h"
#include "raftmeta/raft_meta.h"

using namespace strata;
using namespace strata::raftmeta;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int servers = 10000;
  int threads = 64;
  int runs = 3;
  double seconds = 2.0;
  int baseline_updates = 3000;
  std::string dir = "raftmeta_bench_data";
  bool json = false;
  std::string only;  // "storm", "baseline" or "applied": run just that (profiling)
  int group_commit_us = 2000;
};

double secs(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// VmRSS after glibc returned the free heap it keeps (malloc_trim): the
// memory in use, not what earlier runs' threads left cached.
uint64_t live_rss();

// VmRSS / VmHWM of this process, in bytes.
uint64_t proc_status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::strlen(key) + 1)) * 1024;
  }
  return 0;
}

uint64_t live_rss() {
  malloc_trim(0);
  return proc_status_kb("VmRSS:");
}

std::string server_id(int i) {
  // Ra uids look like "<name prefix><random>", about 20 bytes.
  char buf[32];
  std::snprintf(buf, sizeof buf, "ra_uid_%06d_XJ4Q2", i);
  return buf;
}

void die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "raftmeta_bench: %s: %s\n", what.c_str(), s.to_string().c_str());
  std::exit(1);
}

// Runs fn(thread index) on `threads` threads and returns the wall time.
template <typename Fn>
double parallel(int threads, Fn fn) {
  std::vector<std::thread> ts;
  const auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) ts.emplace_back(fn, t);
  for (auto& t : ts) t.join();
  return secs(Clock::now() - t0);
}

// One election round over every server: term+1 (async), vote (sync).
double election_round(RaftMeta& m, const Args& a, uint64_t term) {
  return parallel(a.threads, [&](int t) {
    for (int i = t; i < a.servers; i += a.threads) {
      const std::string id = server_id(i);
      Status s = m.store(id, Field::current_term, term);
      if (s.ok()) {
        s = m.store_sync(id, Field::voted_for,
                         VotedFor::server("ra_server_" + std::to_string(i % 97),
                                          "rabbit@node" + std::to_string(i % 3)));
      }
      if (!s.ok()) die("election storm", s);
    }
  });
}

// The braft way: write <file>.tmp, fsync, rename over <file>.
void file_per_server_write(const std::string& path, uint64_t term, int i) {
  char body[96];
  int n = std::snprintf(body, sizeof body, "term=%llu vote=ra_server_%d@rabbit@node%d\n",
                        static_cast<unsigned long long>(term), i % 97, i % 3);
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ::write(fd, body, size_t(n)) != n || ::fsync(fd) != 0 || ::close(fd) != 0 ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    std::perror(("baseline " + path).c_str());
    std::exit(1);
  }
}

double baseline_round(const std::string& dir, const Args& a, uint64_t term) {
  const int updates = std::min(a.baseline_updates, a.servers);
  return parallel(a.threads, [&](int t) {
    for (int i = t; i < updates; i += a.threads) {
      file_per_server_write(dir + "/" + server_id(i), term, i);
    }
  });
}

// `threads` threads each call update(id, value) on random servers of their
// own share, with values from one shared counter, for `seconds`; returns
// updates/s. A template, so neither side pays an indirect call per update.
template <typename Update>
double update_rate(const Args& a, int threads, std::atomic<uint64_t>& counter, Update update) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> ts;
  const auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      Random rng(uint64_t(t) + 1);
      uint64_t n = 0;
      std::vector<std::string> ids;
      for (int i = t; i < a.servers; i += threads) ids.push_back(server_id(i));
      while (!stop.load(std::memory_order_relaxed)) {
        for (int k = 0; k < 256; ++k) {
          update(ids[rng.uniform(ids.size())], counter.fetch_add(1) + 1);
        }
        n += 256;
      }
      total += n;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(a.seconds));
  stop = true;
  for (auto& t : ts) t.join();
  return double(total.load()) / secs(Clock::now() - t0);
}

// last_applied updates through RaftMeta.
double applied_rate(RaftMeta& m, const Args& a, int threads, std::atomic<uint64_t>* counter) {
  return update_rate(a, threads, *counter, [&](const std::string& id, uint64_t v) {
    Status s = m.store(id, Field::last_applied, v);
    if (!s.ok()) die("last_applied", s);
  });
}

// The same loop against std::unordered_map + std::mutex.
double map_rate(const Args& a, int threads) {
  std::unordered_map<std::string, uint64_t> map;
  for (int i = 0; i < a.servers; ++i) map[server_id(i)] = 0;
  std::mutex mu;
  std::atomic<uint64_t> counter{0};
  return update_rate(a, threads, counter, [&](const std::string& id, uint64_t v) {
    std::lock_guard<std::mutex> l(mu);
    map[id] = v;
  });
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--servers")
      a.servers = std::stoi(next());
    else if (k == "--threads")
      a.threads = std::stoi(next());
    else if (k == "--runs")
      a.runs = std::stoi(next());
    else if (k == "--seconds")
      a.seconds = std::stod(next());
    else if (k == "--baseline-updates")
      a.baseline_updates = std::stoi(next());
    else if (k == "--dir")
      a.dir = next();
    else if (k == "--json")
      a.json = true;
    else if (k == "--only")
      a.only = next();
    else if (k == "--group-commit-us")
      a.group_commit_us = std::stoi(next());
    else {
      std::fprintf(stderr,
                   "usage: raftmeta_bench [--servers N] [--threads N] [--runs N] [--seconds S] "
                   "[--baseline-updates N] [--dir DIR] [--json] [--only storm|baseline|applied]\n");
      std::exit(2);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  spdlog::set_level(spdlog::level::warn);
  FileSystem& fs = posix_fs();
  if (Status s = remove_all(fs, a.dir); !s.ok() && s.code() != Errc::not_found) die("clean", s);
  const std::string meta_dir = a.dir + "/raftmeta";
  const std::string base_dir = a.dir + "/file_per_server";
  if (Status s = create_dirs(fs, base_dir); !s.ok()) die("mkdir", s);

  const uint64_t rss_before = proc_status_kb("VmRSS:");
  Options o;
  o.store.capacity = uint32_t(a.servers + a.servers / 4);
  o.group_commit_window = std::chrono::microseconds(a.group_commit_us);
  auto opened = RaftMeta::open(fs, meta_dir, o);
  if (!opened.ok()) die("open", opened.error());
  RaftMeta& m = **opened;

  // Create every server (term 1 and a vote) from one thread, durably, so
  // that the RSS below is the store's and not 64 threads' malloc arenas.
  const auto c0 = Clock::now();
  for (int i = 0; i < a.servers; ++i) {
    const std::string id = server_id(i);
    Status s = m.store(id, Field::current_term, uint64_t(1));
    if (s.ok()) {
      s = m.store(id, Field::voted_for,
                  VotedFor::server("ra_server_" + std::to_string(i % 97),
                                   "rabbit@node" + std::to_string(i % 3)));
    }
    if (!s.ok()) die("create", s);
  }
  if (Status s = m.sync(); !s.ok()) die("create", s);
  const double create_s = secs(Clock::now() - c0);
  const uint64_t rss_loaded = proc_status_kb("VmRSS:");

  // Election storm vs one file per server, interleaved run by run.
  std::vector<double> storm, base, per_fsync;
  uint64_t term = 1;
  for (int r = 0; r < a.runs; ++r) {
    ++term;
    if (a.only.empty() || a.only == "storm") {
      const uint64_t fsyncs0 = m.stats().store.fsyncs;
      const double t = election_round(m, a, term);
      storm.push_back(a.servers / t);
      per_fsync.push_back(double(a.servers) / double(m.stats().store.fsyncs - fsyncs0));
    }
    if (a.only.empty() || a.only == "baseline") {
      const double b = baseline_round(base_dir, a, term);
      base.push_back(std::min(a.baseline_updates, a.servers) / b);
    }
  }

  const uint64_t rss_after_storm = proc_status_kb("VmRSS:");
  const uint64_t live_after_storm = live_rss();

  // Steady state: last_applied.
  std::atomic<uint64_t> counter{0};
  std::vector<double> applied2, applied64, map2, map64;
  const uint64_t ops0 = m.stats().ops_written, changes0 = m.stats().changes;
  const auto steady0 = Clock::now();
  for (int r = 0; r < a.runs && (a.only.empty() || a.only == "applied"); ++r) {
    applied2.push_back(applied_rate(m, a, 2, &counter));
    applied64.push_back(applied_rate(m, a, a.threads, &counter));
    map2.push_back(map_rate(a, 2));
    map64.push_back(map_rate(a, a.threads));
  }
  if (Status s = m.sync(); !s.ok()) die("sync", s);
  const double steady_s = secs(Clock::now() - steady0);
  const auto st = m.stats();
  const uint64_t ops_written = st.ops_written - ops0, changes = st.changes - changes0;
  const uint64_t rss_end = proc_status_kb("VmRSS:");
  const uint64_t live_end = live_rss();
  const uint64_t hwm = proc_status_kb("VmHWM:");
  if (Status s = m.close(); !s.ok()) die("close", s);
  (void)remove_all(fs, a.dir);

  nlohmann::json j = {
      {"servers", a.servers},
      {"threads", a.threads},
      {"runs", a.runs},
      {"group_commit_us", a.group_commit_us},
      {"capacity", st.capacity},
      {"group_commit_holds", st.group_commit_holds},
      {"create_all_servers_s", create_s},
      {"election_storm_durable_updates_per_s", median(storm)},
      {"election_storm_updates_per_fsync", median(per_fsync)},
      {"baseline_file_per_server_durable_updates_per_s", median(base)},
      {"storm_vs_baseline", median(storm) / median(base)},
      {"last_applied_updates_per_s_2_threads", median(applied2)},
      {"last_applied_updates_per_s_64_threads", median(applied64)},
      {"locked_map_updates_per_s_2_threads", median(map2)},
      {"locked_map_updates_per_s_64_threads", median(map64)},
      {"last_applied_wal_writes_per_s", double(ops_written) / steady_s},
      {"last_applied_merge_ratio", ops_written ? double(changes) / double(ops_written) : 0.0},
      {"periodic_fsyncs", st.periodic_syncs},
      {"rss_before_open_bytes", rss_before},
      {"rss_loaded_bytes", rss_loaded},
      {"rss_after_storm_bytes", rss_after_storm},
      {"rss_after_storm_trimmed_bytes", live_after_storm},
      {"rss_end_bytes", rss_end},
      {"rss_end_trimmed_bytes", live_end},
      {"rss_peak_bytes", hwm},
      {"store_file_bytes", st.store.file_size},
  };
  if (a.json) {
    std::cout << j.dump(2) << std::endl;
    return 0;
  }
  auto mib = [](uint64_t b) { return double(b) / (1024.0 * 1024.0); };
  std::printf("%d servers, %d threads, median of %d runs\n", a.servers, a.threads, a.runs);
  std::printf("election storm (term+vote, store_sync): %10.0f durable updates/s (%.1f per fsync)\n",
              median(storm), median(per_fsync));
  std::printf("file per server (tmp+fsync+rename):     %10.0f durable updates/s\n", median(base));
  std::printf("  ratio: %.1fx\n", median(storm) / median(base));
  std::printf("last_applied, 2 threads:                %10.0f updates/s (locked map: %.0f)\n",
              median(applied2), median(map2));
  std::printf("last_applied, %d threads:               %10.0f updates/s (locked map: %.0f)\n",
              a.threads, median(applied64), median(map64));
  std::printf("  WAL writes %.0f/s after merging (%.1f updates per write), %llu periodic fsyncs\n",
              double(ops_written) / steady_s,
              ops_written ? double(changes) / double(ops_written) : 0.0,
              static_cast<unsigned long long>(st.periodic_syncs));
  std::printf("created %d servers in %.2f s (one thread, one sync)\n", a.servers, create_s);
  std::printf("RSS: %.1f MiB before open; %.1f MiB with %d servers loaded\n", mib(rss_before),
              mib(rss_loaded), a.servers);
  std::printf(
      "     after the %d-thread storm %.1f MiB (%.1f MiB after malloc_trim); at end %.1f "
      "MiB (%.1f MiB after malloc_trim); peak %.1f MiB\n",
      a.threads, mib(rss_after_storm), mib(live_after_storm), mib(rss_end), mib(live_end),
      mib(hwm));
  return 0;
}
