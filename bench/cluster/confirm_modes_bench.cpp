// Confirm latency and throughput of `strata serve` in a cluster, by confirm
// mode, in one run: three nodes over a 3-member etcd cluster and one
// directory object store (tests/support/serve_cluster.h), a stream created
// with the mode under test (`x-strata-confirm`), and `strata perf` — one
// publisher at a fixed rate and one consumer, both on the stream's leader —
// for --time seconds. Printed: the medians over --runs runs of perf's
// confirm latency p50/p99, publish-to-deliver p50/p99 and confirmed msg/s.
// `replicated` waits for a majority of the three nodes: the leader's log
// and one of the other two nodes' copies (the cluster then keeps them,
// cluster.replica_copies); `replicated:N` creates the stream with
// initial-cluster-size N (5: a majority of 5 is 3, every node's copy);
// `remote` waits for a persisted manifest; `local` for the leader's own log.
// A mode ending in `+tls` (`replicated+tls`) runs the nodes' own links —
// owner links, replica feeds, copies — over TLS (cluster.peer_tls, with a
// CA and a certificate made by openssl for the run); perf itself still
// talks plain TCP to the leader, so the difference is the links' alone.
// Runs alternate the modes (run 1 of each, then run 2 of each ...).
// `rabbitmq` runs the same perf against Debian's RabbitMQ 3.10.8 (one node,
// bench/server/rabbitmq.sh; it confirms once its own log has the message,
// without an fsync: strata's `local` under `--fsync never` compares).
//   confirm_modes_bench [--runs N] [--rate MSG_PER_S (0: unlimited)] [--time S] [--size B]
//                       [--batch N]
//                       [--modes local,remote,replicated,replicated:5,replicated+tls,rabbitmq]
//                       [--fsync always|interval|never]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "support/process.h"
#include "support/serve_cluster.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

using namespace strata::test;
using namespace std::chrono_literals;

