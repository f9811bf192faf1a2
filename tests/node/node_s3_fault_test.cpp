// S3 faults between a node and a real S3 server, through real proxies on
// 127.0.0.1:
//   node -> fault_proxy.js -> s3rver   (status answers, resets, latency,
//                                       hangs, cut answers, a seeded mix)
//   node -> haproxy        -> s3rver   (403 AccessDenied on PUTs under
//                                       data/, switched on and off at run
//                                       time through haproxy's admin socket)
// Every test ends with every record persisted exactly once (no gap, no
// duplicate, the audit clean), and checks that the node's status and
// metrics show the retries by class.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "node/node_s3_fixture.h"
#include "support/fault_proxy.h"

namespace strata::node::test {
namespace {

const char* const kTooMany =
    "<Error><Code>TooManyRequests</Code><Message>Please reduce your request rate.</Message>"
    "</Error>";

// `rule` limited to PUTs of the stream's fragments (data/) or roots, `times`.
json on_fragment_puts(json rule, int times) {
  rule["method"] = "PUT";
  rule["path_prefix"] = path_of("s1", "data/");
  rule["times"] = times;
  return rule;
}
json on_root_puts(json rule, int times) {
  rule["method"] = "PUT";
  rule["path_prefix"] = path_of("s1", "meta/root.");
  rule["times"] = times;
  return rule;
}

class NodeS3Fault : public NodeS3 {
 protected:
  struct Outcome {
    json tiering;  // status_json()["streams"]["s1"]["tiering"]
    std::string metrics;
    RemoteView remote;
  };

  void start_proxy(const json& rules, bool record = false) {
    std::string err;
    proxy_ = strata::test::FaultProxy::start(dir_.path(), server_->port(), rules, record, &err);
    ASSERT_TRUE(proxy_) << err;
  }

  // Publishes `batches` batches on stream s1 through the fault proxy (started
  // with `rules`), flushes, and checks every record is persisted exactly once.
  void publish_through_faults(const json& rules, Outcome* out, uint64_t batches = 80,
                              const S3Timeouts& timeouts = {}, int64_t tiering_request_ms = 1000) {
    ASSERT_NO_FATAL_FAILURE(start_proxy(rules));
    json doc = s3_doc(proxy_->endpoint(), timeouts);
    doc["tiering"]["request_timeout_ms"] = tiering_request_ms;
    auto n = open_node(doc);
    ASSERT_TRUE(n) << proxy_->logs();
    auto log = n->create_stream("s1");
    ASSERT_OK(log);
    uint64_t next = append_values(**log, batches);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(20)));
    out->remote = remote(*n, "s1");
    ASSERT_NO_FATAL_FAILURE(expect_exactly_once(out->remote, next));
    ASSERT_NO_FATAL_FAILURE(expect_bucket_matches(out->remote, "s1"));
    json st = n->status_json()["streams"]["s1"]["tiering"];
    EXPECT_EQ(st["state"], "running");
    EXPECT_TRUE(st["upload_stalled_offset"].is_null()) << st.dump();
    out->tiering = st;
    out->metrics = n->metrics_text();
    ASSERT_OK(n->close());
  }

  // The fragment PUTs the rules failed `n` times, each a transient retry, as
  // status and metrics show them.
  static void expect_transient_retries(const Outcome& o, uint64_t n) {
    const json& t = o.tiering;
    EXPECT_GE(t["retries"]["transient"].get<uint64_t>(), n) << t.dump();
    EXPECT_EQ(t["retries"]["fatal"].get<uint64_t>(), 0u) << t.dump();
    EXPECT_GE(count_of(t["failures_by_class"], "transient"), n) << t.dump();
    EXPECT_GE(t["fragments_uploaded"].get<uint64_t>(), o.remote.audit.fragments);
    auto m =
        metric_value(o.metrics, "strata_tier_retries_total{stream=\"s1\",class=\"transient\"}");
    ASSERT_TRUE(m) << o.metrics;
    EXPECT_GE(*m, double(n));
    auto e =
        metric_value(o.metrics, "strata_objstore_errors_total{op=\"put\",class=\"transient\"}");
    ASSERT_TRUE(e) << o.metrics;
    EXPECT_GE(*e, double(n));
  }

