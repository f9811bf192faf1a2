// Reading a stream across both tiers through a node (tier/stream_reader.h)
// on the directory store: every offset spec across the tier boundary, a
// reader running while uploads and retention move the boundary, bounded
// prefetch memory, and the failures a reader must report cleanly (cache not
// ready, a missing object, a corrupt one). The same against the real S3
// server with injected faults is in node_s3_reader_test.cpp.
#include "tier/stream_reader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "node/node_test_util.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

using strata::test::TempDir;
using namespace strata::node::test;

struct ReadAll {
  std::vector<log::Record> records;
  std::vector<std::string> copies;  // the values (records' views die with the call)
  std::vector<uint64_t> offsets;
  tier::StreamReaderStats stats;
};

// Reads until the committed end (no waiting).
Result<ReadAll> read_to_end(tier::StreamReader& r) {
  ReadAll out;
  std::vector<log::Record> recs;
  while (true) {
    recs.clear();
    STRATA_ASSIGN_OR_RETURN(size_t n, r.next_records(&recs));
    if (n == 0) break;
    for (const auto& rec : recs) {
      out.offsets.push_back(rec.offset);
      out.copies.emplace_back(rec.value);
    }
  }
  out.stats = r.stats();
  return out;
}

void expect_values(const ReadAll& got, uint64_t from, uint64_t to) {
  ASSERT_EQ(got.offsets.size(), to - from) << "from " << from;
  for (uint64_t i = 0; i < to - from; ++i) {
    ASSERT_EQ(got.offsets[i], from + i);
    ASSERT_EQ(got.copies[i], value_of(from + i)) << "offset " << from + i;
  }
}

// A node whose stream `s1` has records [0, next) with the older part only
// in the remote tier (local retention dropped what was uploaded).
struct TwoTiers {
  TempDir tmp;
  std::unique_ptr<Node> node;
  std::shared_ptr<log::StreamLog> log;
  uint64_t next = 0;

  explicit TwoTiers(nlohmann::json doc = small_node_doc(), uint64_t batches = 300) {
    doc["log"]["retention"] = {{"max_bytes", 1}};
    node = open_node(tmp.path(), doc);
    if (!node) {
      ADD_FAILURE() << "TwoTiers: the node did not open";
      return;
    }
    auto l = node->create_stream("s1");
    if (!l.ok()) {
      ADD_FAILURE() << "TwoTiers: creating s1: " << l.error().to_string();
      return;
    }
    log = *l;
    next = append_values(*log, batches);
    EXPECT_TRUE(node->flush("s1", std::chrono::seconds(30)).ok());
    EXPECT_TRUE(log->apply_retention().ok());
    // Some more that stays local only (not yet uploaded or not yet retained).
    next = append_values(*log, 20);
  }
  uint64_t local_first() const { return log->first_offset(); }
  // Both the node and its stream are there (a failed set-up has said why).
  bool ready() const { return node && log; }
};

TEST(StreamReader, FromFirstAcrossBothTiersIsByteIdentical) {
  TwoTiers t;
  ASSERT_TRUE(t.ready());
  ASSERT_GT(t.local_first(), 0u) << "retention must have moved data to the remote tier only";
  auto r = t.node->open_reader("s1", log::OffsetSpec::first());
  ASSERT_OK(r);
  EXPECT_EQ((*r)->tier(), tier::Tier::remote);
  auto got = read_to_end(**r);
  ASSERT_OK(got);
  expect_values(*got, 0, t.next);
  EXPECT_GT(got->stats.remote_chunks, 0u);
  EXPECT_GT(got->stats.local_chunks, 0u);
  EXPECT_EQ(got->stats.tier_switches, 1u);
  EXPECT_EQ((*r)->tier(), tier::Tier::local);
  EXPECT_EQ((*r)->next_offset(), t.next);
  // The node counts what its readers read from the bucket, per stream.
  const std::string metrics = t.node->metrics_text();
  EXPECT_NE(metrics.find(fmt::format("strata_tier_remote_read_chunks_total{{stream=\"s1\"}} {}\n",
                                     got->stats.remote_chunks)),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(fmt::format("strata_tier_remote_read_bytes_total{{stream=\"s1\"}} {}\n",
                                     got->stats.remote_bytes)),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("strata_log_writer_up{stream=\"s1\"} 1\n"), std::string::npos);
  const auto status = t.node->status_json()["streams"]["s1"];
  EXPECT_EQ(status["remote_reads"]["chunks"], got->stats.remote_chunks) << status.dump();
  EXPECT_EQ(status["writer"]["state"], "running") << status.dump();
}

