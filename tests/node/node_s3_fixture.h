// Fixture of the node tests against a real S3 server: s3rver on 127.0.0.1
// (started per test), the node's document pointed at it or at a proxy in
// front of it, a store straight to the server for the checks (so that a
// check never goes through an injected fault), awscli as the independent
// client, and the assertions every test ends with: every record persisted
// exactly once, the manifest consistent with the bucket.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "node/node.h"
#include "node/node_test_util.h"
#include "objstore/config.h"
#include "support/assertions.h"
#include "support/process.h"
#include "support/s3rver.h"
#include "support/temp_dir.h"
#include "tier/fragment_object.h"
#include "tier/object_keys.h"

namespace strata::node::test {

using json = nlohmann::json;

constexpr const char* kBucket = "strata-node";
constexpr const char* kPrefix = "t";  // small_node_doc's tiering.key_prefix

// S3 error bodies a fault proxy answers with.
inline const char* const kSlowDown =
    "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
inline const char* const kInternal =
    "<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message>"
    "</Error>";

// A fault_proxy rule answering `status` with `body` (XML when not empty)
// without forwarding.
inline json respond(int status, const std::string& body) {
  json r = {{"action", "respond"}, {"status", status}, {"body", body}};
  if (!body.empty()) r["headers"] = {{"Content-Type", "application/xml"}};
  return r;
}

// The tests' configuration comes from their documents only, never from the
// AWS_* variables of whoever runs them.
inline objstore::EnvLookup no_env() {
  return [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
}

// Deadlines of the node's S3 client (objstore.s3.*).
struct S3Timeouts {
  int connect_ms = 1000;
  int request_ms = 2000;
  int stall_ms = 1000;  // the loader's minimum
};

inline bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Offsets [0, next) are each in the persisted remote tier exactly once with
// the value written, and the audit found no damage (no gap, no overlap, no
// missing or corrupt object).
inline void expect_exactly_once(const RemoteView& v, uint64_t next) {
  for (const auto& e : v.errors) ADD_FAILURE() << e;
  EXPECT_EQ(v.audit.manifest.first_offset, 0u);
  EXPECT_EQ(v.audit.manifest.next_offset, next);
  ASSERT_EQ(v.records.size(), next);
  for (uint64_t i = 0; i < next; ++i) {
    auto it = v.records.find(i);
    ASSERT_TRUE(it != v.records.end()) << "offset " << i << " is missing";
    ASSERT_EQ(it->second, value_of(i)) << "offset " << i;
  }
}

// One value of the Prometheus text, by its series ("name{labels}").
inline std::optional<double> metric_value(const std::string& text, const std::string& series) {
  size_t pos = 0;
  while ((pos = text.find(series + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      size_t end = text.find('\n', pos);
      return std::stod(text.substr(pos + series.size() + 1, end - pos - series.size() - 1));
    }
    pos += series.size();
  }
  return std::nullopt;
}

inline uint64_t count_of(const json& counters, const std::string& key) {
  return counters.contains(key) ? counters[key].get<uint64_t>() : 0;
}

// Lists `prefix` of `bucket` with awscli (s3api list-objects-v2, every page):
// key -> size. On failure returns nullopt and the output in *error.
inline std::optional<std::map<std::string, uint64_t>> aws_list(const std::string& endpoint,
                                                               const std::string& bucket,
                                                               const std::string& prefix,
                                                               std::string* error) {
  auto r = strata::test::run({"aws", "--endpoint-url", endpoint, "--output", "json", "s3api",
                              "list-objects-v2", "--bucket", bucket, "--prefix", prefix},
                             strata::test::S3rver::aws_env(), std::chrono::seconds(60));
  if (r.status != 0) {
    *error = "aws s3api list-objects-v2 exited with " + std::to_string(r.status) + ": " + r.output;
    return std::nullopt;
  }
  std::map<std::string, uint64_t> out;
  if (r.output.find_first_not_of(" \n") == std::string::npos) return out;  // no object at all
  auto j = json::parse(r.output, nullptr, false);
  if (j.is_discarded()) {
    *error = "aws printed no JSON: " + r.output;
    return std::nullopt;
  }
  for (const auto& o : j.value("Contents", json::array())) {
    out[o["Key"].get<std::string>()] = o["Size"].get<uint64_t>();
  }
  return out;
}

// Every object the audit found referenced (root, groups, fragments) is in
// awscli's listing with the size it must have: a fragment the size its
// header implies (data bytes and chunk count), a root or group the size of
// the body our client reads.
inline void expect_listing_matches_audit(const std::map<std::string, uint64_t>& listed,
                                         objstore::ObjectStore& store,
                                         const tier::AuditReport& audit,
                                         const tier::ObjectKeys& keys) {
  ASSERT_FALSE(audit.referenced.empty());
  for (const auto& key : audit.referenced) {
    auto it = listed.find(key);
    ASSERT_TRUE(it != listed.end()) << key << " is referenced but awscli does not list it";
    auto body = store.get(key);
    ASSERT_TRUE(body.ok()) << body.error().to_string();
    uint64_t want = body->size();
    auto parsed = keys.parse(key);
    ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
    if (parsed->type == tier::ObjectType::fragment) {
      auto f = tier::decode_fragment(*body, key, true);
      ASSERT_TRUE(f.ok()) << f.error().to_string();
      want = tier::fragment_object_size(f->header.meta.size, f->header.meta.chunk_count);
    }
    EXPECT_EQ(it->second, want) << key;
  }
  // Whatever else is listed is an object of this stream nothing references
  // (an old root within its grace, a retried upload's first copy, a PUT a
  // proxy delivered after the client gave up on it).
  for (const auto& [key, size] : listed) {
    EXPECT_TRUE(keys.parse(key).ok()) << key << " is not an object of stream " << keys.stream();
  }
}

// Sends one command to haproxy's admin socket; returns its answer.
inline std::string haproxy_command(const std::string& socket_path, const std::string& command) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return "socket: " + std::string(std::strerror(errno));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, socket_path.c_str(), sizeof a.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::string e = "connect " + socket_path + ": " + std::strerror(errno);
    ::close(fd);
    return e;
  }
  std::string line = command + "\n";
  (void)!::write(fd, line.data(), line.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  ::close(fd);
  return out;
}

inline tier::ObjectKeys keys_of(const std::string& stream) {
  return *tier::ObjectKeys::make(kPrefix, stream);
}
// The request path (path-style) of the stream's keys under `rest`, for
// proxy rules.
inline std::string path_of(const std::string& stream, const std::string& rest = "") {
  return std::string("/") + kBucket + "/" + keys_of(stream).stream_prefix() + rest;
}

class NodeS3 : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    server_ = strata::test::S3rver::start({dir_.path(), {kBucket}}, &err);
    ASSERT_TRUE(server_) << err;
    objstore::ObjectStoreConfig c;
    c.backend = objstore::ObjectStoreConfig::Backend::s3;
    c.s3.endpoint = server_->endpoint();
    c.s3.bucket = kBucket;
    c.s3.access_key_id = strata::test::S3rver::kAccessKey;
    c.s3.secret_access_key = strata::test::S3rver::kSecretKey;
    c.s3.addressing = objstore::Addressing::path;
    auto s = objstore::open_object_store(c);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    direct_ = std::move(s).value();
  }

