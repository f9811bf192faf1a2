// ManifestCache: sequenced edit batches, gaps and epoch changes refused
// (stale until a full sync), stale syncs refused, unavailable when missing.
#include "tier/manifest_cache.h"

#include <gtest/gtest.h>

#include "support/assertions.h"

namespace strata::tier {
namespace {

ManifestEntry frag(uint64_t offset, uint64_t size) {
  return ManifestEntry{offset, int64_t(offset), int64_t(offset), size, 1, uint32_t(offset + 1), 0};
}

EditBatch append_batch(uint64_t epoch, uint64_t prev, uint64_t rev, uint64_t from, uint64_t to) {
  EditBatch b;
  b.epoch = epoch;
  b.prev_revision = prev;
  b.revision = rev;
  b.edits.push_back(AppendEdit{frag(from, 100), to});
  return b;
}

TEST(ManifestCache, MissingStreamIsUnavailableNotEmpty) {
  ManifestCache c;
  EXPECT_EQ(c.get("s").code(), Errc::unavailable);
}

TEST(ManifestCache, SequencedBatchesAdvanceTheManifest) {
  ManifestCache c;
  ASSERT_OK(
      c.sync("s", CachedManifest{std::make_shared<const Manifest>(Manifest::empty_at(0)), 2, 5}));
  ASSERT_OK(c.apply("s", append_batch(2, 5, 6, 0, 10)));
  ASSERT_OK(c.apply("s", append_batch(2, 6, 9, 10, 20)));  // revisions need not be consecutive
  auto m = c.get("s");
  ASSERT_OK(m);
  EXPECT_EQ(m->revision, 9u);
  EXPECT_EQ(m->manifest->next_offset, 20u);
  EXPECT_EQ(m->manifest->entries.size(), 2u);
}

TEST(ManifestCache, GapOrEpochMismatchMarksStaleUntilAFullSync) {
  ManifestCache c;
  auto empty = std::make_shared<const Manifest>(Manifest::empty_at(0));
  ASSERT_OK(c.sync("s", CachedManifest{empty, 2, 5}));
  EXPECT_EQ(c.apply("s", append_batch(2, 6, 7, 0, 10)).code(), Errc::conflict);  // gap
  EXPECT_EQ(c.get("s").code(), Errc::unavailable);
  EXPECT_EQ(c.apply("s", append_batch(2, 5, 6, 0, 10)).code(), Errc::conflict);  // still stale
  ASSERT_OK(c.sync("s", CachedManifest{empty, 2, 5}));
  EXPECT_EQ(c.apply("s", append_batch(3, 5, 6, 0, 10)).code(), Errc::conflict);  // epoch
  ASSERT_OK(c.sync("s", CachedManifest{empty, 3, 7}));
  ASSERT_OK(c.apply("s", append_batch(3, 7, 8, 0, 10)));
  EXPECT_EQ(c.stats().batches_rejected, 3u);
}

TEST(ManifestCache, AnEditThatDoesNotApplyMarksStale) {
  ManifestCache c;
  ASSERT_OK(
      c.sync("s", CachedManifest{std::make_shared<const Manifest>(Manifest::empty_at(0)), 1, 1}));
  EXPECT_EQ(c.apply("s", append_batch(1, 1, 2, 5, 10)).code(), Errc::conflict);  // not at next
  EXPECT_EQ(c.get("s").code(), Errc::unavailable);
}

TEST(ManifestCache, OlderSyncIsRefused) {
  ManifestCache c;
  auto empty = std::make_shared<const Manifest>(Manifest::empty_at(0));
  ASSERT_OK(c.sync("s", CachedManifest{empty, 3, 10}));
  EXPECT_EQ(c.sync("s", CachedManifest{empty, 3, 9}).code(), Errc::conflict);
  EXPECT_EQ(c.sync("s", CachedManifest{empty, 2, 20}).code(), Errc::conflict);
  ASSERT_OK(c.sync("s", CachedManifest{empty, 4, 1}));
}

}  // namespace
}  // namespace strata::tier
