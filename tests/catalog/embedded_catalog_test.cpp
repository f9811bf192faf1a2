// What only the embedded backend has: a file that outlives the process, a
// size that grows by use up to its capacity, one writer per file, read-only opening, and fail-stop
// on a durability failure.
#include "catalog/embedded_catalog.h"

#include <gtest/gtest.h>

#include "common/fault_fs.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::catalog {
namespace {

EmbeddedCatalogOptions small(uint32_t capacity = 16) {
  EmbeddedCatalogOptions o;
  o.capacity = capacity;
  o.wal_bytes = 32 * 1024;
  return o;
}

std::unique_ptr<EmbeddedCatalog> must_open(FileSystem& fs, const std::string& dir,
                                           const EmbeddedCatalogOptions& o) {
  auto c = EmbeddedCatalog::open(fs, dir, o);
  EXPECT_TRUE(c.ok()) << c.error().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

TEST(EmbeddedCatalog, EverythingSurvivesCloseAndReopen) {
  test::TempDir dir;
  std::vector<StreamEntry> before;
  uint64_t removed_revision = 0;
  {
    auto c = must_open(posix_fs(), dir.sub("node"), small());
    ASSERT_TRUE(c);
    EXPECT_EQ(c->describe(), "embedded:" + dir.sub("node") + "/catalog.slots");
    for (int i = 0; i < 10; ++i) {
      const std::string s = "s" + std::to_string(i);
      auto e = c->create(s, uint64_t(i + 1));
      ASSERT_OK(e);
      for (int j = 0; j < i; ++j) {
        auto r = c->put(s, s + "/root." + std::to_string(j), uint64_t(i + 1), e->revision + j);
        ASSERT_OK(r);
        ASSERT_EQ(r->outcome, PutOutcome::ok);
      }
    }
    auto gone = c->get("s9");
    ASSERT_OK(gone);
    removed_revision = gone->revision;
    ASSERT_EQ(c->remove("s9", removed_revision)->outcome, PutOutcome::ok);
    before = *c->list();
    ASSERT_OK(c->close());
    EXPECT_EQ(c->get("s1").code(), Errc::closed);
  }
  auto c = must_open(posix_fs(), dir.sub("node"), small());
  ASSERT_TRUE(c);
  EXPECT_EQ(*c->list(), before);
  EXPECT_EQ(c->info().streams, 9u);
  EXPECT_EQ(c->info().revision_floor, removed_revision);
  // The revision floor was durable too: s9 comes back above its old revisions.
  auto again = c->create("s9", 1);
  ASSERT_OK(again);
  EXPECT_GT(again->revision, removed_revision);
}

// The file keeps one record of its own, "/revision_floor"; a stream of
// that name (and any name starting with '/') is a stream like any other:
// its entry and the floor neither overwrite nor hide each other, across a
// reopen.
TEST(EmbeddedCatalog, AStreamNamedLikeTheFloorRecordIsAStreamLikeAnyOther) {
  test::TempDir dir;
  uint64_t floor = 0;
  {
    auto c = must_open(posix_fs(), dir.sub("node"), small());
    ASSERT_TRUE(c);
    auto f = c->create("/revision_floor", 7);
    ASSERT_OK(f);
    ASSERT_OK(c->create("/x", 3));
    auto gone = c->create("gone", 1);
    ASSERT_OK(gone);
    ASSERT_EQ(c->remove("gone", gone->revision)->outcome, PutOutcome::ok);
    floor = c->info().revision_floor;
    EXPECT_EQ(floor, gone->revision);
    EXPECT_EQ(c->get("/revision_floor")->epoch, 7u);
    EXPECT_EQ(c->info().streams, 2u);
    ASSERT_OK(c->close());
  }
  auto c = must_open(posix_fs(), dir.sub("node"), small());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->info().revision_floor, floor);
  auto f = c->get("/revision_floor");
  ASSERT_OK(f);
  EXPECT_EQ(f->epoch, 7u);
  auto l = c->list();
  ASSERT_OK(l);
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[0].stream, "/revision_floor");
  EXPECT_EQ((*l)[1].stream, "/x");
  ASSERT_EQ(c->remove("/revision_floor", f->revision)->outcome, PutOutcome::ok);
  EXPECT_EQ(c->info().revision_floor, f->revision);
}

TEST(EmbeddedCatalog, RunningOutOfCapacityIsStoreFullNamingTheFileAndTheSetting) {
  test::TempDir dir;
  auto c = must_open(posix_fs(), dir.path(), small(3));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->info().capacity, 3u);
  for (const char* s : {"a", "b", "c"}) ASSERT_OK(c->create(s, 1));
  auto full = c->create("d", 1);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.code(), Errc::store_full);
  EXPECT_NE(full.error().message.find(dir.path() + "/catalog.slots"), std::string::npos)
      << full.error().message;
  EXPECT_NE(full.error().message.find("catalog.capacity"), std::string::npos);
  EXPECT_NE(full.error().message.find("3 streams"), std::string::npos);
  EXPECT_NE(full.error().message.find("\"d\""), std::string::npos);
  auto full_put = c->put("d", "root", 1, 0);
  EXPECT_EQ(full_put.code(), Errc::store_full);
  // Existing streams still persist, and a remove makes room (the floor
  // record of the remove has its own slot).
  auto a = c->get("a");
  ASSERT_EQ(c->put("a", "root", 1, a->revision)->outcome, PutOutcome::ok);
  ASSERT_EQ(c->remove("b", c->get("b")->revision)->outcome, PutOutcome::ok);
  ASSERT_OK(c->create("d", 1));
  EXPECT_EQ(c->info().streams, 3u);
}

