// Every command encodes to a frame that split_frame finds whole and that
// decodes back to the same struct, both through decode<T> and through the
// client/server dispatchers.
#include <gtest/gtest.h>

#include "proto/dispatch.h"

namespace strata::proto {
namespace {

template <typename T>
BytesView body_of(const Bytes& frame) {
  FrameSplit s = split_frame(frame, 0);
  EXPECT_EQ(s.kind, FrameSplit::frame);
  EXPECT_EQ(s.total(), frame.size());
  return s.body(frame);
}

// Round trip through decode<T> and, when T is in the variant, the dispatcher.
// Some commands end in a field that peers may leave out (Subscribe's
// properties, SaslAuthenticate's data, Open's properties): a prefix that
// stops before it may decode.
template <typename T>
constexpr bool kOptionalTail =
    std::is_same_v<T, SubscribeRequest> || std::is_same_v<T, SaslAuthenticateResponse> ||
    std::is_same_v<T, OpenResponse> || std::is_same_v<T, ResolveOffsetSpecRequest>;
// Decoders that ignore what follows their last field, as RabbitMQ does (a
// ConsumerUpdate answer whose type has no value).
template <typename T>
constexpr bool kLenientTail = std::is_same_v<T, ConsumerUpdateResponse>;

template <typename T>
void round_trip(const T& m) {
  Bytes frame;
  encode(m, &frame);
  BytesView body = body_of<T>(frame);
  auto d = decode<T>(body);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(*d, m);
  // Re-encoding the decoded struct gives the same bytes.
  Bytes again;
  encode(*d, &again);
  EXPECT_EQ(again, frame);
  // Every strict prefix of the body fails cleanly.
  for (size_t n = 0; n < body.size(); ++n) {
    auto p = decode<T>(body.substr(0, n));
    if (p.ok() && kOptionalTail<T>) continue;
    EXPECT_FALSE(p.ok()) << command_name(T::kKey) << " prefix " << n;
  }
  // One byte too many is a trailing-bytes error (but where RabbitMQ
  // ignores what follows, kLenientTail).
  Bytes longer(body);
  longer.push_back('\0');
  auto t = decode<T>(longer);
  if (kLenientTail<T> && t.ok()) return;
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.code(), Errc::corrupt);
}

template <typename T>
void client_round_trip(const T& m) {
  round_trip(m);
  Bytes frame;
  encode(m, &frame);
  auto d = decode_client_frame(body_of<T>(frame));
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  ASSERT_TRUE(std::holds_alternative<T>(*d)) << command_name(T::kKey);
  EXPECT_EQ(std::get<T>(*d), m);
}

template <typename T>
void server_round_trip(const T& m) {
  round_trip(m);
  Bytes frame;
  encode(m, &frame);
  auto d = decode_server_frame(body_of<T>(frame));
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  ASSERT_TRUE(std::holds_alternative<T>(*d)) << command_name(T::kKey);
  EXPECT_EQ(std::get<T>(*d), m);
}

TEST(ProtoRoundTrip, PublisherCommands) {
  client_round_trip(DeclarePublisherRequest{
      .correlation_id = 7, .publisher_id = 3, .reference = "app-1", .stream = "orders"});
  client_round_trip(DeclarePublisherRequest{
      .correlation_id = 8, .publisher_id = 4, .reference = "", .stream = "s"});
  server_round_trip(DeclarePublisherResponse{.correlation_id = 7, .code = ResponseCode::ok});
  client_round_trip(
      QueryPublisherSequenceRequest{.correlation_id = 9, .reference = "app-1", .stream = "orders"});
  server_round_trip(QueryPublisherSequenceResponse{
      .correlation_id = 9, .code = ResponseCode::ok, .sequence = 0x0102030405060708ull});
  client_round_trip(DeletePublisherRequest{.correlation_id = 10, .publisher_id = 3});
  server_round_trip(DeletePublisherResponse{.correlation_id = 10,
                                            .code = ResponseCode::publisher_does_not_exist});
  server_round_trip(PublishConfirm{.publisher_id = 3, .publishing_ids = {1, 2, 3, ~0ull}});
  server_round_trip(PublishConfirm{.publisher_id = 0, .publishing_ids = {}});
  server_round_trip(PublishError{
      .publisher_id = 3,
      .errors = {{5, ResponseCode::publisher_does_not_exist}, {6, ResponseCode::internal_error}}});
}

TEST(ProtoRoundTrip, PublishCarriesEntriesVerbatim) {
  Bytes entries;
  append_simple_entry(&entries, "hello");
  size_t first = entries.size();
  Bytes sub;
  append_sub_batch_record(&sub, "a");
  append_sub_batch_record(&sub, "bc");
  append_sub_batch_entry(&entries, Compression::none, 2, uint32_t(sub.size()), sub);
  size_t second = entries.size() - first;
  append_simple_entry(&entries, "");

  PublishRequest p;
  p.publisher_id = 2;
  p.messages = {{1, std::nullopt, BytesView(entries).substr(0, first)},
                {2, std::nullopt, BytesView(entries).substr(first, second)},
                {3, std::nullopt, BytesView(entries).substr(first + second)}};
  client_round_trip(p);

  // The decoded views point into the frame, and the entries parse.
  Bytes frame;
  encode(p, &frame);
  BytesView body = split_frame(frame, 0).body(frame);
  auto d = decode<PublishRequest>(body);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->messages.size(), 3u);
  EXPECT_GE(d->messages[1].entry.data(), body.data());
  EXPECT_LT(d->messages[1].entry.data(), body.data() + body.size());
  auto e = parse_osiris_entry(d->messages[1].entry);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->sub_batch);
  EXPECT_EQ(e->num_records, 2);
  EXPECT_EQ(e->body, sub);

  PublishRequest v2 = p;
  v2.version = 2;
  v2.messages[0].filter_value = BytesView("eu");
  client_round_trip(v2);
}

