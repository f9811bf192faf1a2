// Stream and super stream names as RabbitMQ allows them, against a real
// `strata serve` child: any UTF-8 name of 1..255 bytes not starting with
// "amq." — spaces, '/', non-ASCII, names that look like the server's own
// temporary files — is created, used, and still there with everything it
// stored after a restart; a reserved or malformed name is refused with
// RabbitMQ's answer. The names' encoding on disk is unit-tested in
// tests/common/name_component_test.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/serve_fixture.h"

namespace strata::test {
namespace {

using namespace proto;
using json = nlohmann::json;

// A name a client switching from RabbitMQ may well use.
const std::string kOdd = "orders 2026/Q1 \xe2\x82\xac";  // "orders 2026/Q1 €"

class ServeNames : public ::testing::Test {
 protected:
  void SetUp() override { start(); }
  void start() {
    server_ = ServeProcess::start(dir_.sub("data"), {"--http", "127.0.0.1:0"}, dir_.path());
    ASSERT_GT(server_.port(), 0) << server_.process().stderr_text();
  }
  void restart() {
    ASSERT_EQ(server_.stop(), 0) << server_.process().stderr_text();
    start();
  }
  StreamClient open_client() {
    auto c = StreamClient::connect(server_.port());
    EXPECT_TRUE(c.ok()) << c.error().message;
    auto st = c->handshake();
    EXPECT_TRUE(st.ok()) << st.error().message;
    return std::move(c).value();
  }
  static ResponseCode create(StreamClient& c, const std::string& name) {
    EXPECT_TRUE(c.send(CreateStreamRequest{c.corr(), name, {}}).ok());
    auto r = c.expect<CreateStreamResponse>();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->code : ResponseCode::internal_error;
  }
  static ResponseCode create_super(StreamClient& c, const std::string& name,
                                   std::vector<std::string> partitions,
                                   std::vector<std::string> keys) {
    EXPECT_TRUE(
        c.send(CreateSuperStreamRequest{c.corr(), name, std::move(partitions), std::move(keys), {}})
            .ok());
    auto r = c.expect<CreateSuperStreamResponse>();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->code : ResponseCode::internal_error;
  }
  static std::optional<uint64_t> query(StreamClient& c, const std::string& stream) {
    EXPECT_TRUE(c.send(QueryOffsetRequest{c.corr(), "app", stream}).ok());
    auto q = c.expect<QueryOffsetResponse>();
    EXPECT_TRUE(q.ok()) << q.error().message;
    if (!q.ok() || q->code != ResponseCode::ok) return std::nullopt;
    return q->offset;
  }
  static std::vector<std::string> partitions(StreamClient& c, const std::string& super) {
    EXPECT_TRUE(c.send(PartitionsRequest{c.corr(), super}).ok());
    auto p = c.expect<PartitionsResponse>();
    EXPECT_TRUE(p.ok()) << p.error().message;
    if (!p.ok()) return {};
    EXPECT_EQ(p->code, ResponseCode::ok) << super;
    return p->streams;
  }
  json status() { return serve_status(server_); }
  std::string metrics() { return serve_http_get(server_, "/metrics"); }

