// FileLock: one holder at a time, within a process and across processes,
// and a lock that dies with its holder (kill -9) rather than needing cleanup.
#include "common/file_lock.h"

#include <gtest/gtest.h>

#include "common/fs.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata {
namespace {

TEST(FileLock, SecondHolderInTheSameProcessIsRefusedUntilRelease) {
  test::TempDir dir;
  const std::string path = dir.sub("LOCK");
  auto first = FileLock::acquire(path, "store /x");
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_TRUE(first->held());
  auto second = FileLock::acquire(path, "store /x");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), Errc::conflict);
  // The error names what is guarded and the lock file.
  EXPECT_NE(second.error().message.find("store /x"), std::string::npos) << second.error().message;
  EXPECT_NE(second.error().message.find(path), std::string::npos) << second.error().message;
  first->release();
  EXPECT_FALSE(first->held());
  EXPECT_TRUE(FileLock::acquire(path, "store /x").ok());
}

TEST(FileLock, MovedLockStaysHeldAndDestructionReleasesIt) {
  test::TempDir dir;
  const std::string path = dir.sub("LOCK");
  {
    FileLock outer;
    {
      auto l = FileLock::acquire(path, "s");
      ASSERT_TRUE(l.ok());
      outer = std::move(l).value();
    }
    EXPECT_TRUE(outer.held());
    EXPECT_EQ(FileLock::acquire(path, "s").code(), Errc::conflict);
  }
  EXPECT_TRUE(FileLock::acquire(path, "s").ok());
}

TEST(FileLock, MissingDirectoryIsNotFound) {
  test::TempDir dir;
  auto l = FileLock::acquire(dir.sub("no/such/LOCK"), "s");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.code(), Errc::not_found);
}

// Another process (util-linux flock(1), an independent implementation)
// holds the lock: refused; once it is killed with SIGKILL, the kernel has
// dropped the lock and it is ours, with no cleanup step. scripts/setup.sh
// installs flock(1); without it this test fails rather than skips.
TEST(FileLock, AnotherProcessHoldsItUntilKilled) {
  ASSERT_TRUE(test::have_program("flock"))
      << "flock(1) is missing: install Debian's util-linux (scripts/setup.sh does)";
  test::TempDir dir;
  const std::string path = dir.sub("LOCK");
  // One process: the shell locks fd 9 and becomes `sleep` holding it.
  test::Process holder = test::Process::spawn(
      {"sh", "-c",
       "exec 9>\"$0\" && flock --exclusive --nonblock 9 && echo locked && exec sleep 60", path},
      dir.path());
  ASSERT_TRUE(holder.wait_for_output("locked", std::chrono::seconds(10)).has_value());
  auto refused = FileLock::acquire(path, "s");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), Errc::conflict);
  holder.kill(9);
  ASSERT_TRUE(holder.wait().has_value());
  auto l = FileLock::acquire(path, "s");
  EXPECT_TRUE(l.ok()) << l.error().to_string();
}

}  // namespace
}  // namespace strata
