// OffsetStore: stored offsets come back after a reopen and after kill -9
// (what was flushed), stores are batched into one file write per stream
// per flush, removed streams stay removed, bad input is refused clearly.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <regex>
#include <thread>

#include "common/fault_fs.h"
#include "server/named_files.h"
#include "server/offset_store.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

std::vector<std::string> list_dir_sorted(const std::string& dir) {
  auto names = posix_fs().list_dir(dir);
  EXPECT_TRUE(names.ok());
  if (!names.ok()) return {};
  std::sort(names->begin(), names->end());
  return *names;
}

OffsetStoreOptions manual() {
  OffsetStoreOptions o;
  o.flush_interval = std::chrono::milliseconds(0);
  return o;
}

TEST(OffsetStore, StoreQueryAndReopen) {
  test::TempDir dir;
  const std::string tdir = dir.sub("tracking");
  {
    auto s = OffsetStore::open(tdir, manual());
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_FALSE((*s)->query("orders", "c1"));
    ASSERT_TRUE((*s)->store("orders", "c1", 10).ok());
    ASSERT_TRUE((*s)->store("orders", "c2", 20).ok());
    ASSERT_TRUE((*s)->store("orders", "c1", 11).ok());
    ASSERT_TRUE((*s)->store("events", "c1", 5).ok());
    EXPECT_EQ((*s)->query("orders", "c1"), 11u);
    EXPECT_EQ((*s)->query("orders", "c2"), 20u);
    EXPECT_EQ((*s)->query("events", "c1"), 5u);
    EXPECT_FALSE((*s)->query("events", "c2"));
    ASSERT_TRUE((*s)->close().ok());
    EXPECT_EQ((*s)->store("orders", "c1", 12).code(), Errc::closed);
  }
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)->query("orders", "c1"), 11u);
  EXPECT_EQ((*s)->query("orders", "c2"), 20u);
  EXPECT_EQ((*s)->query("events", "c1"), 5u);
}

// A consumer storing every message costs one file write per flush.
TEST(OffsetStore, StoresAreBatchedPerFlush) {
  test::TempDir dir;
  auto s = OffsetStore::open(dir.sub("t"), manual());
  ASSERT_TRUE(s.ok());
  for (uint64_t i = 0; i < 10000; ++i) ASSERT_TRUE((*s)->store("orders", "c", i).ok());
  ASSERT_TRUE((*s)->flush().ok());
  EXPECT_EQ((*s)->stats().files_written, 1u);
  ASSERT_TRUE((*s)->flush().ok());  // nothing dirty: nothing written
  EXPECT_EQ((*s)->stats().files_written, 1u);
  ASSERT_TRUE((*s)->store("orders", "c", 1).ok());
  ASSERT_TRUE((*s)->store("events", "c", 1).ok());
  ASSERT_TRUE((*s)->flush().ok());
  EXPECT_EQ((*s)->stats().files_written, 3u);
}

TEST(OffsetStore, RemovedStreamStaysRemoved) {
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  {
    auto s = OffsetStore::open(tdir, manual());
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->store("orders", "c", 7).ok());
    ASSERT_TRUE((*s)->store("events", "c", 8).ok());
    ASSERT_TRUE((*s)->flush().ok());
    ASSERT_TRUE((*s)->remove_stream("orders").ok());
    EXPECT_FALSE((*s)->query("orders", "c"));
    EXPECT_FALSE(exists(posix_fs(), tdir + "/orders"));
    ASSERT_TRUE((*s)->remove_stream("never-there").ok());
  }
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE((*s)->query("orders", "c"));
  EXPECT_EQ((*s)->query("events", "c"), 8u);
}

// A store that arrives after the stream's removal (its sender checked the
// stream before the deletion) is refused, so no entry and no file outlive
// the stream; once the stream is created again it starts empty and stores
// are accepted.
TEST(OffsetStore, StoreAfterRemovalIsRefusedUntilCreatedAgain) {
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->store("orders", "c", 7).ok());
  ASSERT_TRUE((*s)->remove_stream("orders").ok());
  EXPECT_EQ((*s)->store("orders", "c", 8).code(), Errc::not_found);
  EXPECT_EQ((*s)->store("orders", "other", 9).code(), Errc::not_found);
  EXPECT_TRUE((*s)->store("events", "c", 1).ok());  // other streams unaffected
  ASSERT_TRUE((*s)->flush().ok());
  EXPECT_FALSE((*s)->query("orders", "c"));
  EXPECT_FALSE(exists(posix_fs(), tdir + "/orders"));
  (*s)->stream_created("orders");
  EXPECT_FALSE((*s)->query("orders", "c"));
  ASSERT_TRUE((*s)->store("orders", "c", 3).ok());
  EXPECT_EQ((*s)->query("orders", "c"), 3u);
  ASSERT_TRUE((*s)->flush().ok());
  EXPECT_TRUE(exists(posix_fs(), tdir + "/orders"));
}

