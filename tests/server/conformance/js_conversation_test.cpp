// The JavaScript client's conversation (coders51/rabbitmq-stream-js-client):
// every frame as its encoder writes it — src/connection.ts (handshake
// order, correlation ids from 101, the Tune answer with the server's
// heartbeat, ExchangeCommandVersions after Open), src/versions.ts (the
// versions it declares: every request class and Deliver 1..2, Publish 1..2,
// in its order), src/requests/*.ts (tune_request.ts: key 0x0014;
// peer_properties_request.ts; sasl_authenticate_request.ts;
// subscribe_request.ts: the properties' count always, the Offset encoding;
// declare_publisher_request.ts: an absent reference is ""; publish_request.ts
// and publish_request_v2.ts: AMQP-encoded messages, a missing filter value
// is int16 -1; sub_entry_batch_publish_request.ts: one root entry keyed by
// the publisher's current id; consumer_update_response.ts: 0x801a with the
// consumer's offset; close_request.ts: code 0, reason ""),
// src/amqp10/encoder.ts (a body alone is a Data section), src/client.ts
// (the locator connection for streams and sequences, a connection per
// publisher and per consumer, subscription properties, QueryPublisherSequence
// after the declaration), src/publisher.ts (ids from the sequence + 1),
// src/consumer_credit_policy.ts (one credit at first, one per chunk
// handled) — checked against the answers RabbitMQ 3.13/4.x gives.
#include <algorithm>
#include <memory>

#include "server/conformance/wire_bytes.h"

namespace strata::test::conformance_js {
namespace {

using namespace wire;

// getClientSupportedVersions: supportedRequests then supportedResponses,
// each key once in first-seen order, its min and max version.
std::vector<CommandVersion> js_versions() {
  std::vector<CommandVersion> v;
  for (uint16_t k :
       {0x16, 0x0d, 0x1d, 0x09, 0x01, 0x06, 0x0e, 0x1e, 0x1b, 0x17, 0x0f, 0x10, 0x15, 0x11, 0x02,
        0x0b, 0x05, 0x13, 0x12, 0x0a, 0x1c, 0x07, 0x14, 0x0c, 0x18, 0x19, 0x08, 0x03, 0x04, 0x1a}) {
    v.push_back({k, 1, uint16_t(k == kPublish || k == kDeliver ? 2 : 1)});
  }
  return v;
}

class JsConnection : public ClientConnection {
 public:
  JsConnection(int port, const std::string& name) : ClientConnection(port, 101) {
    uint32_t pp =
        rpc(kPeerProperties, Out().map({{"product", "RabbitMQ Stream"},
                                        {"version", "0.3.0"},
                                        {"platform", "javascript"},
                                        {"copyright", "Copyright (c) 2020-2024 Coders51 srl"},
                                        {"information",
                                         "Licensed under the Apache 2.0 and MPL 2.0 licenses. See "
                                         "https://www.rabbitmq.com/"},
                                        {"connection_name", name}}));
    server = expect_peer_properties(peer, pp);
    uint32_t hs = rpc(kSaslHandshake, Out());
    auto mechanisms = expect_sasl_mechanisms(peer, hs);
    EXPECT_NE(std::find(mechanisms.begin(), mechanisms.end(), "PLAIN"), mechanisms.end());
    // PLAIN: u32 length, 0, user, 0, password.
    uint32_t au =
        rpc(kSaslAuthenticate, Out().str("PLAIN").u32(12).u8(0).raw("guest").u8(0).raw("guest"));
    expect_code(peer, kSaslAuthenticate, au, kOk);
    // tune(params.heartbeat ?? 0): the server's heartbeat; the frame size
    // min(1048576, the server's).
    Tune t = expect_server_tune(peer);
    cast(kTune, 1,
         Out()
             .u32(t.frame_max == 0 ? 1048576 : std::min<uint32_t>(1048576, t.frame_max))
             .u32(t.heartbeat));
    uint32_t op = rpc(kOpen, Out().str("/"));
    connection = expect_open(peer, op);
    Out ev;
    auto mine = js_versions();
    ev.i32(int32_t(mine.size()));
    for (const auto& v : mine) ev.u16(v.key).u16(v.min).u16(v.max);
    uint32_t e = rpc(kExchangeCommandVersions, ev);
    versions = expect_command_versions(peer, e);
  }
  uint16_t subscribe(uint8_t id, const std::string& stream, Spec spec, const Props& props = {},
                     uint16_t credit = 1) {
    Out o;
    o.u8(id).str(stream);
    put_spec(o, spec).u16(credit).map(props);
    return rpc_code(kSubscribe, o);
  }
  // ConsumerUpdateResponse: the consumer's offset, written by Offset.write.
  void consumer_update_answer(uint32_t corr, Spec spec) {
    Out o;
    o.u32(corr).u16(kOk);
    put_spec(o, spec);
    cast(kConsumerUpdate | kAnswer, 1, o);
  }
  // creditsOnChunkCompleted(1, 1).
  Received consume(uint8_t id, size_t n, uint64_t from = 0, std::vector<Chunk>* chunks = nullptr) {
    return receive(
        peer, id, n, from,
        [&](const Chunk& c) {
          EXPECT_EQ(c.version, 2) << "the JS client declared Deliver 1..2";
          cast(kCredit, 1, Out().u8(id).u16(1));
        },
        chunks);
  }

