// Bad input from the server side: answers that are well-formed HTTP but
// wrong S3 — malformed or inconsistent XML, a 200 whose body was cut, a
// ranged GET answered with the whole object or the wrong range, batch
// delete answers that skip keys. Served by tools/fault_proxy.js in front of
// a real s3rver. The client must classify each, never return wrong bytes,
// and keep what is stored intact.
#include <gtest/gtest.h>

#include "backends.h"
#include "support/fault_proxy.h"

namespace strata::objstore {
namespace {

using json = nlohmann::json;

json respond(const char* method, const char* query, int status, const std::string& body,
             json headers = json::object()) {
  return {{"method", method}, {"query_contains", query}, {"action", "respond"}, {"status", status},
          {"body", body},     {"headers", headers}};
}

class S3BadInput : public ::testing::Test {
 protected:
  void start(const json& rules) {
    std::string err;
    server_ = test::S3rver::start({dir_.path(), {testing::kBucket}}, &err);
    ASSERT_TRUE(server_) << err;
    proxy_ = test::FaultProxy::start(dir_.path(), server_->port(), rules, false, &err);
    ASSERT_TRUE(proxy_) << err;
    auto d = S3ObjectStore::open(testing::local_s3_config(server_->endpoint()));
    auto v = S3ObjectStore::open(testing::local_s3_config(proxy_->endpoint()));
    ASSERT_TRUE(d.ok() && v.ok());
    direct_ = std::move(d).value();
    via_ = std::move(v).value();
  }

  test::TempDir dir_;
  std::unique_ptr<test::S3rver> server_;
  std::unique_ptr<test::FaultProxy> proxy_;
  std::unique_ptr<S3ObjectStore> direct_, via_;
};

void expect_malformed(const ObjectResult<ListPage>& r, const std::string& what) {
  ASSERT_FALSE(r.ok()) << what << " was accepted";
  EXPECT_EQ(r.retry(), RetryClass::transient) << r.error().to_string();
  EXPECT_NE(r.error().message.find("malformed response"), std::string::npos)
      << r.error().to_string();
  EXPECT_NE(r.error().message.find(what), std::string::npos) << r.error().to_string();
}

TEST_F(S3BadInput, MalformedOrInconsistentListAnswersAreRejected) {
  const std::string head = "<ListBucketResult>";
  json rules = json::array({
      respond("GET", "prefix=cut", 200, head + "<IsTruncated>false</IsTrunc"),
      respond("GET", "prefix=html", 200, "<html><body>proxy error</body></html>"),
      respond("GET", "prefix=notoken", 200,
              head + "<IsTruncated>true</IsTruncated></ListBucketResult>"),
      respond("GET", "prefix=order", 200,
              head + "<IsTruncated>false</IsTruncated><Contents><Key>order/b</Key><Size>1</Size>"
                     "</Contents><Contents><Key>order/a</Key><Size>1</Size></Contents>"
                     "</ListBucketResult>"),
      respond("GET", "prefix=foreign", 200,
              head +
                  "<IsTruncated>false</IsTruncated><Contents><Key>elsewhere/a</Key><Size>1</Size>"
                  "</Contents></ListBucketResult>"),
      respond("GET", "prefix=size", 200,
              head + "<IsTruncated>false</IsTruncated><Contents><Key>size/a</Key><Size>12x</Size>"
                     "</Contents></ListBucketResult>"),
      // A 200 whose body stops mid-document.
      {{"method", "GET"},
       {"query_contains", "prefix=trunc"},
       {"action", "truncate"},
       {"fraction", 0.6}},
  });
  ASSERT_NO_FATAL_FAILURE(start(rules));
  expect_malformed(via_->list({"cut/", "", 10}), "malformed ListObjectsV2 XML");
  expect_malformed(via_->list({"html/", "", 10}), "root element is <html>");
  expect_malformed(via_->list({"notoken/", "", 10}), "NextContinuationToken is missing");
  expect_malformed(via_->list({"order/", "", 10}), "out of order");
  expect_malformed(via_->list({"foreign/", "", 10}), "lacks the prefix");
  expect_malformed(via_->list({"size/", "", 10}), "Size '12x'");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(direct_->put("trunc/k" + std::to_string(i), "x").ok());
  auto cut = via_->list({"trunc/", "", 10});
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.retry(), RetryClass::transient) << cut.error().to_string();
}

TEST_F(S3BadInput, NonXmlErrorBodiesAreClassifiedByStatus) {
  json rules = json::array({
      respond("GET", "", 503, "<html>Service Unavailable</html>"),
  });
  ASSERT_NO_FATAL_FAILURE(start(rules));
  auto r = via_->get("any/key");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.retry(), RetryClass::transient);
  EXPECT_EQ(r.error().http_status, 503);
  EXPECT_EQ(r.error().s3_code, "");
  EXPECT_NE(r.error().message.find("non-S3 error body: <html>Service Unavailable</html>"),
            std::string::npos)
      << r.error().message;
}

