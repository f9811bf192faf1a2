// Where strata answers as RabbitMQ 3.13/4.x answers (rabbit_stream_reader,
// rabbit_stream_manager; docs/formats/protocol-frames.md): each case sends
// what a stock client sends and checks the answer RabbitMQ gives.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "common/bytes.h"
#include "common/endian.h"
#include "server/serve_fixture.h"

namespace strata::test {
namespace {

std::vector<std::string> numbered(int n, const std::string& prefix) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

class RabbitAnswersTest : public ServeTest {
 protected:
  ResponseCode create_answer(StreamClient& c, const std::string& name, Properties args) {
    uint32_t corr = c.corr();
    EXPECT_TRUE(c.send(CreateStreamRequest{corr, name, std::move(args)}).ok());
    auto r = c.expect<CreateStreamResponse>();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->code : ResponseCode::internal_error;
  }
  // The connection still answers requests.
  static bool answers(StreamClient& c) {
    if (!c.send(MetadataRequest{c.corr(), {"x"}}).ok()) return false;
    return c.expect<MetadataResponse>(5s).ok();
  }
};

// An unknown command, and a known command in a version strata does not
// read, close the connection with 13 "unknown frame" (a Close request), as
// RabbitMQ does; they are not answered as requests.
TEST_F(RabbitAnswersTest, UnknownCommandOrVersionClosesWith13) {
  for (const auto& [key, version] : {std::pair<uint16_t, uint16_t>{0x7e, 1}, {kMetadata, 9}}) {
    StreamClient c = open_client();
    Bytes f;
    size_t start = begin_frame(&f, key, version);
    WireWriter w(&f);
    w.u32(4242);
    w.u32(0);
    finish_frame(&f, start);
    ASSERT_TRUE(c.send_raw(f).ok());
    auto close = c.expect<CloseRequest>();
    ASSERT_TRUE(close.ok()) << close.error().message;
    EXPECT_EQ(close->code, ResponseCode::unknown_frame) << command_name(key);
    ASSERT_TRUE(c.send(CloseResponse{close->correlation_id, ResponseCode::ok}).ok());
    EXPECT_TRUE(c.closed_by_server());
  }
}

// ExchangeCommandVersions lists what a client may send, as RabbitMQ 4.x's
// command_versions(): Publish up to 2 (clients look for it before they
// publish filter values), ResolveOffsetSpec; no server commands.
TEST_F(RabbitAnswersTest, ExchangeCommandVersionsListsTheClientCommands) {
  StreamClient c = open_client();
  ASSERT_TRUE(c.send(ExchangeCommandVersionsRequest{c.corr(), {{kDeliver, 1, 2}}}).ok());
  auto r = c.expect<ExchangeCommandVersionsResponse>();
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::map<uint16_t, std::pair<uint16_t, uint16_t>> got;
  for (const auto& v : r->versions) got[v.key] = {v.min_version, v.max_version};
  const std::map<uint16_t, std::pair<uint16_t, uint16_t>> want = {
      {0x01, {1, 1}}, {0x02, {1, 2}}, {0x05, {1, 1}}, {0x06, {1, 1}}, {0x07, {1, 1}},
      {0x09, {1, 1}}, {0x0a, {1, 1}}, {0x0b, {1, 1}}, {0x0c, {1, 1}}, {0x0d, {1, 1}},
      {0x0e, {1, 1}}, {0x0f, {1, 1}}, {0x16, {1, 1}}, {0x17, {1, 1}}, {0x18, {1, 1}},
      {0x19, {1, 1}}, {0x1c, {1, 1}}, {0x1d, {1, 1}}, {0x1e, {1, 1}}, {0x1f, {1, 1}}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(r->versions.size(), want.size());
}

// Peer properties name the product and its version beside the RabbitMQ
// version whose features clients may use.
TEST_F(RabbitAnswersTest, PeerPropertiesNameStrataAndTheRabbitMqVersionItSpeaks) {
  StreamClient c = open_client();
  std::map<std::string, std::string> p(c.peer_properties.properties.begin(),
                                       c.peer_properties.properties.end());
  EXPECT_EQ(p["product"], "strata");
  EXPECT_EQ(p["version"], "3.13.0");
  EXPECT_FALSE(p["strata_version"].empty());
  EXPECT_NE(p["information"].find("RabbitMQ 3.13.0"), std::string::npos) << p["information"];
}

// The negotiated frame_max bounds the size field (the bytes after it), as
// RabbitMQ's `Size =< FrameMax`: a frame whose size field is frame_max is
// taken, one byte more is refused with 14.
TEST_F(RabbitAnswersTest, FrameMaxBoundsTheSizeField) {
  // The smallest frame_max the server takes, so one stream name (int16
  // length) can fill a whole frame.
  restart_with_config("small-frames.json", R"({"server": {"frame_max": 8192}})");
  StreamClient c = open_client();
  const uint32_t max = c.server_tune.frame_max;
  ASSERT_EQ(max, 8192u);
  // A Metadata request padded with stream names to exactly `max` bytes
  // after the size field.
  auto metadata_of_size = [&](uint32_t size) {
    Bytes f;
    size_t start = begin_frame(&f, kMetadata, 1);
    WireWriter w(&f);
    w.u32(c.corr());
    const size_t fixed = 4 + 4 + 4 + 2;  // head, correlation, count, string length
    w.count(1);
    w.string(std::string(size - fixed, 'n'));
    finish_frame(&f, start);
    EXPECT_EQ(get_be32(u8(f.data())), size);
    return f;
  };
  ASSERT_TRUE(c.send_raw(metadata_of_size(max)).ok());
  auto r = c.expect<MetadataResponse>();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(c.send_raw(metadata_of_size(max + 1)).ok());
  auto close = c.expect<CloseRequest>();
  ASSERT_TRUE(close.ok()) << close.error().message;
  EXPECT_EQ(close->code, ResponseCode::frame_too_large);
}

// Create's arguments as RabbitMQ takes them: unknown names ignored,
// stream-filter-size-bytes 16..255, strata's own x-strata-* names checked;
// an existing stream created again with the arguments it was created with
// is 5 (already exists), with others 17 (precondition failed).
TEST_F(RabbitAnswersTest, CreateArgumentsAsRabbitMqTakesThem) {
  StreamClient c = open_client();
  EXPECT_EQ(create_answer(c, "lenient", {{"x-queue-type", "stream"}, {"some-future-arg", "1"}}),
            ResponseCode::ok);
  EXPECT_EQ(create_answer(c, "filtered", {{"stream-filter-size-bytes", "32"}}), ResponseCode::ok);
  EXPECT_EQ(create_answer(c, "f-small", {{"stream-filter-size-bytes", "15"}}),
            ResponseCode::precondition_failed);
  EXPECT_EQ(create_answer(c, "f-large", {{"stream-filter-size-bytes", "256"}}),
            ResponseCode::precondition_failed);
  EXPECT_EQ(create_answer(c, "typo", {{"x-strata-tierin", "true"}}),
            ResponseCode::precondition_failed);
  EXPECT_FALSE(std::filesystem::exists(dir_.sub("data/streams/typo")));
  std::ifstream f(dir_.sub("data/streams/filtered/settings.json"));
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"filter_size_bytes\":32"), std::string::npos) << text;

