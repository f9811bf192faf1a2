// FileWindow: the windowed reader the log, slotstore's WAL and the DETS
// reader share. Contents, limits, short files, read counts and memory.
#include "common/file_window.h"

#include <gtest/gtest.h>

#include "common/fault_fs.h"
#include "common/random.h"
#include "support/temp_dir.h"

namespace strata {
namespace {

// A file of `size` bytes whose byte i is a function of i.
struct WindowFixture : ::testing::Test {
  FaultFileSystem fs;
  std::unique_ptr<File> file;
  Bytes data;
  int reads = 0;  // read_at calls on /f

  void make(size_t size) {
    data.resize(size);
    for (size_t i = 0; i < size; ++i) data[i] = char(i * 131 + (i >> 8));
    ASSERT_TRUE(write_file_atomic(fs, "/f", data).ok());
    auto f = fs.open("/f", OpenOptions::read_only());
    ASSERT_TRUE(f.ok());
    file = std::move(f).value();
    fs.fail_when([this](const FaultOp& op) {
      if (op.kind == FaultOp::Kind::read && op.path == "/f") ++reads;
      return false;
    });
  }
  BytesView expect(uint64_t pos, size_t n) const { return BytesView(data).substr(pos, n); }
};

TEST_F(WindowFixture, SequentialWalkReadsEachByteOnceInBlocks) {
  make(100'000);
  FileWindow w(*file, data.size(), 4096);
  Random rng(test::test_seed(7));
  uint64_t pos = 0;
  while (pos < data.size()) {
    size_t n = size_t(std::min<uint64_t>(rng.range(1, 300), data.size() - pos));
    auto v = w.read(pos, n);
    ASSERT_TRUE(v.ok()) << v.error().to_string();
    ASSERT_EQ(*v, expect(pos, n)) << "at " << pos;
    pos += n;
  }
  // Ranges cut by a block boundary keep their first part: nothing is read twice.
  EXPECT_EQ(w.bytes_read(), data.size());
  EXPECT_LE(reads, int(data.size() / 4096) + 2);
}

TEST_F(WindowFixture, LargeRangeGrowsTheWindowAndBackwardReadsRefetch) {
  make(50'000);
  FileWindow w(*file, data.size(), 1024);
  auto big = w.read(100, 20'000);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(*big, expect(100, 20'000));
  EXPECT_GE(w.capacity(), 20'000u);
  auto back = w.read(50, 10);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, expect(50, 10));
  auto inside = w.read(60, 500);  // held by the window just read
  const int before = reads;
  ASSERT_TRUE(inside.ok());
  EXPECT_EQ(*inside, expect(60, 500));
  EXPECT_EQ(reads, before);
}

TEST_F(WindowFixture, NeverReadsAtOrPastTheLimit) {
  make(10'000);
  FileWindow w(*file, 6000, 4096);
  ASSERT_TRUE(w.read(5000, 500).ok());
  EXPECT_LE(w.bytes_read(), 1000u);  // read ahead stopped at the limit
  auto across = w.read(5900, 200);
  ASSERT_FALSE(across.ok());
  EXPECT_EQ(across.code(), Errc::out_of_range);
  EXPECT_NE(across.error().message.find("/f"), std::string::npos);
  // The limit grows (a segment's committed end moved): the rest is readable.
  w.set_limit(10'000);
  auto now = w.read(5900, 200);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(*now, expect(5900, 200));
}

TEST_F(WindowFixture, ReadUpToStopsAtTheLimitAndAtEndOfFile) {
  make(3000);
  FileWindow w(*file, 2000, 512);
  auto v = w.read_up_to(1900, 500);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, expect(1900, 100));
  EXPECT_TRUE(w.read_up_to(2000, 10)->empty());
  EXPECT_TRUE(w.read_up_to(5000, 10)->empty());
  // A limit beyond the file (a WAL half larger than what was written).
  FileWindow beyond(*file, 1 << 20, 512);
  auto tail = beyond.read_up_to(2990, 100);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, expect(2990, 10));
}

TEST_F(WindowFixture, ExactReadOfAFileShorterThanTheLimitIsCorrupt) {
  make(3000);
  FileWindow w(*file, 1 << 20, 512);
  auto v = w.read(2900, 200);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.code(), Errc::corrupt);
  EXPECT_NE(v.error().message.find("short read at position 2900"), std::string::npos);
  // The window is still usable after the failure.
  auto ok = w.read(2900, 100);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, expect(2900, 100));
}

TEST_F(WindowFixture, ReadErrorsPassThroughAndReleaseFreesMemory) {
  make(5000);
  FileWindow w(*file, data.size(), 1024);
  ASSERT_TRUE(w.read(0, 10).ok());
  EXPECT_GT(w.capacity(), 0u);
  w.release();
  EXPECT_EQ(w.capacity(), 0u);
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::read; });
  EXPECT_EQ(w.read(0, 10).code(), Errc::io);
  fs.fail_when(nullptr);
  auto v = w.read(4000, 10);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, expect(4000, 10));
}

TEST_F(WindowFixture, ResetSwitchesFilesAndForgetsTheWindow) {
  make(2000);
  ASSERT_TRUE(write_file_atomic(fs, "/g", Bytes(2000, 'g')).ok());
  auto g = *fs.open("/g", OpenOptions::read_only());
  FileWindow w(1024);
  EXPECT_EQ(w.read(0, 1).code(), Errc::internal);  // no file yet
  w.reset(*file, data.size());
  ASSERT_EQ(*w.read(0, 10), expect(0, 10));
  w.reset(*g, 2000);
  EXPECT_EQ(*w.read(0, 10), Bytes(10, 'g'));
}

TEST(FileWindowPosix, ReadsARealFile) {
  test::TempDir dir;
  Bytes data(300'000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i % 251);
  ASSERT_TRUE(write_file_atomic(posix_fs(), dir.sub("f"), data).ok());
  auto f = *posix_fs().open(dir.sub("f"), OpenOptions::read_only());
  FileWindow w(*f, data.size(), 64 * 1024);
  for (uint64_t pos = 0; pos < data.size(); pos += 1000) {
    size_t n = size_t(std::min<uint64_t>(1000, data.size() - pos));
    auto v = w.read(pos, n);
    ASSERT_TRUE(v.ok());
    ASSERT_EQ(*v, BytesView(data).substr(pos, n));
  }
  EXPECT_EQ(w.bytes_read(), data.size());
}

}  // namespace
}  // namespace strata
