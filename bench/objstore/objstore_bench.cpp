// Whole-process benchmark of strata's S3 client against peers, all talking
// to the same s3rver (started here, data on /dev/shm when available) in the
// same run, reported as medians and ratios (docs/bench-objstore.md):
//  1. PUT and GET of a large object (default 64 MiB): strata's client in
//     process, the `strata objstore` CLI process, the curl CLI (libcurl
//     SigV4, one stream), and awscli v2. Throughput and CPU time per GiB of
//     the client (not the server).
//  2. Small-object latency (4 KiB PUT/GET on a kept-alive connection):
//     strata's client vs curl (many URLs in one curl process, per-transfer
//     time from -w).
//  3. 1/2/4/8 parallel ranged GETs covering one large object: strata
//     threads vs as many curl processes, with client and server CPU, to
//     show which side saturates.
//
// Usage: objstore_bench [--size-mib 64] [--reps 7] [--small 400] [--no-aws]
//                       [--only large|small|parallel]
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/random.h"
#include "objstore/s3_store.h"
#include "support/s3rver.h"

extern char** environ;

namespace strata::objstore {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kBucket = "bench";

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

double cpu_self() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// CPU seconds (user+system) a process has used, from /proc.
double cpu_of_pid(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  unsigned long long ut = 0, st = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) ut = std::stoull(field);
    if (i == 15) st = std::stoull(field);
  }
  return double(ut + st) / double(sysconf(_SC_CLK_TCK));
}

struct ChildRun {
  int status = -1;
  double wall = 0, cpu = 0;
  std::string out;
};