TEST(StreamReader, ChunksAreDeliveredVerbatimFromBothTiers) {
  TwoTiers t;
  ASSERT_TRUE(t.ready());
  auto r = t.node->open_reader("s1", log::OffsetSpec::first());
  ASSERT_OK(r);
  uint64_t expect = 0;
  size_t remote = 0;
  while (true) {
    auto c = (*r)->next_chunk();
    ASSERT_OK(c);
    if (!*c) break;
    ASSERT_EQ((*c)->header.first_offset, expect);
    // The same chunk read straight from a local log reader, where local.
    auto h = log::decode_chunk_header((*c)->bytes, "delivered");
    ASSERT_OK(h);
    EXPECT_EQ(*h, (*c)->header);
    EXPECT_OK(log::verify_chunk_body(*h, (*c)->bytes.substr(log::kChunkHeaderSize), "delivered"));
    if ((*c)->tier == tier::Tier::remote) remote += 1;
    expect = (*c)->header.next_offset();
  }
  EXPECT_EQ(expect, t.next);
  EXPECT_GT(remote, 0u);
}

TEST(StreamReader, EveryOffsetSpecResolvesAcrossTheBoundary) {
  TwoTiers t;
  ASSERT_TRUE(t.ready());
  const uint64_t lf = t.local_first();
  ASSERT_GT(lf, 20u);
  // offset:N for N in the remote tier (chunk starts and inside chunks), at
  // the boundary and in the local log: the first record is N, then all.
  for (uint64_t n : {uint64_t(0), uint64_t(1), uint64_t(7), lf / 2, lf / 2 + 3, lf - 1, lf, lf + 1,
                     lf + 5, t.next - 1}) {
    auto r = t.node->open_reader("s1", log::OffsetSpec::at_offset(n));
    ASSERT_OK(r);
    // Local retention may move the local log's start while the test runs
    // (never back): a local start means n was local when the reader opened.
    if ((*r)->tier() == tier::Tier::local) {
      EXPECT_GE(n, lf);
    } else {
      EXPECT_LT(n, t.local_first()) << n;
    }
    auto got = read_to_end(**r);
    ASSERT_OK(got);
    expect_values(*got, n, t.next);
  }
  // last: the whole last chunk; next: nothing until more is written.
  {
    auto r = t.node->open_reader("s1", log::OffsetSpec::last());
    ASSERT_OK(r);
    auto got = read_to_end(**r);
    ASSERT_OK(got);
    expect_values(*got, t.next - 10, t.next);
  }
  {
    auto r = t.node->open_reader("s1", log::OffsetSpec::next());
    ASSERT_OK(r);
    auto got = read_to_end(**r);
    ASSERT_OK(got);
    EXPECT_TRUE(got->offsets.empty());
    append_values(*t.log, 1);
    got = read_to_end(**r);
    ASSERT_OK(got);
    expect_values(*got, t.next, t.next + 10);
  }
}

TEST(StreamReader, OffsetBelowTheRemoteTierStartsAtTheOldest) {
  auto doc = small_node_doc();
  doc["tiering"]["retention"] = {{"max_bytes", 60000}};
  TwoTiers t(doc);
  ASSERT_TRUE(t.ready());
  // The user's retention trims the remote tier too.
  auto m = t.node->cache().get("s1");
  ASSERT_OK(m);
  const uint64_t remote_first = m->manifest->first_offset;
  ASSERT_GT(remote_first, 0u);
  ASSERT_LT(remote_first, t.local_first());
  for (auto spec : {log::OffsetSpec::at_offset(0), log::OffsetSpec::first()}) {
    auto r = t.node->open_reader("s1", spec);
    ASSERT_OK(r);
    auto got = read_to_end(**r);
    ASSERT_OK(got);
    expect_values(*got, remote_first, t.next);
  }
}

