// slotstore_bench: slotstore against SQLite and RocksDB on a busy Raft
// node's metadata (docs/BENCHMARKS.md has the results and how to read
// them). Whole-process runs; every figure is the median of --reps runs, and
// the physical limit (fdatasync rate of this disk) is measured in the same
// run.
//
//   slotstore_bench [--dir D] [--keys 50000] [--secs 3] [--reps 3]
//                   [--engines slotstore,sqlite,rocksdb] [--cold]
//                   [--only fsync,mix,busy,high,writers,recovery,memory]
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/fs.h"
#include "common/random.h"
#include "engines.h"
#include "fsync_counter.h"
#include "slotstore/slotstore.h"

namespace strata::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::string dir = "/tmp/slotstore-bench";
  int keys = 50000;
  double secs = 3;
  int reps = 3;
  std::vector<std::string> engines = {"slotstore", "sqlite", "rocksdb"};
  std::set<std::string> only;
  bool cold = false;
  bool want(const std::string& w) const { return only.empty() || only.count(w); }
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "slotstore_bench: %s\n", what.c_str());
  std::exit(1);
}

void check(const Status& s, const std::string& what) {
  if (!s.ok()) die(what + ": " + s.to_string());
}

std::unique_ptr<Engine> make(const std::string& name) {
  if (name == "slotstore") return make_slotstore();
  if (name == "sqlite") return make_sqlite();
  if (name == "rocksdb") return make_rocksdb();
  die("unknown engine " + name);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

// ---------------------------------------------------------------- physical limit

struct FsyncProbe {
  double per_sec = 0;
  double p50_us = 0;
};

// pwrite of 64 bytes into a preallocated file + fdatasync, back to back:
// the most durable writes per second one writer can get from this disk.
FsyncProbe probe_fsync(const std::string& dir, double secs) {
  std::string path = dir + "/fsync-probe";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open " + path);
  std::string zeros(1 << 20, '\0');
  if (::pwrite(fd, zeros.data(), zeros.size(), 0) != ssize_t(zeros.size())) die("pwrite");
  ::fdatasync(fd);
  std::vector<double> lat;
  auto t0 = Clock::now();
  uint64_t n = 0;
  while (std::chrono::duration<double>(Clock::now() - t0).count() < secs) {
    auto a = Clock::now();
    if (::pwrite(fd, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 64,
                 off_t((n * 64) % (1 << 20))) != 64) {
      die("pwrite");
    }
    ::fdatasync(fd);
    lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
    ++n;
  }
  double el = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(fd);
  ::unlink(path.c_str());
  return {double(n) / el, percentile(lat, 0.5)};
}

// ---------------------------------------------------------------- workloads

struct Run {
  double ops_per_sec = 0;
  double fsyncs_per_op = 0;
  double durable_p50_us = 0;
  double durable_p99_us = 0;
};

// `threads` writers for `secs`; each op is durable with probability
// `durable_pct`/100, else a high-frequency update; keys uniformly random.
Run run(Engine& e, const std::vector<std::string>& keys, int threads, double secs, int durable_pct,
        uint64_t seed) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ops{0};
  std::mutex mu;
  std::vector<double> lat;
  uint64_t f0 = fsync_count();
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      Random rng(seed * 1000 + uint64_t(t));
      std::vector<double> mine;
      uint64_t n = 0, v = seed << 32 | uint64_t(t) << 24;
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string& k = keys[rng.uniform(keys.size())];
        ++v;
        if (int(rng.uniform(100)) < durable_pct) {
          auto a = Clock::now();
          check(e.durable(k, v), e.name() + " durable write");
          mine.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
        } else {
          check(e.high(k, v), e.name() + " high-frequency write");
        }
        ++n;
      }
      ops += n;
      std::lock_guard<std::mutex> l(mu);
      lat.insert(lat.end(), mine.begin(), mine.end());
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(secs));
  stop = true;
  for (auto& t : ts) t.join();
  double el = std::chrono::duration<double>(Clock::now() - t0).count();
  Run r;
  r.ops_per_sec = double(ops) / el;
  r.fsyncs_per_op = double(fsync_count() - f0) / double(std::max<uint64_t>(1, ops));
  r.durable_p50_us = percentile(lat, 0.5);
  r.durable_p99_us = percentile(lat, 0.99);
  return r;
}