TEST_F(S3BadInput, RangedGetAnsweredWithTheWholeObjectIsSliced) {
  json rules = json::array(
      {{{"method", "GET"}, {"path_prefix", "/strata-test/whole/"}, {"action", "strip_range"}}});
  ASSERT_NO_FATAL_FAILURE(start(rules));
  Random rng(test::test_seed(21));
  const std::string data = testing::random_bytes(rng, 3 << 20);  // several curl buffers
  ASSERT_TRUE(direct_->put("whole/obj", data).ok());
  struct Case {
    uint64_t off, len;
  } cases[] = {{0, 1},
               {0, data.size()},
               {12345, 100},
               {1 << 20, 1 << 20},
               {data.size() - 10, 1000},
               {data.size() - 1, 1}};
  for (const auto& c : cases) {
    auto r = via_->get_range("whole/obj", c.off, c.len);
    ASSERT_TRUE(r.ok()) << c.off << "+" << c.len << ": " << r.error().to_string();
    uint64_t want = std::min<uint64_t>(c.len, data.size() - c.off);
    ASSERT_EQ(r->size(), want);
    EXPECT_TRUE(*r == data.substr(c.off, want)) << c.off << "+" << c.len;
  }
  // Past the end, the whole-object answer still tells the size: fatal, as
  // a 416 would be.
  auto past = via_->get_range("whole/obj", data.size(), 10);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.retry(), RetryClass::fatal) << past.error().to_string();
  // And the connection stays usable for the next request.
  auto again = via_->get_range("whole/obj", 5, 5);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, data.substr(5, 5));
}

TEST_F(S3BadInput, WrongPartialContentIsRejected) {
  json rules = json::array({
      respond("GET", "", 206, "56789", {{"Content-Range", "bytes 5-9/100"}}),
  });
  ASSERT_NO_FATAL_FAILURE(start(rules));
  // Asked for 0-9, got 5-9: does not cover the window.
  auto r = via_->get_range("k", 0, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.retry(), RetryClass::transient);
  EXPECT_NE(r.error().message.find("does not cover bytes=0-9"), std::string::npos)
      << r.error().message;
  // Asked for 5-14: covered as far as 9 but the object has 100 bytes.
  auto r2 = via_->get_range("k", 5, 10);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message.find("does not cover"), std::string::npos) << r2.error().message;
}

TEST_F(S3BadInput, PartialContentWithoutContentRangeIsRejected) {
  json rules = json::array({respond("GET", "", 206, "0123456789")});
  ASSERT_NO_FATAL_FAILURE(start(rules));
  auto r = via_->get_range("k", 0, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.retry(), RetryClass::transient);
  EXPECT_NE(r.error().message.find("206 with Content-Range '(none)'"), std::string::npos)
      << r.error().message;
}

TEST_F(S3BadInput, BatchDeleteAnswersAreCheckedKeyByKey) {
  const std::string ok_a = "<Deleted><Key>del/a</Key></Deleted>";
  json rules = json::array({
      // Batch 1: a confirmed, b skipped, c denied, d missing (= removed).
      {{"method", "POST"},
       {"query_contains", "delete"},
       {"times", 1},
       {"action", "respond"},
       {"status", 200},
       {"body",
        "<DeleteResult>" + ok_a +
            "<Error><Key>del/c</Key><Code>AccessDenied</Code><Message>no</Message></Error>"
            "<Error><Key>del/d</Key><Code>NoSuchKey</Code><Message>gone</Message></Error>"
            "<Error><Key>del/e</Key><Code>InternalError</Code><Message>retry</Message></Error>"
            "</DeleteResult>"}},
      // Batch 2: garbage.
      {{"method", "POST"},
       {"query_contains", "delete"},
       {"times", 1},
       {"action", "respond"},
       {"status", 200},
       {"body", "<DeleteResult><Deleted><Key>del/a"}},
  });
  ASSERT_NO_FATAL_FAILURE(start(rules));
  std::vector<std::string> keys = {"del/a", "del/b", "del/c", "del/d", "del/e"};
  auto out = via_->remove_many(keys);
  ASSERT_EQ(out.size(), keys.size());
  EXPECT_TRUE(out[0].ok());
  ASSERT_FALSE(out[1].ok());
  EXPECT_EQ(out[1].error->retry, RetryClass::transient);
  EXPECT_NE(out[1].error->message.find("neither confirms nor rejects"), std::string::npos);
  ASSERT_FALSE(out[2].ok());
  EXPECT_EQ(out[2].error->retry, RetryClass::fatal);
  EXPECT_EQ(out[2].error->s3_code, "AccessDenied");
  EXPECT_TRUE(out[3].ok()) << "NoSuchKey means already removed";
  ASSERT_FALSE(out[4].ok());
  EXPECT_EQ(out[4].error->retry, RetryClass::transient);
  auto garbage = via_->remove_many(keys);
  for (const auto& o : garbage) {
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.error->retry, RetryClass::transient);
    EXPECT_NE(o.error->message.find("malformed DeleteObjects XML"), std::string::npos)
        << o.error->message;
  }
}

}  // namespace
}  // namespace strata::objstore
