// Publishers' sequences (deduplication state) follow a stream into the
// remote tier: a node whose local log restarts after the remote tier — lost
// disk here; a takeover takes the same path (Node::align_with_remote) —
// reads them back from the fragments (tier/writer_recovery.h), so a resent
// batch is recognised. With a budget of one fragment and no snapshot in it,
// the deltas read are still exact for the writers they name.
#include "tier/writer_recovery.h"

#include <gtest/gtest.h>

#include "common/fs.h"
#include "log/entries.h"
#include "node/node.h"
#include "node/node_test_util.h"
#include "support/assertions.h"
#include "support/temp_dir.h"
#include "tier/upload_jobs.h"

namespace strata::node {
namespace {

using strata::test::TempDir;
using namespace strata::node::test;

// One batch of `n` simple entries from writer `ref`, its highest publishing
// id `seq`.
Status publish(log::StreamLog& log, const std::string& ref, uint64_t seq, int n = 5) {
  Bytes entries;
  for (int i = 0; i < n; ++i) {
    std::string v = ref + "-" + std::to_string(seq) + "-" + std::string(400, 'x');
    uint8_t h[log::kEntryHeaderSize];
    put_be32(h, uint32_t(v.size()));
    entries.append(reinterpret_cast<const char*>(h), sizeof h);
    entries += v;
  }
  log::EntryBatch b;
  b.entries = entries;
  b.num_entries = uint16_t(n);
  b.num_records = uint32_t(n);
  b.writer_ref = ref;
  b.writer_seq = seq;
  auto r = log.append_entries(b);
  if (!r.ok()) return r.error();
  return Status::OK();
}

TEST(WriterRecovery, ALogRestartedAfterTheRemoteTierKnowsEveryPublishersSequence) {
  TempDir tmp;
  // Several local segments (64 KiB) so several snapshots, and "early" only
  // in the first segments: its sequence comes from a snapshot.
  {
    auto n = open_node(tmp.path());
    ASSERT_TRUE(n);
    auto log = n->create_stream("s1");
    ASSERT_OK(log);
    ASSERT_OK(publish(**log, "early", 7));
    for (uint64_t i = 1; i <= 120; ++i) {
      ASSERT_OK(publish(**log, i % 2 ? "odd" : "even", 100 + i));
    }
    ASSERT_GT((*log)->segments().size(), 3u);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
    ASSERT_OK(n->close());
  }
  // The local log is lost: the node serves the stream again at open, its
  // catalog entry leading it to the bucket.
  ASSERT_OK(remove_all(posix_fs(), tmp.sub("streams/s1")));
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  auto log = n->stream("s1");
  ASSERT_OK(log);
  ASSERT_EQ((*log)->committed_next(), (*log)->first_offset());
  EXPECT_EQ((*log)->writer_sequence("early"), 7u);
  EXPECT_EQ((*log)->writer_sequence("odd"), 219u);
  EXPECT_EQ((*log)->writer_sequence("even"), 220u);
  EXPECT_EQ((*log)->writer_sequence("never"), std::nullopt);
  // The first chunk written stores them: a restart of this log keeps them
  // from its own segment.
  ASSERT_OK(publish(**log, "late", 1));
  ASSERT_OK(n->close());
  n = open_node(tmp.path());
  ASSERT_TRUE(n);
  auto again = n->stream("s1");
  ASSERT_OK(again);
  EXPECT_EQ((*again)->writer_sequence("early"), 7u);
  EXPECT_EQ((*again)->writer_sequence("even"), 220u);
  EXPECT_EQ((*again)->writer_sequence("late"), 1u);
  ASSERT_OK(n->close());
}

TEST(WriterRecovery, WithinABudgetOfOneFragmentTheDeltasReadAreExact) {
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  ASSERT_OK(publish(**log, "early", 7));
  for (uint64_t i = 1; i <= 120; ++i) ASSERT_OK(publish(**log, i % 2 ? "odd" : "even", 100 + i));
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  auto entry = n->catalog().get("s1");
  ASSERT_OK(entry);
  auto keys = tier::ObjectKeys::make("t", "s1");
  ASSERT_OK(keys);
  auto m = tier::read_persisted_manifest(n->store(), *entry);
  ASSERT_OK(m);
  tier::RemoteReaderDeps deps;
  deps.store = std::shared_ptr<objstore::ObjectStore>(&n->store(), [](auto*) {});
  deps.groups = n->cache().groups().fetcher(n->store(), *keys);
  auto all = tier::remote_writer_sequences(deps, *keys, std::make_shared<const tier::Manifest>(*m),
                                           1ull << 30);
  ASSERT_OK(all);
  EXPECT_TRUE(all->from_snapshot);
  EXPECT_EQ(all->writers.at("early"), 7u);
  EXPECT_EQ(all->writers.at("even"), 220u);
  auto one =
      tier::remote_writer_sequences(deps, *keys, std::make_shared<const tier::Manifest>(*m), 1);
  ASSERT_OK(one);
  EXPECT_EQ(one->fragments_read, 1u);
  for (const auto& [ref, seq] : one->writers) EXPECT_EQ(all->writers.at(ref), seq) << ref;
  EXPECT_EQ(one->writers.at("even"), 220u);
  ASSERT_OK(n->close());
}

}  // namespace
}  // namespace strata::node
