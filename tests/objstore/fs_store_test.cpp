// The fs backend beyond the shared contract: its on-disk layout, its
// integrity trailer, and crash safety proven on FaultFileSystem — a crash
// at every mutation of a put or remove never leaves a partial object
// visible, and an acknowledged put or remove survives.
#include "objstore/fs_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/crc32c.h"
#include "common/fault_fs.h"
#include "common/random.h"
#include "support/temp_dir.h"

namespace strata::objstore {
namespace {

std::unique_ptr<FsObjectStore> open_store(FileSystem& fs, const std::string& root) {
  auto s = FsObjectStore::open(fs, root, true);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(FsStore, LayoutTagsDirectoriesObjectsAndKeepsABodyPlusTrailer) {
  test::TempDir dir;
  auto store = open_store(posix_fs(), dir.sub("root"));
  ASSERT_TRUE(store->put("a/b/c", "hello").ok());
  ASSERT_TRUE(store->put("a", "top").ok());
  ASSERT_TRUE(store->put("a/b", "middle").ok());
  std::string file = dir.sub("root/d_a/d_b/f_c");
  ASSERT_TRUE(std::filesystem::exists(file));
  EXPECT_TRUE(std::filesystem::exists(dir.sub("root/f_a")));
  EXPECT_TRUE(std::filesystem::exists(dir.sub("root/d_a/f_b")));
  auto bytes = read_file(posix_fs(), file);
  ASSERT_TRUE(bytes.ok());
  ASSERT_EQ(bytes->size(), 5 + kFsTrailerBytes);
  EXPECT_EQ(bytes->substr(0, 5), "hello");
  EXPECT_EQ(bytes->substr(5, 4), "SOBJ");
  EXPECT_EQ(get_be32(u8(bytes->data() + 9)), 1u);
  EXPECT_EQ(get_be32(u8(bytes->data() + 13)), crc32c::value(std::string_view("hello")));
  EXPECT_EQ(*store->get("a"), "top");
  EXPECT_EQ(*store->get("a/b"), "middle");
}

// Keys that are proper prefixes of others ("a", "a/b", "a-1", "a!"): their
// files and directories sort differently from the keys, and the listing
// must still come out in S3's bytewise key order on every page size.
TEST(FsStore, ListsPrefixRelatedKeysInS3Order) {
  test::TempDir dir;
  auto store = open_store(posix_fs(), dir.sub("root"));
  std::vector<std::string> keys = {"a",   "a b", "a!",      "a/b", "a/b/c", "a/b c",      "a0",
                                   "a-1", "a.1", "a/b/c/d", "b",   "A",     "a/\xC3\xA9", "a/b!"};
  for (const auto& k : keys) ASSERT_TRUE(store->put(k, k).ok()) << k;
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  for (int page_size : {1, 2, 5, 1000}) {
    std::vector<std::string> got;
    ListRequest req{"", "", page_size};
    while (true) {
      auto page = store->list(req);
      ASSERT_TRUE(page.ok()) << page.error().to_string();
      for (auto& o : page->objects) got.push_back(o.key);
      if (page->next_token.empty()) break;
      req.continuation_token = page->next_token;
    }
    EXPECT_EQ(got, sorted) << "page size " << page_size;
  }
  auto under_a = list_all(*store, "a/");
  ASSERT_TRUE(under_a.ok());
  std::vector<std::string> want;
  for (const auto& k : sorted)
    if (k.rfind("a/", 0) == 0) want.push_back(k);
  std::vector<std::string> got;
  for (auto& o : *under_a) got.push_back(o.key);
  EXPECT_EQ(got, want);
}

TEST(FsStore, RemovePrunesEmptyDirectoriesButNotTheRoot) {
  test::TempDir dir;
  auto store = open_store(posix_fs(), dir.sub("root"));
  ASSERT_TRUE(store->put("x/y/z/obj", "1").ok());
  ASSERT_TRUE(store->put("x/other", "2").ok());
  ASSERT_TRUE(store->remove("x/y/z/obj").ok());
  EXPECT_FALSE(std::filesystem::exists(dir.sub("root/d_x/d_y")));
  EXPECT_TRUE(std::filesystem::exists(dir.sub("root/d_x/f_other")));
  ASSERT_TRUE(store->remove("x/other").ok());
  EXPECT_FALSE(std::filesystem::exists(dir.sub("root/d_x")));
  EXPECT_TRUE(std::filesystem::is_directory(dir.sub("root")));
  EXPECT_TRUE(store->put("x/y/again", "3").ok());
}

TEST(FsStore, CorruptObjectFileFailsGetWithChecksumMismatch) {
  test::TempDir dir;
  auto store = open_store(posix_fs(), dir.sub("root"));
  ASSERT_TRUE(store->put("k", std::string(1000, 'a')).ok());
  {
    std::fstream f(dir.sub("root/f_k"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(500);
    f.put('b');
  }
  auto g = store->get("k");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.retry(), RetryClass::fatal);
  EXPECT_NE(g.error().message.find("checksum mismatch"), std::string::npos) << g.error().message;
  EXPECT_NE(g.error().message.find("f_k"), std::string::npos) << "names the file";
  // Listing still shows it, so a scrubber can find and remove it.
  auto page = store->list({"", "", 10});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_TRUE(store->remove("k").ok());
}

TEST(FsStore, TruncatedObjectFileIsReportedNotRead) {
  test::TempDir dir;
  auto store = open_store(posix_fs(), dir.sub("root"));
  ASSERT_TRUE(store->put("k", "0123456789").ok());
  std::filesystem::resize_file(dir.sub("root/f_k"), 4);
  for (auto r : {store->get("k"), store->get_range("k", 0, 2)}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.retry(), RetryClass::fatal);
    EXPECT_NE(r.error().message.find("corrupt object file"), std::string::npos);
  }
  EXPECT_FALSE(store->head("k").ok());
}

TEST(FsStore, OpenChecksTheRoot) {
  test::TempDir dir;
  auto missing = FsObjectStore::open(posix_fs(), dir.sub("nope"), false);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(dir.sub("nope")), std::string::npos);
  std::ofstream(dir.sub("file")) << "x";
  auto not_dir = FsObjectStore::open(posix_fs(), dir.sub("file"), true);
  ASSERT_FALSE(not_dir.ok());
  EXPECT_NE(not_dir.error().message.find("not a directory"), std::string::npos);
  auto created = FsObjectStore::open(posix_fs(), dir.sub("new/deep/root/"), true);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ((*created)->root(), dir.sub("new/deep/root"));
  EXPECT_EQ((*created)->describe(), "fs:" + dir.sub("new/deep/root"));
}

TEST(FsStore, FsyncFailureFailsThePutAndLeavesNothingVisible) {
  FaultFileSystem fs;
  auto store = open_store(fs, "/objects");
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::sync; });
  auto p = store->put("s/k", "data");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.retry(), RetryClass::fatal);
  fs.fail_when(nullptr);
  EXPECT_EQ(store->get("s/k").retry(), RetryClass::not_found);
  auto page = store->list({"", "", 10});
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->objects.empty());
  // The temporary file was removed on the failure path.
  auto names = fs.list_dir("/objects/d_s");
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty());
}

