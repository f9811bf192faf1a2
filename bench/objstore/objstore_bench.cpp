// Whole-process benchmark of strata's S3 client against peers, all talking
// to the same s3rver (started here, data on /dev/shm when available) in the
// same run, reported as medians and ratios (docs/BENCHMARKS.md, "Object
// store benchmark"):
//  1. PUT and GET of a large object (default 64 MiB): strata's client in
//     process, the `strata objstore` CLI process, the curl CLI (libcurl
//     SigV4, one stream), and awscli v2. Throughput and CPU time per GiB of
//     the client (not the server). strata's GET three ways: get() into a
//     fresh buffer (CRC verified), get_to() into a sink that keeps nothing
//     (CRC verified; like curl -o /dev/null), and read_range() of the whole
//     object into one reused buffer (how the tier's reader reads).
//  2. Small-object latency (4 KiB PUT/GET on a kept-alive connection):
//     strata's client vs curl (many URLs in one curl process, per-transfer
//     time from -w).
//  3. 1/2/4/8 parallel ranged GETs covering one large object: strata
//     threads (read_range into a buffer per thread) vs as many curl
//     processes, with client and server CPU, to show which side saturates.
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
#include <random>
#include <span>
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

struct Options {
  int size_mib = 64, reps = 7, small = 400;
  bool with_aws = true;
  std::string only;  // run one section: large, small or parallel
};

bool parse_options(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--size-mib" && i + 1 < argc) {
      o->size_mib = std::atoi(argv[++i]);
    } else if (a == "--reps" && i + 1 < argc) {
      o->reps = std::atoi(argv[++i]);
    } else if (a == "--small" && i + 1 < argc) {
      o->small = std::atoi(argv[++i]);
    } else if (a == "--no-aws") {
      o->with_aws = false;
    } else if (a == "--only" && i + 1 < argc) {
      o->only = argv[++i];
    } else {
      std::cerr << "usage: objstore_bench [--size-mib N] [--reps N] [--small N] [--no-aws] "
                   "[--only large|small|parallel]\n";
      return false;
    }
  }
  return true;
}

// One run: the server, strata's client, the large object (in memory and in a
// file for the CLI clients), and how to call each peer. Each section returns
// false when a client fails.
class Bench {
 public:
  Bench(const Options& o, std::string base, std::string dir, std::unique_ptr<test::S3rver> server,
        std::unique_ptr<S3ObjectStore> store)
      : o_(o),
        base_(std::move(base)),
        dir_(std::move(dir)),
        server_(std::move(server)),
        store_(std::move(store)),
        ep_(server_->endpoint()),
        size_(size_t(o.size_mib) << 20),
        gib_(double(size_) / double(1 << 30)) {
    data_.resize(size_);
    Random rng(42);
    for (size_t i = 0; i < size_; i += 8) {
      uint64_t v = rng.next();
      std::memcpy(&data_[i], &v, std::min<size_t>(8, size_ - i));
    }
    std::ofstream(file_, std::ios::binary).write(data_.data(), std::streamsize(size_));
  }

  bool run() {
    std::cout << fmt::format(
        "# objstore bench: {} MiB objects, {} reps, s3rver data on {}, {} CPUs\n", o_.size_mib,
        o_.reps, base_, std::thread::hardware_concurrency());
    // The parallel section reads the object the large section writes.
    if (!o_.only.empty() && o_.only != "large") {
      if (!store_->put("large/lib", data_).ok()) return false;
    }
    if ((o_.only.empty() || o_.only == "large") && !large()) return false;
    if ((o_.only.empty() || o_.only == "small") && !small()) return false;
    if ((o_.only.empty() || o_.only == "parallel") && !parallel()) return false;
    server_->stop();
    return true;
  }

