// Reading across tiers against a real S3 server (s3rver on 127.0.0.1):
// byte-identical from the first offset, and the same while a fault proxy
// answers the reader's ranged GETs with 503s, resets and cut bodies —
// retried, with no record missing and none twice.
#include <gtest/gtest.h>

#include <algorithm>

#include "node/node_s3_fixture.h"
#include "support/fault_proxy.h"
#include "tier/stream_reader.h"

namespace strata::node::test {
namespace {

class NodeS3Reader : public NodeS3 {
 protected:
  // The node's document with local retention dropping whatever is uploaded.
  static json doc_at(const std::string& endpoint) {
    json doc = s3_doc(endpoint);
    doc["log"]["retention"] = {{"max_bytes", 1}};
    return doc;
  }

  // Writes `batches` batches to `stream`, uploads them, and drops the
  // uploaded segments locally; returns the next offset.
  uint64_t write_two_tiers(Node& n, uint64_t batches, const std::string& stream = "s1") {
    auto log = n.create_stream(stream);
    EXPECT_TRUE(log.ok()) << log.error().to_string();
    if (!log.ok()) return 0;
    uint64_t next = append_values(**log, batches);
    EXPECT_TRUE(n.flush(stream, std::chrono::seconds(30)).ok());
    EXPECT_TRUE((*log)->apply_retention().ok());
    EXPECT_GT((*log)->first_offset(), 0u);
    return next;
  }

  // Reads `stream` from `first` to `next`, retrying transient errors (as
  // a consumer does), checking every record in order; returns the retries.
  uint64_t read_all(Node& n, uint64_t next, tier::StreamReaderOptions o = {},
                    const std::string& stream = "s1") {
    // A node just opened loads the persisted manifest in the background;
    // until then the remote tier is unavailable (and retried).
    auto r = n.open_reader(stream, log::OffsetSpec::first(), o);
    wait_until(
        [&] {
          if (!r.ok() && r.error().code == Errc::unavailable) {
            r = n.open_reader(stream, log::OffsetSpec::first(), o);
          }
          return r.ok() || r.error().code != Errc::unavailable;
        },
        std::chrono::seconds(20));
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    if (!r.ok()) return 0;
    uint64_t expect = 0, failures = 0;
    std::vector<log::Record> recs;
    while (expect < next) {
      recs.clear();
      auto got = (*r)->next_records(&recs);
      if (!got.ok()) {
        EXPECT_EQ(got.error().code, Errc::transient) << got.error().to_string();
        if (got.error().code != Errc::transient || ++failures > 50) return failures;
        continue;
      }
      EXPECT_GT(*got, 0u) << "the stream ended at " << expect;
      if (*got == 0) return failures;
      for (const auto& rec : recs) {
        EXPECT_EQ(rec.offset, expect);
        EXPECT_EQ(std::string(rec.value), value_of(expect)) << "offset " << expect;
        if (rec.offset != expect) return failures;
        expect += 1;
      }
    }
    EXPECT_GT((*r)->stats().remote_chunks, 0u);
    EXPECT_GT((*r)->stats().local_chunks, 0u);
    return failures + (*r)->stats().range_retries;
  }
};

TEST_F(NodeS3Reader, FromFirstAcrossBothTiersIsByteIdentical) {
  auto n = open_node(doc_at(server_->endpoint()));
  ASSERT_TRUE(n);
  const uint64_t next = write_two_tiers(*n, 200);
  tier::StreamReaderOptions o;
  o.range_bytes = 7000;  // chunks straddle ranges
  o.prefetch_bytes = 30000;
  EXPECT_EQ(read_all(*n, next, o), 0u);
}

// Names as RabbitMQ allows them tier like any other: a space, a '/' and a
// non-ASCII character (escaped in the keys: '%' goes over HTTP as %25),
// and 255 bytes of 4-byte characters (a hashed key segment). awscli lists
// the keys the audit found; after the node is reopened each stream reads
// back from its first offset across both tiers.
TEST_F(NodeS3Reader, StreamsWithAnyNameTierAndReadBackAfterAReopen) {
  std::string emoji;
  for (int i = 0; i < 63; ++i) emoji += "\xf0\x9f\x98\x80";
  emoji += "abc";
  const std::vector<std::string> names = {"orders 2026/Q1 \xe2\x82\xac", emoji, "a%2Fb"};
  std::vector<uint64_t> next;
  {
    auto n = open_node(doc_at(server_->endpoint()));
    ASSERT_TRUE(n);
    for (const auto& name : names) {
      next.push_back(write_two_tiers(*n, 60, name));
      RemoteView v = remote(*n, name);
      ASSERT_NO_FATAL_FAILURE(expect_exactly_once(v, next.back()));
      ASSERT_NO_FATAL_FAILURE(expect_bucket_matches(v, name));
      EXPECT_NE(keys_of(name).stream_prefix().find('%'), std::string::npos);
    }
    ASSERT_OK(n->close());
  }
  auto n = open_node(doc_at(server_->endpoint()));
  ASSERT_TRUE(n);
  auto streams = n->streams();
  std::sort(streams.begin(), streams.end());
  std::vector<std::string> want = names;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(streams, want);
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(read_all(*n, next[i], {}, names[i]), 0u);
  }
}

TEST_F(NodeS3Reader, RangedGetsThrough503sResetsAndCutBodiesAreRetried) {
  // The node uploads straight to the server; its reads go through a proxy
  // that fails a third of the GETs of fragment objects.
  std::string err;
  auto proxy = strata::test::FaultProxy::start(
      dir_.path(), server_->port(),
      json{{"seed", 7},
           {"rules",
            {{{"method", "GET"},
              {"path_prefix", path_of("s1", "data/")},
              {"chance", 0.15},
              {"action", "respond"},
              {"status", 503},
              {"body", "<Error><Code>SlowDown</Code><Message>slow</Message></Error>"}},
             {{"method", "GET"},
              {"path_prefix", path_of("s1", "data/")},
              {"chance", 0.1},
              {"action", "reset"}},
             {{"method", "GET"},
              {"path_prefix", path_of("s1", "data/")},
              {"chance", 0.1},
              {"action", "truncate"}}}}},
      false, &err);
  ASSERT_TRUE(proxy) << err;
  uint64_t next = 0;
  {
    auto writer = open_node(doc_at(server_->endpoint()));
    ASSERT_TRUE(writer);
    next = write_two_tiers(*writer, 200);
    ASSERT_OK(writer->close());
  }
  auto n = open_node(doc_at(proxy->endpoint()));
  ASSERT_TRUE(n) << proxy->logs();
  tier::StreamReaderOptions o;
  o.range_bytes = 8000;
  o.prefetch_bytes = 32000;
  const uint64_t retried = read_all(*n, next, o);
  EXPECT_GT(retried, 0u) << "no fault reached the reader";
}

}  // namespace
}  // namespace strata::node::test