TEST(StreamReader, TimestampsResolveThroughTheRemoteTier) {
  TempDir tmp;
  auto doc = small_node_doc();
  doc["log"]["retention"] = {{"max_bytes", 1}};
  auto node = open_node(tmp.path(), doc);
  ASSERT_TRUE(node);
  auto log = node->create_stream("s1");
  ASSERT_OK(log);
  // Chunks in distinct milliseconds, so every chunk has its own timestamp.
  std::vector<std::pair<int64_t, uint64_t>> chunk_ts;  // (timestamp, first offset)
  uint64_t next = 0;
  for (int b = 0; b < 120; ++b) {
    const uint64_t first = next;
    next = append_values(**log, 1);
    int64_t before = chunk_ts.empty() ? -1 : chunk_ts.back().first;
    auto r = (*log)->open_reader(log::OffsetSpec::at_offset(first));
    ASSERT_OK(r);
    auto c = (*r)->next_chunk();
    ASSERT_OK(c);
    ASSERT_TRUE(*c);
    ASSERT_GE((*c)->header.timestamp_ms, before);
    chunk_ts.emplace_back((*c)->header.timestamp_ms, first);
    while (std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count() <= chunk_ts.back().first) {
      std::this_thread::yield();
    }
  }
  ASSERT_OK(node->flush("s1", std::chrono::seconds(30)));
  ASSERT_OK((*log)->apply_retention());
  const uint64_t lf = (*log)->first_offset();
  ASSERT_GT(lf, 100u);
  // For chunks in the remote tier, at the boundary and local.
  for (size_t i : {size_t(0), size_t(3), size_t(lf / 10 / 2), size_t(lf / 10 - 1), size_t(lf / 10),
                   size_t(lf / 10 + 2), chunk_ts.size() - 1}) {
    auto r = node->open_reader("s1", log::OffsetSpec::at_timestamp(chunk_ts[i].first));
    ASSERT_OK(r);
    auto got = read_to_end(**r);
    ASSERT_OK(got);
    expect_values(*got, chunk_ts[i].second, next);
  }
  // Older than everything: from the oldest; newer than everything: the end.
  auto r = node->open_reader("s1", log::OffsetSpec::at_timestamp(chunk_ts[0].first - 1000));
  ASSERT_OK(r);
  auto got = read_to_end(**r);
  ASSERT_OK(got);
  expect_values(*got, 0, next);
  r = node->open_reader("s1", log::OffsetSpec::at_timestamp(chunk_ts.back().first + 1000));
  ASSERT_OK(r);
  got = read_to_end(**r);
  ASSERT_OK(got);
  EXPECT_TRUE(got->offsets.empty());
}

TEST(StreamReader, PrefetchStaysWithinItsBudgetAndStitchesChunksAcrossRanges) {
  TwoTiers t;
  ASSERT_TRUE(t.ready());
  tier::StreamReaderOptions o;
  o.prefetch_bytes = 20 << 10;
  o.range_bytes = 5000;  // not a multiple of any chunk size: chunks straddle ranges
  o.max_ranges_in_flight = 3;
  auto r = t.node->open_reader("s1", log::OffsetSpec::first(), o);
  ASSERT_OK(r);
  auto got = read_to_end(**r);
  ASSERT_OK(got);
  expect_values(*got, 0, t.next);
  const uint64_t largest_chunk = 56 + 10 * (4 + 300) + 64;
  EXPECT_GT(got->stats.peak_buffered_bytes, 0u);
  EXPECT_LE(got->stats.peak_buffered_bytes, o.prefetch_bytes + largest_chunk);
  EXPECT_GT(got->stats.range_gets, 10u);
}