namespace {

struct Options {
  int runs = 3;
  int rate = 10000;
  double time_s = 10;
  int size = 100;
  int batch = 10;
  std::string fsync = "always";
  std::vector<std::string> modes = {"local", "remote", "replicated", "replicated:5"};
};

struct Sample {
  double confirm_p50_us = -1, confirm_p99_us = -1;
  double deliver_p50_us = -1, deliver_p99_us = -1;
  double confirmed_msg_s = -1;
  uint64_t publish_errors = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs `strata perf` on `port`'s stream `stream` (created with `args` if
// missing) for the options' rate and time; its JSON summary.
std::optional<Sample> perf(const Options& o, int port, const std::string& stream,
                           const strata::proto::Properties& args) {
  std::vector<std::string> argv = {STRATA_BIN,     "perf",
                                   "--host",       "127.0.0.1",
                                   "--port",       std::to_string(port),
                                   "--stream",     stream,
                                   "-x",           "1",
                                   "-y",           "1",
                                   "-r",           std::to_string(o.rate),
                                   "-z",           std::to_string(o.time_s),
                                   "-s",           std::to_string(o.size),
                                   "--batch-size", std::to_string(o.batch),
                                   "--json"};
  for (const auto& [k, v] : args) argv.push_back("--stream-arg=" + k + "=" + v);
  TempDir logs;
  auto p = Process::spawn(argv, logs.path());
  auto st = p.wait(std::chrono::seconds(int(o.time_s) + 120));
  const std::string out = p.stdout_text();
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (!st || *st != 0 || j.is_discarded()) {
    std::cerr << "perf failed (" << st.value_or(-1) << "): " << out << p.stderr_text() << "\n";
    return std::nullopt;
  }
  Sample s;
  s.confirm_p50_us = j["confirm_latency_us"]["p50"].get<double>();
  s.confirm_p99_us = j["confirm_latency_us"]["p99"].get<double>();
  s.deliver_p50_us = j["deliver_latency_us"]["p50"].get<double>();
  s.deliver_p99_us = j["deliver_latency_us"]["p99"].get<double>();
  s.confirmed_msg_s = j["rates"]["confirmed_msg_s"].get<double>();
  s.publish_errors = j["publish_errors"].get<uint64_t>();
  return s;
}

// One RabbitMQ node (bench/server/rabbitmq.sh), one perf run on it.
std::optional<Sample> run_rabbitmq(const Options& o) {
  TempDir dir;
  auto start = Process::spawn({"bash", RABBITMQ_SH, "start", dir.sub("rmq")}, dir.path());
  auto st = start.wait(180s);
  const int port = std::atoi(start.stdout_text().c_str());
  std::optional<Sample> s;
  if (!st || *st != 0 || port <= 0) {
    std::cerr << "rabbitmq did not start: " << start.stderr_text() << "\n";
  } else {
    s = perf(o, port, "bench-rabbitmq", {});
  }
  auto stop = Process::spawn({"bash", RABBITMQ_SH, "stop", dir.sub("rmq")}, dir.path());
  (void)stop.wait(120s);
  return s;
}

// One cluster, one stream of `mode`, one perf run on its leader.
std::optional<Sample> run_once(const Options& o, const std::string& mode) {
  if (mode == "rabbitmq") return run_rabbitmq(o);
  TempDir dir;
  std::string err;
  ServeClusterOptions co;
  co.lease_ttl_ms = 5000;
  // "replicated:N": replicated, created with initial-cluster-size N; a
  // "+tls" suffix: the nodes' links over TLS.
  const bool peer_tls = mode.size() > 4 && mode.ends_with("+tls");
  const std::string base = peer_tls ? mode.substr(0, mode.size() - 4) : mode;
  const size_t colon = base.find(':');
  const std::string confirm = base.substr(0, colon);
  strata::proto::Properties args;
  if (colon != std::string::npos) args.emplace_back("initial-cluster-size", base.substr(colon + 1));
  co.patch = {{"tiering", {{"confirm", confirm}}}, {"log", {{"fsync", o.fsync}}}};
  if (peer_tls) {
    TestCerts certs;
    std::filesystem::create_directories(dir.sub("certs"));
    if (!make_test_certs(dir.sub("certs"), "bench-client", &certs, &err)) {
      std::cerr << "certificates: " << err << "\n";
      return std::nullopt;
    }
    co.patch["tls"] = {{"listen", "127.0.0.1:0"},
                       {"cert_file", certs.server_cert},
                       {"key_file", certs.server_key},
                       {"ca_file", certs.ca}};
    co.patch["cluster"] = {{"peer_tls", true}};
  }
  auto cluster = ServeCluster::start(dir.path(), co, &err);
  if (!cluster) {
    std::cerr << "cluster: " << err << "\n";
    return std::nullopt;
  }
  const std::string stream =
      "bench-" + confirm + (args.empty() ? "" : "-" + base.substr(colon + 1));
  // Created here first, so that the leader is known before perf starts;
  // perf's own Create (with the same arguments) then finds it.
  {
    auto c = cluster->client(0);
    if (!c.ok()) {
      std::cerr << "client: " << c.error().to_string() << "\n";
      return std::nullopt;
    }
    auto sent = c->send(strata::proto::CreateStreamRequest{c->corr(), stream, args});
    auto r = sent.ok()
                 ? c->expect<strata::proto::CreateStreamResponse>(60s)
                 : decltype(c->expect<strata::proto::CreateStreamResponse>(60s))(sent.error());
    if (!r.ok() || r->code != strata::proto::ResponseCode::ok) {
      std::cerr << "create " << stream << " failed\n";
      return std::nullopt;
    }
  }
  const int leader = cluster->await_agreed_leader(stream, 30s);
  if (leader < 0) {
    std::cerr << "no leader\n";
    return std::nullopt;
  }
  // Let every node see the others (replicated waits for each copy).
  std::this_thread::sleep_for(1s);
  return perf(o, cluster->port(leader), stream, args);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) {
      std::cerr << "missing the value of " << argv[i] << "\n";
      return 2;
    }
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--runs") {
      o.runs = std::max(1, std::atoi(v.c_str()));
    } else if (k == "--rate") {
      o.rate = std::max(0, std::atoi(v.c_str()));  // 0: as fast as confirms come
    } else if (k == "--time") {
      o.time_s = std::max(1.0, std::atof(v.c_str()));
    } else if (k == "--size") {
      o.size = std::max(16, std::atoi(v.c_str()));
    } else if (k == "--batch") {
      o.batch = std::max(1, std::atoi(v.c_str()));
    } else if (k == "--fsync") {
      o.fsync = v;
    } else if (k == "--modes") {
      o.modes.clear();
      std::stringstream ss(v);
      for (std::string m; std::getline(ss, m, ',');) o.modes.push_back(m);
    } else {
      std::cerr << "usage: confirm_modes_bench [--runs N] [--rate MSG_PER_S] [--time S] "
                   "[--size B] [--batch N] "
                   "[--modes local,remote,replicated,replicated:5,replicated+tls,rabbitmq] "
                   "[--fsync POLICY]\n";
      return 2;
    }
  }
  std::printf("%s msg/s of %d B in frames of %d, %.0f s per run, fsync %s, median of %d runs\n",
              o.rate ? std::to_string(o.rate).c_str() : "unlimited", o.size, o.batch, o.time_s,
              o.fsync.c_str(), o.runs);
  std::printf(
      "| confirm | confirm p50 | confirm p99 | deliver p50 | deliver p99 | confirmed msg/s "
      "| publish errors |\n|---|---:|---:|---:|---:|---:|---:|\n");
  int failures = 0;
  struct Samples {
    std::vector<double> c50, c99, d50, d99, rate;
    uint64_t errors = 0;
  };
  std::map<std::string, Samples> by_mode;
  for (int r = 0; r < o.runs; ++r) {
    for (const std::string& mode : o.modes) {
      auto s = run_once(o, mode);
      if (!s) {
        failures += 1;
        continue;
      }
      Samples& m = by_mode[mode];
      m.c50.push_back(s->confirm_p50_us);
      m.c99.push_back(s->confirm_p99_us);
      m.d50.push_back(s->deliver_p50_us);
      m.d99.push_back(s->deliver_p99_us);
      m.rate.push_back(s->confirmed_msg_s);
      m.errors += s->publish_errors;
      std::fprintf(stderr, "run %d, %s: confirm p50 %.2f ms, %.0f msg/s\n", r + 1, mode.c_str(),
                   s->confirm_p50_us / 1000, s->confirmed_msg_s);
    }
  }
  for (const std::string& mode : o.modes) {
    const Samples& m = by_mode[mode];
    std::printf("| `%s` | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.0f | %llu |\n", mode.c_str(),
                median(m.c50) / 1000, median(m.c99) / 1000, median(m.d50) / 1000,
                median(m.d99) / 1000, median(m.rate), static_cast<unsigned long long>(m.errors));
  }
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}