TEST(EmbeddedCatalog, CapacityOutOfRangeIsRefusedNamingTheSetting) {
  test::TempDir dir;
  for (uint32_t cap : {0u, 1u << 24}) {
    auto c = EmbeddedCatalog::open(posix_fs(), dir.path(), small(cap));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.code(), Errc::invalid_argument);
    EXPECT_NE(c.error().message.find("catalog.capacity = " + std::to_string(cap)),
              std::string::npos)
        << c.error().message;
  }
  EXPECT_FALSE(exists(posix_fs(), dir.sub("catalog.slots")));
}

TEST(EmbeddedCatalog, AnExistingFileStartsFromItsOwnSizeAndGrowsToTheNewLimit) {
  test::TempDir dir;
  ASSERT_TRUE(must_open(posix_fs(), dir.path(), small(5)));
  auto c = must_open(posix_fs(), dir.path(), small(500));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->info().capacity, 5u);
  for (int i = 0; i < 6; ++i) ASSERT_OK(c->create("s" + std::to_string(i), 1));
  EXPECT_EQ(c->info().capacity, 20u);
}

// Sized by use: a new file holds a few streams and grows fourfold when a
// create finds it full, up to catalog.capacity; every entry, its root,
// revision and the revision floor come through each growth and a reopen.
TEST(EmbeddedCatalog, ANewFileStartsSmallAndGrowsByUseUpToTheCapacity) {
  test::TempDir dir;
  EmbeddedCatalogOptions o = small(40);
  o.initial_capacity = 4;
  auto c = must_open(posix_fs(), dir.path(), o);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->info().capacity, 4u);
  const uint64_t small_file = c->info().file_bytes;
  // A removed stream raises the revision floor, which must survive too.
  ASSERT_OK(c->create("gone", 1));
  ASSERT_EQ(c->remove("gone", c->get("gone")->revision)->outcome, PutOutcome::ok);
  const uint64_t floor = c->info().revision_floor;
  ASSERT_GT(floor, 0u);
  std::vector<uint32_t> capacities;
  for (int i = 0; i < 40; ++i) {
    const std::string s = "s" + std::to_string(i);
    auto e = c->create(s, 1);
    ASSERT_OK(e);
    ASSERT_EQ(c->put(s, "root-" + s, 1, e->revision)->outcome, PutOutcome::ok);
    if (capacities.empty() || capacities.back() != c->info().capacity) {
      capacities.push_back(c->info().capacity);
    }
  }
  EXPECT_EQ(capacities, (std::vector<uint32_t>{4, 16, 40}));
  EXPECT_EQ(c->growths(), 2u);
  EXPECT_GT(c->info().file_bytes, small_file);
  auto full = c->create("one-too-many", 1);
  EXPECT_EQ(full.code(), Errc::store_full);
  EXPECT_NE(full.error().message.find("catalog.capacity"), std::string::npos)
      << full.error().message;
  EXPECT_NE(full.error().message.find("40 streams"), std::string::npos) << full.error().message;
  ASSERT_OK(c->close());
  c = must_open(posix_fs(), dir.path(), o);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->info().capacity, 40u);
  EXPECT_EQ(c->info().revision_floor, floor);
  auto all = c->list();
  ASSERT_OK(all);
  ASSERT_EQ(all->size(), 40u);
  for (const auto& e : *all) EXPECT_EQ(e.root_key, "root-" + e.stream);
  EXPECT_FALSE(c->get("gone").ok());
}

TEST(EmbeddedCatalog, ANewCatalogWithTheDefaultsIsSmall) {
  test::TempDir dir;
  auto c = must_open(posix_fs(), dir.path(), EmbeddedCatalogOptions{});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->info().capacity, kInitialCatalogCapacity);
  EXPECT_LT(c->info().file_bytes, 512u << 10) << "was ~41 MiB when sized for 16 384 streams";
}