  std::map<std::string, std::string> server, connection;
  std::vector<CommandVersion> versions;
};

// PublishRequest: u64 id, then amqpEncode (u32 size + sections).
void publish(JsConnection& c, uint8_t pub, uint64_t first_id,
             const std::vector<std::string>& bodies) {
  c.cast(kPublish, 1, simple_publish(pub, first_id, amqp_all(bodies)));
  std::set<uint64_t> ids;
  for (size_t i = 0; i < bodies.size(); ++i) ids.insert(first_id + i);
  expect_confirms(c.peer, pub, ids);
}

uint64_t sequence(JsConnection& locator, const std::string& ref, const std::string& stream) {
  uint32_t q = locator.rpc(kQueryPublisherSequence, Out().str(ref).str(stream));
  return expect_u64_answer(locator.peer, kQueryPublisherSequence, q, kOk);
}

class JsConformance : public ServeTest {
 protected:
  int port() { return server_.port(); }
  JsConnection locator() { return JsConnection(port(), "Unknown"); }
};

TEST_F(JsConformance, HandshakeAndClose) {
  JsConnection c = locator();
  // REQUIRED_MANAGEMENT_VERSION 3.13.0: filtering, super streams, Publish/Deliver 2.
  EXPECT_TRUE(version_at_least(c.server["version"], 3, 13, 0)) << c.server["version"];
  EXPECT_EQ(c.versions, rabbit_command_versions());
  // checkServerDeclaredVersions: no key of either side out of the other's range.
  for (const auto& s : c.versions) {
    for (const auto& m : js_versions()) {
      if (m.key == s.key) {
        EXPECT_TRUE(m.min <= s.max && s.min <= m.max) << s;
      }
    }
  }
  EXPECT_EQ(c.connection["advertised_port"], std::to_string(port()));
  // close(): CloseRequest(closingCode 0, closingReason "").
  EXPECT_EQ(c.rpc_code(kClose, Out().u16(0).str("")), kOk);
  EXPECT_TRUE(c.peer.closed_by_server());
}

TEST_F(JsConformance, StreamsAndSuperStreams) {
  JsConnection c = locator();
  // CreateStreamArguments in the application's order, values toString().
  const Props args = {{"queue-leader-locator", "least-leaders"},
                      {"max-age", "120s"},
                      {"stream-max-segment-size-bytes", "1000000"},
                      {"initial-cluster-size", "1"},
                      {"max-length-bytes", "3000000"}};
  EXPECT_EQ(c.rpc_code(kCreate, Out().str("js-stream").map(args)), kOk);
  EXPECT_EQ(c.rpc_code(kCreate, Out().str("js-stream").map(args)), kStreamAlreadyExists);
  EXPECT_EQ(c.rpc_code(kCreate, Out().str("js-bare").u32(0)), kOk);
  // createSuperStream({streamName}): 3 partitions, keys "0".."2", no arguments.
  EXPECT_EQ(c.rpc_code(kCreateSuperStream, Out()
                                               .str("js-inv")
                                               .i32(3)
                                               .str("js-inv-0")
                                               .str("js-inv-1")
                                               .str("js-inv-2")
                                               .i32(3)
                                               .str("0")
                                               .str("1")
                                               .str("2")
                                               .u32(0)),
            kOk);
  // Created again: 5, which createSuperStream takes as success.
  EXPECT_EQ(c.rpc_code(kCreateSuperStream, Out()
                                               .str("js-inv")
                                               .i32(3)
                                               .str("js-inv-0")
                                               .str("js-inv-1")
                                               .str("js-inv-2")
                                               .i32(3)
                                               .str("0")
                                               .str("1")
                                               .str("2")
                                               .u32(0)),
            kStreamAlreadyExists);
  uint32_t q = c.rpc(kPartitions, Out().str("js-inv"));
  EXPECT_EQ(expect_streams_answer(c.peer, kPartitions, q, kOk),
            (std::vector<std::string>{"js-inv-0", "js-inv-1", "js-inv-2"}));
  q = c.rpc(kRoute, Out().str("2").str("js-inv"));
  EXPECT_EQ(expect_streams_answer(c.peer, kRoute, q, kOk), std::vector<std::string>{"js-inv-2"});
  uint32_t m = c.rpc(kMetadata, Out().strs({"js-stream", "js-inv-0"}));
  Metadata md = expect_metadata(c.peer, m);
  EXPECT_EQ(md.streams["js-stream"].code, kOk);
  EXPECT_EQ(md.streams["js-inv-0"].code, kOk);
  ASSERT_EQ(md.brokers.size(), 1u);
  EXPECT_EQ(md.brokers[0].port, uint32_t(port()));
  EXPECT_EQ(c.rpc_code(kDeleteSuperStream, Out().str("js-inv")), kOk);
  EXPECT_EQ(c.rpc_code(kDelete, Out().str("js-stream")), kOk);
  EXPECT_EQ(c.rpc_code(kDelete, Out().str("js-stream")), kStreamDoesNotExist);
}

// declarePublisher: DeclarePublisher on the publisher's connection, then
// the sequence on the locator's; ids from the sequence + 1; a publishingId
// given again is deduplicated; sendSubEntries keys its entry with the
// publisher's current id — already used, so RabbitMQ confirms it and does
// not store it.
TEST_F(JsConformance, PublisherDeduplicates) {
  JsConnection loc = locator();
  ASSERT_EQ(loc.rpc_code(kCreate, Out().str("js-dedup").u32(0)), kOk);
  JsConnection p(port(), "Unknown");
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(0).str("js-app").str("js-dedup")), kOk);
  ASSERT_EQ(sequence(loc, "js-app", "js-dedup"), 0u);
  publish(p, 0, 1, numbered(1, 4, "m"));
  publish(p, 0, 2, numbered(2, 4, "m"));  // send(..., { publishingId }) again
  Out sub;
  sub.u8(0).u32(1).u64(3);
  {
    Out data;
    for (const auto& b : numbered(4, 6, "m")) data.blob(amqp(b));
    sub.u8(0x80).u16(2).u32(uint32_t(data.size())).u32(uint32_t(data.size())).raw(data.bytes());
  }
  p.cast(kPublish, 1, sub);
  expect_confirms(p.peer, 0, {3});
  EXPECT_EQ(sequence(loc, "js-app", "js-dedup"), 3u);
  publish(p, 0, 4, {"m4"});
  // A publisher without a reference declares "" and has no deduplication.
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(1).str("").str("js-dedup")), kOk);
  publish(p, 1, 1, {"anon"});

  JsConnection c(port(), "Unknown");
  ASSERT_EQ(c.subscribe(0, "js-dedup", {kFirst}), kOk);
  EXPECT_EQ(bodies(c.consume(0, 5)), amqp_all({"m1", "m2", "m3", "m4", "anon"}));
  EXPECT_TRUE(c.peer.quiet(kDeliver));
}

