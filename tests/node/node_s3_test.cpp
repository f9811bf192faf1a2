// A node whose object store is a real S3 server (s3rver on 127.0.0.1):
// publish -> uploaded -> local segments dropped, with the bucket checked by
// an independent client (awscli); bad configurations that must fail the
// open by name and lose nothing; and `strata demo --s3-endpoint` through the
// real binary. Faults between the node and the server are in
// node_s3_fault_test.cpp.
#include <gtest/gtest.h>

#include "node/node_s3_fixture.h"

namespace strata::node::test {
namespace {

TEST_F(NodeS3, PublishUploadsDropsLocalSegmentsAndTheBucketMatchesTheManifest) {
  json doc = s3_doc(server_->endpoint());
  doc["log"]["retention"] = {{"max_bytes", 1}};  // keep only what is not yet remote
  auto n = open_node(doc);
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  uint64_t next = append_values(**log, 200);  // ~600 KB: ~37 fragments, ~10 segments
  ASSERT_OK(n->flush("s1", std::chrono::seconds(20)));

  // The uploader runs local retention after its persists; the tiered
  // segments go, never one the remote tier does not cover.
  auto u = n->uploader("s1");
  ASSERT_TRUE(
      wait_until([&] { return u->status().local_segments_deleted > 0; }, std::chrono::seconds(10)))
      << "no local segment was dropped";
  ASSERT_OK((*log)->apply_retention());
  EXPECT_GT((*log)->first_offset(), 0u);
  EXPECT_LE((*log)->first_offset(), u->persisted_next());
  EXPECT_EQ(u->persisted_next(), next);

  RemoteView v = remote(*n, "s1");
  ASSERT_NO_FATAL_FAILURE(expect_exactly_once(v, next));
  EXPECT_GT(v.audit.fragments, 10u);
  ASSERT_NO_FATAL_FAILURE(expect_bucket_matches(v, "s1"));

  json st = n->status_json()["streams"]["s1"];
  EXPECT_EQ(st["tiering"]["state"], "running");
  EXPECT_EQ(st["tiering"]["remote_next_offset"], next);
  EXPECT_TRUE(st["tiering"]["upload_stalled_offset"].is_null());
  EXPECT_EQ(st["tiering"]["fragments_uploaded"].get<uint64_t>(), v.audit.fragments)
      << "a fragment was uploaded twice although no request failed";
  EXPECT_GT(st["tiering"]["local_segments_deleted"].get<uint64_t>(), 0u);
  EXPECT_EQ(st["local_first_offset"], (*log)->first_offset());
  std::string m = n->metrics_text();
  EXPECT_EQ(metric_value(m, "strata_tier_remote_next_offset{stream=\"s1\"}"), double(next)) << m;
  EXPECT_EQ(metric_value(m, "strata_tier_upload_stalled_offset{stream=\"s1\"}"), -1.0) << m;
  ASSERT_OK(n->close());
}

TEST_F(NodeS3, BadConfigurationFailsTheOpenByNameAndLosesNothing) {
  // Records written locally first, by a node that does not tier: they must
  // all reach the bucket once a node opens with a good configuration.
  json good = s3_doc(server_->endpoint());
  json local_only = good;
  local_only["tiering"]["enabled"] = false;
  uint64_t next = 0;
  {
    auto n = open_node(local_only);
    ASSERT_TRUE(n);
    auto log = n->create_stream("s1");
    ASSERT_OK(log);
    next = append_values(**log, 60);
    ASSERT_OK(n->close());
  }

  // A bucket the server does not have.
  json unknown = good;
  unknown["objstore"]["s3"]["bucket"] = "no-such-bucket";
  auto r = try_open(unknown);
  ASSERT_FALSE(r.ok()) << "opened with an unknown bucket";
  EXPECT_NE(r.error().message.find("bucket 'no-such-bucket' does not exist"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find(server_->endpoint()), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("object store"), std::string::npos) << r.error().message;

  // An access key the server does not know (s3rver answers 403).
  json creds = good;
  creds["objstore"]["s3"]["access_key_id"] = "NOBODY";
  r = try_open(creds);
  ASSERT_FALSE(r.ok()) << "opened with unknown credentials";
  EXPECT_NE(r.error().message.find("access denied"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("'NOBODY'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(server_->endpoint()), std::string::npos) << r.error().message;

  // A bucket name S3 refuses: the loader names the setting; a configuration
  // built around the loader still fails the open, naming the bucket.
  json invalid = good;
  invalid["objstore"]["s3"]["bucket"] = "Bad_Bucket";
  r = try_open(invalid);
  ASSERT_FALSE(r.ok()) << "accepted an invalid bucket name";
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().message.find("s3.bucket"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("Bad_Bucket"), std::string::npos) << r.error().message;
  auto cfg = load_node_config(good, data_.path(), no_env());
  ASSERT_OK(cfg);
  cfg->objstore.s3.bucket = "Bad_Bucket";
  auto direct = Node::open(*cfg);
  ASSERT_FALSE(direct.ok()) << "opened with an invalid bucket name";
  EXPECT_NE(direct.error().message.find("Bad_Bucket"), std::string::npos) << direct.error().message;

  // Nothing was written to the bucket by the failed opens, and nothing
  // local was lost: a good configuration uploads every record once.
  std::string err;
  auto listed = aws_list(server_->endpoint(), kBucket, "", &err);
  ASSERT_TRUE(listed) << err;
  EXPECT_TRUE(listed->empty()) << listed->begin()->first;
  auto n = open_node(good);
  ASSERT_TRUE(n);
  auto log = n->stream("s1");
  ASSERT_OK(log);
  EXPECT_EQ((*log)->committed_next(), next);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(20)));
  RemoteView v = remote(*n, "s1");
  ASSERT_NO_FATAL_FAILURE(expect_exactly_once(v, next));
  ASSERT_NO_FATAL_FAILURE(expect_bucket_matches(v, "s1"));
  ASSERT_OK(n->close());
}

// `strata demo --s3-endpoint ... --bucket ...` as a user runs it.
TEST_F(NodeS3, DemoRunsAgainstTheRealServer) {
  const std::vector<std::string> env = {"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER",
                                        "AWS_DEFAULT_REGION=us-east-1"};
  const uint64_t records = 6000;
  auto demo = [&](const std::string& stream, bool as_json) {
    std::vector<std::string> argv = {STRATA_BIN};
    if (as_json) argv.push_back("--json");
    for (const char* a : {"demo", "--s3-endpoint"}) argv.push_back(a);
    argv.push_back(server_->endpoint());
    for (std::string a : {"--bucket", kBucket, "--stream"}) argv.push_back(a);
    argv.push_back(stream);
    for (const char* a : {"--records", "6000", "--record-size", "512", "--producers", "2",
                          "--segment-mib", "1", "--fragment-mib", "1", "--local-mib", "1"}) {
      argv.push_back(a);
    }
    strata::test::TempDir logs;
    auto p = strata::test::Process::spawn(argv, logs.path(), env);
    auto status = p.wait(std::chrono::seconds(60));
    EXPECT_EQ(status, 0) << p.stdout_text() << p.stderr_text();
    return p.stdout_text() + (status == 0 ? "" : p.stderr_text());
  };

  std::string text = demo("demo-text", false);
  EXPECT_NE(text.find("ok: every record was uploaded"), std::string::npos) << text;
  EXPECT_NE(text.find("s3://" + std::string(kBucket) + " at " + server_->endpoint()),
            std::string::npos)
      << text;

  std::string out = demo("demo-json", true);
  auto j = json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["ok"], true) << out;
  const json& b = j["phases"]["bucket"];
  ASSERT_TRUE(b.is_object()) << out;
  EXPECT_EQ(b["first_offset"], 0) << out;
  EXPECT_EQ(b["next_offset"], records) << out;
  EXPECT_GE(b["fragments"].get<uint64_t>(), 2u) << out;
  EXPECT_GE(b["objects"].get<uint64_t>(), b["fragments"].get<uint64_t>() + 1) << out;
  EXPECT_EQ(j["phases"]["verify"]["records"], records) << out;

  // What the demo reported is in the bucket, as awscli sees it: its
  // fragments (under data/) and its root; objects it counted may only have
  // been deleted since (old roots past their grace).
  std::string err;
  auto keys = *tier::ObjectKeys::make("strata", "demo-json");
  auto listed = aws_list(server_->endpoint(), kBucket, keys.stream_prefix(), &err);
  ASSERT_TRUE(listed) << err;
  uint64_t fragments = 0, roots = 0;
  for (const auto& [key, size] : *listed) {
    auto parsed = keys.parse(key);
    ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
    fragments += parsed->type == tier::ObjectType::fragment;
    roots += parsed->type == tier::ObjectType::root;
  }
  EXPECT_EQ(fragments, b["fragments"].get<uint64_t>()) << out;
  EXPECT_GE(roots, 1u);
  EXPECT_LE(listed->size(), b["objects"].get<uint64_t>()) << out;
}

}  // namespace
}  // namespace strata::node::test