// Stores racing a removal from another thread, with the flusher running:
// whatever interleaving, after remove_stream returns the stream has no
// offsets in memory or on disk, and none appear later.
TEST(OffsetStore, StoresRacingRemovalLeaveNothingBehind) {
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  OffsetStoreOptions o;
  o.flush_interval = std::chrono::milliseconds(1);
  auto s = OffsetStore::open(tdir, o);
  ASSERT_TRUE(s.ok());
  const int rounds = test::scaled(50);
  for (int round = 0; round < rounds; ++round) {
    const std::string name = "race-" + std::to_string(round);
    (*s)->stream_created(name);
    std::atomic<bool> removed{false};
    std::atomic<uint64_t> stored{0};
    std::thread storer([&] {
      // Store until the removal is seen, and a while after it.
      uint64_t after = 0;
      for (uint64_t i = 0; after < 200; ++i) {
        if ((*s)->store(name, "c", i).ok()) stored += 1;
        if (removed) ++after;
      }
    });
    // Let some stores land (and flushes write them) before removing.
    while (stored < 100) std::this_thread::yield();
    ASSERT_TRUE((*s)->remove_stream(name).ok());
    removed = true;
    storer.join();
    ASSERT_TRUE((*s)->flush().ok());
    EXPECT_FALSE((*s)->query(name, "c")) << name;
    EXPECT_FALSE(exists(posix_fs(), tdir + "/" + name)) << name;
  }
}

TEST(OffsetStore, BadInputIsRefusedClearly) {
  test::TempDir dir;
  auto s = OffsetStore::open(dir.sub("t"), manual());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->store("orders", "", 1).code(), Errc::invalid_argument);
  EXPECT_EQ((*s)->store("orders", std::string(256, 'r'), 1).code(), Errc::invalid_argument);
  EXPECT_TRUE((*s)->store("orders", std::string(255, 'r'), 1).ok());
  EXPECT_EQ((*s)->store("amq.x", "c", 1).code(), Errc::invalid_argument);
  EXPECT_EQ((*s)->store("a\xff", "c", 1).code(), Errc::invalid_argument);
  EXPECT_EQ((*s)->store("", "c", 1).code(), Errc::invalid_argument);
}

TEST(OffsetStore, FileFormatRoundTripsAndDamageIsNamed) {
  std::map<std::string, uint64_t, std::less<>> m{{"a", 1}, {std::string(255, 'z'), ~0ull}};
  Bytes b = encode_tracking_file("orders", m);
  auto back = decode_tracking_file(b, "f");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->offsets, m);
  EXPECT_EQ(back->stream, "orders");
  EXPECT_EQ(back->version, 2u);
  for (size_t i = 0; i < b.size(); ++i) {
    Bytes bad = b;
    bad[i] = char(bad[i] ^ 0x40);
    auto r = decode_tracking_file(bad, "f");
    EXPECT_FALSE(r.ok()) << "flip at " << i;
  }
  for (size_t n = 0; n < b.size(); ++n)
    EXPECT_FALSE(decode_tracking_file(b.substr(0, n), "f").ok());

  // A damaged file on disk: open fails naming it (nothing overwritten).
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  {
    auto s = OffsetStore::open(tdir, manual());
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->store("orders", "c", 3).ok());
  }
  auto bytes = read_file(posix_fs(), tdir + "/orders");
  ASSERT_TRUE(bytes.ok());
  (*bytes)[6] ^= 1;
  ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/orders", *bytes).ok());
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Errc::corrupt);
  EXPECT_NE(s.error().message.find(tdir + "/orders"), std::string::npos) << s.error().message;
}

TEST(OffsetStore, LeftoverTemporaryFileIsRemoved) {
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  ASSERT_TRUE(create_dirs(posix_fs(), tdir).ok());
  ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/orders%tmp", "half").ok());
  ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/orders.tmp", "half").ok());  // the old name
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(list_dir_sorted(tdir).empty());
}