// Mutations a put of a new object in an existing directory performs.
uint64_t mutations_of_put(const std::string& key, const std::string& data) {
  FaultFileSystem fs;
  auto store = open_store(fs, "/objects");
  EXPECT_TRUE(store->put(key, "old").ok());
  uint64_t before = fs.mutation_count();
  EXPECT_TRUE(store->put(key, data).ok());
  return fs.mutation_count() - before;
}

// Crash at every mutation of an overwrite, with every crash flavour: the key
// then holds the complete old or the complete new object — and the new one
// whenever the put was acknowledged.
TEST(FsStoreCrash, PutIsAtomicAtEveryCrashPoint) {
  const std::string key = "stream/data/00000000000000000042.frag";
  Random rng(test::test_seed(7));
  std::string data(70000, '\0');
  for (auto& c : data) c = char(rng.next());
  const uint64_t n = mutations_of_put(key, data);
  ASSERT_GE(n, 4u);
  int acked = 0, old_seen = 0, new_seen = 0;
  for (uint64_t point = 0; point <= n; ++point) {
    for (int flavour = 0; flavour < 4; ++flavour) {
      FaultFileSystem fs;
      auto store = open_store(fs, "/objects");
      ASSERT_TRUE(store->put(key, "old").ok());
      fs.crash_after(point);
      bool ok = store->put(key, data).ok();
      CrashOptions co;
      co.seed = rng.next();
      co.keep_random_prefix = flavour & 1;
      co.tear = flavour & 1;
      co.random_dir_entries = flavour & 2;
      fs.crash(co);
      auto reopened = open_store(fs, "/objects");
      auto got = reopened->get(key);
      ASSERT_TRUE(got.ok()) << "crash point " << point << " flavour " << flavour << ": "
                            << got.error().to_string();
      ASSERT_TRUE(*got == "old" || *got == data)
          << "partial object visible at crash point " << point << " (" << got->size() << " bytes)";
      if (ok) {
        ++acked;
        ASSERT_TRUE(*got == data) << "acknowledged put lost at crash point " << point;
      }
      (*got == data ? new_seen : old_seen)++;
      auto page = reopened->list({"", "", 10});
      ASSERT_TRUE(page.ok());
      ASSERT_EQ(page->objects.size(), 1u) << "temporary files must not be listed";
      EXPECT_EQ(page->objects[0].key, key);
      auto swept = reopened->sweep_temp_files();
      ASSERT_TRUE(swept.ok());
      EXPECT_LE(*swept, 1u);
    }
  }
  EXPECT_GT(acked, 0);
  EXPECT_GT(old_seen, 0);
  EXPECT_GT(new_seen, 0);
}

