// Signing proof. s3rver does not check SigV4 signatures, so a recording
// proxy (tools/fault_proxy.js) captures the requests strata sends, byte for
// byte, and an independent implementation — botocore's S3SigV4Auth, run by
// tools/sigv4_verify.py with Debian's /usr/bin/python3 — recomputes every
// Authorization header and checks the path and query are canonical.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "backends.h"
#include "support/fault_proxy.h"

namespace strata::objstore {
namespace {

using json = nlohmann::json;

struct Verdict {
  int status;
  std::string output;
};

Verdict run_oracle(const std::string& recording) {
  auto r =
      test::run({"/usr/bin/python3", test::tools_path("sigv4_verify.py"), "--secret",
                 test::S3rver::kSecretKey, "--access-key", test::S3rver::kAccessKey, recording});
  return {r.status, r.output};
}

class S3Signing : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    server_ = test::S3rver::start({dir_.path(), {testing::kBucket}}, &err);
    ASSERT_TRUE(server_) << err;
    proxy_ = test::FaultProxy::start(dir_.path(), server_->port(), json::array(), true, &err);
    ASSERT_TRUE(proxy_) << err;
  }

  std::unique_ptr<S3ObjectStore> open(S3Config c) {
    auto s = S3ObjectStore::open(c);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return std::move(s).value();
  }

  // Runs every operation of the interface, with awkward keys.
  void exercise(ObjectStore& store) {
    const std::vector<std::string> keys = {"sig/plain", "sig/with space/and+plus=eq",
                                           "sig/caf\xC3\xA9/\xE2\x82\xAC \xF0\x9F\x98\x80",
                                           "sig/sym/a&b?c#d%e~f'g(h)"};
    for (const auto& k : keys) ASSERT_TRUE(store.put(k, "body of " + k).ok()) << k;
    for (const auto& k : keys) {
      ASSERT_TRUE(store.get(k).ok()) << k;
      ASSERT_TRUE(store.get_range(k, 2, 5).ok()) << k;
      ASSERT_TRUE(store.head(k).ok()) << k;
    }
    // Page by one key, so continuation tokens (base64 with + / =) travel.
    ListRequest req{"sig/", "", 1};
    int pages = 0;
    while (true) {
      auto page = store.list(req);
      ASSERT_TRUE(page.ok()) << page.error().to_string();
      ++pages;
      if (page->next_token.empty()) break;
      req.continuation_token = page->next_token;
    }
    EXPECT_EQ(pages, 4);
    ASSERT_TRUE(store.list({"sig/with space/", "", 10}).ok());
    ASSERT_TRUE(store.remove(keys[0]).ok());
    std::vector<std::string> rest(keys.begin() + 1, keys.end());
    // s3rver answers 500 when the parallel deletes of a batch race to clean
    // up their directory; a retry (signed afresh) finishes the job.
    for (int attempt = 0; attempt < 5 && !rest.empty(); ++attempt) {
      std::vector<std::string> again;
      for (const auto& o : store.remove_many(rest)) {
        if (o.ok()) continue;
        ASSERT_EQ(o.error->retry, RetryClass::transient) << o.error->to_string();
        again.push_back(o.key);
      }
      rest = std::move(again);
    }
    ASSERT_TRUE(rest.empty());
    ASSERT_TRUE(store.check_access().ok());
  }

  test::TempDir dir_;
  std::unique_ptr<test::S3rver> server_;
  std::unique_ptr<test::FaultProxy> proxy_;
};