// Runs argv to completion with stdout to a file; CPU from wait4's rusage.
std::vector<ChildRun> run_children(const std::vector<std::vector<std::string>>& cmds,
                                   const std::vector<std::string>& env_add,
                                   const std::string& tmp) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (const auto& e : env_add) env.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<pid_t> pids;
  std::vector<std::string> outs;
  auto t0 = Clock::now();
  for (size_t i = 0; i < cmds.size(); ++i) {
    std::vector<std::string> a = cmds[i];
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::string out = fmt::format("{}/child-{}.out", tmp, i);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (out + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    pid_t pid = -1;
    if (posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    pids.push_back(pid);
    outs.push_back(out);
  }
  std::vector<ChildRun> res(cmds.size());
  for (size_t i = 0; i < pids.size(); ++i) {
    if (pids[i] < 0) continue;
    int st = 0;
    rusage ru{};
    wait4(pids[i], &st, 0, &ru);
    res[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    res[i].cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    res[i].wall = seconds_since(t0);
    std::ifstream in(outs[i]);
    res[i].out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (res[i].status != 0) {
      std::ifstream err(outs[i] + ".err");
      std::string e((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
      std::cerr << "bench: " << cmds[i][0] << " failed (" << res[i].status << "): " << e << "\n";
    }
  }
  return res;
}

struct Sample {
  std::vector<double> wall, cpu;
};

struct Row {
  std::string client;
  double mib_s = 0, cpu_per_gib = 0;
};

void print_rows(const std::string& title, const std::vector<Row>& rows, const std::string& peer) {
  double peer_rate = 0, peer_cpu = 0;
  for (const auto& r : rows)
    if (r.client == peer) peer_rate = r.mib_s, peer_cpu = r.cpu_per_gib;
  std::cout << "\n### " << title << "\n\n";
  std::cout << "| client | MiB/s (median) | vs " << peer << " | client CPU s/GiB | vs " << peer
            << " |\n|---|---:|---:|---:|---:|\n";
  for (const auto& r : rows) {
    std::cout << fmt::format("| {} | {:.0f} | {:.2f} | {} | {} |\n", r.client, r.mib_s,
                             peer_rate > 0 ? r.mib_s / peer_rate : 0,
                             r.cpu_per_gib > 0 ? fmt::format("{:.2f}", r.cpu_per_gib) : "n/a",
                             r.cpu_per_gib > 0 && peer_cpu > 0
                                 ? fmt::format("{:.2f}", r.cpu_per_gib / peer_cpu)
                                 : "n/a");
  }
}

int run(int argc, char** argv) {
  int size_mib = 64, reps = 7, small = 400;
  bool with_aws = true;
  std::string only;  // run one section: large, small or parallel
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--size-mib" && i + 1 < argc) {
      size_mib = std::atoi(argv[++i]);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--small" && i + 1 < argc) {
      small = std::atoi(argv[++i]);
    } else if (a == "--no-aws") {
      with_aws = false;
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::cerr << "usage: objstore_bench [--size-mib N] [--reps N] [--small N] [--no-aws] "
                   "[--only large|small|parallel]\n";
      return 2;
    }
  }
  const std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  char tmpl[256];
  std::snprintf(tmpl, sizeof tmpl, "%s/strata-objstore-bench-XXXXXX", base.c_str());
  if (!mkdtemp(tmpl)) return 1;
  const std::string dir = tmpl;
  std::string err;
  auto server = test::S3rver::start({dir, {kBucket}}, &err);
  if (!server) {
    std::cerr << "bench: " << err << "\n";
    return 1;
  }
  const std::string ep = server->endpoint();
  S3Config cfg;
  cfg.endpoint = ep;
  cfg.bucket = kBucket;
  cfg.access_key_id = "S3RVER";
  cfg.secret_access_key = "S3RVER";
  cfg.max_connections = 8;
  auto store_r = S3ObjectStore::open(cfg);
  if (!store_r.ok()) return 1;
  auto& store = **store_r;

  const size_t size = size_t(size_mib) << 20;
  const double gib = double(size) / double(1 << 30);
  std::string data(size, '\0');
  Random rng(42);
  for (size_t i = 0; i < size; i += 8) {
    uint64_t v = rng.next();
    std::memcpy(&data[i], &v, std::min<size_t>(8, size - i));
  }
  const std::string file = dir + "/object.bin";
  std::ofstream(file, std::ios::binary).write(data.data(), std::streamsize(size));
  const std::string strata_bin = STRATA_BIN;
  const std::vector<std::string> aws_env = test::S3rver::aws_env();
  const std::vector<std::string> curl_sig = {
      "--aws-sigv4", "aws:amz:us-east-1:s3",
      "-u",          "S3RVER:S3RVER",
      "-H",          "x-amz-content-sha256: UNSIGNED-PAYLOAD"};
  auto url = [&](const std::string& key) { return ep + "/" + kBucket + "/" + key; };
  auto curl = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"curl", "-sS", "--fail"};
    a.insert(a.end(), curl_sig.begin(), curl_sig.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  auto strata_cli = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {strata_bin,   "objstore", "--backend", "s3",
                                  "--endpoint", ep,         "--bucket",  kBucket};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::vector<std::string> cli_env = {"AWS_ACCESS_KEY_ID=S3RVER",
                                            "AWS_SECRET_ACCESS_KEY=S3RVER"};

  std::cout << fmt::format(
      "# objstore bench: {} MiB objects, {} reps, s3rver data on {}, {} CPUs\n", size_mib, reps,
      base, std::thread::hardware_concurrency());

  // The parallel section reads the object the large section writes.
  if (!only.empty() && only != "large") {
    if (!store.put("large/lib", data).ok()) return 1;
  }
  // ---- 1. large PUT / GET ----
  if (only.empty() || only == "large") {
    Sample lib_put, lib_get, cli_put, cli_get, curl_put, curl_get, curl_get_mem, aws_put, aws_get;
    double server_cpu_put = 0, server_wall_put = 0;
    // One step per client; each rep runs them all, starting one further
    // along, so no client always follows the same one (s3rver collects
    // garbage after big transfers, awscli's in particular) and drift in
    // machine load hits all alike.
    std::vector<std::function<bool()>> steps;
    steps.push_back([&] {
      double s0 = cpu_of_pid(server->pid()), c0 = cpu_self();
      auto t = Clock::now();
      auto p = store.put("large/lib", data);
      if (!p.ok()) {
        std::cerr << p.error().to_string() << "\n";
        return false;
      }
      lib_put.wall.push_back(seconds_since(t));
      lib_put.cpu.push_back(cpu_self() - c0);
      server_cpu_put += cpu_of_pid(server->pid()) - s0;
      server_wall_put += lib_put.wall.back();
      c0 = cpu_self();
      t = Clock::now();
      auto g = store.get("large/lib");
      if (!g.ok() || g->size() != size) return false;
      lib_get.wall.push_back(seconds_since(t));
      lib_get.cpu.push_back(cpu_self() - c0);
      return true;
    });
    steps.push_back([&] {
      auto c = run_children(
          {curl({"-T", file, "-H", "Content-Type: application/octet-stream", url("large/curl")})},
          {}, dir)[0];
      curl_put.wall.push_back(c.wall), curl_put.cpu.push_back(c.cpu);
      c = run_children({curl({"-o", "/dev/null", url("large/curl")})}, {}, dir)[0];
      curl_get.wall.push_back(c.wall), curl_get.cpu.push_back(c.cpu);
      // Into memory like strata's client (a tmpfs file) rather than discarded.
      c = run_children({curl({"-o", dir + "/curl-get.bin", url("large/curl")})}, {}, dir)[0];
      curl_get_mem.wall.push_back(c.wall), curl_get_mem.cpu.push_back(c.cpu);
      std::filesystem::remove(dir + "/curl-get.bin");
      return c.status == 0;
    });
    steps.push_back([&] {
      auto c = run_children({strata_cli({"put", "large/cli", file})}, cli_env, dir)[0];
      cli_put.wall.push_back(c.wall), cli_put.cpu.push_back(c.cpu);
      c = run_children({strata_cli({"get", "large/cli", "-o", "/dev/null"})}, cli_env, dir)[0];
      cli_get.wall.push_back(c.wall), cli_get.cpu.push_back(c.cpu);
      return c.status == 0;
    });
    if (with_aws) {
      steps.push_back([&] {
        auto c =
            run_children({{"aws", "--endpoint-url", ep, "s3", "cp", file,
                           std::string("s3://") + kBucket + "/large/aws", "--only-show-errors"}},
                         aws_env, dir)[0];
        aws_put.wall.push_back(c.wall), aws_put.cpu.push_back(c.cpu);
        c = run_children(
            {{"aws", "--endpoint-url", ep, "s3", "cp",
              std::string("s3://") + kBucket + "/large/aws", "/dev/null", "--only-show-errors"}},
            aws_env, dir)[0];
        aws_get.wall.push_back(c.wall), aws_get.cpu.push_back(c.cpu);
        return c.status == 0;
      });
    }
    for (int r = 0; r < reps; ++r) {
      for (size_t i = 0; i < steps.size(); ++i) {
        if (!steps[(size_t(r) + i) % steps.size()]()) return 1;
      }
    }
    auto row = [&](const std::string& name, const Sample& s) {
      return Row{name, double(size_mib) / median(s.wall), median(s.cpu) / gib};
    };
    std::vector<Row> put_rows = {row("strata client (in process)", lib_put),
                                 row("strata objstore put (process)", cli_put),
                                 row("curl", curl_put)};
    std::vector<Row> get_rows = {
        row("strata client (in process)", lib_get), row("strata objstore get (process)", cli_get),
        row("curl", curl_get), row("curl -o file on " + base, curl_get_mem)};
    if (with_aws) {
      put_rows.push_back(row("awscli v2 (multipart, 8 MiB x 10 threads)", aws_put));
      get_rows.push_back(row("awscli v2 (ranged, 8 MiB x 10 threads)", aws_get));
    }
    print_rows(fmt::format("PUT {} MiB", size_mib), put_rows, "curl");
    print_rows(fmt::format("GET {} MiB", size_mib), get_rows, "curl");
    std::cout << fmt::format(
        "\ns3rver CPU during strata's PUTs: {:.0f}% of one core (the server's share of the work)\n",
        100 * server_cpu_put / server_wall_put);

  }  // large

  // ---- 2. small objects ----
  if (only.empty() || only == "small") {
    const std::string small_data(4096, 's');
    std::ofstream(dir + "/small.bin", std::ios::binary) << small_data;
    std::vector<double> lput, lget, cput, cget;
    auto parse_times = [](const std::string& out) {
      std::vector<double> v;
      std::istringstream in(out);
      for (std::string l; std::getline(in, l);)
        if (!l.empty()) v.push_back(std::stod(l) * 1e3);
      return v;
    };
    // Rounds alternate strata and curl so that drift in machine load hits
    // both alike. curl runs each round's transfers in one process (one
    // kept-alive connection) and reports each transfer's time with -w.
    const int rounds = 4, per = std::max(1, small / rounds);
    for (int round = 0; round < rounds; ++round) {
      for (int i = 0; i < per; ++i) {
        auto t = Clock::now();
        if (!store.put(fmt::format("small/lib-{}-{}", round, i), small_data).ok()) return 1;
        lput.push_back(seconds_since(t) * 1e3);
      }
      std::vector<std::string> put_args = {"-w", "%{time_total}\\n", "-H",
                                           "Content-Type: application/octet-stream"};
      for (int i = 0; i < per; ++i) {
        put_args.insert(put_args.end(),
                        {"-T", dir + "/small.bin", url(fmt::format("small/curl-{}-{}", round, i)),
                         "-o", "/dev/null"});
      }
      for (double v : parse_times(run_children({curl(put_args)}, {}, dir)[0].out)) {
        cput.push_back(v);
      }
      for (int i = 0; i < per; ++i) {
        auto t = Clock::now();
        if (!store.get(fmt::format("small/lib-{}-{}", round, i)).ok()) return 1;
        lget.push_back(seconds_since(t) * 1e3);
      }
      std::vector<std::string> get_args = {"-w", "%{time_total}\\n"};
      for (int i = 0; i < per; ++i) {
        get_args.insert(get_args.end(),
                        {url(fmt::format("small/curl-{}-{}", round, i)), "-o", "/dev/null"});
      }
      for (double v : parse_times(run_children({curl(get_args)}, {}, dir)[0].out)) {
        cget.push_back(v);
      }
    }
    std::cout << fmt::format(
        "\n### 4 KiB objects, {} each in {} alternating rounds, one kept-alive connection\n\n",
        lput.size(), rounds);
    std::cout
        << "| op | strata p50 ms | curl p50 ms | strata/curl | strata p99 ms | curl p99 ms |\n"
           "|---|---:|---:|---:|---:|---:|\n";
    std::cout << fmt::format("| PUT | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", median(lput),
                             median(cput), median(lput) / median(cput), percentile(lput, 0.99),
                             percentile(cput, 0.99));
    std::cout << fmt::format("| GET | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", median(lget),
                             median(cget), median(lget) / median(cget), percentile(lget, 0.99),
                             percentile(cget, 0.99));
  }

  // ---- 3. parallel ranged GETs of one object ----
  if (only.empty() || only == "parallel") {
    std::cout << fmt::format(
        "\n### Parallel ranged GETs covering one {} MiB object\n\n"
        "| streams | strata MiB/s | strata client CPU % | server CPU % | curl MiB/s | curl client "
        "CPU % | server CPU % |\n|---:|---:|---:|---:|---:|---:|---:|\n",
        size_mib);
    for (int k : {1, 2, 4, 8}) {
      std::vector<double> sw, sc, ss, cw, cc, cs;
      const uint64_t part = size / uint64_t(k);
      for (int r = 0; r < reps; ++r) {
        double s0 = cpu_of_pid(server->pid()), c0 = cpu_self();
        auto t = Clock::now();
        std::vector<std::thread> th;
        std::atomic<int> bad{0};
        for (int i = 0; i < k; ++i) {
          th.emplace_back([&, i] {
            auto g = store.get_range("large/lib", uint64_t(i) * part, part);
            if (!g.ok() || g->size() != part) ++bad;
          });
        }
        for (auto& x : th) x.join();
        double w = seconds_since(t);
        if (bad) return 1;
        sw.push_back(w);
        sc.push_back((cpu_self() - c0) / w);
        ss.push_back((cpu_of_pid(server->pid()) - s0) / w);

        std::vector<std::vector<std::string>> cmds;
        for (int i = 0; i < k; ++i) {
          uint64_t a = uint64_t(i) * part;
          cmds.push_back(curl(
              {"-r", fmt::format("{}-{}", a, a + part - 1), "-o", "/dev/null", url("large/lib")}));
        }
        s0 = cpu_of_pid(server->pid());
        t = Clock::now();
        auto res = run_children(cmds, {}, dir);
        w = seconds_since(t);
        double cpu = 0;
        for (auto& x : res) cpu += x.cpu;
        cw.push_back(w);
        cc.push_back(cpu / w);
        cs.push_back((cpu_of_pid(server->pid()) - s0) / w);
      }
      std::cout << fmt::format("| {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} |\n", k,
                               double(size_mib) / median(sw), 100 * median(sc), 100 * median(ss),
                               double(size_mib) / median(cw), 100 * median(cc), 100 * median(cs));
    }
  }  // parallel
  server->stop();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace strata::objstore

int main(int argc, char** argv) {
  return strata::objstore::run(argc, argv);
}