TEST(FsStoreCrash, NewKeyIsAbsentOrCompleteAfterACrash) {
  Random rng(test::test_seed(8));
  const std::string data(10000, 'n');
  for (uint64_t point = 0; point < 16; ++point) {
    FaultFileSystem fs;
    auto store = open_store(fs, "/objects");
    fs.crash_after(point);
    bool ok = store->put("a/b/c/new", data).ok();
    CrashOptions co;
    co.seed = rng.next();
    co.keep_random_prefix = true;
    co.tear = true;
    co.random_dir_entries = (point % 2) == 1;
    fs.crash(co);
    auto reopened = open_store(fs, "/objects");
    auto got = reopened->get("a/b/c/new");
    if (got.ok()) {
      ASSERT_EQ(*got, data) << "crash point " << point;
    } else {
      ASSERT_EQ(got.retry(), RetryClass::not_found) << got.error().to_string();
      ASSERT_FALSE(ok) << "acknowledged put lost at crash point " << point;
    }
  }
}

TEST(FsStoreCrash, AcknowledgedRemoveSurvivesACrash) {
  Random rng(test::test_seed(9));
  for (uint64_t point = 0; point < 8; ++point) {
    FaultFileSystem fs;
    auto store = open_store(fs, "/objects");
    ASSERT_TRUE(store->put("d/k", "value").ok());
    fs.crash_after(point);
    bool ok = store->remove("d/k").ok();
    CrashOptions co;
    co.seed = rng.next();
    co.random_dir_entries = true;
    fs.crash(co);
    auto reopened = open_store(fs, "/objects");
    auto got = reopened->get("d/k");
    if (ok) {
      ASSERT_EQ(got.retry(), RetryClass::not_found) << "acknowledged remove undone at " << point;
    } else if (got.ok()) {
      ASSERT_EQ(*got, "value");
    }
  }
}

TEST(FsStore, SweepRemovesOnlyTemporaryFiles) {
  FaultFileSystem fs;
  auto store = open_store(fs, "/objects");
  ASSERT_TRUE(store->put("p/keep", "1").ok());
  fs.crash_after(3);  // dies after the temp file got its data
  EXPECT_FALSE(store->put("p/lost", std::string(5000, 'x')).ok());
  fs.crash(CrashOptions{1, true, false, true});
  auto reopened = open_store(fs, "/objects");
  auto names = fs.list_dir("/objects/d_p");
  ASSERT_TRUE(names.ok());
  auto swept = reopened->sweep_temp_files();
  ASSERT_TRUE(swept.ok()) << swept.error().to_string();
  auto after = fs.list_dir("/objects/d_p");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, std::vector<std::string>{"f_keep"});
  EXPECT_EQ(*swept, names->size() - 1);
  EXPECT_EQ(*reopened->get("p/keep"), "1");
}

}  // namespace
}  // namespace strata::objstore