  TempDir dir_;
  ServeProcess server_;
};

// Streams "x" and "x.tmp" (the temporary name the offsets file of "x" once
// had) and one with a space, a '/' and a non-ASCII character each keep
// their stored offsets across a restart. Before names were encoded, the
// tracking file of "x.tmp" was removed at every start as a leftover.
TEST_F(ServeNames, OffsetsOfEveryNameSurviveARestart) {
  const std::vector<std::string> names = {"x", "x.tmp", kOdd, "..", "a%2Fb", "q\"uote\\back"};
  {
    StreamClient c = open_client();
    uint64_t off = 10;
    for (const auto& n : names) {
      EXPECT_EQ(create(c, n), ResponseCode::ok) << n;
      ASSERT_TRUE(c.send(StoreOffsetRequest{"app", n, off}).ok());
      EXPECT_EQ(query(c, n), off) << n;
      off += 10;
    }
  }
  restart();
  StreamClient c = open_client();
  uint64_t off = 10;
  for (const auto& n : names) {
    EXPECT_EQ(query(c, n), off) << n;
    off += 10;
  }
  // Metadata, /status and /metrics show the names as they are.
  ASSERT_TRUE(c.send(MetadataRequest{c.corr(), names}).ok());
  auto md = c.expect<MetadataResponse>();
  ASSERT_TRUE(md.ok());
  ASSERT_EQ(md->streams.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(md->streams[i].stream, names[i]);
    EXPECT_EQ(md->streams[i].code, ResponseCode::ok) << names[i];
  }
  json st = status();
  ASSERT_TRUE(st.is_object()) << st.dump();
  for (const auto& n : names) EXPECT_TRUE(st["streams"].contains(n)) << n;
  // Label values escaped as the text format wants: \" and \\.
  const std::string m = metrics();
  EXPECT_NE(m.find("stream=\"" + kOdd + "\""), std::string::npos) << m;
  EXPECT_NE(m.find("stream=\"q\\\"uote\\\\back\""), std::string::npos) << m;
}

// Super streams "s" and "s.tmp" both survive a restart with their
// partitions (the file of "s.tmp" was once removed at start as a leftover
// temporary file, orphaning its partitions, and creating "s" wrote over
// it), and so does one with a non-ASCII name.
TEST_F(ServeNames, SuperStreamsNamedLikeTemporaryFilesSurviveARestart) {
  const std::vector<std::string> tmp_parts = {"s.tmp-0", "s.tmp-1"};
  const std::vector<std::string> odd_parts = {kOdd + "-0", kOdd + "/1"};
  {
    StreamClient c = open_client();
    EXPECT_EQ(create_super(c, "s.tmp", tmp_parts, {"a", "b"}), ResponseCode::ok);
    EXPECT_EQ(create_super(c, "s", {"s-0"}, {"a"}), ResponseCode::ok);
    EXPECT_EQ(create_super(c, kOdd, odd_parts, {"a", "b"}), ResponseCode::ok);
  }
  restart();
  StreamClient c = open_client();
  EXPECT_EQ(partitions(c, "s.tmp"), tmp_parts);
  EXPECT_EQ(partitions(c, "s"), std::vector<std::string>{"s-0"});
  EXPECT_EQ(partitions(c, kOdd), odd_parts);
  ASSERT_TRUE(c.send(RouteRequest{c.corr(), "b", kOdd}).ok());
  auto r = c.expect<RouteResponse>();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->streams, std::vector<std::string>{odd_parts[1]});
  // Still one super stream each: creating them again is refused.
  EXPECT_EQ(create_super(c, "s.tmp", tmp_parts, {"a", "b"}), ResponseCode::stream_already_exists);
}

// RabbitMQ refuses an empty name and one starting with "amq." with
// precondition_failed (17); strata does too, and also refuses what it
// cannot store: a name that is not UTF-8, longer than 255 bytes, or with
// NUL, CR or LF in it (RabbitMQ strips CR and LF instead).
TEST_F(ServeNames, ReservedAndMalformedNamesAreRefusedWithPreconditionFailed) {
  StreamClient c = open_client();
  for (const std::string& bad :
       {std::string("amq.x"), std::string(""), std::string("caf\xc3"), std::string("a\xff"),
        std::string("\xc0\xaf"), std::string(256, 'n'), std::string("a\0b", 3), std::string("a\nb"),
        std::string("a\rb")}) {
    EXPECT_EQ(create(c, bad), ResponseCode::precondition_failed) << bad;
    EXPECT_EQ(create_super(c, bad, {"p-" + std::to_string(bad.size())}, {"k"}),
              ResponseCode::precondition_failed)
        << bad;
  }
  // A reserved partition name refuses the whole super stream.
  EXPECT_EQ(create_super(c, "fine", {"fine-0", "amq.fine-1"}, {"a", "b"}),
            ResponseCode::precondition_failed);
  // "amq" without the dot, and "AMQ.", are ordinary names.
  EXPECT_EQ(create(c, "amq"), ResponseCode::ok);
  EXPECT_EQ(create(c, "AMQ.x"), ResponseCode::ok);
  EXPECT_EQ(create(c, std::string(255, 'n')), ResponseCode::ok);
}

}  // namespace
}  // namespace strata::test