TEST(ProtoRoundTrip, ConsumerCommands) {
  for (auto spec : {OffsetSpec{OffsetType::first, 0}, OffsetSpec{OffsetType::last, 0},
                    OffsetSpec{OffsetType::next, 0}, OffsetSpec{OffsetType::offset, 12345},
                    OffsetSpec{OffsetType::timestamp, 1700000000000}}) {
    client_round_trip(
        SubscribeRequest{.correlation_id = 1,
                         .subscription_id = 9,
                         .stream = "orders",
                         .offset = spec,
                         .credit = 10,
                         .properties = {{"single-active-consumer", "true"}, {"name", "app"}}});
    client_round_trip(
        ConsumerUpdateResponse{.correlation_id = 4, .code = ResponseCode::ok, .offset = spec});
  }
  client_round_trip(ConsumerUpdateResponse{.correlation_id = 4, .offset = std::nullopt});
  client_round_trip(ResolveOffsetSpecRequest{.correlation_id = 3,
                                             .stream = "orders",
                                             .offset = {OffsetType::offset, 9},
                                             .properties = {{"filter.0", "emea"}}});
  server_round_trip(ResolveOffsetSpecResponse{
      .correlation_id = 3, .code = ResponseCode::no_offset, .offset_type = 4, .offset = 0});
  server_round_trip(SubscribeResponse{.correlation_id = 1, .code = ResponseCode::ok});
  client_round_trip(CreditRequest{.subscription_id = 9, .credit = 1});
  server_round_trip(
      CreditResponse{.code = ResponseCode::subscription_id_does_not_exist, .subscription_id = 9});
  client_round_trip(StoreOffsetRequest{.reference = "app", .stream = "orders", .offset = 77});
  client_round_trip(QueryOffsetRequest{.correlation_id = 2, .reference = "app", .stream = "o"});
  server_round_trip(
      QueryOffsetResponse{.correlation_id = 2, .code = ResponseCode::no_offset, .offset = 0});
  client_round_trip(UnsubscribeRequest{.correlation_id = 3, .subscription_id = 9});
  server_round_trip(UnsubscribeResponse{.correlation_id = 3, .code = ResponseCode::ok});
  server_round_trip(ConsumerUpdateRequest{.correlation_id = 4, .subscription_id = 9, .active = 1});
}

Bytes make_chunk(uint64_t chunk_id, int n) {
  Bytes data;
  for (int i = 0; i < n; ++i) append_simple_entry(&data, "msg" + std::to_string(i));
  OsirisChunkHeader h;
  h.num_entries = uint16_t(n);
  h.num_records = uint32_t(n);
  h.timestamp_ms = 1700000000123;
  h.epoch = 1;
  h.chunk_id = chunk_id;
  h.crc = 0xdeadbeef;
  h.data_len = uint32_t(data.size());
  Bytes chunk;
  encode_osiris_header(h, &chunk);
  chunk += data;
  return chunk;
}

TEST(ProtoRoundTrip, Deliver) {
  Bytes chunk = make_chunk(100, 3);
  server_round_trip(DeliverFrame{.version = 1, .subscription_id = 4, .chunk = chunk});
  server_round_trip(
      DeliverFrame{.version = 2, .subscription_id = 4, .committed_chunk_id = 99, .chunk = chunk});
}