  EXPECT_EQ(create_answer(c, "once", {{"max-length-bytes", "1000000"}}), ResponseCode::ok);
  EXPECT_EQ(create_answer(c, "once", {{"max-length-bytes", "1000000"}, {"unknown", "x"}}),
            ResponseCode::stream_already_exists);
  EXPECT_EQ(create_answer(c, "once", {{"max-length-bytes", "2000000"}}),
            ResponseCode::precondition_failed);
  EXPECT_EQ(create_answer(c, "once", {}), ResponseCode::precondition_failed);
  EXPECT_EQ(create_answer(c, "lenient", {}), ResponseCode::stream_already_exists);
  // The stream is as it was created.
  std::ifstream g(dir_.sub("data/streams/once/settings.json"));
  std::string once((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
  EXPECT_NE(once.find("\"max_bytes\":1000000"), std::string::npos) << once;
}

// A second publisher with the same reference on the same stream and
// connection: 17, as RabbitMQ answers (two would share one deduplication
// sequence). The same reference on another stream is another publisher.
TEST_F(RabbitAnswersTest, SecondPublisherWithTheSameReferenceIsRefused) {
  StreamClient c = open_client();
  create(c, "a");
  create(c, "b");
  declare(c, 1, "a", "app");
  declare(c, 2, "a", "app", ResponseCode::precondition_failed);
  declare(c, 3, "b", "app");
  declare(c, 4, "a", "");
  declare(c, 5, "a", "");
  // Once the first is gone, the reference is free again.
  ASSERT_TRUE(c.send(DeletePublisherRequest{c.corr(), 1}).ok());
  ASSERT_EQ(c.expect<DeletePublisherResponse>()->code, ResponseCode::ok);
  declare(c, 2, "a", "app");
}

// Credit for a single active consumer its group has not activated: a
// CreditResponse with 17 (RabbitMQ keeps the credit for the consumer's
// activation); the connection stays.
TEST_F(RabbitAnswersTest, CreditToAnInactiveSingleActiveConsumerAnswers17) {
  StreamClient pub = open_client();
  create(pub, "sac");
  declare(pub, 1, "sac");
  publish_confirmed(pub, 1, 0, numbered(4, "m"));
  Properties props = {{"single-active-consumer", "true"}, {"name", "g"}};
  StreamClient a = open_client();
  ASSERT_TRUE(a.send(SubscribeRequest{a.corr(), 1, "sac", {OffsetType::first, 0}, 1, props}).ok());
  ASSERT_EQ(a.expect<SubscribeResponse>()->code, ResponseCode::ok);
  auto up = a.expect<ConsumerUpdateRequest>();
  ASSERT_TRUE(up.ok());
  ASSERT_TRUE(a.send(ConsumerUpdateResponse{up->correlation_id, ResponseCode::ok,
                                            OffsetSpec{OffsetType::first, 0}})
                  .ok());
  StreamClient b = open_client();
  ASSERT_TRUE(b.send(SubscribeRequest{b.corr(), 7, "sac", {OffsetType::first, 0}, 0, props}).ok());
  ASSERT_EQ(b.expect<SubscribeResponse>()->code, ResponseCode::ok);
  ASSERT_TRUE(b.send(CreditRequest{7, 5}).ok());
  auto cr = b.expect<CreditResponse>();
  ASSERT_TRUE(cr.ok()) << cr.error().message;
  EXPECT_EQ(cr->code, ResponseCode::precondition_failed);
  EXPECT_EQ(cr->subscription_id, 7);
  EXPECT_TRUE(answers(b));
  // The kept credit is what b receives with once it is activated.
  a = StreamClient();
  auto up2 = b.expect<ConsumerUpdateRequest>();
  ASSERT_TRUE(up2.ok()) << up2.error().message;
  ASSERT_TRUE(b.send(ConsumerUpdateResponse{up2->correlation_id, ResponseCode::ok,
                                            OffsetSpec{OffsetType::first, 0}})
                  .ok());
  auto d = b.expect<DeliverFrame>();
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->subscription_id, 7);
}

// The Java client answers ConsumerUpdate with offset type 0 ("none") —
// always when told it is inactive, and when activated unless the
// application gives an offset. RabbitMQ reads none as "where the
// subscription said" for an activation and as nothing for a deactivation.
// Single active consumers on a super stream partition, all on one
// connection as the Java client has them: a rebalance deactivates the
// first one (answered with none), activates the second (answered with
// none: its subscription's offset), and the shared connection carries on.
TEST_F(RabbitAnswersTest, ConsumerUpdateAnsweredWithOffsetTypeNone) {
  StreamClient c = open_client();
  ASSERT_TRUE(
      c.send(CreateSuperStreamRequest{c.corr(), "inv", {"inv-0", "inv-1"}, {"a", "b"}, {}}).ok());
  ASSERT_EQ(c.expect<CreateSuperStreamResponse>()->code, ResponseCode::ok);
  declare(c, 1, "inv-1");
  publish_confirmed(c, 1, 0, numbered(6, "m"));
  Properties props = {{"single-active-consumer", "true"}, {"name", "app"}, {"super-stream", "inv"}};
  auto none = [&](uint32_t corr) {
    return c.send(ConsumerUpdateResponse{corr, ResponseCode::ok, std::nullopt});
  };
  // Partition 1 with one member: it is active; answered with none, it
  // starts at its subscription's offset (first).
  ASSERT_TRUE(
      c.send(SubscribeRequest{c.corr(), 1, "inv-1", {OffsetType::first, 0}, 10, props}).ok());
  ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);
  auto up = c.expect<ConsumerUpdateRequest>();
  ASSERT_TRUE(up.ok()) << up.error().message;
  EXPECT_EQ(up->subscription_id, 1);
  EXPECT_EQ(up->active, 1);
  ASSERT_TRUE(none(up->correlation_id).ok());
  EXPECT_EQ(consume(c, 1, 6), numbered(6, "m"));
  // A second member: partition index 1 of 2 members makes it the active
  // one. The first steps down (answered with none), then the second is
  // activated (answered with none: its own subscription's offset 4).
  ASSERT_TRUE(
      c.send(SubscribeRequest{c.corr(), 2, "inv-1", {OffsetType::offset, 4}, 10, props}).ok());
  ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);
  auto down = c.expect<ConsumerUpdateRequest>();
  ASSERT_TRUE(down.ok()) << down.error().message;
  EXPECT_EQ(down->subscription_id, 1);
  EXPECT_EQ(down->active, 0);
  ASSERT_TRUE(none(down->correlation_id).ok());
  auto up2 = c.expect<ConsumerUpdateRequest>();
  ASSERT_TRUE(up2.ok()) << up2.error().message;
  EXPECT_EQ(up2->subscription_id, 2);
  EXPECT_EQ(up2->active, 1);
  ASSERT_TRUE(none(up2->correlation_id).ok());
  std::vector<uint64_t> ids;
  auto got = consume(c, 2, 2, &ids);
  ASSERT_FALSE(ids.empty());
  EXPECT_LE(ids[0], 4u);
  EXPECT_EQ(got.back(), "m5");
  EXPECT_TRUE(answers(c));
}