TEST(StreamReader, FollowsWhileUploadsAndRetentionMoveTheBoundary) {
  TempDir tmp;
  auto doc = small_node_doc();
  doc["log"]["retention"] = {{"max_bytes", 1}};
  auto node = open_node(tmp.path(), doc);
  ASSERT_TRUE(node);
  auto log = node->create_stream("s1");
  ASSERT_OK(log);
  append_values(**log, 50);
  const uint64_t total_batches = 50 + uint64_t(strata::test::scaled(400));
  std::atomic<bool> stop{false};
  // A jthread: a failed ASSERT below returns with the producer still
  // running, and a std::thread would abort the test without its message.
  std::jthread producer([&] {
    for (uint64_t b = 50; b < total_batches; ++b) {
      append_values(**log, 1);
      if (b % 10 == 0) (void)(*log)->apply_retention();
    }
    (void)node->flush("s1", std::chrono::seconds(30));
    (void)(*log)->apply_retention();
    stop = true;
  });
  tier::StreamReaderOptions o;
  o.prefetch_bytes = 8 << 10;
  o.range_bytes = 3000;
  auto r = node->open_reader("s1", log::OffsetSpec::first(), o);
  ASSERT_OK(r);
  uint64_t expect = 0;
  bool overtaken = false;
  std::vector<log::Record> recs;
  const uint64_t end = total_batches * 10;
  while (expect < end) {
    recs.clear();
    auto n = (*r)->next_records(&recs);
    if (!n.ok() && n.error().code == Errc::unavailable) continue;  // a resync: retry
    ASSERT_OK(n);
    if (*n == 0) {
      (*r)->wait(std::chrono::milliseconds(50));
      continue;
    }
    for (const auto& rec : recs) {
      ASSERT_EQ(rec.offset, expect);
      ASSERT_EQ(std::string(rec.value), value_of(expect));
      expect += 1;
    }
    // A consumer that stalls after its first records until retention has
    // overtaken it (local segments go once uploaded) by more than the
    // segment it reads (210 offsets; the next one must be gone), so that it
    // must continue from the remote tier and come back — however slow the
    // machine. (Sleeping a while instead let a loaded machine's uploads
    // fall behind, and the reader never switched.)
    if (!overtaken) {
      overtaken = true;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while ((*log)->first_offset() <= expect + 300) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "retention never passed " << expect;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
  producer.join();
  EXPECT_EQ(expect, end);
  EXPECT_GE((*r)->stats().tier_switches, 1u);
}

TEST(StreamReader, ACacheNotReadyIsUnavailableAndTheReaderRetries) {
  TwoTiers t;
  ASSERT_TRUE(t.ready());
  t.node->cache().invalidate("s1");
  auto r = t.node->open_reader("s1", log::OffsetSpec::first());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::unavailable) << r.error().to_string();
  // The local part needs no manifest.
  auto local = t.node->open_reader("s1", log::OffsetSpec::at_offset(t.local_first()));
  ASSERT_OK(local);
  // Once the uploader has synced the cache again (its next persist), the
  // same request reads from the remote tier.
  append_values(*t.log, 5);
  ASSERT_OK(t.node->flush("s1", std::chrono::seconds(30)));
  auto r2 = t.node->open_reader("s1", log::OffsetSpec::first());
  ASSERT_OK(r2);
  EXPECT_EQ((*r2)->tier(), tier::Tier::remote);
}

TEST(StreamReader, AMissingObjectIsAnErrorNamingOffsetAndKey) {
  TwoTiers t;
  ASSERT_TRUE(t.ready());
  auto all = objstore::list_all(t.node->store(), "t/");
  ASSERT_OK(all);
  std::string victim;
  for (const auto& o : *all) {
    if (o.key.find("/data/") != std::string::npos) {
      victim = o.key;
      break;
    }
  }
  ASSERT_FALSE(victim.empty());
  ASSERT_TRUE(t.node->store().remove(victim).ok());
  auto r = t.node->open_reader("s1", log::OffsetSpec::first());
  ASSERT_OK(r);
  auto c = (*r)->next_chunk();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::not_found);
  EXPECT_NE(c.error().message.find(victim), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("offset 0"), std::string::npos) << c.error().message;
  // Still the same answer when asked again (the reader did not move).
  c = (*r)->next_chunk();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::not_found);
}

TEST(StreamReader, ACorruptFragmentIsACrcErrorNamingTheObject) {
  TwoTiers t;
  ASSERT_TRUE(t.ready());
  auto all = objstore::list_all(t.node->store(), "t/");
  ASSERT_OK(all);
  std::string victim;
  int seen = 0;
  for (const auto& o : *all) {
    // The second fragment: remote only (below the local log).
    if (o.key.find("/data/") != std::string::npos && ++seen == 2) victim = o.key;
  }
  ASSERT_FALSE(victim.empty());
  auto body = t.node->store().get(victim);
  ASSERT_OK(body);
  // One bit inside the first chunk's record data (after the fragment and
  // chunk headers and the first entry header).
  Bytes bad = *body;
  bad[tier::kFragmentHeaderSize + log::kChunkHeaderSize + 40] ^= 0x04;
  ASSERT_TRUE(t.node->store().put(victim, bad).ok());
  auto parsed = tier::ObjectKeys::make("t", "s1")->parse(victim);
  ASSERT_OK(parsed);
  ASSERT_LT(parsed->first_offset, t.local_first());
  auto r = t.node->open_reader("s1", log::OffsetSpec::at_offset(parsed->first_offset));
  ASSERT_OK(r);
  auto c = (*r)->next_chunk();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::corrupt);
  EXPECT_NE(c.error().message.find(victim), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("CRC"), std::string::npos) << c.error().message;
}

TEST(StreamReader, WithTieringDisabledItIsTheLocalLog) {
  TempDir tmp;
  auto doc = small_node_doc();
  doc["tiering"]["enabled"] = false;
  auto node = open_node(tmp.path(), doc);
  ASSERT_TRUE(node);
  auto log = node->create_stream("s1");
  ASSERT_OK(log);
  uint64_t next = append_values(**log, 30);
  auto r = node->open_reader("s1", log::OffsetSpec::first());
  ASSERT_OK(r);
  auto got = read_to_end(**r);
  ASSERT_OK(got);
  expect_values(*got, 0, next);
  EXPECT_EQ(got->stats.remote_chunks, 0u);
}

}  // namespace
}  // namespace strata::node