// The scatter write: head + the chunk's bytes after its header is exactly
// the frame encode(DeliverFrame) writes.
TEST(ProtoRoundTrip, DeliverHeadAndChunkBodyMakeTheFrame) {
  Bytes chunk = make_chunk(5, 4);
  auto h = decode_osiris_header(chunk);
  ASSERT_TRUE(h.ok());
  for (uint16_t version : {1, 2}) {
    Bytes head;
    uint64_t follow = encode_deliver_head(version, 7, 3, *h, &head);
    EXPECT_EQ(head.size(), deliver_head_size(version));
    EXPECT_EQ(follow, chunk.size() - kOsirisChunkHeaderSize);
    Bytes whole;
    encode(DeliverFrame{.version = version,
                        .subscription_id = 7,
                        .committed_chunk_id = version >= 2 ? 3u : 0u,
                        .chunk = chunk},
           &whole);
    EXPECT_EQ(head + chunk.substr(kOsirisChunkHeaderSize), whole);
  }
}

TEST(ProtoRoundTrip, StreamCommands) {
  client_round_trip(CreateStreamRequest{
      .correlation_id = 1, .stream = "orders", .arguments = {{"max-length-bytes", "1000000"}}});
  server_round_trip(
      CreateStreamResponse{.correlation_id = 1, .code = ResponseCode::stream_already_exists});
  client_round_trip(DeleteStreamRequest{.correlation_id = 2, .stream = "orders"});
  server_round_trip(DeleteStreamResponse{.correlation_id = 2, .code = ResponseCode::ok});
  client_round_trip(MetadataRequest{.correlation_id = 3, .streams = {"a", "b"}});
  server_round_trip(
      MetadataResponse{.correlation_id = 3,
                       .brokers = {{0, "127.0.0.1", 5552}},
                       .streams = {{"a", ResponseCode::ok, 0, {}},
                                   {"b", ResponseCode::stream_does_not_exist, 0xffff, {0, 1}}}});
  server_round_trip(MetadataUpdate{.code = ResponseCode::stream_not_available, .stream = "a"});
  client_round_trip(StreamStatsRequest{.correlation_id = 4, .stream = "a"});
  server_round_trip(StreamStatsResponse{
      .correlation_id = 4,
      .code = ResponseCode::ok,
      .stats = {{"committed_chunk_id", 10}, {"first_chunk_id", 0}, {"last_chunk_id", -1}}});
  client_round_trip(RouteRequest{.correlation_id = 5, .routing_key = "k", .super_stream = "ss"});
  server_round_trip(
      RouteResponse{.correlation_id = 5, .code = ResponseCode::ok, .streams = {"ss-0"}});
  client_round_trip(PartitionsRequest{.correlation_id = 6, .super_stream = "ss"});
  server_round_trip(PartitionsResponse{
      .correlation_id = 6, .code = ResponseCode::ok, .streams = {"ss-0", "ss-1", "ss-2"}});
  client_round_trip(CreateSuperStreamRequest{.correlation_id = 7,
                                             .name = "ss",
                                             .partitions = {"ss-0", "ss-1"},
                                             .binding_keys = {"0", "1"},
                                             .arguments = {}});
  server_round_trip(CreateSuperStreamResponse{.correlation_id = 7, .code = ResponseCode::ok});
  client_round_trip(DeleteSuperStreamRequest{.correlation_id = 8, .name = "ss"});
  server_round_trip(DeleteSuperStreamResponse{.correlation_id = 8, .code = ResponseCode::ok});
}