TEST_F(JsConformance, OffsetsCreditsAndTracking) {
  JsConnection loc = locator();
  ASSERT_EQ(loc.rpc_code(kCreate, Out().str("js-offsets").u32(0)), kOk);
  JsConnection p(port(), "Unknown");
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(0).str("").str("js-offsets")), kOk);
  publish(p, 0, 1, numbered(0, 3, "a"));
  std::this_thread::sleep_for(50ms);
  const int64_t between = now_ms();
  std::this_thread::sleep_for(50ms);
  publish(p, 0, 4, numbered(3, 6, "b"));

  // A consumer per connection, id 0 each (getNextConsumerId).
  auto consume = [&](Spec spec, size_t n, uint64_t from, std::vector<Chunk>* chunks) {
    JsConnection c(port(), "Unknown");
    EXPECT_EQ(c.subscribe(0, "js-offsets", spec, {{"identifier", "tag"}}), kOk);
    return bodies(c.consume(0, n, from, chunks));
  };
  std::vector<Chunk> chunks;
  EXPECT_EQ(consume({kFirst}, 6, 0, nullptr), amqp_all({"a0", "a1", "a2", "b3", "b4", "b5"}));
  EXPECT_EQ(consume({kLast}, 3, 0, &chunks), amqp_all({"b3", "b4", "b5"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 3u);
  EXPECT_EQ(consume({kOffset, 4}, 2, 4, nullptr), amqp_all({"b4", "b5"}));
  chunks.clear();
  EXPECT_EQ(consume({kTimestamp, between}, 3, 0, &chunks), amqp_all({"b3", "b4", "b5"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 3u);

  // One credit: a chunk, then nothing until the chunk is handled.
  JsConnection c(port(), "Unknown");
  ASSERT_EQ(c.subscribe(0, "js-offsets", {kNext}), kOk);
  publish(p, 0, 7, {"c6"});
  Chunk c6 = read_deliver(c.peer.next(kDeliver));
  EXPECT_EQ(c6.messages, amqp_all({"c6"}));
  publish(p, 0, 8, {"c7"});
  EXPECT_TRUE(c.peer.quiet(kDeliver));
  c.cast(kCredit, 1, Out().u8(0).u16(1));
  EXPECT_EQ(bodies(c.consume(0, 1)), amqp_all({"c7"}));

  // storeOffset / queryOffset on the consumer's connection.
  c.cast(kStoreOffset, 1, Out().str("js-reader").str("js-offsets").u64(7));
  uint32_t q = c.rpc(kQueryOffset, Out().str("js-reader").str("js-offsets"));
  EXPECT_EQ(expect_u64_answer(c.peer, kQueryOffset, q, kOk), 7u);
  EXPECT_EQ(c.rpc_code(kUnsubscribe, Out().u8(0)), kOk);
}

// Single active consumer (singleActive, consumerRef): the answer to every
// ConsumerUpdate is the consumer's own offset.
TEST_F(JsConformance, SingleActiveConsumerOnAStream) {
  JsConnection loc = locator();
  ASSERT_EQ(loc.rpc_code(kCreate, Out().str("js-sac").u32(0)), kOk);
  JsConnection p(port(), "Unknown");
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(0).str("").str("js-sac")), kOk);
  publish(p, 0, 1, numbered(0, 3, "m"));
  const Props props = {{"single-active-consumer", "true"}, {"name", "js-group"}};

  auto a = std::make_unique<JsConnection>(port(), "Unknown");
  ASSERT_EQ(a->subscribe(0, "js-sac", {kFirst}, props), kOk);
  ConsumerUpdate up = expect_consumer_update(a->peer);
  EXPECT_EQ(up.active, 1);
  a->consumer_update_answer(up.corr, {kFirst});
  EXPECT_EQ(bodies(a->consume(0, 3)), amqp_all(numbered(0, 3, "m")));

  JsConnection b(port(), "Unknown");
  ASSERT_EQ(b.subscribe(0, "js-sac", {kOffset, 2}, props), kOk);
  EXPECT_TRUE(b.peer.quiet(kConsumerUpdate));
  // closeConsumer: Unsubscribe, then the connection is released.
  EXPECT_EQ(a->rpc_code(kUnsubscribe, Out().u8(0)), kOk);
  EXPECT_EQ(a->rpc_code(kClose, Out().u16(0).str("")), kOk);
  a.reset();
  ConsumerUpdate up2 = expect_consumer_update(b.peer);
  EXPECT_EQ(up2.active, 1);
  b.consumer_update_answer(up2.corr, {kOffset, 2});
  EXPECT_EQ(bodies(b.consume(0, 1, 2)), amqp_all({"m2"}));
}

// declareSuperStreamConsumer: a single active consumer per partition with
// the super-stream property; a second instance takes partition 1 over —
// both answer with their offset (next), deactivation included.
TEST_F(JsConformance, SuperStreamSingleActiveConsumerRebalance) {
  JsConnection loc = locator();
  ASSERT_EQ(loc.rpc_code(kCreateSuperStream, Out()
                                                 .str("js-inv")
                                                 .i32(3)
                                                 .str("js-inv-0")
                                                 .str("js-inv-1")
                                                 .str("js-inv-2")
                                                 .i32(3)
                                                 .str("0")
                                                 .str("1")
                                                 .str("2")
                                                 .u32(0)),
            kOk);
  JsConnection p(port(), "Unknown");
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(0).str("").str("js-inv-1")), kOk);
  const Props props = {
      {"single-active-consumer", "true"}, {"name", "js-group"}, {"super-stream", "js-inv"}};
  auto instance = [&](bool active) {
    std::vector<std::unique_ptr<JsConnection>> v;
    for (int i = 0; i < 3; ++i) {
      auto c = std::make_unique<JsConnection>(port(), "Unknown");
      EXPECT_EQ(c->subscribe(0, "js-inv-" + std::to_string(i), {kNext}, props), kOk);
      if (active) {
        ConsumerUpdate up = expect_consumer_update(c->peer);
        EXPECT_EQ(up.active, 1);
        c->consumer_update_answer(up.corr, {kNext});
      }
      v.push_back(std::move(c));
    }
    return v;
  };
  auto one = instance(true);
  publish(p, 0, 1, {"m0"});
  EXPECT_EQ(bodies(one[1]->consume(0, 1)), amqp_all({"m0"}));
  auto two = instance(false);
  ConsumerUpdate down = expect_consumer_update(one[1]->peer);
  EXPECT_EQ(down.active, 0);
  one[1]->consumer_update_answer(down.corr, {kNext});
  ConsumerUpdate up = expect_consumer_update(two[1]->peer);
  EXPECT_EQ(up.active, 1);
  two[1]->consumer_update_answer(up.corr, {kNext});
  EXPECT_TRUE(two[1]->peer.quiet(kDeliver)) << "next: after m0";
  publish(p, 0, 2, {"m1"});
  EXPECT_EQ(bodies(two[1]->consume(0, 1)), amqp_all({"m1"}));
  EXPECT_TRUE(one[1]->peer.quiet(kDeliver));
  EXPECT_TRUE(two[0]->peer.quiet(kConsumerUpdate, 100ms));
  EXPECT_TRUE(two[2]->peer.quiet(kConsumerUpdate, 100ms));
}

