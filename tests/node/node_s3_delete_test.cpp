// Deleting a stream against a real S3 server (s3rver) through fault_proxy.js:
// throttled, failing and reset batch deletes and listings are retried and
// the deletion finishes; an access-denied batch delete stops it with that
// error, leaves it pending (the stream hidden, its name not reusable) and a
// later open of the node finishes it. awscli lists the bucket afterwards.
#include <gtest/gtest.h>

#include "node/node_s3_fixture.h"
#include "support/fault_proxy.h"

namespace strata::node::test {
namespace {

const char* const kDenied =
    "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";

// DeleteObjects (POST /bucket?delete) and ListObjectsV2 (GET /bucket?list-type=2).
json on_batch_deletes(json rule, int times = -1) {
  rule["method"] = "POST";
  rule["query_contains"] = "delete";
  if (times >= 0) rule["times"] = times;
  return rule;
}
json on_listings(json rule, int times) {
  rule["method"] = "GET";
  rule["query_contains"] = "list-type";
  rule["times"] = times;
  return rule;
}

class NodeS3Delete : public NodeS3 {
 protected:
  // Streams s1 (to delete) and s2 (kept) with data in both tiers, written
  // straight to s3rver by a node that is closed afterwards.
  void write_streams() {
    auto n = open_node(s3_doc(server_->endpoint()));
    ASSERT_TRUE(n);
    for (const char* s : {"s1", "s2"}) {
      auto log = n->create_stream(s);
      ASSERT_OK(log);
      next_[s] = append_values(**log, 60);
      ASSERT_OK(n->flush(s, std::chrono::seconds(20)));
      next_[s] = append_values(**log, 5);  // local only
    }
    ASSERT_GE(listed("s1").size(), 3u);
    ASSERT_OK(n->close());
  }

  std::map<std::string, uint64_t> listed(const std::string& stream) {
    std::string err;
    auto l = aws_list(server_->endpoint(), kBucket, keys_of(stream).stream_prefix(), &err);
    EXPECT_TRUE(l) << err;
    return l ? *l : std::map<std::string, uint64_t>{{"(aws failed)", 0}};
  }

  void expect_s1_gone(Node& n) {
    EXPECT_EQ(listed("s1"), (std::map<std::string, uint64_t>{}));
    EXPECT_EQ(n.catalog().get("s1").code(), Errc::not_found);
    EXPECT_FALSE(exists(posix_fs(), data_.path() + "/streams/s1"));
    EXPECT_FALSE(exists(posix_fs(), data_.path() + "/deletions/s1.json"));
    EXPECT_TRUE(n.pending_deletions().empty());
    EXPECT_EQ(n.streams(), std::vector<std::string>{"s2"});
  }

  void expect_s2_intact(Node& n) {
    auto log = n.stream("s2");
    ASSERT_OK(log);
    EXPECT_EQ((*log)->committed_next(), next_["s2"]);
    ASSERT_OK(n.flush("s2", std::chrono::seconds(20)));
    RemoteView v = remote(n, "s2");
    ASSERT_NO_FATAL_FAILURE(expect_exactly_once(v, next_["s2"]));
    ASSERT_NO_FATAL_FAILURE(expect_bucket_matches(v, "s2"));
  }

  std::unique_ptr<strata::test::FaultProxy> start_proxy(const json& rules) {
    std::string err;
    auto p = strata::test::FaultProxy::start(dir_.path(), server_->port(), rules, false, &err);
    EXPECT_TRUE(p) << err;
    return p;
  }

  std::map<std::string, uint64_t> next_;
};

TEST_F(NodeS3Delete, ThrottledFailingAndResetRequestsAreRetriedAndTheDeletionFinishes) {
  ASSERT_NO_FATAL_FAILURE(write_streams());
  auto proxy = start_proxy(json::array({
      on_listings(respond(500, kInternal), 2),
      on_batch_deletes(respond(503, kSlowDown), 3),
      on_batch_deletes({{"action", "reset"}}, 1),
  }));
  ASSERT_TRUE(proxy);
  auto n = open_node(s3_doc(proxy->endpoint()));
  ASSERT_TRUE(n) << proxy->logs();
  ASSERT_OK(n->delete_stream("s1"));
  ASSERT_NO_FATAL_FAILURE(expect_s1_gone(*n));
  std::string m = n->metrics_text();
  EXPECT_GE(metric_value(m, "strata_objstore_errors_total{op=\"list\",class=\"transient\"}"), 2.0)
      << m;
  EXPECT_GE(metric_value(m, "strata_objstore_errors_total{op=\"delete-many\",class=\"transient\"}"),
            4.0)
      << m;
  EXPECT_EQ(metric_value(m, "strata_node_deletions_pending"), 0.0) << m;
  ASSERT_NO_FATAL_FAILURE(expect_s2_intact(*n));
  ASSERT_OK(n->close());
}

TEST_F(NodeS3Delete, AccessDeniedLeavesTheDeletionPendingUntilALaterOpenFinishesIt) {
  ASSERT_NO_FATAL_FAILURE(write_streams());
  {
    auto proxy = start_proxy(json::array({on_batch_deletes(respond(403, kDenied))}));
    ASSERT_TRUE(proxy);
    auto n = open_node(s3_doc(proxy->endpoint()));
    ASSERT_TRUE(n) << proxy->logs();
    Status s = n->delete_stream("s1");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), Errc::fatal);
    EXPECT_NE(s.error().message.find("AccessDenied"), std::string::npos) << s.to_string();
    EXPECT_NE(s.error().message.find("stays pending"), std::string::npos) << s.to_string();