// A stream named like a temporary file ("x.tmp") is a stream like any
// other: its offsets come back after a reopen (they were once taken for an
// interrupted flush's leftover and removed), and flushing stream "x" does
// not write over its file (the flush's temporary file once had that name).
TEST(OffsetStore, AStreamNamedLikeATemporaryFileKeepsItsOffsets) {
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  {
    auto s = OffsetStore::open(tdir, manual());
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE((*s)->store("x.tmp", "c", 2).ok());
    ASSERT_TRUE((*s)->flush().ok());
    ASSERT_TRUE((*s)->store("x", "c", 1).ok());
    ASSERT_TRUE((*s)->flush().ok());
  }
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)->query("x", "c"), 1u);
  EXPECT_EQ((*s)->query("x.tmp", "c"), 2u);
}

TEST(OffsetStore, FlushingAStreamLeavesTheFileOfItsTmpNamesakeAlone) {
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE((*s)->store("x.tmp", "c", 2).ok());
  ASSERT_TRUE((*s)->flush().ok());
  auto before = list_dir_sorted(tdir);
  ASSERT_EQ(before.size(), 1u);
  auto body = read_file(posix_fs(), tdir + "/" + before[0]);
  ASSERT_TRUE(body.ok());
  ASSERT_TRUE((*s)->store("x", "c", 1).ok());
  ASSERT_TRUE((*s)->flush().ok());
  auto after = read_file(posix_fs(), tdir + "/" + before[0]);
  ASSERT_TRUE(after.ok()) << "flushing x removed " << before[0];
  EXPECT_EQ(*after, *body);
  EXPECT_EQ(list_dir_sorted(tdir).size(), 2u);
}

// Any name is stored, under its component (common/name_component.h): '/',
// "..", non-ASCII, a 255-byte name (hashed: the file holds the name).
TEST(OffsetStore, EveryNameKeepsItsOffsetsInAFileOfItsOwn) {
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  const std::vector<std::string> names = {"a/b",
                                          "..",
                                          ".",
                                          "orders 2026/Q1 \xe2\x82\xac",
                                          std::string(255, 'n'),
                                          std::string(254, 'n') + "m",
                                          "x%tmp",
                                          "a%2Fb"};
  {
    auto s = OffsetStore::open(tdir, manual());
    ASSERT_TRUE(s.ok()) << s.error().message;
    for (size_t i = 0; i < names.size(); ++i) ASSERT_TRUE((*s)->store(names[i], "c", i).ok());
  }
  EXPECT_EQ(list_dir_sorted(tdir).size(), names.size());
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_TRUE(s.ok()) << s.error().message;
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ((*s)->query(names[i], "c"), i) << names[i];
  ASSERT_TRUE((*s)->remove_stream("a/b").ok());
  EXPECT_EQ((*s)->query("a%2Fb", "c"), names.size() - 1);
  EXPECT_EQ(list_dir_sorted(tdir).size(), names.size() - 1);
}

// A tracking file of the version before names were encoded (1: no name).
Bytes version1_file(uint64_t offset) {
  Bytes b;
  ByteWriter w(&b);
  w.be32(0x5354524B);
  w.u8(1);
  w.be32(1);
  w.u8(1);
  w.bytes("c");
  w.be64(offset);
  append_checksum_trailer(&b);
  return b;
}

// Upgrade: files of the previous version are read; what it left under its
// temporary name "<name>.tmp" (a version 1 file, or one cut short) is
// removed; a current file named "x.tmp" is stream x.tmp's; an interrupted
// write's "<component>%tmp" is removed; what is no component's stays.
TEST(OffsetStore, FilesOfThePreviousVersionAndLeftoversAreToldApart) {
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  ASSERT_TRUE(create_dirs(posix_fs(), tdir).ok());
  ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/old", version1_file(5)).ok());
  ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/old.tmp", version1_file(6)).ok());
  ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/cut.tmp", "STR").ok());
  ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/new%tmp", "half").ok());
  ASSERT_TRUE(
      write_file_atomic(posix_fs(), tdir + "/y.tmp", encode_tracking_file("y.tmp", {{"c", 7}}))
          .ok());
  ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/not a component", "x").ok());
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)->query("old", "c"), 5u);
  EXPECT_FALSE((*s)->query("old.tmp", "c"));
  EXPECT_EQ((*s)->query("y.tmp", "c"), 7u);
  EXPECT_EQ(list_dir_sorted(tdir), (std::vector<std::string>{"not a component", "old", "y.tmp"}));
  // Flushed again, the old file is rewritten in the current version.
  ASSERT_TRUE((*s)->store("old", "c", 8).ok());
  ASSERT_TRUE((*s)->flush().ok());
  auto f = decode_tracking_file(*read_file(posix_fs(), tdir + "/old"), "old");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->version, 2u);
  EXPECT_EQ(f->stream, "old");
}

