// Frames written byte by byte from RabbitMQ's PROTOCOL.adoc (field order and
// widths), so the codec is checked against the document and not only
// against itself.
#include <gtest/gtest.h>

#include "proto/dispatch.h"

namespace strata::proto {
namespace {

Bytes B(std::initializer_list<int> bytes) {
  Bytes b;
  for (int v : bytes) b.push_back(char(v));
  return b;
}

template <typename T>
void expect_golden(const T& m, const Bytes& golden) {
  Bytes frame;
  encode(m, &frame);
  EXPECT_EQ(to_hex(frame), to_hex(golden)) << command_name(T::kKey);
  auto d = decode<T>(BytesView(golden).substr(4));
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(*d, m);
}

TEST(ProtoGolden, PeerPropertiesRequest) {
  // size 21 | key 0x0011 | version 1 | correlation 1 | 1 property
  // | "ab" | "cde"
  expect_golden(
      PeerPropertiesRequest{.correlation_id = 1, .properties = {{"ab", "cde"}}},
      B({0, 0, 0, 21, 0, 0x11, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 2, 'a', 'b', 0, 3, 'c', 'd', 'e'}));
}

TEST(ProtoGolden, TuneAndHeartbeat) {
  expect_golden(TuneFrame{.frame_max = 0x100000, .heartbeat = 60},
                B({0, 0, 0, 12, 0, 0x14, 0, 1, 0, 0x10, 0, 0, 0, 0, 0, 60}));
  expect_golden(HeartbeatFrame{}, B({0, 0, 0, 4, 0, 0x17, 0, 1}));
}

// The Tune answer as the Java (ServerFrameHandler) and Go (server_frame.go)
// clients send it: key 0x8014, the response bit set. The same frame as 0x0014
// (.NET, JS), as RabbitMQ reads it; nothing follows that would need a
// correlation id.
TEST(ProtoGolden, TuneAnswerWithTheResponseBitIsTheTuneFrame) {
  const Bytes java = B({0, 0, 0, 12, 0x80, 0x14, 0, 1, 0, 0x10, 0, 0, 0, 0, 0, 60});
  auto d = decode_client_frame(BytesView(java).substr(4));
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  ASSERT_TRUE(std::holds_alternative<TuneFrame>(*d));
  EXPECT_EQ(std::get<TuneFrame>(*d), (TuneFrame{.frame_max = 0x100000, .heartbeat = 60}));
  EXPECT_FALSE(peek_correlation_id(BytesView(java).substr(4)).has_value());
  const Bytes plain = B({0, 0, 0, 12, 0, 0x14, 0, 1, 0, 0x10, 0, 0, 0, 0, 0, 60});
  auto p = decode_client_frame(BytesView(plain).substr(4));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, *d);
}

// The Java client's answer to a ConsumerUpdate telling a consumer it is no
// longer active: offset type 0, "none", and nothing after it. A Subscribe's
// offset spec never has type 0.
TEST(ProtoGolden, ConsumerUpdateAnswerWithOffsetTypeNone) {
  expect_golden(ConsumerUpdateResponse{.correlation_id = 5, .offset = std::nullopt},
                B({0, 0, 0, 12, 0x80, 0x1a, 0, 1, 0, 0, 0, 5, 0, 1, 0, 0}));
  // The Python client's answer: type 3 "next" with an 8-byte value,
  // which RabbitMQ ignores after a type without one.
  const Bytes python =
      B({0, 0, 0, 20, 0x80, 0x1a, 0, 1, 0, 0, 0, 6, 0, 1, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0});
  auto p = decode_client_frame(BytesView(python).substr(4));
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(
      std::get<ConsumerUpdateResponse>(*p),
      (ConsumerUpdateResponse{.correlation_id = 6, .offset = OffsetSpec{OffsetType::next, 0}}));
  const Bytes subscribe =
      B({0, 0, 0, 20, 0, 0x07, 0, 1, 0, 0, 0, 5, 2, 0, 1, 's', 0, 0, 0, 10, 0, 0, 0, 0});
  auto d = decode_client_frame(BytesView(subscribe).substr(4));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("unknown offset type 0"), std::string::npos)
      << d.error().message;
}

// ResolveOffsetSpec (0x1f, RabbitMQ 4.3): stream, offset spec, properties;
// the answer's type is offset (4). A request without the properties count
// reads as one without properties, as RabbitMQ reads it.
TEST(ProtoGolden, ResolveOffsetSpec) {
  expect_golden(ResolveOffsetSpecRequest{.correlation_id = 7,
                                         .stream = "s",
                                         .offset = {OffsetType::timestamp, 258},
                                         .properties = {}},
                B({0, 0, 0, 25, 0, 0x1f, 0, 1, 0, 0, 0, 7, 0, 1, 's',
                   0, 5, 0, 0,  0, 0,    0, 0, 1, 2, 0, 0, 0, 0}));
  const Bytes bare = B({0, 0, 0, 13, 0, 0x1f, 0, 1, 0, 0, 0, 7, 0, 1, 's', 0, 1});
  auto d = decode_client_frame(BytesView(bare).substr(4));
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(
      std::get<ResolveOffsetSpecRequest>(*d),
      (ResolveOffsetSpecRequest{
          .correlation_id = 7, .stream = "s", .offset = {OffsetType::first, 0}, .properties = {}}));
  expect_golden(ResolveOffsetSpecResponse{.correlation_id = 7, .offset = 258},
                B({0, 0, 0, 20, 0x80, 0x1f, 0, 1, 0, 0, 0, 7, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0, 1, 2}));
}