TEST_F(S3Signing, BotocoreAcceptsEveryRequestPathStyle) {
  auto store = open(testing::local_s3_config(proxy_->endpoint()));
  exercise(*store);
  auto recorded = proxy_->recorded();
  // What the proof must cover, from the recording itself.
  bool put_unicode = false, ranged = false, list_token = false, list_prefix = false,
       delete_many = false, head = false;
  for (const auto& r : recorded) {
    std::string m = r["method"], t = r["target"];
    if (m == "PUT" && t.find("%E2%82%AC%20%F0%9F%98%80") != std::string::npos) put_unicode = true;
    for (const auto& h : r["headers"])
      if (h[0] == "Range") ranged = true;
    if (t.find("continuation-token=") != std::string::npos) list_token = true;
    if (t.find("prefix=sig%2Fwith%20space%2F") != std::string::npos) list_prefix = true;
    if (m == "POST" && t.find("?delete=") != std::string::npos) delete_many = true;
    if (m == "HEAD") head = true;
  }
  EXPECT_TRUE(put_unicode && ranged && list_token && list_prefix && delete_many && head)
      << put_unicode << ranged << list_token << list_prefix << delete_many << head;
  Verdict v = run_oracle(proxy_->record_path());
  EXPECT_EQ(v.status, 0) << v.output;
  EXPECT_NE(v.output.find(fmt::format("\"verified\": {}, \"failed\": 0", recorded.size())),
            std::string::npos)
      << v.output;
}

TEST_F(S3Signing, BotocoreAcceptsVirtualHostedRequestsWithASessionToken) {
  S3Config c = testing::local_s3_config("http://s3.localhost:" + std::to_string(proxy_->port()));
  c.addressing = Addressing::virtual_hosted;
  c.session_token = "FwoGZXIvYXdzEJr//////////wEaDNaZ+tokenwith/slash=";
  auto store = open(c);
  exercise(*store);
  auto recorded = proxy_->recorded();
  ASSERT_FALSE(recorded.empty());
  for (const auto& r : recorded) {
    bool vhost = false, token = false;
    for (const auto& h : r["headers"]) {
      if (h[0] == "Host" && std::string(h[1]).rfind("strata-test.s3.localhost:", 0) == 0)
        vhost = true;
      if (h[0] == "x-amz-security-token") token = true;
    }
    EXPECT_TRUE(vhost && token) << r.dump();
  }
  Verdict v = run_oracle(proxy_->record_path());
  EXPECT_EQ(v.status, 0) << v.output;
}

// The oracle must be able to fail: tampered or non-canonical requests are
// rejected (otherwise the proofs above prove nothing).
TEST_F(S3Signing, OracleRejectsTamperedAndNonCanonicalRequests) {
  auto store = open(testing::local_s3_config(proxy_->endpoint()));
  ASSERT_TRUE(store->put("sig/a", "x").ok());
  ASSERT_TRUE(store->list({"sig/", "", 10}).ok());
  auto recorded = proxy_->recorded();
  ASSERT_EQ(recorded.size(), 2u);
  ASSERT_EQ(run_oracle(proxy_->record_path()).status, 0);

  auto write_one = [&](const json& rec) {
    std::string path = dir_.sub("tampered.jsonl");
    std::ofstream(path) << rec.dump() << "\n";
    return run_oracle(path);
  };
  // A different key than the one signed.
  json put = recorded[0];
  put["target"] = std::string(put["target"]) + "x";
  Verdict v1 = write_one(put);
  EXPECT_NE(v1.status, 0);
  EXPECT_NE(v1.output.find("signature mismatch"), std::string::npos) << v1.output;
  // A signed header changed in transit.
  json put2 = recorded[0];
  for (auto& h : put2["headers"])
    if (h[0] == "x-amz-meta-crc32c") h[1] = "00000000";
  EXPECT_NE(write_one(put2).status, 0);
  // The same list query in non-canonical order: what libcurl 7.88 would sign
  // as given and S3 would reject.
  json list = recorded[1];
  std::string t = list["target"];
  auto q = t.find('?');
  ASSERT_NE(q, std::string::npos);
  std::string query = t.substr(q + 1);  // list-type=2&max-keys=10&prefix=sig%2F
  auto amp = query.find('&');
  list["target"] = t.substr(0, q + 1) + query.substr(amp + 1) + "&" + query.substr(0, amp);
  Verdict v3 = write_one(list);
  EXPECT_NE(v3.status, 0);
  EXPECT_NE(v3.output.find("is not canonical"), std::string::npos) << v3.output;
  // Lowercase percent-encoding is not canonical either.
  json list2 = recorded[1];
  std::string t2 = list2["target"];
  t2.replace(t2.find("%2F"), 3, "%2f");
  list2["target"] = t2;
  EXPECT_NE(write_one(list2).status, 0);
}

}  // namespace
}  // namespace strata::objstore
