// Failover time of `strata serve` in a cluster: three nodes over a 3-member
// etcd cluster and one directory object store (tests/support/serve_cluster.h,
// confirm = remote), one publisher at a steady rate (tests/cluster/
// cluster_workload.h: on a closed connection it asks Metadata for the leader
// every 100 ms and republishes what is unconfirmed). The owner is killed
// (-9); measured: kill -> the first confirm from another node (and kill ->
// Metadata naming a new leader). Medians over --runs runs per lease TTL.
//   failover_bench [--runs N] [--ttl-ms 2000,5000] [--rate MSG_PER_S]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "cluster/cluster_workload.h"
#include "support/temp_dir.h"

using namespace strata::test;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

struct RunTimes {
  double leader_ms = -1;   // kill -> Metadata (of another node) names a new leader
  double confirm_ms = -1;  // kill -> the first confirm from another node
};

// One run; confirm_ms -1 on failure (printed).
RunTimes run_once(int64_t ttl_ms, int rate) {
  RunTimes out;
  TempDir dir;
  std::string err;
  auto cluster = ServeCluster::start(dir.path(), {.lease_ttl_ms = ttl_ms}, &err);
  if (!cluster) {
    std::cerr << "cluster: " << err << "\n";
    return out;
  }
  const std::string stream = "failover";
  if (auto st = cluster->create_stream(0, stream); !st.ok()) {
    std::cerr << st.error().to_string() << "\n";
    return out;
  }
  const int owner = cluster->await_agreed_leader(stream, 30s);
  if (owner < 0) {
    std::cerr << "no owner\n";
    return out;
  }
  WorkloadOptions o{.stream = stream, .publishers = 1, .consume = false};
  o.pace = std::chrono::milliseconds(std::max(1, o.frame * 1000 / rate));
  Workload w(*cluster, o);
  w.start();
  // Steady state: a few hundred confirms on the owner.
  if (!w.await_confirms(300, 30s)) {
    std::cerr << "no steady publishing\n";
    return out;
  }
  const auto killed = Clock::now();
  cluster->kill(owner);
  // Polled every 50 ms (serve_cluster.h, eventually).
  if (cluster->await_leader((owner + 1) % cluster->size(), owner, stream, 120s) >= 0) {
    out.leader_ms = std::chrono::duration<double, std::milli>(Clock::now() - killed).count();
  }
  Clock::time_point first{};
  bool ok = eventually(120s, [&] {
    for (const auto& c : w.confirm_times()) {
      if (c.at > killed && c.node != owner) {
        first = c.at;
        return true;
      }
    }
    return false;
  });
  w.stop();
  if (!ok) {
    std::cerr << "no confirm from another node within 120 s\n";
    return out;
  }
  out.confirm_ms = std::chrono::duration<double, std::milli>(first - killed).count();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  int rate = 500;
  std::vector<int64_t> ttls = {2000, 5000};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) {
      runs = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--rate")) {
      rate = std::max(1, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "--ttl-ms")) {
      ttls.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string t; std::getline(ss, t, ',');) ttls.push_back(std::atoll(t.c_str()));
    } else {
      std::cerr << "usage: failover_bench [--runs N] [--ttl-ms 2000,5000] [--rate MSG_PER_S]\n";
      return 2;
    }
  }
  std::printf("%-8s %5s %18s %20s %10s %10s\n", "ttl_ms", "runs", "new_leader_med_ms",
              "first_confirm_med_ms", "min_ms", "max_ms");
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  int failed = 0;
  for (int64_t ttl : ttls) {
    std::vector<double> leader, confirm;
    for (int r = 0; r < runs; ++r) {
      RunTimes t = run_once(ttl, rate);
      std::fprintf(stderr, "ttl %lld run %d: new leader %.0f ms, first confirm %.0f ms\n",
                   (long long)ttl, r, t.leader_ms, t.confirm_ms);
      if (t.confirm_ms < 0 || t.leader_ms < 0) {
        failed += 1;
        continue;
      }
      leader.push_back(t.leader_ms);
      confirm.push_back(t.confirm_ms);
    }
    if (confirm.empty()) continue;
    std::printf("%-8lld %5zu %18.0f %20.0f %10.0f %10.0f\n", (long long)ttl, confirm.size(),
                median(leader), median(confirm), *std::min_element(confirm.begin(), confirm.end()),
                *std::max_element(confirm.begin(), confirm.end()));
  }
  return failed == 0 ? 0 : 1;
}
