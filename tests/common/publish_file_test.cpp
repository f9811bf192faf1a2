// publish_file / rename_durable: a published file is whole under its final
// name or not there, whatever the crash point; failures leave no temporary.
#include "common/publish_file.h"

#include <gtest/gtest.h>

#include "common/fault_fs.h"
#include "support/temp_dir.h"

namespace strata {
namespace {

std::vector<std::string> names(FileSystem& fs, const std::string& dir) {
  auto r = fs.list_dir(dir);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : std::vector<std::string>{};
}

// Writes `v` in three appends, so a torn crash can keep part of it.
Status write_in_parts(FileSystem& fs, const std::string& path, const Bytes& v) {
  return publish_file(fs, path, [&](File& f) -> Status {
    size_t third = v.size() / 3;
    STRATA_TRY(f.append(BytesView(v).substr(0, third)));
    STRATA_TRY(f.append(BytesView(v).substr(third, third)));
    return f.append(BytesView(v).substr(2 * third));
  });
}

TEST(PublishFile, PublishesAndLeavesNoTemporary) {
  FaultFileSystem fs;
  ASSERT_TRUE(create_dirs(fs, "/d").ok());
  ASSERT_TRUE(write_in_parts(fs, "/d/f", Bytes(999, 'a')).ok());
  ASSERT_TRUE(write_in_parts(fs, "/d/f", Bytes(600, 'b')).ok());
  EXPECT_EQ(names(fs, "/d"), std::vector<std::string>{"f"});
  fs.crash();
  EXPECT_EQ(*read_file(fs, "/d/f"), Bytes(600, 'b'));
}

// Every crash point of a publish that replaces an old file, with the
// harshest crash the fault file system has (a random prefix of unsynced
// writes kept, the next one torn, unsynced directory entries kept or not):
// the final name holds the old bytes or the new ones, never a mix or a part.
TEST(PublishFile, CrashAtAnyStepLeavesOldOrNewNeverPart) {
  const Bytes old_v(3000, 'o'), new_v(3000, 'n');
  uint64_t steps = 0;
  {
    FaultFileSystem fs;
    ASSERT_TRUE(create_dirs(fs, "/d").ok());
    ASSERT_TRUE(write_in_parts(fs, "/d/f", old_v).ok());
    uint64_t before = fs.mutation_count();
    ASSERT_TRUE(write_in_parts(fs, "/d/f", new_v).ok());
    steps = fs.mutation_count() - before;
  }
  ASSERT_GE(steps, 5u);  // create, appends, sync, rename, directory sync
  int saw_old = 0, saw_new = 0;
  for (uint64_t at = 0; at <= steps; ++at) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      FaultFileSystem fs;
      ASSERT_TRUE(create_dirs(fs, "/d").ok());
      ASSERT_TRUE(write_in_parts(fs, "/d/f", old_v).ok());
      fs.crash_after(at);
      Status s = write_in_parts(fs, "/d/f", new_v);
      EXPECT_EQ(s.ok(), at == steps) << "crash point " << at;
      fs.crash({seed, /*keep_random_prefix=*/true, /*tear=*/true,
                /*random_dir_entries=*/seed % 2 == 1});
      auto got = read_file(fs, "/d/f");
      ASSERT_TRUE(got.ok()) << "crash point " << at << " seed " << seed;
      if (*got == old_v) {
        ++saw_old;
      } else {
        ASSERT_EQ(*got, new_v) << "crash point " << at << " seed " << seed << ": final name holds "
                               << got->size() << " bytes of a mix";
        ++saw_new;
      }
    }
  }
  EXPECT_GT(saw_old, 0);
  EXPECT_GT(saw_new, 0);
}