// PublishRequestV2 (a publisher with a filter function): a value per
// message, int16 -1 where the function gives none; a consumer with
// filter.N and match-unfiltered.
TEST_F(JsConformance, FilteringAsRabbitMqDoes) {
  JsConnection loc = locator();
  ASSERT_EQ(loc.rpc_code(kCreate, Out().str("js-filtered").u32(0)), kOk);
  JsConnection p(port(), "Unknown");
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(0).str("").str("js-filtered")), kOk);
  auto send = [&](uint64_t first, const std::vector<std::string>& bodies, const char* f) {
    Out o;
    o.u8(0).u32(uint32_t(bodies.size()));
    for (size_t i = 0; i < bodies.size(); ++i) {
      o.u64(first + i);
      if (f) {
        o.str(f);
      } else {
        o.i16(-1);
      }
      o.blob(amqp(bodies[i]));
    }
    p.cast(kPublish, 2, o);
    std::set<uint64_t> ids;
    for (size_t i = 0; i < bodies.size(); ++i) ids.insert(first + i);
    expect_confirms(p.peer, 0, ids);
  };
  send(1, numbered(0, 2, "cat"), "cat");
  send(3, numbered(2, 4, "dog"), "dog");
  send(5, numbered(4, 5, "none"), nullptr);
  JsConnection c(port(), "Unknown");
  ASSERT_EQ(c.subscribe(0, "js-filtered", {kFirst},
                        {{"filter.0", "dog"}, {"match-unfiltered", "true"}}, 10),
            kOk);
  std::vector<Chunk> chunks;
  EXPECT_EQ(bodies(c.consume(0, 3, 0, &chunks)), amqp_all({"dog2", "dog3", "none4"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 2u) << "the cat chunk is not sent";
}

}  // namespace
}  // namespace strata::test::conformance_js