  std::unique_ptr<strata::test::FaultProxy> proxy_;
};

// While every fragment upload fails the stream's tier reads as down
// (strata_tier_up 0, consecutive_failures counting) although the uploader
// runs; the first success brings it back up.
TEST_F(NodeS3Fault, TheTierIsDownWhileUploadsFailAndUpOnceOneSucceeds) {
  ASSERT_NO_FATAL_FAILURE(start_proxy(json::array({on_fragment_puts(respond(500, kInternal), 6)})));
  json doc = s3_doc(proxy_->endpoint(), {});
  doc["tiering"]["request_timeout_ms"] = 1000;
  auto n = open_node(doc);
  ASSERT_TRUE(n) << proxy_->logs();
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  append_values(**log, 20);
  bool saw_down = false;
  json st;
  for (int i = 0; i < 800 && !saw_down; ++i) {
    st = n->status_json()["streams"]["s1"]["tiering"];
    if (st["state"] == "running" && st["consecutive_failures"].get<uint64_t>() >= 2) {
      auto up = metric_value(n->metrics_text(), "strata_tier_up{stream=\"s1\"}");
      saw_down = up && *up == 0.0;
    }
    if (!saw_down) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(saw_down) << st.dump();
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  st = n->status_json()["streams"]["s1"]["tiering"];
  EXPECT_EQ(st["consecutive_failures"], 0) << st.dump();
  auto up = metric_value(n->metrics_text(), "strata_tier_up{stream=\"s1\"}");
  ASSERT_TRUE(up);
  EXPECT_EQ(*up, 1.0);
  ASSERT_OK(n->close());
}

TEST_F(NodeS3Fault, TooManyRequestsWithAnXmlBodyIsRetried) {
  Outcome o;
  ASSERT_NO_FATAL_FAILURE(
      publish_through_faults(json::array({on_fragment_puts(respond(429, kTooMany), 4),
                                          on_root_puts(respond(429, kTooMany), 2)}),
                             &o));
  expect_transient_retries(o, 4);
  EXPECT_GE(count_of(o.tiering["failures_by_class"], "persist_transient"), 2u) << o.tiering.dump();
}

TEST_F(NodeS3Fault, TooManyRequestsWithoutABodyIsRetried) {
  Outcome o;
  ASSERT_NO_FATAL_FAILURE(publish_through_faults(
      json::array({on_fragment_puts(respond(429, ""), 4), on_root_puts(respond(429, ""), 2)}), &o));
  expect_transient_retries(o, 4);
  EXPECT_GE(count_of(o.tiering["failures_by_class"], "persist_transient"), 2u) << o.tiering.dump();
}

TEST_F(NodeS3Fault, SlowDownIsRetried) {
  Outcome o;
  ASSERT_NO_FATAL_FAILURE(
      publish_through_faults(json::array({on_fragment_puts(respond(503, kSlowDown), 5),
                                          on_root_puts(respond(503, kSlowDown), 2)}),
                             &o));
  expect_transient_retries(o, 5);
  EXPECT_NE(o.tiering["last_error"].get<std::string>().find("SlowDown"), std::string::npos)
      << "the last error should be the last injected SlowDown: " << o.tiering.dump();
}

TEST_F(NodeS3Fault, InternalErrorIsRetried) {
  Outcome o;
  ASSERT_NO_FATAL_FAILURE(
      publish_through_faults(json::array({on_fragment_puts(respond(500, kInternal), 4),
                                          on_root_puts(respond(500, kInternal), 2)}),
                             &o));
  expect_transient_retries(o, 4);
}

TEST_F(NodeS3Fault, ConnectionResetsAreRetried) {
  Outcome o;
  ASSERT_NO_FATAL_FAILURE(
      publish_through_faults(json::array({on_fragment_puts({{"action", "reset"}}, 4),
                                          on_root_puts({{"action", "reset"}}, 2)}),
                             &o));
  expect_transient_retries(o, 4);
}

// Answers that start later than the client's stall deadline: the S3 client
// gives up (a transient timeout) and the fragment is retried under a new key.
// The late PUT still reaches the server afterwards: an orphan, never
// referenced.
TEST_F(NodeS3Fault, SlowAnswersEndInATransientTimeout) {
  Outcome o;
  S3Timeouts t;
  t.request_ms = 1500;
  t.stall_ms = 1000;
  ASSERT_NO_FATAL_FAILURE(publish_through_faults(
      json::array({on_fragment_puts({{"action", "delay"}, {"ms", 2500}}, 2)}), &o, 80, t,
      /*tiering_request_ms=*/1000));
  expect_transient_retries(o, 2);
  EXPECT_NE(o.tiering["last_error"].get<std::string>().find("timeout"), std::string::npos)
      << o.tiering.dump();
}

// A server that never answers, with the S3 client's own deadlines longer
// than the uploader's: the transfer's deadline (4 x tiering.request_timeout_ms)
// ends the task, and the fragment is retried while the abandoned request
// runs out on its own.
TEST_F(NodeS3Fault, HungAnswersEndByTheTransferDeadline) {
  Outcome o;
  S3Timeouts t;
  t.request_ms = 4000;
  t.stall_ms = 3000;
  ASSERT_NO_FATAL_FAILURE(
      publish_through_faults(json::array({on_fragment_puts({{"action", "hang"}}, 2)}), &o, 80, t,
                             /*tiering_request_ms=*/400));
  EXPECT_GE(o.tiering["deadlines"].get<uint64_t>(), 2u) << o.tiering.dump();
  EXPECT_GE(count_of(o.tiering["failures_by_class"], "deadline"), 2u) << o.tiering.dump();
  EXPECT_GE(o.tiering["retries"]["transient"].get<uint64_t>(), 2u) << o.tiering.dump();
  EXPECT_EQ(o.tiering["retries"]["fatal"].get<uint64_t>(), 0u) << o.tiering.dump();
}

// The PUT reached the server, but its answer is cut short (Content-Length
// promises bytes that never come): the client cannot know it succeeded, so
// the fragment is uploaded again under a new key; the first object is an
// orphan the manifest never references.
TEST_F(NodeS3Fault, CutAnswersToPutsAreRetried) {
  Outcome o;
  ASSERT_NO_FATAL_FAILURE(publish_through_faults(
      json::array({on_fragment_puts({{"action", "content_length"}, {"delta", 64}}, 3),
                   on_root_puts({{"action", "content_length"}, {"delta", 64}}, 1)}),
      &o));
  expect_transient_retries(o, 3);
  EXPECT_GE(o.remote.audit.orphans.size(), 3u) << "the cut PUTs should have stored their objects";
}

// The root GET of a node starting on an existing stream is cut in the middle
// of its body: the start is retried (never read as an empty manifest) and
// the node continues where the persisted manifest ends. (The node reads the
// root once when it opens the stream, to check the local log is not behind
// the remote tier; that read gives up on a failure and leaves it to the
// uploader, so it takes one of the two cut answers.)
TEST_F(NodeS3Fault, CutRootReadsAtStartAreRetried) {
  uint64_t next = 0;
  {
    auto n = open_node(s3_doc(server_->endpoint()));
    ASSERT_TRUE(n);
    auto log = n->create_stream("s1");
    ASSERT_OK(log);
    next = append_values(**log, 40);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(20)));
    ASSERT_OK(n->close());
  }
  json rules = json::array({{{"method", "GET"},
                             {"path_prefix", path_of("s1", "meta/root.")},
                             {"action", "truncate"},
                             {"fraction", 0.5},
                             {"times", 2}}});
  ASSERT_NO_FATAL_FAILURE(start_proxy(rules, /*record=*/true));
  auto n = open_node(s3_doc(proxy_->endpoint()));
  ASSERT_TRUE(n);
  auto log = n->stream("s1");
  ASSERT_OK(log);
  next = append_values(**log, 40);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(20)));
  json st = n->status_json()["streams"]["s1"]["tiering"];
  EXPECT_GE(count_of(st["failures_by_class"], "start"), 1u) << st.dump();
  EXPECT_EQ(st["gaps"], 0) << st.dump();
  int root_gets = 0;
  for (const auto& r : proxy_->recorded()) {
    root_gets += r["method"] == "GET" &&
                 r["target"].get<std::string>().rfind(path_of("s1", "meta/root."), 0) == 0;
  }
  EXPECT_GE(root_gets, 3) << "two cut reads, then one whole";
  RemoteView v = remote(*n, "s1");
  ASSERT_NO_FATAL_FAILURE(expect_exactly_once(v, next));
  ASSERT_NO_FATAL_FAILURE(expect_bucket_matches(v, "s1"));
  ASSERT_OK(n->close());
}

