// The helpers and the POSIX file system, on a real temporary directory.
#include "common/fs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "support/temp_dir.h"

namespace strata {

TEST(PosixFs, WriteReadAppendTruncate) {
  test::TempDir dir;
  auto& fs = posix_fs();
  std::string p = dir.sub("a/b/file");
  ASSERT_TRUE(create_dirs(fs, path_parent(p)).ok());
  auto f = fs.open(p, OpenOptions::create_new());
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  ASSERT_TRUE((*f)->append("hello").ok());
  ASSERT_TRUE((*f)->append(" world").ok());
  ASSERT_TRUE((*f)->write_at(0, "J").ok());
  ASSERT_TRUE((*f)->sync().ok());
  EXPECT_EQ(*read_file(fs, p), "Jello world");
  ASSERT_TRUE((*f)->truncate(5).ok());
  ASSERT_TRUE((*f)->append("!").ok());
  EXPECT_EQ(*read_file(fs, p), "Jello!");
  EXPECT_EQ(fs.open(p, OpenOptions::create_new()).code(), Errc::already_exists);
  char buf[10];
  Status s = read_exact(**f, 3, buf, 10);
  EXPECT_EQ(s.code(), Errc::corrupt);
  EXPECT_NE(s.error().message.find("short read at position 3"), std::string::npos);
}

uint64_t allocated_bytes(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return uint64_t(st.st_blocks) * 512;
}

TEST(PosixFs, ReserveKeepsTheSizeAndReleaseFreesOnlyTheReservedSpace) {
  test::TempDir dir;
  auto& fs = posix_fs();
  const std::string p = dir.sub("seg");
  auto f = *fs.open(p, OpenOptions::create_new());
  const std::string data(10000, 'd');
  ASSERT_TRUE(f->append(data).ok());
  const uint64_t before = allocated_bytes(p);
  // Nothing reserved yet: a release changes nothing.
  ASSERT_TRUE(f->release_reserved().ok());
  EXPECT_EQ(allocated_bytes(p), before);
  Status s = f->reserve(data.size(), 8 << 20);
  if (s.code() == Errc::unsupported) GTEST_SKIP() << s.error().message;
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  // Allocated, but the size (what readers and recovery see) is unchanged.
  EXPECT_GE(allocated_bytes(p), uint64_t(8 << 20));
  EXPECT_EQ(*f->size(), data.size());
  // Appends land after the data, inside the reservation.
  ASSERT_TRUE(f->append("tail").ok());
  ASSERT_TRUE(f->release_reserved().ok());
  EXPECT_LE(allocated_bytes(p), uint64_t(64 << 10));
  EXPECT_EQ(*read_file(fs, p), data + "tail");
}

TEST(PosixFs, AtomicWriteListAndRemoveAll) {
  test::TempDir dir;
  auto& fs = posix_fs();
  ASSERT_TRUE(write_file_atomic(fs, dir.sub("x"), "1").ok());
  ASSERT_TRUE(write_file_atomic(fs, dir.sub("x"), "2").ok());
  EXPECT_EQ(*read_file(fs, dir.sub("x")), "2");
  ASSERT_TRUE(create_dirs(fs, dir.sub("t/u")).ok());
  ASSERT_TRUE(write_file_atomic(fs, dir.sub("t/u/y"), "3").ok());
  auto names = fs.list_dir(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"t", "x"}));  // no .tmp left behind
  ASSERT_TRUE(remove_all(fs, dir.sub("t")).ok());
  EXPECT_FALSE(exists(fs, dir.sub("t")));
  EXPECT_EQ(fs.stat(dir.sub("missing")).code(), Errc::not_found);
}

TEST(Paths, JoinParentBasename) {
  EXPECT_EQ(path_join("/a", "b"), "/a/b");
  EXPECT_EQ(path_join("/a/", "b"), "/a/b");
  EXPECT_EQ(path_parent("/a/b/c"), "/a/b");
  EXPECT_EQ(path_parent("/a"), "/");
  EXPECT_EQ(path_parent("rel"), ".");
  EXPECT_EQ(path_basename("/a/b/c"), "c");
  EXPECT_EQ(path_basename("/a/b/"), "b");
}

}  // namespace strata