// ResolveOffsetSpec (0x1f): where a subscription with the spec would start.
TEST_F(RabbitAnswersTest, ResolveOffsetSpecAnswersTheOffset) {
  StreamClient c = open_client();
  create(c, "r");
  declare(c, 1, "r");
  publish_confirmed(c, 1, 0, numbered(3, "a"));
  publish_confirmed(c, 1, 3, numbered(2, "b"));
  auto resolve = [&](const std::string& stream, OffsetSpec spec) {
    uint32_t corr = c.corr();
    EXPECT_TRUE(c.send(ResolveOffsetSpecRequest{corr, stream, spec, {}}).ok());
    auto r = c.expect<ResolveOffsetSpecResponse>();
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (!r.ok()) return std::pair<ResponseCode, uint64_t>{ResponseCode::internal_error, 0};
    EXPECT_EQ(r->correlation_id, corr);
    EXPECT_EQ(r->offset_type, uint16_t(OffsetType::offset));
    return std::pair{r->code, r->offset};
  };
  using P = std::pair<ResponseCode, uint64_t>;
  EXPECT_EQ(resolve("r", {OffsetType::first, 0}), (P{ResponseCode::ok, 0}));
  EXPECT_EQ(resolve("r", {OffsetType::next, 0}), (P{ResponseCode::ok, 5}));
  EXPECT_EQ(resolve("r", {OffsetType::last, 0}), (P{ResponseCode::ok, 3}));
  EXPECT_EQ(resolve("r", {OffsetType::offset, 4}).second, 3u);  // its chunk
  EXPECT_EQ(resolve("nope", {OffsetType::first, 0}).first, ResponseCode::stream_does_not_exist);
}