// Faults chosen per request from a seeded generator (STRATA_TEST_SEED), over
// two node lifetimes on the same data directory (the second one reads the
// root back through the faults too).
TEST_F(NodeS3Fault, RandomFaultMixLosesAndDuplicatesNothing) {
  const uint64_t seed = strata::test::test_seed(0x5eed9);
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  const std::string stream_path = path_of("s1");
  auto chance = [&](json rule, double p) {
    rule["path_prefix"] = stream_path;
    rule["chance"] = p;
    return rule;
  };
  json put_rules = json::array({
      // One certain fault, so the retry counters below cannot stay at zero
      // whatever the draws.
      on_fragment_puts(respond(503, kSlowDown), 1),
      chance(respond(429, kTooMany), 0.05),
      chance(respond(429, ""), 0.04),
      chance(respond(503, kSlowDown), 0.05),
      chance(respond(500, kInternal), 0.04),
      chance({{"action", "reset"}}, 0.05),
      chance({{"action", "content_length"}, {"delta", 64}}, 0.03),
      chance({{"action", "delay"}, {"ms", 2500}}, 0.02),
      chance({{"action", "truncate"}, {"fraction", 0.5}, {"method", "GET"}}, 0.2),
  });
  for (auto& r : put_rules) {
    if (!r.contains("method")) r["method"] = "PUT";
  }
  ASSERT_NO_FATAL_FAILURE(start_proxy(json{{"seed", seed}, {"rules", put_rules}}));
  S3Timeouts t;
  t.request_ms = 1500;
  t.stall_ms = 1000;
  json doc = s3_doc(proxy_->endpoint(), t);
  doc["tiering"]["request_timeout_ms"] = 1000;
  const uint64_t batches = uint64_t(strata::test::scaled(60));
  uint64_t next = 0, transient = 0;
  for (int life = 0; life < 2; ++life) {
    SCOPED_TRACE("node lifetime " + std::to_string(life));
    auto n = open_node(doc);
    ASSERT_TRUE(n) << proxy_->logs();
    auto log = life == 0 ? n->create_stream("s1") : n->stream("s1");
    ASSERT_OK(log);
    next = append_values(**log, batches);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(25)));
    json st = n->status_json()["streams"]["s1"]["tiering"];
    EXPECT_EQ(st["retries"]["fatal"], 0) << st.dump();
    EXPECT_EQ(st["gaps"], 0) << st.dump();
    transient += st["retries"]["transient"].get<uint64_t>();
    RemoteView v = remote(*n, "s1");
    ASSERT_NO_FATAL_FAILURE(expect_exactly_once(v, next));
    ASSERT_NO_FATAL_FAILURE(expect_bucket_matches(v, "s1"));
    ASSERT_OK(n->close());
  }
  EXPECT_GE(transient, 1u);
}

