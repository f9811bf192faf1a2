// MappedRange: a read-only map of a file range — its bytes, its errors, and
// drop_before, which takes pages out of the process's resident set without
// changing what the view reads.
#include "common/mapped_range.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "support/temp_dir.h"

namespace strata {
namespace {

std::string make_file(const std::string& path, size_t size) {
  std::string data(size, '\0');
  for (size_t i = 0; i < size; ++i) data[i] = char(i * 131 + (i >> 12));
  std::ofstream(path, std::ios::binary).write(data.data(), std::streamsize(data.size()));
  return data;
}

// The resident kB of the mapping that holds `addr`, from /proc/self/smaps.
uint64_t resident_kib(const void* addr) {
  const auto a = uintptr_t(addr);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = lo <= a && a < hi;
      continue;
    }
    if (inside && line.rfind("Rss:", 0) == 0) return std::stoull(line.substr(4));
  }
  ADD_FAILURE() << "no mapping holds " << addr;
  return 0;
}

uint64_t touch(BytesView v) {
  uint64_t sum = 0;
  for (size_t i = 0; i < v.size(); i += 512) sum += uint8_t(v[i]);
  return sum;
}

TEST(MappedRange, ViewIsTheFileRangeAtAnUnalignedOffset) {
  test::TempDir dir;
  const std::string path = dir.sub("f");
  const std::string data = make_file(path, 100'000);
  auto m = MappedRange::map(path, 5'003, 60'000);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->view(), BytesView(data).substr(5'003, 60'000));
  auto empty = MappedRange::map(path, 7, 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->view().empty());
  empty->drop_before(10);  // nothing mapped: nothing to drop
}

TEST(MappedRange, ARangePastTheFileOrAMissingFileIsAnErrorNamingIt) {
  test::TempDir dir;
  const std::string path = dir.sub("f");
  make_file(path, 1'000);
  auto past = MappedRange::map(path, 500, 501);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.code(), Errc::corrupt);
  EXPECT_NE(past.error().message.find(path), std::string::npos) << past.error().message;
  auto missing = MappedRange::map(dir.sub("nope"), 0, 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.code(), Errc::not_found);
}

TEST(MappedRange, DropBeforeLeavesTheResidentSetButNotTheView) {
  test::TempDir dir;
  const std::string path = dir.sub("f");
  const size_t size = 8 << 20;
  const std::string data = make_file(path, size);
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  auto m = MappedRange::map(path, page + 100, size - page - 100);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const BytesView v = m->view();
  const uint64_t sum = touch(v);
  const uint64_t all = resident_kib(v.data());
  EXPECT_GE(all, (size >> 10) - 8);
  // The first 6 MiB of the range: its whole pages leave the resident set.
  m->drop_before(6 << 20);
  const uint64_t after = resident_kib(v.data());
  // (The kernel may unmap more than asked: 6.18 here drops the whole VMA
  // of a map that does not start at a file offset of 0. Harmless: the
  // pages come back on the next read.)
  EXPECT_LE(after, all - (6 << 10) + page / 1024) << "before " << all;
  // The bytes are still there (faulted back from the page cache).
  EXPECT_EQ(touch(v), sum);
  EXPECT_EQ(v, BytesView(data).substr(page + 100));
  EXPECT_GE(resident_kib(v.data()), all - 8);
  // Past the end is the whole range.
  m->drop_before(UINT64_MAX);
  EXPECT_LE(resident_kib(v.data()), page / 1024);
}

}  // namespace
}  // namespace strata
