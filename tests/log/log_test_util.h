// Helpers shared by the log tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/fault_fs.h"
#include "log/reader.h"
#include "log/stream_log.h"

namespace strata::log::test {

// A record whose bytes are a pure function of (offset, salt): crash tests
// check that whatever is found at an offset is what was written there.
inline std::string payload_for(uint64_t offset, uint64_t salt = 0, size_t min_len = 1,
                               size_t max_len = 64) {
  uint64_t x = offset * 0x9E3779B97F4A7C15ull ^ (salt + 0x632BE59BD9B4E019ull);
  x ^= x >> 29;
  size_t len = min_len + size_t(x % (max_len - min_len + 1));
  std::string s = "o" + std::to_string(offset) + ":";
  while (s.size() < len) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s.push_back(char('a' + (x >> 59)));
  }
  s.resize(std::max(len, s.size()));
  return s;
}

struct ReadBack {
  std::vector<std::pair<uint64_t, std::string>> records;
  Status status;  // first error, if reading stopped on one
};

// Reads every committed record from `spec` to the committed end.
inline ReadBack read_all(StreamLog& log, OffsetSpec spec = OffsetSpec::first(),
                         bool verify_crc = true) {
  ReadBack out;
  ReaderOptions ro;
  ro.verify_crc = verify_crc;
  auto r = log.open_reader(spec, ro);
  if (!r.ok()) {
    out.status = r.error();
    return out;
  }
  std::vector<Record> recs;
  while (true) {
    recs.clear();
    auto n = (*r)->next_records(&recs);
    if (!n.ok()) {
      out.status = n.error();
      return out;
    }
    if (*n == 0) return out;
    for (const auto& rec : recs) out.records.emplace_back(rec.offset, std::string(rec.value));
  }
}

inline std::vector<BytesView> views(const std::vector<std::string>& v) {
  return std::vector<BytesView>(v.begin(), v.end());
}

}  // namespace strata::log::test
