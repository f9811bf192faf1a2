// The demo's records and progress reporting (cmd_log_demo.h).
#include "cli/cmd_log_demo.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli/command.h"
#include "common/clock.h"
#include "log/reader.h"

namespace strata::cli {

using json = nlohmann::json;

Progress::Progress(bool enabled) : enabled_(enabled), tty_(::isatty(2) == 1) {}

void Progress::update(const std::string& msg) {
  if (!enabled_) return;
  int64_t now = system_clock().monotonic_ns();
  int64_t gap = tty_ ? 100'000'000 : 2'000'000'000;
  if (last_ns_ != 0 && now - last_ns_ < gap) return;
  if (last_ns_ == 0 && !tty_) {
    // Non-interactive: skip the first report, so short operations print nothing.
    last_ns_ = now;
    return;
  }
  last_ns_ = now;
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", msg.c_str());
    dirty_ = true;
  } else {
    std::fprintf(stderr, "%s\n", msg.c_str());
  }
  std::fflush(stderr);
}

void Progress::done() {
  if (dirty_) std::fprintf(stderr, "\r\033[K");
  dirty_ = false;
  last_ns_ = 0;
}

namespace {

// The 16-byte pattern that fills the record of (producer, seq) after its
// header; cheap to generate and to compare, and different for every record.
void demo_pattern(int producer, uint64_t seq, char out[16]) {
  uint64_t x = uint64_t(producer) * 0x9E3779B97F4A7C15ull + seq * 0xBF58476D1CE4E5B9ull + 1;
  for (int i = 0; i < 16; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = char('a' + (x % 26));
  }
}

}  // namespace

std::string demo_record(int producer, uint64_t seq, uint64_t size) {
  std::string s = fmt::format("p{}:{}:", producer, seq);
  char pat[16];
  demo_pattern(producer, seq, pat);
  size_t head = s.size();
  s.resize(std::max<size_t>(size, 1));
  for (size_t i = head; i < s.size(); ++i) s[i] = pat[(i - head) & 15];
  return s;
}

bool check_demo_record(std::string_view r, uint64_t size, int* producer, uint64_t* seq) {
  unsigned long long q;
  int p;
  char head[48];
  size_t hn = std::min(r.size(), sizeof head - 1);
  std::memcpy(head, r.data(), hn);
  head[hn] = 0;
  int used = 0;
  if (std::sscanf(head, "p%d:%llu:%n", &p, &q, &used) != 2 || used == 0) return false;
  if (r.size() != std::max<size_t>(size, 1)) return false;
  if (std::string_view(head, size_t(used)) != fmt::format("p{}:{}:", p, q)) return false;
  char pat[16];
  demo_pattern(p, q, pat);
  for (size_t i = size_t(used); i < r.size(); ++i) {
    if (r[i] != pat[(i - size_t(used)) & 15]) return false;
  }
  *producer = p;
  *seq = q;
  return true;
}

}  // namespace strata::cli