 private:
  std::string url(const std::string& key) const { return ep_ + "/" + kBucket + "/" + key; }
  std::vector<std::string> curl(std::vector<std::string> extra) const {
    // libcurl's own SigV4 signing, one stream.
    std::vector<std::string> a = {"curl", "-sS", "--fail", "--aws-sigv4", "aws:amz:us-east-1:s3"};
    a.insert(a.end(), {"-u", "S3RVER:S3RVER", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::vector<std::string> strata_cli(std::vector<std::string> extra) const {
    std::vector<std::string> a = {STRATA_BIN,   "objstore", "--backend", "s3",
                                  "--endpoint", ep_,        "--bucket",  kBucket};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  Row row(const std::string& name, const Sample& s) const {
    return Row{name, double(o_.size_mib) / median(s.wall), median(s.cpu) / gib_};
  }

  // ---- 1. large PUT / GET: one step per transfer ----
  bool lib_put_step() {
    double s0 = cpu_of_pid(server_->pid()), c0 = cpu_self();
    auto t = Clock::now();
    auto p = store_->put("large/lib", data_);
    if (!p.ok()) return fail(p);
    lib_put_.wall.push_back(seconds_since(t));
    lib_put_.cpu.push_back(cpu_self() - c0);
    server_cpu_put_ += cpu_of_pid(server_->pid()) - s0;
    server_wall_put_ += lib_put_.wall.back();
    return true;
  }
  bool lib_get_step() {
    double c0 = cpu_self();
    auto t = Clock::now();
    auto g = store_->get("large/lib");
    if (!g.ok() || g->size() != size_) return fail(g);
    lib_get_.wall.push_back(seconds_since(t));
    lib_get_.cpu.push_back(cpu_self() - c0);
    return true;
  }
  // get_to into a sink that keeps nothing: the client's own cost of a GET
  // with its CRC verified, the peer of curl -o /dev/null.
  bool sink_step() {
    GetSink discard;
    discard.on_piece = [](BytesView) { return Status::OK(); };
    double c0 = cpu_self();
    auto t = Clock::now();
    auto g = store_->get_to("large/lib", discard, GetLimits{});
    if (!g.ok() || *g != size_) return fail(g);
    lib_sink_.wall.push_back(seconds_since(t));
    lib_sink_.cpu.push_back(cpu_self() - c0);
    return true;
  }
  // read_range of the whole object into one buffer reused across reps
  // (already faulted in): libcurl's buffer -> the caller's, nothing else.
  bool range_step() {
    if (range_buf_.size() != size_) range_buf_.assign(size_, 0);
    double c0 = cpu_self();
    auto t = Clock::now();
    auto n = store_->read_range("large/lib", 0, std::span<uint8_t>(range_buf_));
    if (!n.ok() || *n != size_) return fail(n);
    lib_range_.wall.push_back(seconds_since(t));
    lib_range_.cpu.push_back(cpu_self() - c0);
    return true;
  }
  template <typename R>
  static bool fail(const R& r) {
    std::cerr << "bench: " << (r.ok() ? std::string("short read") : r.error().to_string()) << "\n";
    return false;
  }
  // One child process; its wall and CPU go to `s`.
  bool child_step(const std::vector<std::string>& cmd, const std::vector<std::string>& env,
                  Sample* s) {
    auto c = run_children({cmd}, env, dir_)[0];
    s->wall.push_back(c.wall), s->cpu.push_back(c.cpu);
    return c.status == 0;
  }
  std::string aws_object() const { return std::string("s3://") + kBucket + "/large/aws"; }

  bool large() {
    // Every client's GET reads an object that exists from the start.
    for (const char* k : {"large/lib", "large/curl", "large/cli", "large/aws"}) {
      if (auto p = store_->put(k, data_); !p.ok()) return fail(p);
    }
    // One step per transfer, in a fresh seeded shuffle each rep, so that no
    // transfer always follows the same one (s3rver collects garbage after
    // big transfers, PUTs and awscli's in particular) and drift in machine
    // load hits all alike.
    std::vector<std::function<bool()>> steps = {
        [this] { return lib_put_step(); },
        [this] { return lib_get_step(); },
        [this] { return sink_step(); },
        [this] { return range_step(); },
        [this] {
          return child_step(curl({"-T", file_, "-H", "Content-Type: application/octet-stream",
                                  url("large/curl")}),
                            {}, &curl_put_);
        },
        [this] {
          return child_step(curl({"-o", "/dev/null", url("large/curl")}), {}, &curl_get_);
        },
        [this] {
          // Into memory like strata's client (a tmpfs file) rather than discarded.
          bool ok = child_step(curl({"-o", dir_ + "/curl-get.bin", url("large/curl")}), {},
                               &curl_get_mem_);
          std::filesystem::remove(dir_ + "/curl-get.bin");
          return ok;
        },
        [this] {
          return child_step(strata_cli({"put", "large/cli", file_}), kCliEnv, &cli_put_);
        },
        [this] {
          return child_step(strata_cli({"get", "large/cli", "-o", "/dev/null"}), kCliEnv,
                            &cli_get_);
        }};
    if (o_.with_aws) {
      steps.push_back([this] {
        return child_step(
            {"aws", "--endpoint-url", ep_, "s3", "cp", file_, aws_object(), "--only-show-errors"},
            test::S3rver::aws_env(), &aws_put_);
      });
      steps.push_back([this] {
        return child_step({"aws", "--endpoint-url", ep_, "s3", "cp", aws_object(), "/dev/null",
                           "--only-show-errors"},
                          test::S3rver::aws_env(), &aws_get_);
      });
    }
    std::vector<size_t> order(steps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (int r = 0; r < o_.reps; ++r) {
      std::mt19937 shuffle_rng(uint32_t(r) + 1);
      std::shuffle(order.begin(), order.end(), shuffle_rng);
      for (size_t i : order) {
        if (!steps[i]()) return false;
      }
    }
    std::vector<Row> put_rows = {row("strata client (in process)", lib_put_),
                                 row("strata objstore put (process)", cli_put_),
                                 row("curl", curl_put_)};
    std::vector<Row> get_rows = {
        row("strata get() into a fresh buffer (in process)", lib_get_),
        row("strata get_to() into a discarding sink (in process)", lib_sink_),
        row("strata read_range() into a reused buffer (in process)", lib_range_),
        row("strata objstore get (process)", cli_get_),
        row("curl", curl_get_),
        row("curl -o file on " + base_, curl_get_mem_)};
    if (o_.with_aws) {
      put_rows.push_back(row("awscli v2 (multipart, 8 MiB x 10 threads)", aws_put_));
      get_rows.push_back(row("awscli v2 (ranged, 8 MiB x 10 threads)", aws_get_));
    }
    print_rows(fmt::format("PUT {} MiB", o_.size_mib), put_rows, "curl");
    print_rows(fmt::format("GET {} MiB", o_.size_mib), get_rows, "curl");
    std::cout << fmt::format(
        "\ns3rver CPU during strata's PUTs: {:.0f}% of one core (the server's share of the work)\n",
        100 * server_cpu_put_ / server_wall_put_);
    return true;
  }

  // ---- 2. small objects ----
  // Rounds alternate strata and curl so that drift in machine load hits both
  // alike. curl runs each round's transfers in one process (one kept-alive
  // connection) and reports each transfer's time with -w.
  bool small() {
    const std::string small_data(4096, 's');
    std::ofstream(dir_ + "/small.bin", std::ios::binary) << small_data;
    std::vector<double> lput, lget, cput, cget;
    const int rounds = 4, per = std::max(1, o_.small / rounds);
    for (int round = 0; round < rounds; ++round) {
      for (int i = 0; i < per; ++i) {
        auto t = Clock::now();
        if (!store_->put(fmt::format("small/lib-{}-{}", round, i), small_data).ok()) return false;
        lput.push_back(seconds_since(t) * 1e3);
      }
      std::vector<std::string> put_args = {"-w", "%{time_total}\\n", "-H",
                                           "Content-Type: application/octet-stream"};
      for (int i = 0; i < per; ++i) {
        put_args.insert(put_args.end(),
                        {"-T", dir_ + "/small.bin", url(fmt::format("small/curl-{}-{}", round, i)),
                         "-o", "/dev/null"});
      }
      append_times(run_children({curl(put_args)}, {}, dir_)[0].out, &cput);
      for (int i = 0; i < per; ++i) {
        auto t = Clock::now();
        if (!store_->get(fmt::format("small/lib-{}-{}", round, i)).ok()) return false;
        lget.push_back(seconds_since(t) * 1e3);
      }
      std::vector<std::string> get_args = {"-w", "%{time_total}\\n"};
      for (int i = 0; i < per; ++i) {
        get_args.insert(get_args.end(),
                        {url(fmt::format("small/curl-{}-{}", round, i)), "-o", "/dev/null"});
      }
      append_times(run_children({curl(get_args)}, {}, dir_)[0].out, &cget);
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
    return true;
  }
  // curl's -w output: one transfer time in seconds per line, as ms.
  static void append_times(const std::string& out, std::vector<double>* ms) {
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);)
      if (!l.empty()) ms->push_back(std::stod(l) * 1e3);
  }

  // ---- 3. parallel ranged GETs of one object ----
  bool parallel() {
    std::cout << fmt::format(
        "\n### Parallel ranged GETs covering one {} MiB object\n\n"
        "| streams | strata MiB/s | strata client CPU % | server CPU % | curl MiB/s | curl client "
        "CPU % | server CPU % |\n|---:|---:|---:|---:|---:|---:|---:|\n",
        o_.size_mib);
    for (int k : {1, 2, 4, 8}) {
      Usage strata, curl_usage;
      for (int r = 0; r < o_.reps; ++r) {
        if (!strata_ranged_gets(k, &strata)) return false;
        curl_ranged_gets(k, &curl_usage);
      }
      std::cout << fmt::format("| {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} |\n", k,
                               double(o_.size_mib) / median(strata.wall), 100 * median(strata.cpu),
                               100 * median(strata.server),
                               double(o_.size_mib) / median(curl_usage.wall),
                               100 * median(curl_usage.cpu), 100 * median(curl_usage.server));
    }
    return true;
  }
  // Per rep: wall seconds, client and server CPU as a share of one core.
  struct Usage {
    std::vector<double> wall, cpu, server;
  };
  bool strata_ranged_gets(int k, Usage* u) {
    const uint64_t part = size_ / uint64_t(k);
    double s0 = cpu_of_pid(server_->pid()), c0 = cpu_self();
    auto t = Clock::now();
    std::vector<std::thread> th;
    std::atomic<int> bad{0};
    if (range_buf_.size() != size_) range_buf_.assign(size_, 0);
    for (int i = 0; i < k; ++i) {
      th.emplace_back([&, i] {
        // Each thread reads its part into its own slice of one buffer.
        std::span<uint8_t> dst(range_buf_.data() + uint64_t(i) * part, part);
        auto n = store_->read_range("large/lib", uint64_t(i) * part, dst);
        if (!n.ok() || *n != part) ++bad;
      });
    }
    for (auto& x : th) x.join();
    double w = seconds_since(t);
    if (bad) return false;
    u->wall.push_back(w);
    u->cpu.push_back((cpu_self() - c0) / w);
    u->server.push_back((cpu_of_pid(server_->pid()) - s0) / w);
    return true;
  }
  void curl_ranged_gets(int k, Usage* u) {
    const uint64_t part = size_ / uint64_t(k);
    std::vector<std::vector<std::string>> cmds;
    for (int i = 0; i < k; ++i) {
      uint64_t a = uint64_t(i) * part;
      cmds.push_back(
          curl({"-r", fmt::format("{}-{}", a, a + part - 1), "-o", "/dev/null", url("large/lib")}));
    }
    double s0 = cpu_of_pid(server_->pid());
    auto t = Clock::now();
    auto res = run_children(cmds, {}, dir_);
    double w = seconds_since(t);
    double cpu = 0;
    for (auto& x : res) cpu += x.cpu;
    u->wall.push_back(w);
    u->cpu.push_back(cpu / w);
    u->server.push_back((cpu_of_pid(server_->pid()) - s0) / w);
  }

  inline static const std::vector<std::string> kCliEnv = {"AWS_ACCESS_KEY_ID=S3RVER",
                                                          "AWS_SECRET_ACCESS_KEY=S3RVER"};
  const Options o_;
  const std::string base_, dir_;
  std::unique_ptr<test::S3rver> server_;
  std::unique_ptr<S3ObjectStore> store_;
  const std::string ep_;
  const size_t size_;
  const double gib_;
  std::string data_;
  const std::string file_ = dir_ + "/object.bin";
  // Large section samples, per client and direction.
  std::vector<uint8_t> range_buf_;  // read_range's reused destination
  Sample lib_put_, lib_get_, lib_sink_, lib_range_, cli_put_, cli_get_, curl_put_, curl_get_,
      curl_get_mem_, aws_put_, aws_get_;
  double server_cpu_put_ = 0, server_wall_put_ = 0;
};

int run(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, &o)) return 2;
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
  S3Config cfg;
  cfg.endpoint = server->endpoint();
  cfg.bucket = kBucket;
  cfg.access_key_id = "S3RVER";
  cfg.secret_access_key = "S3RVER";
  cfg.max_connections = 8;
  auto store = S3ObjectStore::open(cfg);
  if (!store.ok()) return 1;
  Bench bench(o, base, dir, std::move(server), std::move(store).value());
  if (!bench.run()) return 1;
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace strata::objstore

int main(int argc, char** argv) {
  return strata::objstore::run(argc, argv);
}
