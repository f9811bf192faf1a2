// Helpers shared by the log tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/fault_fs.h"
#include "log/index_file.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "support/temp_dir.h"

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

// A stream directory on the real file system, written by a StreamLog and
// then damaged by hand (recovery and audit tests).
struct StreamDirTest : ::testing::Test {
  strata::test::TempDir tmp;
  std::string dir = tmp.sub("s");
  FileSystem& fs = posix_fs();

  LogOptions opts() {
    LogOptions o;
    o.create_if_missing = true;
    o.fsync = FsyncPolicy::never;
    o.max_segment_chunks = 4;
    return o;
  }
  // `chunks` chunks of `per_chunk` records each (payload_for their offsets),
  // 4 chunks a segment: with 3, segments [0,12) [12,24) ...
  void build(int chunks, int per_chunk = 3) {
    auto log = *StreamLog::open(dir, opts());
    for (int c = 0; c < chunks; ++c) {
      uint64_t f = log->committed_next();
      std::vector<std::string> recs;
      for (int i = 0; i < per_chunk; ++i) recs.push_back(payload_for(f + i));
      ASSERT_TRUE(log->append(views(recs)).ok());
    }
    ASSERT_TRUE(log->close().ok());
  }
  std::string seg(uint64_t first) { return path_join(dir, segment_file_name(first)); }
  std::string idx(uint64_t first) { return path_join(dir, index_file_name(first)); }
  uint64_t size_of(const std::string& p) { return fs.stat(p)->size; }
  void truncate(const std::string& p, uint64_t size) {
    auto f = *fs.open(p, OpenOptions::read_write());
    ASSERT_TRUE(f->truncate(size).ok());
  }
  void write_at(const std::string& p, uint64_t pos, BytesView b) {
    auto f = *fs.open(p, OpenOptions::create_or_open());
    ASSERT_TRUE(f->write_at(pos, b).ok());
  }
  void flip(const std::string& p, uint64_t pos) {
    auto f = *fs.open(p, OpenOptions::read_write());
    char c;
    ASSERT_TRUE(read_exact(*f, pos, &c, 1).ok());
    c ^= 0x20;
    ASSERT_TRUE(f->write_at(pos, BytesView(&c, 1)).ok());
  }
  std::vector<IndexRecord> index_of(uint64_t first) {
    auto f = *fs.open(idx(first), OpenOptions::read_only());
    return load_index(*f, idx(first), first)->records;
  }
  // Appends to segment `first`'s index a valid record for a chunk after the
  // segment's last; returns the records from before.
  std::vector<IndexRecord> add_index_record_past_the_end(uint64_t first) {
    auto recs = index_of(first);
    IndexRecord extra = recs.back();
    extra.first_offset = extra.next_offset();
    extra.position = extra.end_position();
    uint8_t b[kIndexRecordSize];
    encode_index_record(extra, b);
    write_at(idx(first), size_of(idx(first)), BytesView(reinterpret_cast<char*>(b), sizeof b));
    return recs;
  }
};

}  // namespace strata::log::test