TEST(ProtoGolden, SubscribeFromOffset) {
  // correlation 5 | subscription 2 | stream "s" | offset type 4, offset 258
  // | credit 10 | 0 properties
  expect_golden(SubscribeRequest{.correlation_id = 5,
                                 .subscription_id = 2,
                                 .stream = "s",
                                 .offset = {OffsetType::offset, 258},
                                 .credit = 10,
                                 .properties = {}},
                B({0, 0, 0, 28, 0, 0x07, 0, 1, 0, 0, 0, 5,  2, 0, 1, 's',
                   0, 4, 0, 0,  0, 0,    0, 0, 1, 2, 0, 10, 0, 0, 0, 0}));
}

TEST(ProtoGolden, PublishOneSimpleMessage) {
  // publisher 1 | 1 message | publishing id 7 | entry: 0:1 len:31 = 3 | "abc"
  Bytes entry = B({0, 0, 0, 3, 'a', 'b', 'c'});
  expect_golden(PublishRequest{.version = 1, .publisher_id = 1, .messages = {{7, {}, entry}}},
                B({0, 0, 0, 24, 0, 0x02, 0, 1, 1, 0, 0, 0,   1,   0,
                   0, 0, 0, 0,  0, 0,    7, 0, 0, 0, 3, 'a', 'b', 'c'}));
}

TEST(ProtoGolden, PublishConfirmAndCreditResponse) {
  expect_golden(PublishConfirm{.publisher_id = 1, .publishing_ids = {1, 2}},
                B({0, 0, 0, 25, 0, 0x03, 0, 1, 1, 0, 0, 0, 2, 0, 0,
                   0, 0, 0, 0,  0, 1,    0, 0, 0, 0, 0, 0, 0, 2}));
  // Response code before the subscription id, no correlation id.
  expect_golden(
      CreditResponse{.code = ResponseCode::subscription_id_does_not_exist, .subscription_id = 3},
      B({0, 0, 0, 7, 0x80, 0x09, 0, 1, 0, 4, 3}));
}

TEST(ProtoGolden, DeliverV1HeadWithOsirisHeader) {
  OsirisChunkHeader h;
  h.chunk_type = 0;
  h.num_entries = 1;
  h.num_records = 1;
  h.timestamp_ms = 0x0102;
  h.epoch = 1;
  h.chunk_id = 0x10;
  h.crc = 0xaabbccdd;
  h.data_len = 7;
  Bytes head;
  EXPECT_EQ(encode_deliver_head(1, 4, 0, h, &head), 7u);
  // size = 4 (key, version) + 1 (subscription) + 48 + 7 = 60
  Bytes golden = B({0, 0, 0, 60, 0, 0x08, 0, 1, 4,
                    // magic 5 version 0, type 0, entries 1, records 1
                    0x50, 0, 0, 1, 0, 0, 0, 1,
                    // timestamp, epoch, chunk id
                    0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x10,
                    // crc, data length, trailer length, bloom size + reserved
                    0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(to_hex(head), to_hex(golden));
}

TEST(ProtoGolden, MetadataResponseHasNoTopLevelCode) {
  // correlation 9 | 1 broker: ref 0, "h", port 5552 | 1 stream: "s", code 1,
  // leader 0, 0 replicas
  expect_golden(MetadataResponse{.correlation_id = 9,
                                 .brokers = {{0, "h", 5552}},
                                 .streams = {{"s", ResponseCode::ok, 0, {}}}},
                B({0,   0, 0, 36,   0x80, 0x0f, 0, 1, 0, 0, 0, 9,   0, 0, 0, 1, 0, 0, 0, 1,
                   'h', 0, 0, 0x15, 0xb0, 0,    0, 0, 1, 0, 1, 's', 0, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(ProtoGolden, DeclarePublisherWithoutReference) {
  // Sent as an empty string (RabbitMQ 3.10 refuses a null one); a null one
  // from a client decodes as no reference.
  auto null_ref =
      decode<DeclarePublisherRequest>(B({0, 0x01, 0, 1, 0, 0, 0, 1, 0, 0xff, 0xff, 0, 1, 's'}));
  ASSERT_TRUE(null_ref.ok());
  EXPECT_EQ(null_ref->reference, "");
  expect_golden(
      DeclarePublisherRequest{
          .correlation_id = 1, .publisher_id = 0, .reference = "", .stream = "s"},
      B({0, 0, 0, 14, 0, 0x01, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 's'}));
}

}  // namespace
}  // namespace strata::proto