// A crash (power loss) at every point of a growth: the catalog reopens
// with every acknowledged entry, nothing of the growth left beside it, and
// grows on the next create.
TEST(EmbeddedCatalog, ACrashAnywhereInAGrowthLosesNothingAcknowledged) {
  test::QuietLogs quiet;
  EmbeddedCatalogOptions o = small(64);
  o.initial_capacity = 4;
  o.background_compaction = false;
  for (uint64_t n = 0;; ++n) {
    SCOPED_TRACE("crash after " + std::to_string(n) + " operations");
    FaultFileSystem fs;
    auto c = must_open(fs, "/cat", o);
    ASSERT_TRUE(c);
    for (int i = 0; i < 4; ++i) ASSERT_OK(c->create("s" + std::to_string(i), 1));
    fs.crash_after(n);
    auto fifth = c->create("s4", 1);
    const bool grown = fifth.ok();
    c.reset();
    fs.crash(CrashOptions{n, true, true, false});
    c = must_open(fs, "/cat", o);
    ASSERT_TRUE(c);
    auto all = c->list();
    ASSERT_OK(all);
    ASSERT_GE(all->size(), 4u);
    if (grown) {
      EXPECT_EQ(all->size(), 5u);
    }
    EXPECT_FALSE(exists(fs, "/cat/catalog.slots.migrating"));
    for (int i = 4; i < 20; ++i) {
      auto e = c->create("s" + std::to_string(i), 1);
      ASSERT_TRUE(e.ok() || e.code() == Errc::already_exists) << e.error().to_string();
    }
    EXPECT_EQ(c->list()->size(), 20u);
    if (grown) break;
  }
}

TEST(EmbeddedCatalog, ASecondWriterIsRefusedWhileTheFirstHoldsTheFile) {
  test::TempDir dir;
  auto first = must_open(posix_fs(), dir.path(), small());
  ASSERT_TRUE(first);
  auto second = EmbeddedCatalog::open(posix_fs(), dir.path(), small());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), Errc::conflict);
  EXPECT_NE(second.error().message.find("catalog.slots"), std::string::npos);
  first.reset();
  EXPECT_OK(EmbeddedCatalog::open(posix_fs(), dir.path(), small()));
}

TEST(EmbeddedCatalog, ReadOnlyOpenReadsBesideAWriterAndRefusesWrites) {
  test::TempDir dir;
  auto writer = must_open(posix_fs(), dir.path(), small());
  ASSERT_TRUE(writer);
  auto e = writer->create("s", 2);
  ASSERT_OK(e);
  ASSERT_OK(writer->put("s", "root.x", 2, e->revision));
  EmbeddedCatalogOptions ro = small();
  ro.read_only = true;
  auto reader = must_open(posix_fs(), dir.path(), ro);
  ASSERT_TRUE(reader);
  EXPECT_EQ(*reader->get("s"), *writer->get("s"));
  auto w = reader->put("s", "root.y", 2, e->revision + 1);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.code(), Errc::invalid_argument);
  EXPECT_NE(w.error().message.find("read-only"), std::string::npos);
  EXPECT_EQ(reader->create("t", 1).code(), Errc::invalid_argument);
  EXPECT_EQ(reader->bump_epoch("s", 1, 0).code(), Errc::invalid_argument);
  EXPECT_EQ(reader->remove("s", 1).code(), Errc::invalid_argument);
}

TEST(EmbeddedCatalog, ReadOnlyOpenOfAMissingCatalogIsNotFoundAndCreatesNothing) {
  test::TempDir dir;
  EmbeddedCatalogOptions ro = small();
  ro.read_only = true;
  auto c = EmbeddedCatalog::open(posix_fs(), dir.sub("none"), ro);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.code(), Errc::not_found);
  EXPECT_NE(c.error().message.find(dir.sub("none") + "/catalog.slots"), std::string::npos);
  EXPECT_FALSE(exists(posix_fs(), dir.sub("none")));
}

TEST(EmbeddedCatalog, AFileOfAnotherSchemaIsRefused) {
  test::TempDir dir;
  slotstore::Schema other;
  other.max_key_len = 64;
  other.fields = {{"current_term", slotstore::FieldType::u64(), slotstore::Frequency::low}};
  slotstore::Options so;
  so.slots = 8;
  so.wal_bytes = 16 * 1024;
  ASSERT_OK(slotstore::SlotStore::open(posix_fs(), dir.sub("catalog.slots"), other, so));
  auto c = EmbeddedCatalog::open(posix_fs(), dir.path(), small());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.code(), Errc::schema_mismatch);
  EXPECT_NE(c.error().message.find("opening catalog"), std::string::npos);
}

TEST(EmbeddedCatalog, AnFsyncFailureStopsTheCatalogAndNothingIsAcknowledged) {
  test::QuietLogs quiet;
  FaultFileSystem fs;
  EmbeddedCatalogOptions o = small();
  o.background_compaction = false;
  auto c = must_open(fs, "/node", o);
  ASSERT_TRUE(c);
  auto e = c->create("s", 1);
  ASSERT_OK(e);
  fs.fail_when([](const FaultOp& op) { return op.kind == FaultOp::Kind::sync; });
  auto r = c->put("s", "root", 1, e->revision);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("put of stream \"s\""), std::string::npos) << r.error().message;
  fs.fail_when(nullptr);
  // Fail-stop: nothing more is read or written until a reopen.
  EXPECT_EQ(c->get("s").code(), Errc::fail_stopped);
  EXPECT_EQ(c->put("s", "root", 1, e->revision).code(), Errc::fail_stopped);
  EXPECT_TRUE(c->info().fail_stopped);
  c.reset();
  fs.crash();
  c = must_open(fs, "/node", o);
  ASSERT_TRUE(c);
  EXPECT_EQ(*c->get("s"), *e);
}

}  // namespace
}  // namespace strata::catalog