// A version 1 file under a name that is not its own component (starting
// with '.') is read and renamed to the component.
TEST(OffsetStore, AVersion1FileUnderItsNameAsIsIsRenamedToItsComponent) {
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  ASSERT_TRUE(create_dirs(posix_fs(), tdir).ok());
  ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/.dot", version1_file(3)).ok());
  {
    auto s = OffsetStore::open(tdir, manual());
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ((*s)->query(".dot", "c"), 3u);
  }
  EXPECT_EQ(list_dir_sorted(tdir), std::vector<std::string>{"%2Edot"});
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)->query(".dot", "c"), 3u);
}

// A current file that fails its checks fails the open, also under a
// ".tmp" name, and one holding another stream's name is corrupt: nothing
// is deleted on the word of a damaged file.
TEST(OffsetStore, DamagedCurrentFilesFailTheOpenWhateverTheirName) {
  for (const std::string& name : {std::string("x.tmp"), std::string("x")}) {
    test::TempDir dir;
    const std::string tdir = dir.sub("t");
    ASSERT_TRUE(create_dirs(posix_fs(), tdir).ok());
    Bytes b = encode_tracking_file(name, {{"c", 7}});
    b[b.size() - 5] ^= 1;
    ASSERT_TRUE(write_file_atomic(posix_fs(), tdir + "/" + name, b).ok());
    auto s = OffsetStore::open(tdir, manual());
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_EQ(s.error().code, Errc::corrupt);
    EXPECT_TRUE(exists(posix_fs(), tdir + "/" + name));
  }
  test::TempDir dir;
  const std::string tdir = dir.sub("t");
  ASSERT_TRUE(create_dirs(posix_fs(), tdir).ok());
  ASSERT_TRUE(
      write_file_atomic(posix_fs(), tdir + "/x", encode_tracking_file("y", {{"c", 7}})).ok());
  auto s = OffsetStore::open(tdir, manual());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("holds the offsets of stream \"y\""), std::string::npos)
      << s.error().message;
}

// Power loss on the fault-injecting file system: what a flush completed is
// back, unsynced later stores are not required to be.
TEST(OffsetStore, PowerLossKeepsFlushedOffsets) {
  FaultFileSystem ffs;
  OffsetStoreOptions o = manual();
  o.fs = &ffs;
  {
    auto s = OffsetStore::open("/t", o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE((*s)->store("orders", "c", 100).ok());
    ASSERT_TRUE((*s)->flush().ok());
    ASSERT_TRUE((*s)->store("orders", "c", 200).ok());
    // The machine goes down now: the final flush of the destructor fails.
    ffs.crash_after(0);
  }
  ffs.crash();
  auto s = OffsetStore::open("/t", o);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)->query("orders", "c"), 100u);
}

// kill -9 of a process storing offsets as fast as it can: every offset a
// flush reported durable is back (or a later one), never a torn file.
TEST(OffsetStore, KillNineKeepsFlushedOffsets) {
  const int rounds = std::max(2, test::scaled(6));
  for (int k = 0; k < rounds; ++k) {
    test::TempDir dir;
    const std::string tdir = dir.sub("tracking");
    const uint64_t wait_for = 200ull * uint64_t(1 + k % 3);
    test::Process p = test::Process::spawn({PARTS_OFFSET_CHILD, tdir}, dir.path());
    ASSERT_TRUE(
        p.wait_for_output("flushed " + std::to_string(wait_for) + "\n", std::chrono::seconds(30)))
        << p.stderr_text();
    p.kill(9);
    p.wait();
    uint64_t last_flushed = 0;
    const std::string out = p.stdout_text();
    std::regex line("flushed (\\d+)\n");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator();
         ++it) {
      last_flushed = std::stoull((*it)[1]);
    }
    ASSERT_GE(last_flushed, wait_for);
    auto s = OffsetStore::open(tdir, manual());
    ASSERT_TRUE(s.ok()) << s.error().message;
    for (const char* stream : {"orders", "events"}) {
      for (int ref = 0; ref < 3; ++ref) {
        auto v = (*s)->query(stream, "consumer-" + std::to_string(ref));
        ASSERT_TRUE(v) << stream << " " << ref;
        EXPECT_GE(*v, last_flushed) << stream << " " << ref;
      }
    }
  }
}

}  // namespace
}  // namespace strata::server