    EXPECT_EQ(n->pending_deletions(), std::vector<std::string>{"s1"});
    EXPECT_EQ(n->streams(), std::vector<std::string>{"s2"});
    EXPECT_EQ(n->stream("s1").code(), Errc::not_found);
    auto again = n->create_stream("s1");
    EXPECT_EQ(again.code(), Errc::unavailable);
    EXPECT_NE(again.error().message.find("being deleted"), std::string::npos);
    json d = n->status_json()["deletions"]["s1"];
    EXPECT_EQ(d["state"], "failed") << d.dump();
    EXPECT_EQ(d["step"], "remove_objects") << d.dump();
    EXPECT_EQ(d["runs"], 1) << d.dump();
    EXPECT_EQ(d["objects_removed"], 0) << d.dump();
    EXPECT_NE(d["last_error"].get<std::string>().find("AccessDenied"), std::string::npos)
        << d.dump();
    EXPECT_EQ(metric_value(n->metrics_text(), "strata_node_deletions_pending"), 1.0);
    // The bucket is emptied before the local log goes, and nothing after a
    // failed step runs: both are still there.
    EXPECT_TRUE(exists(posix_fs(), data_.path() + "/streams/s1"));
    EXPECT_FALSE(listed("s1").empty());
    // Asking again runs it again, with the same outcome.
    EXPECT_EQ(n->delete_stream("s1").code(), Errc::fatal);
    EXPECT_EQ(n->status_json()["deletions"]["s1"]["runs"], 2);
    ASSERT_NO_FATAL_FAILURE(expect_s2_intact(*n));
    ASSERT_OK(n->close());
  }
  // The bucket policy fixed: the next open finishes the deletion by itself.
  auto n = open_node(s3_doc(server_->endpoint()));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->streams(), std::vector<std::string>{"s2"});
  ASSERT_OK(n->await_deletions(std::chrono::seconds(30)));
  ASSERT_NO_FATAL_FAILURE(expect_s1_gone(*n));
  ASSERT_NO_FATAL_FAILURE(expect_s2_intact(*n));
  auto fresh = n->create_stream("s1");
  ASSERT_OK(fresh);
  EXPECT_EQ((*fresh)->committed_next(), 0u);
  ASSERT_OK(n->close());
}

// A fragment PUT still on its way to the server when the deletion starts
// (the proxy holds it 2 s): closing the uploader does not stop it, so the
// deletion waits for it before it lists the prefix. Had it not, the object
// would land after the listing and stay in the bucket for good.
TEST_F(NodeS3Delete, AnUploadInFlightLandsBeforeTheListing) {
  std::string err;
  auto proxy =
      strata::test::FaultProxy::start(dir_.path(), server_->port(),
                                      json::array({{{"method", "PUT"},
                                                    {"path_prefix", path_of("s1", "data/")},
                                                    {"action", "delay"},
                                                    {"ms", 2000},
                                                    {"times", 1}}}),
                                      /*record=*/true, &err);
  ASSERT_TRUE(proxy) << err;
  S3Timeouts t;
  t.request_ms = 8000;
  t.stall_ms = 6000;
  json doc = s3_doc(proxy->endpoint(), t);
  doc["tiering"]["request_timeout_ms"] = 4000;
  auto n = open_node(doc);
  ASSERT_TRUE(n) << proxy->logs();
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  append_values(**log, 10);
  n->uploader("s1")->force_cut();
  auto put_seen = [&] {
    for (const auto& r : proxy->recorded()) {
      if (r["method"] == "PUT" &&
          r["target"].get<std::string>().rfind(path_of("s1", "data/"), 0) == 0) {
        return true;
      }
    }
    return false;
  };
  ASSERT_TRUE(wait_until(put_seen, std::chrono::seconds(20))) << proxy->logs();
  ASSERT_OK(n->delete_stream("s1"));
  // Every PUT the proxy received has had its answer (with the deletion's
  // wait, already so): only now is the bucket what it will stay.
  size_t puts = 0;
  for (const auto& r : proxy->recorded()) puts += r["method"] == "PUT";
  ASSERT_TRUE(wait_until(
      [&] {
        auto done = metric_value(n->metrics_text(), "strata_objstore_requests_total{op=\"put\"}");
        return done && *done >= double(puts);
      },
      std::chrono::seconds(20)));
  EXPECT_EQ(listed("s1"), (std::map<std::string, uint64_t>{}));
  EXPECT_EQ(n->catalog().get("s1").code(), Errc::not_found);
  ASSERT_OK(n->close());
}

}  // namespace
}  // namespace strata::node::test