// The step the helper exists for: a crash after the rename but before the
// directory fsync. The rename may be lost (old file) but the new file, if
// its entry survived, was synced before it was named.
TEST(PublishFile, CrashBeforeDirectoryFsyncShowsNoHalfFile) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    FaultFileSystem fs;
    ASSERT_TRUE(create_dirs(fs, "/d").ok());
    fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::sync_dir; });
    Status s = write_in_parts(fs, "/d/f", Bytes(4000, 'x'));
    ASSERT_FALSE(s.ok());
    fs.fail_when(nullptr);
    fs.crash({seed, true, true, /*random_dir_entries=*/true});
    auto got = read_file(fs, "/d/f");
    if (got.ok()) {
      EXPECT_EQ(*got, Bytes(4000, 'x')) << "seed " << seed;
    } else {
      EXPECT_EQ(got.code(), Errc::not_found);
    }
  }
}

TEST(PublishFile, FailedWriteOrSyncRemovesTheTemporaryAndKeepsTheOld) {
  FaultFileSystem fs;
  ASSERT_TRUE(create_dirs(fs, "/d").ok());
  ASSERT_TRUE(write_in_parts(fs, "/d/f", Bytes(10, 'o')).ok());
  Status s = publish_file(fs, "/d/f", [](File& f) -> Status {
    STRATA_TRY(f.append("partial"));
    return Error(Errc::invalid_argument, "producer gave up");
  });
  EXPECT_EQ(s.code(), Errc::invalid_argument);
  EXPECT_EQ(names(fs, "/d"), std::vector<std::string>{"f"});
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::sync; });
  s = write_in_parts(fs, "/d/f", Bytes(10, 'n'));
  EXPECT_EQ(s.code(), Errc::io);
  fs.fail_when(nullptr);
  EXPECT_EQ(names(fs, "/d"), std::vector<std::string>{"f"});
  EXPECT_EQ(*read_file(fs, "/d/f"), Bytes(10, 'o'));
}

TEST(PublishFile, CallerOpenedTemporary) {
  FaultFileSystem fs;
  ASSERT_TRUE(create_dirs(fs, "/d").ok());
  auto t = fs.open("/d/t_1", OpenOptions::create_new());
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->append("object").ok());
  ASSERT_TRUE(publish_file(fs, std::move(*t), "/d/obj").ok());
  fs.crash();
  EXPECT_EQ(*read_file(fs, "/d/obj"), "object");
  EXPECT_FALSE(exists(fs, "/d/t_1"));
  // A rename that fails removes the temporary.
  auto t2 = fs.open("/d/t_2", OpenOptions::create_new());
  ASSERT_TRUE(t2.ok());
  ASSERT_TRUE((*t2)->append("x").ok());
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::rename; });
  EXPECT_FALSE(publish_file(fs, std::move(*t2), "/d/obj").ok());
  fs.fail_when(nullptr);
  EXPECT_FALSE(exists(fs, "/d/t_2"));
  EXPECT_EQ(*read_file(fs, "/d/obj"), "object");
}

TEST(RenameDurable, SurvivesACrashUnlikeAPlainRename) {
  FaultFileSystem fs;
  ASSERT_TRUE(create_dirs(fs, "/d").ok());
  ASSERT_TRUE(create_dirs(fs, "/e").ok());
  ASSERT_TRUE(write_file_atomic(fs, "/d/a", "1").ok());
  ASSERT_TRUE(write_file_atomic(fs, "/e/b", "2").ok());
  ASSERT_TRUE(fs.rename("/d/a", "/d/a2").ok());
  ASSERT_TRUE(rename_durable(fs, "/e/b", "/e/b2").ok());
  fs.crash();
  EXPECT_TRUE(exists(fs, "/d/a"));  // the plain rename was not durable
  EXPECT_FALSE(exists(fs, "/d/a2"));
  EXPECT_FALSE(exists(fs, "/e/b"));
  EXPECT_EQ(*read_file(fs, "/e/b2"), "2");
}

TEST(PublishFilePosix, PublishesOnARealDirectory) {
  test::TempDir dir;
  ASSERT_TRUE(write_in_parts(posix_fs(), dir.sub("f"), Bytes(9000, 'p')).ok());
  EXPECT_EQ(*read_file(posix_fs(), dir.sub("f")), Bytes(9000, 'p'));
  EXPECT_EQ(names(posix_fs(), dir.path()), std::vector<std::string>{"f"});
}

}  // namespace
}  // namespace strata