  // A failure with the server gone is usually the server's own: say so,
  // with what it printed.
  void TearDown() override {
    if (HasFailure() && server_ && !server_->running()) {
      ADD_FAILURE() << "s3rver exited during the test; its output:\n" << server_->logs();
    }
  }

  // small_node_doc with an S3 object store at `endpoint` (path-style).
  static json s3_doc(const std::string& endpoint, const S3Timeouts& t = {}) {
    json doc = small_node_doc();
    doc["objstore"] = {{"backend", "s3"},
                       {"s3",
                        {{"endpoint", endpoint},
                         {"bucket", kBucket},
                         {"region", "us-east-1"},
                         {"addressing", "path"},
                         {"access_key_id", strata::test::S3rver::kAccessKey},
                         {"secret_access_key", strata::test::S3rver::kSecretKey},
                         {"connect_timeout_ms", t.connect_ms},
                         {"request_timeout_ms", t.request_ms},
                         {"stall_timeout_ms", t.stall_ms}}}};
    return doc;
  }

  Result<std::unique_ptr<Node>> try_open(const json& doc) {
    auto cfg = load_node_config(doc, data_.path(), no_env());
    if (!cfg.ok()) return std::move(cfg).error();
    return Node::open(*cfg);
  }

  std::unique_ptr<Node> open_node(const json& doc) {
    auto n = try_open(doc);
    EXPECT_TRUE(n.ok()) << n.error().to_string();
    return n.ok() ? std::move(n).value() : nullptr;
  }

  RemoteView remote(Node& n, const std::string& stream) {
    return read_remote(*direct_, n.catalog(), kPrefix, stream);
  }

  // The bucket as awscli lists it against the audit of `v`.
  void expect_bucket_matches(const RemoteView& v, const std::string& stream) {
    std::string err;
    auto keys = keys_of(stream);
    auto listed = aws_list(server_->endpoint(), kBucket, keys.stream_prefix(), &err);
    ASSERT_TRUE(listed) << err;
    expect_listing_matches_audit(*listed, *direct_, v.audit, keys);
  }

  strata::test::TempDir dir_;   // s3rver's data and the proxies' files
  strata::test::TempDir data_;  // the node's data directory
  std::unique_ptr<strata::test::S3rver> server_;
  std::unique_ptr<objstore::ObjectStore> direct_;  // straight to s3rver
};

}  // namespace strata::node::test