// Re-authentication on an open connection (a refreshed token): the same
// user with the same mechanism is ok and the connection goes on; another
// user is 21 and the connection closes, as RabbitMQ answers.
TEST_F(RabbitAnswersTest, ReauthenticationAfterOpen) {
  StreamClient c = open_client();
  const std::string guest = std::string("\0guest\0guest", 12);
  ASSERT_TRUE(c.send(SaslAuthenticateRequest{c.corr(), "PLAIN", guest}).ok());
  auto ok = c.expect<SaslAuthenticateResponse>();
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->code, ResponseCode::ok);
  EXPECT_TRUE(answers(c));
  ASSERT_TRUE(c.send(SaslAuthenticateRequest{c.corr(), "PLAIN", guest}).ok());
  EXPECT_EQ(c.expect<SaslAuthenticateResponse>()->code, ResponseCode::ok);

  ASSERT_TRUE(c.send(SaslAuthenticateRequest{c.corr(), "AMQPLAIN", guest}).ok());
  EXPECT_EQ(c.expect<SaslAuthenticateResponse>()->code, ResponseCode::sasl_cannot_change_mechanism);
  EXPECT_TRUE(c.closed_by_server());

  restart_with_config("users.json", R"({"users": [
      {"name": "guest", "password": "guest"}, {"name": "bob", "password": "pw"}]})");
  StreamClient d = open_client();
  ASSERT_TRUE(d.send(SaslAuthenticateRequest{d.corr(), "PLAIN", std::string("\0bob\0pw", 7)}).ok());
  EXPECT_EQ(d.expect<SaslAuthenticateResponse>()->code, ResponseCode::sasl_cannot_change_username);
  EXPECT_TRUE(d.closed_by_server());
}

}  // namespace
}  // namespace strata::test