void settle() {
  ::sync();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

// Runs every engine once per repetition, alternating, so that all of them
// see the same phases of this shared machine's I/O load; reports medians.
// With `limit_per_op` > 0, each repetition also probes the fsync rate and
// the "of limit" column divides by limit_per_op x that rate.
void table(const Config& c, const std::string& title, const std::vector<std::string>& keys,
           int threads, int durable_pct, double limit_per_op) {
  std::printf("\n### %s\n\n", title.c_str());
  std::printf(
      "| engine | ops/s | vs sqlite | vs rocksdb | of limit | fsyncs/op | durable p50 µs "
      "| durable p99 µs |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  std::map<std::string, std::vector<Run>> runs;
  std::map<std::string, std::string> stats;
  std::vector<double> limits, probe_us;
  for (int rep = 0; rep < c.reps; ++rep) {
    if (limit_per_op > 0) {
      settle();
      FsyncProbe p = probe_fsync(c.dir, 1.0);
      limits.push_back(p.per_sec * limit_per_op);
      probe_us.push_back(p.p50_us);
    }
    // Rotate the order, and let the previous run's dirty pages reach the disk
    // first: on a virtual disk a flush waits for whatever else is dirty.
    for (size_t k = 0; k < c.engines.size(); ++k) {
      const std::string& name = c.engines[(k + size_t(rep)) % c.engines.size()];
      settle();
      auto e = make(name);
      check(e->open(c.dir + "/" + name), "open " + name);
      runs[name].push_back(run(*e, keys, threads, c.secs, durable_pct, uint64_t(rep + 1)));
      check(e->close(), "close " + name);
      std::string& st = stats[name];
      if (!e->stats().empty()) st += fmt::format("{}{}", st.empty() ? "" : "; ", e->stats());
    }
  }
  std::map<std::string, Run> res;
  for (auto& [name, rs] : runs) {
    std::vector<double> ops, fs, p50, p99;
    for (const Run& r : rs) {
      ops.push_back(r.ops_per_sec);
      fs.push_back(r.fsyncs_per_op);
      p50.push_back(r.durable_p50_us);
      p99.push_back(r.durable_p99_us);
    }
    res[name] = Run{median(ops), median(fs), median(p50), median(p99)};
  }
  double limit = median(limits);
  for (const auto& e : c.engines) {
    const Run& r = res[e];
    auto ratio = [&](const char* other) {
      return res.count(other) ? fmt::format("{:.2f}×", r.ops_per_sec / res[other].ops_per_sec)
                              : std::string("–");
    };
    std::string lim = limit > 0 ? fmt::format("{:.2f}", r.ops_per_sec / limit) : "–";
    std::string p50 = durable_pct ? fmt::format("{:.0f}", r.durable_p50_us) : "–";
    std::string p99 = durable_pct ? fmt::format("{:.0f}", r.durable_p99_us) : "–";
    std::printf("| %s | %.0f | %s | %s | %s | %.4f | %s | %s |\n", e.c_str(), r.ops_per_sec,
                ratio("sqlite").c_str(), ratio("rocksdb").c_str(), lim.c_str(), r.fsyncs_per_op,
                p50.c_str(), p99.c_str());
  }
  if (limit > 0) {
    std::printf(
        "\nLimit: %.0f ops/s (median fdatasync rate probed before each repetition x "
        "%.0f ops per fsync).\n",
        limit, limit_per_op);
  }
  for (const auto& [e, st] : stats) {
    if (!st.empty()) std::printf("\n%s, per run: %s\n", e.c_str(), st.c_str());
  }
  std::fflush(stdout);
}

bool drop_caches() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  if (!f) return false;
  f << "3\n";
  return bool(f);
}

void recovery(const Config& c) {
  std::printf("\n### Recovery at full capacity (%d keys): open + load every record%s\n\n", c.keys,
              c.cold ? ", page cache dropped before each open" : " (warm page cache)");
  std::printf("| engine | median ms | records |\n|---|---:|---:|\n");
  std::map<std::string, std::vector<double>> times;
  std::map<std::string, size_t> counts;
  for (int rep = 0; rep < c.reps; ++rep) {
    for (const auto& name : c.engines) {
      settle();
      if (c.cold && !drop_caches()) die("cannot write /proc/sys/vm/drop_caches (--cold)");
      auto e = make(name);
      auto t0 = Clock::now();
      check(e->open(c.dir + "/" + name), "open " + name);
      auto all = e->load_all();
      if (!all.ok()) die(all.error().to_string());
      times[name].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      counts[name] = *all;
      check(e->close(), "close");
    }
  }
  for (const auto& name : c.engines) {
    std::printf("| %s | %.1f | %zu |\n", name.c_str(), median(times[name]), counts[name]);
  }
  std::fflush(stdout);
}

// ---------------------------------------------------------------- memory

long status_kb(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
  }
  return -1;
}

// Runs in a fresh process: RSS of a store at full capacity.
int memory_child(const std::string& path, int updates) {
  long before = status_kb("VmRSS:");
  slotstore::Options o;
  o.create_if_missing = false;
  auto s = slotstore::SlotStore::open_existing(posix_fs(), path, o);
  if (!s.ok()) die(s.error().to_string());
  long opened = status_kb("VmRSS:");
  slotstore::Info i = (*s)->info();
  long hwm_before = status_kb("VmHWM:");
  // The keys the bench created; built one at a time so the child's own
  // allocations stay out of the figures.
  Random rng(7);
  std::string key;
  for (int n = 0; n < updates; ++n) {
    key = fmt::format("ra_uid_{:012d}", rng.uniform(i.slots_used));
    check((*s)->put(key, {slotstore::set(2, slotstore::Value::u64(n))}), "put");
  }
  check((*s)->sync(), "sync");
  long after = status_kb("VmRSS:");
  long hwm = status_kb("VmHWM:");
  slotstore::Info j = (*s)->info();
  std::printf("%u %u %u %llu %ld %ld %ld %ld %ld %llu\n", i.slots_used, i.record_size,
              i.strings_total, (unsigned long long)i.file_size, before, opened, after, hwm_before,
              hwm, (unsigned long long)(j.compactions));
  return 0;
}

