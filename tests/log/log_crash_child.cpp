// Crash victim for kill_test.cpp: opens (creating) a stream directory and
// appends from several threads until killed, printing one line per
// acknowledged batch: "ack <first_offset> <thread> <seq> <records>".
// Record i of batch (thread, seq) holds kill_record(thread, seq, i) (see
// kill_record.h), so the parent can check every byte it finds.
//
//   log_crash_child <dir> <always|interval|never> <seed> <threads>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "log/kill_record.h"
#include "log/stream_log.h"

using namespace strata;
using namespace strata::log;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <dir> <policy> <seed> <threads>\n", argv[0]);
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  auto policy = parse_fsync_policy(argv[2]);
  if (!policy.ok()) {
    std::fprintf(stderr, "%s\n", policy.error().to_string().c_str());
    return 2;
  }
  uint64_t seed = std::stoull(argv[3]);
  int threads = std::stoi(argv[4]);
  LogOptions o;
  o.create_if_missing = true;
  o.fsync = *policy;
  o.fsync_interval_ms = 3;
  o.max_segment_bytes = 16 << 10;  // rolls often, so kills land in rolls too
  auto log = StreamLog::open(argv[1], o);
  if (!log.ok()) {
    std::fprintf(stderr, "open: %s\n", log.error().to_string().c_str());
    return 1;
  }
  std::printf("ready %llu\n", (unsigned long long)(*log)->committed_next());
  std::fflush(stdout);
  std::mutex out_mu;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (uint64_t seq = 0;; ++seq) {
        int n = int((seed + seq * 7 + uint64_t(t) * 3) % 5) + 1;
        std::vector<std::string> recs;
        for (int i = 0; i < n; ++i) recs.push_back(kill_record(seed, t, seq, i));
        std::vector<BytesView> views(recs.begin(), recs.end());
        auto r = (*log)->append(views);
        if (!r.ok()) {
          std::fprintf(stderr, "append: %s\n", r.error().to_string().c_str());
          std::_Exit(1);
        }
        std::lock_guard<std::mutex> g(out_mu);
        // One write(2) per line, so a kill never leaves half a line that
        // looks whole.
        std::printf("ack %llu %d %llu %d\n", (unsigned long long)r->first_offset, t,
                    (unsigned long long)seq, n);
        std::fflush(stdout);
      }
    });
  }
  for (auto& th : ts) th.join();
  return 0;
}
