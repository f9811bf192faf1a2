// Failover time of `strata serve` in a cluster: three nodes over a 3-member
// etcd cluster and one directory object store (tests/support/serve_cluster.h),
// one publisher at a steady rate (tests/cluster/cluster_workload.h: on a
// closed connection it asks Metadata for the leader every 100 ms and
// republishes what is unconfirmed). The owner is killed (-9) — and with
// --restart started again at once on its disk. Measured: kill -> the first
// confirm after it (from another node, or with --restart from any), kill ->
// Metadata naming a leader again, and — the history read back from the
// stream — confirmed messages lost. Medians over --runs runs per confirm
// mode and lease TTL.
//   failover_bench [--runs N] [--ttl-ms 2000,5000] [--rate MSG_PER_S]
//                  [--confirm remote,local] [--restart]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>
#include <sstream>

#include "cluster/cluster_workload.h"
#include "cluster/history_check.h"
#include "support/temp_dir.h"

using namespace strata::test;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

struct RunTimes {
  double leader_ms =
      -1;  // kill -> Metadata names a leader again (another node's, or the restarted)
  double confirm_ms = -1;  // kill -> the first confirm after it
  int64_t lost = -1;       // confirmed messages the final read did not find
};

// Confirmed messages missing from the final subscription.
int64_t confirmed_lost(const History& h) {
  std::set<MessageId> confirmed, read;
  const int final_sub = h.final_subscriptions.empty() ? -1 : h.final_subscriptions.back();
  for (const auto& e : h.events) {
    if (e.kind == HistoryEvent::Kind::confirm) confirmed.insert(e.message);
    if (e.kind == HistoryEvent::Kind::deliver && e.subscription == final_sub)
      read.insert(e.message);
  }
  int64_t lost = 0;
  for (const auto& m : confirmed) lost += read.count(m) ? 0 : 1;
  return lost;
}

// One run; confirm_ms -1 on failure (printed).
RunTimes run_once(int64_t ttl_ms, int rate, const std::string& confirm, bool restart) {
  RunTimes out;
  TempDir dir;
  std::string err;
  ServeClusterOptions co{.lease_ttl_ms = ttl_ms};
  co.patch = {{"tiering", {{"confirm", confirm}}}};
  auto cluster = ServeCluster::start(dir.path(), co, &err);
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
  if (restart && !cluster->restart(owner, &err)) {
    std::cerr << "restart: " << err << "\n";
    return out;
  }
  // Confirms the dead process sent may still be read after the kill: with
  // --restart only those after the new process listens count.
  const auto counted_from = Clock::now();
  // Polled every 50 ms (serve_cluster.h, eventually). After a restart the
  // leader may be the same node again, on its new port.
  const int ask = (owner + 1) % cluster->size();
  const bool led =
      restart ? eventually(120s,
                           [&] {
                             return cluster->leader_port(ask, stream) == cluster->port(owner) ||
                                    cluster->await_leader(ask, owner, stream, 1ms) >= 0;
                           })
              : cluster->await_leader(ask, owner, stream, 120s) >= 0;
  if (led) out.leader_ms = std::chrono::duration<double, std::milli>(Clock::now() - killed).count();
  Clock::time_point first{};
  bool ok = eventually(120s, [&] {
    for (const auto& c : w.confirm_times()) {
      if (restart ? c.at > counted_from : c.at > killed && c.node != owner) {
        first = c.at;
        return true;
      }
    }
    return false;
  });
  if (!ok) {
    std::cerr << "no confirm after the kill within 120 s\n";
    return out;
  }
  out.confirm_ms = std::chrono::duration<double, std::milli>(first - killed).count();
  w.drain(30s);
  w.stop();
  if (w.final_read(ask, 60s)) out.lost = confirmed_lost(w.history());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  int rate = 500;
  std::vector<int64_t> ttls = {2000, 5000};
  std::vector<std::string> modes = {"remote"};
  bool restart = false;
  for (int i = 1; i < argc; i += 2) {
    if (!std::strcmp(argv[i], "--restart")) {
      restart = true;
      i -= 1;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "missing the value of " << argv[i] << "\n";
      return 2;
    }
    if (!std::strcmp(argv[i], "--confirm")) {
      modes.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string m; std::getline(ss, m, ',');) modes.push_back(m);
    } else if (!std::strcmp(argv[i], "--runs")) {
      runs = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--rate")) {
      rate = std::max(1, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "--ttl-ms")) {
      ttls.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string t; std::getline(ss, t, ',');) ttls.push_back(std::atoll(t.c_str()));
    } else {
      std::cerr << "usage: failover_bench [--runs N] [--ttl-ms 2000,5000] [--rate MSG_PER_S] "
                   "[--confirm remote,local] [--restart]\n";
      return 2;
    }
  }
  std::printf("%-7s %-8s %5s %18s %20s %10s %10s %12s\n", "confirm", "ttl_ms", "runs",
              "new_leader_med_ms", "first_confirm_med_ms", "min_ms", "max_ms", "lost_total");
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  int failed = 0;
  for (const std::string& mode : modes) {
    for (int64_t ttl : ttls) {
      std::vector<double> leader, confirm;
      int64_t lost = 0;
      for (int r = 0; r < runs; ++r) {
        RunTimes t = run_once(ttl, rate, mode, restart);
        std::fprintf(stderr,
                     "%s ttl %lld run %d: new leader %.0f ms, first confirm %.0f ms, %lld lost\n",
                     mode.c_str(), (long long)ttl, r, t.leader_ms, t.confirm_ms, (long long)t.lost);
        if (t.confirm_ms < 0 || t.leader_ms < 0 || t.lost < 0) {
          failed += 1;
          continue;
        }
        leader.push_back(t.leader_ms);
        confirm.push_back(t.confirm_ms);
        lost += t.lost;
      }
      if (confirm.empty()) continue;
      std::printf("%-7s %-8lld %5zu %18.0f %20.0f %10.0f %10.0f %12lld\n", mode.c_str(),
                  (long long)ttl, confirm.size(), median(leader), median(confirm),
                  *std::min_element(confirm.begin(), confirm.end()),
                  *std::max_element(confirm.begin(), confirm.end()), (long long)lost);
    }
  }
  return failed == 0 ? 0 : 1;
}