void memory(const Config& c, const char* self) {
  std::string out_path = c.dir + "/memory.out";
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::execl(self, self, "--memory-child", (c.dir + "/slotstore/meta.slots").c_str(), "400000",
            nullptr);
    std::_Exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  std::ifstream f(out_path);
  unsigned slots = 0, record = 0, strings = 0;
  unsigned long long file = 0, compactions = 0;
  long before = 0, opened = 0, after = 0, hwm_before = 0, hwm = 0;
  if (!(f >> slots >> record >> strings >> file >> before >> opened >> after >> hwm_before >> hwm >>
        compactions)) {
    die("memory child failed");
  }
  // The budget: 2 x (slots x record size + string table), on-disk sizes.
  double table_kb = (double(slots) * record + double(strings) * (7 + 64)) / 1024.0;
  std::printf("\n### Memory of slotstore at full capacity (fresh process)\n\n");
  std::printf("| quantity | KiB |\n|---|---:|\n");
  std::printf("| slots × record size + string table (%u × %u B + %u × 71 B) | %.0f |\n", slots,
              record, strings, table_kb);
  std::printf("| budget: 2 × that | %.0f |\n", 2 * table_kb);
  std::printf("| RSS growth from open (recovery) | %ld |\n", opened - before);
  std::printf("| RSS growth after 400 000 updates, %llu compactions | %ld |\n", compactions,
              after - before);
  std::printf("| peak RSS growth (VmHWM) incl. compaction buffers | %ld |\n", hwm - before);
  std::printf("| process RSS before open (binary + libraries) | %ld |\n", before);
  std::printf("| file size | %.0f |\n", double(file) / 1024.0);
  std::fflush(stdout);
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata::bench;
  if (argc == 4 && std::string(argv[1]) == "--memory-child") {
    return memory_child(argv[2], std::atoi(argv[3]));
  }
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value for " + a);
      return argv[++i];
    };
    auto list = [&](std::string v) {
      std::vector<std::string> out;
      std::stringstream ss(v);
      std::string x;
      while (std::getline(ss, x, ',')) out.push_back(x);
      return out;
    };
    if (a == "--dir")
      c.dir = val();
    else if (a == "--keys")
      c.keys = std::stoi(val());
    else if (a == "--secs")
      c.secs = std::stod(val());
    else if (a == "--reps")
      c.reps = std::stoi(val());
    else if (a == "--engines")
      c.engines = list(val());
    else if (a == "--only")
      for (auto& o : list(val())) c.only.insert(o);
    else if (a == "--cold")
      c.cold = true;
    else
      die("unknown argument " + a);
  }
  check(strata::remove_all(strata::posix_fs(), c.dir), "clean " + c.dir);
  check(strata::create_dirs(strata::posix_fs(), c.dir), "mkdir " + c.dir);
  std::vector<std::string> keys;
  for (int i = 0; i < c.keys; ++i) keys.push_back(fmt::format("ra_uid_{:012d}", i));
  std::printf("## slotstore_bench: %d keys, %.1f s per run, median of %d runs\n", c.keys, c.secs,
              c.reps);

  FsyncProbe probe = probe_fsync(c.dir, c.secs);
  std::printf(
      "\nPhysical limit on this disk: %.0f fdatasync/s after a 64-byte pwrite (p50 %.0f "
      "µs) — one writer can make at most that many writes durable per second.\n",
      probe.per_sec, probe.p50_us);
  for (const auto& e : c.engines) {
    auto eng = make(e);
    check(strata::create_dirs(strata::posix_fs(), c.dir + "/" + e), "mkdir");
    auto t0 = Clock::now();
    check(eng->create(c.dir + "/" + e, keys), "create " + e);
    check(eng->close(), "close " + e);
    std::printf("- %s: created and populated in %.0f ms\n", e.c_str(),
                std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  // One writer making 5% of its ops durable is bound by 1/(0.05 x fsync time).
  if (c.want("mix")) {
    table(c, "Busy Raft node, one writer: 95% last_applied (no fsync), 5% term+vote (fsync)", keys,
          1, 5, 1 / 0.05);
  }
  if (c.want("busy")) {
    table(c, "Busy Raft node, 16 concurrent writers: 95% / 5% as above", keys, 16, 5, 0);
  }
  if (c.want("high")) {
    table(c, "High-frequency only, one writer: last_applied updates, no fsync", keys, 1, 0, 0);
  }
  if (c.want("writers")) {
    for (int w : {1, 4, 16, 64}) {
      table(c, fmt::format("Durable updates only, {} concurrent writer{}", w, w > 1 ? "s" : ""),
            keys, w, 100, w == 1 ? 1 : 0);
    }
  }
  if (c.want("recovery")) recovery(c);
  if (c.want("memory")) memory(c, argv[0]);
  return 0;
}
