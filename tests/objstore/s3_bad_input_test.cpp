// Bad input from the server side: answers that are well-formed HTTP but
// wrong S3 — malformed or inconsistent XML, a 200 whose body was cut, a
// ranged GET answered with the whole object or the wrong range, batch
// delete answers that skip keys. Served by tools/fault_proxy.js in front of
// a real s3rver. The client must classify each, never return wrong bytes,
// and keep what is stored intact.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <span>
#include <vector>

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

// A server (or proxy) that drops the Range header answers 200 with the
// whole object: that is refused, fatal, from the headers alone - the body
// is never read, so memory stays bounded by the caller's buffer whatever
// the object's size.
TEST_F(S3BadInput, RangedGetAnsweredWithTheWholeObjectIsFatalBeforeTheBody) {
  json rules = json::array(
      {{{"method", "GET"}, {"path_prefix", "/strata-test/whole/"}, {"action", "strip_range"}}});
  ASSERT_NO_FATAL_FAILURE(start(rules));
  Random rng(test::test_seed(21));
  const std::string data = testing::random_bytes(rng, 3 << 20);  // several curl buffers
  ASSERT_TRUE(direct_->put("whole/obj", data).ok());
  ASSERT_TRUE(direct_->put("other/obj", data).ok());
  std::vector<uint8_t> buf(data.size() + 100);
  struct Case {
    uint64_t off, len;
  } refused[] = {{0, 1},
                 {12345, 100},
                 {1 << 20, 1 << 20},
                 {data.size() - 10, 1000},
                 {data.size() - 1, 1},
                 {0, data.size() - 1}};
  for (const auto& c : refused) {
    const std::string what = fmt::format("{}+{}", c.off, c.len);
    auto r = via_->read_range("whole/obj", c.off, std::span<uint8_t>(buf.data(), c.len));
    ASSERT_FALSE(r.ok()) << what << ": accepted a 200 to a ranged GET";
    const ObjectError& e = r.error();
    EXPECT_EQ(e.retry, RetryClass::fatal) << what << ": " << e.to_string();
    EXPECT_EQ(e.op, Op::get_range);
    EXPECT_EQ(e.key, "whole/obj");
    EXPECT_EQ(e.http_status, 200);
    EXPECT_NE(e.message.find("ignored the Range header"), std::string::npos) << e.to_string();
    EXPECT_NE(e.message.find(fmt::format("bytes={}-{}", c.off, c.off + c.len - 1)),
              std::string::npos)
        << e.to_string();
    EXPECT_NE(e.message.find(fmt::format("whole object of {} bytes", data.size())),
              std::string::npos)
        << e.to_string();
    EXPECT_NE(e.message.find("aborted before the body"), std::string::npos) << e.to_string();
    // get_range is read_range: the same verdict.
    auto g = via_->get_range("whole/obj", c.off, c.len);
    ASSERT_FALSE(g.ok()) << what;
    EXPECT_EQ(g.retry(), RetryClass::fatal);
  }
  // Offset 0 and a buffer that holds the whole object: the whole object is
  // exactly what was asked for.
  for (uint64_t len : {uint64_t(data.size()), uint64_t(data.size() + 100)}) {
    auto r = via_->read_range("whole/obj", 0, std::span<uint8_t>(buf.data(), len));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(*r, data.size());
    EXPECT_TRUE(BytesView(reinterpret_cast<const char*>(buf.data()), *r) == data);
  }
  // Past the end, the whole-object answer still tells the size: fatal, as
  // a 416 would be.
  auto past = via_->get_range("whole/obj", data.size(), 10);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.retry(), RetryClass::fatal) << past.error().to_string();
  EXPECT_NE(past.error().message.find("not below the object size"), std::string::npos);
  // Aborted transfers leave the client usable.
  auto again = via_->get_range("other/obj", 5, 5);
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(*again, data.substr(5, 5));
}

// A 206 that carries more than was asked (from before the offset, or past
// the window) is refused before its body: fatal, the server does not
// honour Range. A Content-Length that contradicts the Content-Range is a
// garbled answer: transient.
TEST_F(S3BadInput, PartialContentBeyondTheWindowIsRefused) {
  auto canned = [](const char* path, const std::string& body, const char* content_range) {
    return json{{"method", "GET"},     {"path_prefix", path},
                {"action", "respond"}, {"status", 206},
                {"body", body},        {"headers", {{"Content-Range", content_range}}}};
  };
  json rules = json::array({
      canned("/strata-test/long/", "0123456789", "bytes 0-9/100"),
      canned("/strata-test/early/", "0123456789", "bytes 0-9/100"),
      // What s3rver 3.7.1 sends for bytes=0-0: everything from byte 0.
      canned("/strata-test/first/", "0123456789", "bytes 0-9/10"),
      {{"method", "GET"},
       {"path_prefix", "/strata-test/lying/"},
       {"action", "content_length"},
       {"delta", 1000}},
  });
  ASSERT_NO_FATAL_FAILURE(start(rules));
  uint8_t buf[64];
  // Asked 0-4, sent 0-9.
  auto lng = via_->read_range("long/k", 0, std::span<uint8_t>(buf, 5));
  ASSERT_FALSE(lng.ok());
  EXPECT_EQ(lng.retry(), RetryClass::fatal) << lng.error().to_string();
  EXPECT_NE(lng.error().message.find("more than asked"), std::string::npos)
      << lng.error().to_string();
  EXPECT_NE(lng.error().message.find("bytes=0-4 (5 bytes)"), std::string::npos)
      << lng.error().to_string();
  EXPECT_NE(lng.error().message.find("Content-Range bytes 0-9/100 (10 bytes)"), std::string::npos)
      << lng.error().to_string();
  // Asked 5-9, sent 0-9.
  auto early = via_->read_range("early/k", 5, std::span<uint8_t>(buf, 5));
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.retry(), RetryClass::fatal) << early.error().to_string();
  EXPECT_NE(early.error().message.find("more than asked"), std::string::npos);
  // The one tolerated over-long answer: bytes=0-0 gets its first byte.
  auto first = via_->read_range("first/k", 0, std::span<uint8_t>(buf, 1));
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_EQ(*first, 1u);
  EXPECT_EQ(buf[0], '0');
  // A real 206 whose Content-Length claims 1000 bytes more than its range.
  ASSERT_TRUE(direct_->put("lying/k", std::string(100, 'x')).ok());
  auto lying = via_->read_range("lying/k", 10, std::span<uint8_t>(buf, 20));
  ASSERT_FALSE(lying.ok());
  EXPECT_EQ(lying.retry(), RetryClass::transient) << lying.error().to_string();
  EXPECT_NE(lying.error().message.find("Content-Length 1020 does not match"), std::string::npos)
      << lying.error().to_string();
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
