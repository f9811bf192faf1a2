#include "common/fault_fs.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

Bytes contents(FileSystem& fs, const std::string& p) {
  auto r = read_file(fs, p);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? *r : Bytes();
}

std::unique_ptr<File> must_open(FileSystem& fs, const std::string& p, OpenOptions o) {
  auto f = fs.open(p, o);
  EXPECT_TRUE(f.ok()) << f.error().to_string();
  return std::move(f).value();
}

}  // namespace

TEST(FaultFs, CrashDropsUnsyncedWrites) {
  FaultFileSystem fs;
  ASSERT_TRUE(create_dirs(fs, "/d").ok());
  auto f = must_open(fs, "/d/a", OpenOptions::create_new());
  ASSERT_TRUE(fs.sync_dir("/d").ok());
  ASSERT_TRUE(f->append("durable").ok());
  ASSERT_TRUE(f->sync().ok());
  ASSERT_TRUE(f->append("-volatile").ok());
  EXPECT_EQ(contents(fs, "/d/a"), "durable-volatile");
  fs.crash();
  EXPECT_EQ(contents(fs, "/d/a"), "durable");
  // Handles from before the crash are dead.
  EXPECT_EQ(f->append("x").code(), Errc::simulated_crash);
}

TEST(FaultFs, UnsyncedDirectoryEntryDisappears) {
  FaultFileSystem fs;
  ASSERT_TRUE(create_dirs(fs, "/d").ok());
  {
    auto f = must_open(fs, "/d/new", OpenOptions::create_new());
    ASSERT_TRUE(f->append("data").ok());
    ASSERT_TRUE(f->sync().ok());  // contents durable, entry not
  }
  fs.crash();
  EXPECT_FALSE(exists(fs, "/d/new"));
}

TEST(FaultFs, RenameDurableOnlyAfterDirSync) {
  FaultFileSystem fs;
  ASSERT_TRUE(write_file_atomic(fs, "/f", "v1").ok());
  {
    auto f = must_open(fs, "/f.tmp", OpenOptions::create_truncate());
    ASSERT_TRUE(f->append("v2").ok());
    ASSERT_TRUE(f->sync().ok());
  }
  ASSERT_TRUE(fs.rename("/f.tmp", "/f").ok());
  fs.crash();
  EXPECT_EQ(contents(fs, "/f"), "v1");  // rename not made durable
  ASSERT_TRUE(write_file_atomic(fs, "/f", "v3").ok());
  fs.crash();
  EXPECT_EQ(contents(fs, "/f"), "v3");
}

TEST(FaultFs, TearKeepsPrefixOfFirstDroppedWrite) {
  // Over many seeds, a torn crash leaves the synced bytes plus a prefix of
  // the unsynced appends; never bytes that were not written.
  bool saw_partial = false;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    FaultFileSystem fs;
    ASSERT_TRUE(write_file_atomic(fs, "/f", "base").ok());
    auto f = must_open(fs, "/f", OpenOptions::read_write());
    ASSERT_TRUE(f->append("AAAA").ok());
    ASSERT_TRUE(f->append("BBBB").ok());
    fs.crash({seed, /*keep_random_prefix=*/true, /*tear=*/true, false});
    Bytes got = contents(fs, "/f");
    std::string full = "baseAAAABBBB";
    ASSERT_LE(got.size(), full.size());
    EXPECT_EQ(got, full.substr(0, got.size())) << "seed " << seed;
    EXPECT_GE(got.size(), 4u);
    if (got.size() != 4 && got.size() != 8 && got.size() != 12) saw_partial = true;
  }
  EXPECT_TRUE(saw_partial);
}

TEST(FaultFs, CrashAfterBudgetStopsEverything) {
  FaultFileSystem fs;
  auto f = must_open(fs, "/f", OpenOptions::create_new());
  uint64_t base = fs.mutation_count();
  fs.crash_after(2);
  EXPECT_TRUE(f->append("1").ok());
  EXPECT_TRUE(f->append("2").ok());
  EXPECT_EQ(f->append("3").code(), Errc::simulated_crash);
  EXPECT_TRUE(fs.is_down());
  EXPECT_EQ(f->sync().code(), Errc::simulated_crash);
  EXPECT_EQ(fs.stat("/f").code(), Errc::simulated_crash);
  EXPECT_EQ(fs.mutation_count(), base + 2);
  fs.crash();
  EXPECT_FALSE(fs.is_down());
  EXPECT_FALSE(exists(fs, "/f"));  // the create was never made durable
}

TEST(FaultFs, FailedSyncLeavesDataUndurable) {
  FaultFileSystem fs;
  ASSERT_TRUE(write_file_atomic(fs, "/f", "old").ok());
  auto f = must_open(fs, "/f", OpenOptions::read_write());
  ASSERT_TRUE(f->write_at(0, "new").ok());
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::sync; });
  Status s = f->sync();
  EXPECT_EQ(s.code(), Errc::io);
  EXPECT_NE(s.error().message.find("/f"), std::string::npos);
  fs.fail_when(nullptr);
  fs.crash();
  EXPECT_EQ(contents(fs, "/f"), "old");
}

TEST(FaultFs, DirectoryRenameMovesSubtree) {
  FaultFileSystem fs;
  ASSERT_TRUE(create_dirs(fs, "/a/b").ok());
  ASSERT_TRUE(write_file_atomic(fs, "/a/b/x", "1").ok());
  ASSERT_TRUE(fs.rename("/a/b", "/a/c").ok());
  ASSERT_TRUE(fs.sync_dir("/a").ok());
  fs.crash();
  EXPECT_EQ(contents(fs, "/a/c/x"), "1");
  EXPECT_FALSE(exists(fs, "/a/b"));
}

TEST(FaultFs, ErrorsNameThePath) {
  FaultFileSystem fs;
  auto r = fs.open("/nope/file", OpenOptions::read_only());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::not_found);
  EXPECT_NE(r.error().message.find("/nope/file"), std::string::npos);
  EXPECT_EQ(fs.open("relative", OpenOptions::read_only()).code(), Errc::invalid_argument);
}

}  // namespace strata