// ---- a fatal error stalls the stream until it is fixed ----

const char* const kDenyConfig = R"(
global
  nbthread 1
  stats socket @DIR@/haproxy.sock level admin
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:@PORT@
  http-request return status 403 content-type application/xml string "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>" if { method PUT } { path_beg -f @DIR@/deny.lst }
  default_backend s3
backend s3
  server s1 127.0.0.1:@S3PORT@
)";

// Through haproxy, whose PUTs are answered 403 AccessDenied while the
// stream's data/ prefix is in its deny list (changed at run time on its
// admin socket, as an operator would fix a bucket policy): the uploader
// stalls at the first fragment it cannot write, shows it in status and
// metrics, persists nothing beyond it and lets local retention drop
// nothing beyond it; once the deny is lifted it resumes by itself.
TEST_F(NodeS3Fault, AccessDeniedStallsTheStreamUntilLifted) {
  std::ofstream(dir_.sub("deny.lst")).flush();  // empty: nothing denied yet
  std::string cfg = kDenyConfig;
  cfg.replace(cfg.find("@S3PORT@"), 8, std::to_string(server_->port()));
  std::string err;
  auto haproxy = strata::test::Haproxy::start(dir_.path(), cfg, &err);
  ASSERT_TRUE(haproxy) << err;
  const std::string admin = dir_.sub("haproxy.sock");
  const std::string acl = dir_.sub("deny.lst");

  json doc = s3_doc(haproxy->endpoint());
  doc["log"]["retention"] = {{"max_bytes", 1}};  // would drop every segment it may
  auto n = open_node(doc);
  ASSERT_TRUE(n) << haproxy->logs();
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  const uint64_t stalled_at = append_values(**log, 40);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(20)));

  // Deny the stream's fragment PUTs, then write more.
  EXPECT_EQ(haproxy_command(admin, "add acl " + acl + " " + path_of("s1", "data/")), "\n");
  const uint64_t next = append_values(**log, 60);
  auto u = n->uploader("s1");
  ASSERT_TRUE(wait_until(
      [&] {
        auto s = u->status();
        return s.core.upload_stalled_offset && s.retries_fatal >= 2;
      },
      std::chrono::seconds(15)))
      << n->status_json().dump();

  json st = n->status_json()["streams"]["s1"];
  EXPECT_EQ(st["tiering"]["upload_stalled_offset"], stalled_at) << st.dump();
  EXPECT_EQ(st["tiering"]["remote_next_offset"], stalled_at) << st.dump();
  EXPECT_GE(count_of(st["tiering"]["failures_by_class"], "fatal"), 2u) << st.dump();
  EXPECT_NE(st["tiering"]["last_error"].get<std::string>().find("AccessDenied"), std::string::npos)
      << st.dump();
  std::string m = n->metrics_text();
  EXPECT_EQ(metric_value(m, "strata_tier_upload_stalled_offset{stream=\"s1\"}"), double(stalled_at))
      << m;
  EXPECT_GE(metric_value(m, "strata_tier_retries_total{stream=\"s1\",class=\"fatal\"}"), 2.0) << m;
  // Nothing persisted beyond the stalled offset; nothing dropped locally
  // that the remote tier does not hold.
  RemoteView during = remote(*n, "s1");
  ASSERT_NO_FATAL_FAILURE(expect_exactly_once(during, stalled_at));
  ASSERT_OK((*log)->apply_retention());
  EXPECT_LE((*log)->first_offset(), stalled_at);
  EXPECT_EQ((*log)->committed_next(), next);
  auto reader = (*log)->open_reader(log::OffsetSpec::at_offset(stalled_at));
  ASSERT_OK(reader);
  std::vector<log::Record> recs;
  uint64_t expect = stalled_at;
  for (;;) {
    recs.clear();
    auto got = (*reader)->next_records(&recs);
    ASSERT_OK(got);
    if (*got == 0) break;
    for (const auto& r : recs) {
      ASSERT_EQ(r.offset, expect);
      ASSERT_EQ(std::string(r.value), value_of(expect));
      expect += 1;
    }
  }
  EXPECT_EQ(expect, next) << "records past the stalled offset are missing locally";

  // Lifted: the next (slow, fatal-class) retry goes through.
  EXPECT_EQ(haproxy_command(admin, "clear acl " + acl), "\n");
  ASSERT_OK(n->flush("s1", std::chrono::seconds(20)));
  st = n->status_json()["streams"]["s1"]["tiering"];
  EXPECT_TRUE(st["upload_stalled_offset"].is_null()) << st.dump();
  EXPECT_EQ(st["remote_next_offset"], next);
  EXPECT_EQ(metric_value(n->metrics_text(), "strata_tier_upload_stalled_offset{stream=\"s1\"}"),
            -1.0);
  RemoteView v = remote(*n, "s1");
  ASSERT_NO_FATAL_FAILURE(expect_exactly_once(v, next));
  ASSERT_NO_FATAL_FAILURE(expect_bucket_matches(v, "s1"));
  ASSERT_OK(n->close());
}

}  // namespace
}  // namespace strata::node::test