TEST(ProtoRoundTrip, ConnectionCommands) {
  client_round_trip(PeerPropertiesRequest{
      .correlation_id = 1, .properties = {{"product", "strata-perf"}, {"version", "0.1"}}});
  server_round_trip(PeerPropertiesResponse{
      .correlation_id = 1, .code = ResponseCode::ok, .properties = {{"version", "3.13.0"}}});
  client_round_trip(SaslHandshakeRequest{.correlation_id = 2});
  server_round_trip(SaslHandshakeResponse{
      .correlation_id = 2, .code = ResponseCode::ok, .mechanisms = {"PLAIN", "AMQPLAIN"}});
  client_round_trip(SaslAuthenticateRequest{
      .correlation_id = 3, .mechanism = "PLAIN", .data = std::string("\0guest\0guest", 12)});
  server_round_trip(SaslAuthenticateResponse{
      .correlation_id = 3, .code = ResponseCode::ok, .data = std::nullopt});
  server_round_trip(SaslAuthenticateResponse{
      .correlation_id = 3, .code = ResponseCode::sasl_challenge, .data = "challenge"});
  client_round_trip(TuneFrame{.frame_max = 1048576, .heartbeat = 60});
  server_round_trip(TuneFrame{.frame_max = 0, .heartbeat = 0});
  client_round_trip(OpenRequest{.correlation_id = 4, .virtual_host = "/"});
  server_round_trip(
      OpenResponse{.correlation_id = 4,
                   .code = ResponseCode::ok,
                   .properties = {{"advertised_host", "127.0.0.1"}, {"advertised_port", "5552"}}});
  server_round_trip(OpenResponse{
      .correlation_id = 4, .code = ResponseCode::virtual_host_access_failure, .properties = {}});
  client_round_trip(CloseRequest{.correlation_id = 5, .code = ResponseCode::ok, .reason = "bye"});
  server_round_trip(
      CloseRequest{.correlation_id = 6, .code = ResponseCode::unknown_frame, .reason = "what"});
  client_round_trip(CloseResponse{.correlation_id = 6, .code = ResponseCode::ok});
  server_round_trip(CloseResponse{.correlation_id = 5, .code = ResponseCode::ok});
  client_round_trip(HeartbeatFrame{});
  server_round_trip(HeartbeatFrame{});
  client_round_trip(
      ExchangeCommandVersionsRequest{.correlation_id = 7, .versions = supported_client_versions()});
  server_round_trip(ExchangeCommandVersionsResponse{
      .correlation_id = 7, .code = ResponseCode::ok, .versions = {{kDeliver, 1, 2}}});
}

TEST(ProtoFrames, UnknownKeyAndVersionAreUnsupported) {
  Bytes frame;
  encode(HeartbeatFrame{}, &frame);
  // Version 9 of Heartbeat.
  frame[7] = 9;
  auto d = decode_client_frame(split_frame(frame, 0).body(frame));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.code(), Errc::unsupported_version);
  EXPECT_NE(d.error().message.find("Heartbeat"), std::string::npos) << d.error().message;

  Bytes unknown("\x00\x00\x00\x08\x00\x7f\x00\x01\x00\x00\x00\x2a", 12);
  auto u = decode_client_frame(split_frame(unknown, 0).body(unknown));
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.code(), Errc::unsupported_version);
  EXPECT_EQ(peek_correlation_id(split_frame(unknown, 0).body(unknown)), 42u);

  // A server frame is not a client frame.
  Bytes confirm;
  encode(PublishConfirm{.publisher_id = 1, .publishing_ids = {1}}, &confirm);
  EXPECT_EQ(decode_client_frame(split_frame(confirm, 0).body(confirm)).code(),
            Errc::unsupported_version);
  EXPECT_EQ(decode<PublishConfirm>(split_frame(confirm, 0).body(confirm)).ok(), true);
  EXPECT_EQ(decode<TuneFrame>(split_frame(confirm, 0).body(confirm)).code(),
            Errc::unsupported_version);
}

TEST(ProtoFrames, SplitFrame) {
  Bytes two;
  encode(HeartbeatFrame{}, &two);
  encode(TuneFrame{.frame_max = 1, .heartbeat = 2}, &two);
  EXPECT_EQ(split_frame(BytesView(two).substr(0, 3), 0).kind, FrameSplit::need_more);
  EXPECT_EQ(split_frame(BytesView(two).substr(0, 7), 0).kind, FrameSplit::need_more);
  FrameSplit a = split_frame(two, 0);
  ASSERT_EQ(a.kind, FrameSplit::frame);
  EXPECT_EQ(a.total(), 8u);
  FrameSplit b = split_frame(BytesView(two).substr(a.total()), 0);
  ASSERT_EQ(b.kind, FrameSplit::frame);
  EXPECT_EQ(b.body_size, 12u);
  // The limit counts the size field's value (the bytes after it), as
  // RabbitMQ's `Size =< FrameMax`.
  EXPECT_EQ(split_frame(BytesView(two).substr(a.total()), 12).kind, FrameSplit::frame);
  EXPECT_EQ(split_frame(BytesView(two).substr(a.total()), 11).kind, FrameSplit::too_large);
  // Judged from the size field alone, before the body arrives.
  Bytes huge("\xff\xff\xff\xff", 4);
  FrameSplit h = split_frame(huge, 1 << 20);
  EXPECT_EQ(h.kind, FrameSplit::too_large);
  EXPECT_EQ(h.body_size, 0xffffffffu);
}

}  // namespace
}  // namespace strata::proto
