// Deletion markers: written durably before anything is destroyed, found
// again after a crash at any point of their write (or absent, never half),
// unreadable ones reported as blocked instead of acted on.
#include "node/deletion_marker.h"

#include <gtest/gtest.h>

#include "common/fault_fs.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

const std::string kDir = "/d/deletions";

DeletionMarker marker(const std::string& s, int64_t at = 1234) {
  DeletionMarker m;
  m.stream = s;
  m.requested_at_ms = at;
  return m;
}

TEST(DeletionMarker, WrittenScannedAndRemoved) {
  FaultFileSystem fs;
  auto none = scan_deletion_markers(fs, kDir);
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty()) << "an absent directory holds no marker";
  ASSERT_OK(write_deletion_marker(fs, kDir, marker("s2", 7)));
  ASSERT_OK(write_deletion_marker(fs, kDir, marker("s1", 5)));
  // A name that ends like a temporary file is still a stream of its own.
  ASSERT_OK(write_deletion_marker(fs, kDir, marker("x.json.tmp", 9)));
  auto found = scan_deletion_markers(fs, kDir);
  ASSERT_OK(found);
  ASSERT_EQ(found->size(), 3u);
  EXPECT_EQ((*found)[0].stream, "s1");
  EXPECT_EQ((*found)[0].requested_at_ms, 5);
  EXPECT_EQ((*found)[1].stream, "s2");
  EXPECT_EQ((*found)[2].stream, "x.json.tmp");
  for (const auto& m : *found) EXPECT_EQ(m.problem, "") << m.stream;
  ASSERT_OK(remove_deletion_marker(fs, kDir, "s1"));
  ASSERT_OK(remove_deletion_marker(fs, kDir, "s1"));  // idempotent
  found = scan_deletion_markers(fs, kDir);
  ASSERT_OK(found);
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].stream, "s2");
}

TEST(DeletionMarker, DurableOnceWrittenAndGoneOnceRemovedAcrossACrash) {
  FaultFileSystem fs;
  ASSERT_OK(write_deletion_marker(fs, kDir, marker("s1")));
  fs.crash();
  auto found = scan_deletion_markers(fs, kDir);
  ASSERT_OK(found);
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].problem, "");
  ASSERT_OK(remove_deletion_marker(fs, kDir, "s1"));
  fs.crash();
  found = scan_deletion_markers(fs, kDir);
  ASSERT_OK(found);
  EXPECT_TRUE(found->empty());
}

// A crash at every mutation of the write, with torn and partly kept
// unsynced state: afterwards the marker is either absent or whole, and
// leftovers of the cut write are removed by the scan.
TEST(DeletionMarker, ACrashDuringTheWriteLeavesAWholeMarkerOrNone) {
  const uint64_t seed = strata::test::test_seed(0x3a7);
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  uint64_t total = 0;
  {
    FaultFileSystem fs;
    ASSERT_OK(write_deletion_marker(fs, kDir, marker("s1")));
    total = fs.mutation_count();
  }
  ASSERT_GT(total, 2u);
  int whole = 0, absent = 0;
  for (int round = 0; round < strata::test::scaled(20); ++round) {
    for (uint64_t n = 0; n < total; ++n) {
      FaultFileSystem fs;
      fs.crash_after(n);
      (void)write_deletion_marker(fs, kDir, marker("s1"));
      CrashOptions co;
      co.seed = seed + round * 1000 + n;
      co.keep_random_prefix = true;
      co.tear = true;
      co.random_dir_entries = (round % 2) == 1;
      fs.crash(co);
      auto found = scan_deletion_markers(fs, kDir);
      ASSERT_OK(found);
      if (found->empty()) {
        absent += 1;
      } else {
        ASSERT_EQ(found->size(), 1u);
        EXPECT_EQ((*found)[0].problem, "") << "crash after " << n << " mutations";
        whole += 1;
      }
      auto names = fs.list_dir(kDir);
      if (names.ok()) {
        for (const auto& nm : *names) EXPECT_FALSE(nm.ends_with(".tmp")) << nm;
      }
    }
  }
  EXPECT_GT(absent, 0);
  RecordProperty("whole", whole);
}

TEST(DeletionMarker, UnreadableMarkersAreReportedNotActedOn) {
  FaultFileSystem fs;
  ASSERT_OK(create_dirs(fs, kDir));
  ASSERT_OK(write_file_atomic(fs, kDir + "/bad.json", "{not json"));
  ASSERT_OK(write_file_atomic(fs, kDir + "/other.json",
                              R"({"format":"strata-stream-deletion","version":1,"stream":"x"})"));
  ASSERT_OK(
      write_file_atomic(fs, kDir + "/future.json",
                        R"({"format":"strata-stream-deletion","version":2,"stream":"future"})"));
  ASSERT_OK(write_file_atomic(fs, kDir + "/README", "not a marker"));
  auto found = scan_deletion_markers(fs, kDir);
  ASSERT_OK(found);
  ASSERT_EQ(found->size(), 3u);
  EXPECT_EQ((*found)[0].stream, "bad");
  EXPECT_NE((*found)[0].problem.find("/d/deletions/bad.json is not a JSON object"),
            std::string::npos)
      << (*found)[0].problem;
  EXPECT_EQ((*found)[1].stream, "future");
  EXPECT_NE((*found)[1].problem.find("version 2"), std::string::npos) << (*found)[1].problem;
  EXPECT_EQ((*found)[2].stream, "other");
  EXPECT_NE((*found)[2].problem.find("names stream \"x\" instead of other"), std::string::npos)
      << (*found)[2].problem;
}

}  // namespace
}  // namespace strata::node
