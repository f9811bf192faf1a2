// The Java client's conversation (rabbitmq/rabbitmq-stream-java-client):
// every frame as its encoder writes it — src/main/java/com/rabbitmq/stream/
// impl/Client.java (requests, publish, sub-entry batches, ConsumerUpdate
// answers), ServerFrameHandler.java (the Tune answer with the response bit,
// the ExchangeCommandVersions list: Deliver 1..2, the server-initiated
// commands it reads), ClientProperties.java (peer properties),
// StreamProducer.java (Publish v2 with filter values), StreamConsumer.java
// and ConsumersCoordinator.java (subscription properties, offset lookups,
// the default single-active-consumer listener answering a deactivation with
// offset type 0 "none"), StreamStreamCreator.java (creation arguments) —
// checked against the answers RabbitMQ 3.13/4.x gives.
#include <algorithm>

#include "server/conformance/wire_bytes.h"

namespace strata::test::conformance_java {
namespace {

using namespace wire;

// Client.negotiatedMaxValue: 0 on either side means no limit.
uint32_t negotiated(uint32_t client, uint32_t server) {
  return client == 0 || server == 0 ? std::max(client, server) : std::min(client, server);
}

// One connection of com.rabbitmq.stream.impl.Client: correlation ids from
// an AtomicInteger starting at 0.
class JavaConnection : public ClientConnection {
 public:
  JavaConnection(int port, const std::string& name) : ClientConnection(port, 0) {
    // Client(): peerProperties(): the connection name the environment gives
    // (LinkedHashMap: it comes first), then DEFAULT_CLIENT_PROPERTIES.
    uint32_t pp = rpc(
        kPeerProperties,
        Out().map({{"connection_name", name},
                   {"product", "RabbitMQ Stream"},
                   {"version", "1.11.0"},
                   {"platform", "Java"},
                   {"copyright", "Copyright (c) 2020-2025 Broadcom Inc. and/or its subsidiaries."},
                   {"information", "Licensed under the MPL 2.0. See https://www.rabbitmq.com/"}}));
    server = expect_peer_properties(peer, pp);
    uint32_t hs = rpc(kSaslHandshake, Out());
    auto mechanisms = expect_sasl_mechanisms(peer, hs);
    EXPECT_NE(std::find(mechanisms.begin(), mechanisms.end(), "PLAIN"), mechanisms.end());
    // sendSaslAuthenticate: mechanism, int32 length + "\0user\0password".
    uint32_t au =
        rpc(kSaslAuthenticate, Out().str("PLAIN").blob(std::string("\0guest\0guest", 12)));
    expect_code(peer, kSaslAuthenticate, au, kOk);
    // TuneFrameHandler: encodeResponseCode(COMMAND_TUNE) = 0x8014, the
    // negotiated values (requested 1 MiB and 60 s).
    Tune t = expect_server_tune(peer);
    frame_max = negotiated(1048576, t.frame_max);
    cast(kTune | kAnswer, 1, Out().u32(frame_max).u32(negotiated(60, t.heartbeat)));
    uint32_t op = rpc(kOpen, Out().str("/"));
    connection = expect_open(peer, op);
    // maybeExchangeCommandVersions: from 3.11, the commands the server
    // initiates that it handles: Deliver 1..2.
    if (version_at_least(server["version"], 3, 11, 0)) {
      uint32_t ev = rpc(kExchangeCommandVersions, Out().u32(1).u16(kDeliver).u16(1).u16(2));
      versions = expect_command_versions(peer, ev);
    }
  }
  // declarePublisher: no reference is an empty string (u16 0).
  uint16_t declare_publisher(uint8_t id, const std::string& ref, const std::string& stream) {
    return rpc_code(kDeclarePublisher, Out().u8(id).str(ref).str(stream));
  }
  uint64_t publisher_sequence(const std::string& ref, const std::string& stream) {
    uint32_t c = rpc(kQueryPublisherSequence, Out().str(ref).str(stream));
    return expect_u64_answer(peer, kQueryPublisherSequence, c, kOk);
  }
  // subscribe: properties only when there are some.
  uint16_t subscribe(uint8_t sub, const std::string& stream, Spec spec, uint16_t credit,
                     const Props& props = {}) {
    Out o;
    o.u8(sub).str(stream);
    put_spec(o, spec).u16(credit);
    if (!props.empty()) o.map(props);
    return rpc_code(kSubscribe, o);
  }
  // queryOffset: (code, offset).
  std::pair<uint16_t, uint64_t> query_offset(const std::string& ref, const std::string& stream) {
    uint32_t c = rpc(kQueryOffset, Out().str(ref).str(stream));
    Bytes b = peer.next(kQueryOffset | kAnswer);
    In in(b);
    uint16_t code = answer_head(in, kQueryOffset, c);
    uint64_t offset = in.u64();
    EXPECT_TRUE(in.done()) << hex(b);
    return {code, offset};
  }
  void store_offset(const std::string& ref, const std::string& stream, uint64_t offset) {
    cast(kStoreOffset, 1, Out().str(ref).str(stream).u64(offset));
  }
  void credit(uint8_t sub, uint16_t n) { cast(kCredit, 1, Out().u8(sub).i16(int16_t(n))); }
  // consumerUpdateResponse: 0x801a, code ok, the spec (none: type 0 alone).
  void consumer_update_answer(uint32_t corr, Spec spec) {
    Out o;
    o.u32(corr).u16(kOk);
    put_spec(o, spec);
    cast(kConsumerUpdate | kAnswer, 1, o);
  }
  // StreamConsumer's default listener with automatic tracking, on
  // activation: the stored offset + 1, else the subscription's spec.
  void answer_activation(uint32_t corr, const std::string& ref, const std::string& stream,
                         Spec initial) {
    auto [code, offset] = query_offset(ref, stream);
    consumer_update_answer(corr, code == kOk ? Spec{kOffset, int64_t(offset + 1)} : initial);
  }
  // streamStats (queryStreamStats): code, then a map of i64.
  std::map<std::string, int64_t> stream_stats(const std::string& stream) {
    uint32_t c = rpc(kStreamStats, Out().str(stream));
    Bytes b = peer.next(kStreamStats | kAnswer);
    In in(b);
    EXPECT_EQ(answer_head(in, kStreamStats, c), kOk);
    std::map<std::string, int64_t> m;
    for (uint32_t n = in.u32(); n > 0 && in.ok(); --n) {
      std::string k = in.str();
      m[k] = in.i64();
    }
    EXPECT_TRUE(in.done()) << hex(b);
    return m;
  }
  Received consume(uint8_t sub, size_t n, uint64_t from = 0) {
    // creditOnChunkArrival: one credit per chunk, as it arrives.
    return receive(peer, sub, n, from, [&](const Chunk& c) {
      EXPECT_EQ(c.version, 2) << "the Java client asked for Deliver 2";
      EXPECT_GE(c.committed_chunk_id, c.chunk_id);
      credit(sub, 1);
    });
  }

  std::map<std::string, std::string> server, connection;
  std::vector<CommandVersion> versions;
  uint32_t frame_max = 0;
};

// StreamProducer (no filter, no sub-entries): Client.publish.
void publish(JavaConnection& c, uint8_t pub, uint64_t first_id,
             const std::vector<std::string>& bodies) {
  c.cast(kPublish, 1, simple_publish(pub, first_id, amqp_all(bodies)));
  std::set<uint64_t> ids;
  for (size_t i = 0; i < bodies.size(); ++i) ids.insert(first_id + i);
  expect_confirms(c.peer, pub, ids);
}

class JavaConformance : public ServeTest {
 protected:
  int port() { return server_.port(); }
  JavaConnection locator() { return JavaConnection(port(), "rabbitmq-stream-locator-0"); }
  // StreamStreamCreator: the leader locator is always there.
  uint16_t create(JavaConnection& c, const std::string& stream, Props extra = {}) {
    extra.insert(extra.begin(), {"queue-leader-locator", "balanced"});
    return c.rpc_code(kCreate, Out().str(stream).map(extra));
  }
};

TEST_F(JavaConformance, HandshakeHeartbeatAndClose) {
  JavaConnection c = locator();
  EXPECT_TRUE(version_at_least(c.server["version"], 3, 13, 0))
      << "the Java client turns super stream management on from 3.13: " << c.server["version"];
  EXPECT_EQ(c.versions, rabbit_command_versions());
  EXPECT_FALSE(c.connection["advertised_host"].empty());
  EXPECT_EQ(c.connection["advertised_port"], std::to_string(port()))
      << "producers and consumers connect to the advertised address";
  EXPECT_GT(c.frame_max, 0u);
  // The heartbeat the IdleStateHandler sends: no answer, the connection goes on.
  c.cast(kHeartbeat, 1, Out());
  uint32_t m = c.rpc(kMetadata, Out().strs({"none"}));
  EXPECT_EQ(expect_metadata(c.peer, m).streams["none"].code, kStreamDoesNotExist);
  // close(): Close(1, "OK"), answered ok, then the server closes.
  EXPECT_EQ(c.rpc_code(kClose, Out().u16(kOk).str("OK")), kOk);
  EXPECT_TRUE(c.peer.closed_by_server());
}

TEST_F(JavaConformance, CreateMetadataAndDelete) {
  JavaConnection c = locator();
  const Props args = {{"max-length-bytes", "10000000000"},
                      {"max-age", "86400s"},
                      {"stream-max-segment-size-bytes", "500000000"},
                      {"stream-filter-size-bytes", "32"},
                      {"initial-cluster-size", "1"}};
  EXPECT_EQ(create(c, "orders", args), kOk);
  EXPECT_EQ(create(c, "orders", args), kStreamAlreadyExists);
  EXPECT_EQ(create(c, "plain"), kOk);

  uint32_t m = c.rpc(kMetadata, Out().strs({"orders", "missing"}));
  Metadata md = expect_metadata(c.peer, m);
  ASSERT_EQ(md.brokers.size(), 1u);
  EXPECT_EQ(md.brokers[0].ref, 0);
  EXPECT_EQ(md.brokers[0].host, c.connection["advertised_host"]);
  EXPECT_EQ(md.brokers[0].port, uint32_t(port()));
  EXPECT_EQ(md.streams["orders"].code, kOk);
  EXPECT_EQ(md.streams["orders"].leader, 0);
  EXPECT_TRUE(md.streams["orders"].replicas.empty());
  EXPECT_EQ(md.streams["missing"].code, kStreamDoesNotExist);
  EXPECT_EQ(md.streams["missing"].leader, 0xffff);

  // A consumer on "plain" hears of its deletion by another connection.
  JavaConnection consumer(port(), "rabbitmq-stream-consumer-0");
  EXPECT_EQ(consumer.subscribe(0, "plain", {kNext}, 10), kOk);
  EXPECT_EQ(c.rpc_code(kDelete, Out().str("plain")), kOk);
  auto [code, stream] = expect_metadata_update(consumer.peer);
  EXPECT_EQ(code, kStreamNotAvailable);
  EXPECT_EQ(stream, "plain");
  EXPECT_EQ(c.rpc_code(kDelete, Out().str("plain")), kStreamDoesNotExist);
  EXPECT_EQ(c.rpc_code(kDelete, Out().str("orders")), kOk);
}

// A named producer: declare, ask the sequence, publish simple entries and a
// sub-entry batch (its publishing id is its last message's), then
// reconnect and re-send what was not confirmed (retryOnRecovery): the
// duplicates are confirmed and not stored.
TEST_F(JavaConformance, NamedProducerDeduplicates) {
  JavaConnection loc = locator();
  ASSERT_EQ(create(loc, "dedup"), kOk);
  {
    JavaConnection p(port(), "rabbitmq-stream-producer-0");
    ASSERT_EQ(p.declare_publisher(0, "java-app", "dedup"), kOk);
    EXPECT_EQ(p.publisher_sequence("java-app", "dedup"), 0u);
    publish(p, 0, 0, numbered(0, 5, "m"));
    // publishBatches: one entry of three records, id 7.
    Out batch;
    batch.u8(0).u32(1).u64(7);
    put_sub_batch(batch, amqp_all(numbered(5, 8, "m")));
    p.cast(kPublish, 1, batch);
    expect_confirms(p.peer, 0, {7});
    EXPECT_EQ(p.publisher_sequence("java-app", "dedup"), 7u);
  }
  JavaConnection p(port(), "rabbitmq-stream-producer-1");
  ASSERT_EQ(p.declare_publisher(0, "java-app", "dedup"), kOk);
  EXPECT_EQ(p.publisher_sequence("java-app", "dedup"), 7u);
  publish(p, 0, 3, numbered(3, 5, "m"));  // duplicates
  publish(p, 0, 8, numbered(8, 10, "m"));
  EXPECT_EQ(p.publisher_sequence("java-app", "dedup"), 9u);
  uint32_t q = p.rpc(kQueryPublisherSequence, Out().str("java-app").str("nope"));
  EXPECT_EQ(expect_u64_answer(p.peer, kQueryPublisherSequence, q, kStreamDoesNotExist), 0u);
  EXPECT_EQ(p.declare_publisher(1, "java-app", "nope"), kStreamDoesNotExist);

  JavaConnection c(port(), "rabbitmq-stream-consumer-0");
  ASSERT_EQ(c.subscribe(0, "dedup", {kFirst}, 10), kOk);
  EXPECT_EQ(bodies(c.consume(0, 10)), amqp_all(numbered(0, 10, "m")));
  EXPECT_TRUE(c.peer.quiet(kDeliver)) << "stored once";
  // Publishing through an undeclared publisher id: PublishError 18.
  p.cast(kPublish, 1, simple_publish(9, 100, {amqp("x")}));
  Bytes err = p.peer.next(kPublishError);
  EXPECT_EQ(hex(err), hex(Out().u16(kPublishError).u16(1).u8(9).u32(1).u64(100).u16(18).bytes()));
}

// Every offset specification the Java client writes, one subscription
// after the other on one connection.
TEST_F(JavaConformance, SubscribeWithEveryOffsetSpec) {
  JavaConnection loc = locator();
  ASSERT_EQ(create(loc, "specs"), kOk);
  // osiris:get_stats: -1 while the stream is empty.
  using Stats = std::map<std::string, int64_t>;
  EXPECT_EQ(loc.stream_stats("specs"),
            (Stats{{"committed_chunk_id", -1}, {"first_chunk_id", -1}, {"last_chunk_id", -1}}));
  JavaConnection p(port(), "rabbitmq-stream-producer-0");
  ASSERT_EQ(p.declare_publisher(0, "", "specs"), kOk);
  publish(p, 0, 0, numbered(0, 3, "a"));
  std::this_thread::sleep_for(50ms);
  const int64_t between = now_ms();
  std::this_thread::sleep_for(50ms);
  publish(p, 0, 3, numbered(3, 6, "b"));
  EXPECT_EQ(loc.stream_stats("specs"),
            (Stats{{"committed_chunk_id", 3}, {"first_chunk_id", 0}, {"last_chunk_id", 3}}));

  JavaConnection c(port(), "rabbitmq-stream-consumer-0");
  auto unsubscribe = [&](uint8_t sub) { EXPECT_EQ(c.rpc_code(kUnsubscribe, Out().u8(sub)), kOk); };
  ASSERT_EQ(c.subscribe(0, "specs", {kFirst}, 10), kOk);
  EXPECT_EQ(bodies(c.consume(0, 6)), amqp_all({"a0", "a1", "a2", "b3", "b4", "b5"}));
  unsubscribe(0);

  std::vector<Chunk> chunks;
  ASSERT_EQ(c.subscribe(1, "specs", {kLast}, 10), kOk);
  auto last = receive(
      c.peer, 1, 3, 0, [&](const Chunk&) { c.credit(1, 1); }, &chunks);
  EXPECT_EQ(chunks.at(0).chunk_id, 3u) << "last: the last chunk";
  EXPECT_EQ(bodies(last), amqp_all({"b3", "b4", "b5"}));
  unsubscribe(1);

  ASSERT_EQ(c.subscribe(2, "specs", {kNext}, 10), kOk);
  EXPECT_TRUE(c.peer.quiet(kDeliver)) << "next: nothing until something is written";
  publish(p, 0, 6, {"c6"});
  auto next = c.consume(2, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0], (std::pair<uint64_t, std::string>{6, amqp("c6")}));
  unsubscribe(2);

  // offset: the chunk holding it; the client skips the records before it.
  chunks.clear();
  ASSERT_EQ(c.subscribe(3, "specs", {kOffset, 4}, 10), kOk);
  auto from4 = receive(
      c.peer, 3, 3, 4, [&](const Chunk&) { c.credit(3, 1); }, &chunks);
  EXPECT_LE(chunks.at(0).chunk_id, 4u);
  EXPECT_EQ(bodies(from4), amqp_all({"b4", "b5", "c6"}));
  unsubscribe(3);

  chunks.clear();
  ASSERT_EQ(c.subscribe(4, "specs", {kTimestamp, between}, 10), kOk);
  auto since = receive(
      c.peer, 4, 4, 0, [&](const Chunk&) { c.credit(4, 1); }, &chunks);
  EXPECT_EQ(chunks.at(0).chunk_id, 3u) << "timestamp: the first chunk written at or after it";
  EXPECT_GE(chunks.at(0).timestamp, between);
  EXPECT_EQ(bodies(since), amqp_all({"b3", "b4", "b5", "c6"}));
  unsubscribe(4);
  EXPECT_EQ(c.rpc_code(kUnsubscribe, Out().u8(4)), kSubscriptionIdDoesNotExist);
  EXPECT_EQ(c.subscribe(5, "nope", {kFirst}, 10), kStreamDoesNotExist);
}

// A named consumer with manual tracking and a credit strategy that waits:
// QueryOffset before subscribing, chunks only against credit, StoreOffset
// and QueryOffset, a credit for an unknown subscription.
TEST_F(JavaConformance, CreditAndOffsetTracking) {
  JavaConnection loc = locator();
  ASSERT_EQ(create(loc, "flow"), kOk);
  JavaConnection p(port(), "rabbitmq-stream-producer-0");
  ASSERT_EQ(p.declare_publisher(0, "", "flow"), kOk);

  JavaConnection c(port(), "rabbitmq-stream-consumer-0");
  EXPECT_EQ(c.query_offset("tracker", "flow"), (std::pair<uint16_t, uint64_t>{kNoOffset, 0}));
  ASSERT_EQ(c.subscribe(0, "flow", {kNext}, 1, {{"name", "tracker"}}), kOk);
  publish(p, 0, 0, numbered(0, 2, "a"));
  auto first = receive(c.peer, 0, 2, 0, nullptr);
  EXPECT_EQ(bodies(first), amqp_all({"a0", "a1"}));
  publish(p, 0, 2, numbered(2, 4, "b"));
  EXPECT_TRUE(c.peer.quiet(kDeliver)) << "no credit left";
  c.credit(0, 1);
  EXPECT_EQ(bodies(receive(c.peer, 0, 2, 0, nullptr)), amqp_all({"b2", "b3"}));

  c.store_offset("tracker", "flow", 3);
  EXPECT_EQ(c.query_offset("tracker", "flow"), (std::pair<uint16_t, uint64_t>{kOk, 3}));
  EXPECT_EQ(c.query_offset("tracker", "nope").first, kStreamDoesNotExist);
  c.store_offset("tracker", "nope", 1);  // no answer, and the connection goes on

  c.credit(9, 1);
  EXPECT_EQ(
      hex(c.peer.next(kCredit | kAnswer)),
      hex(Out().u16(kCredit | kAnswer).u16(1).u16(kSubscriptionIdDoesNotExist).u8(9).bytes()));
  uint32_t m = c.rpc(kMetadata, Out().strs({"flow"}));
  EXPECT_EQ(expect_metadata(c.peer, m).streams["flow"].code, kOk);
}

// Single active consumer on one stream, two application instances: the
// first is activated and answers with its initial spec (nothing stored),
// the second waits without a word; when the first leaves, the second is
// activated and answers with the stored offset + 1.
TEST_F(JavaConformance, SingleActiveConsumerOnAStream) {
  JavaConnection loc = locator();
  ASSERT_EQ(create(loc, "sac"), kOk);
  JavaConnection p(port(), "rabbitmq-stream-producer-0");
  ASSERT_EQ(p.declare_publisher(0, "", "sac"), kOk);
  publish(p, 0, 0, numbered(0, 4, "m"));
  const Props props = {{"single-active-consumer", "true"}, {"name", "app"}};

  JavaConnection a(port(), "rabbitmq-stream-consumer-0");
  EXPECT_EQ(a.query_offset("app", "sac").first, kNoOffset);
  ASSERT_EQ(a.subscribe(0, "sac", {kFirst}, 10, props), kOk);
  ConsumerUpdate up = expect_consumer_update(a.peer);
  EXPECT_EQ(up.subscription, 0);
  EXPECT_EQ(up.active, 1);
  a.answer_activation(up.corr, "app", "sac", {kFirst});
  EXPECT_EQ(bodies(a.consume(0, 4)), amqp_all(numbered(0, 4, "m")));

  JavaConnection b(port(), "rabbitmq-stream-consumer-1");
  EXPECT_EQ(b.query_offset("app", "sac").first, kNoOffset);
  ASSERT_EQ(b.subscribe(0, "sac", {kFirst}, 10, props), kOk);
  EXPECT_TRUE(b.peer.quiet(kConsumerUpdate)) << "a waiting consumer is not told anything";
  EXPECT_FALSE(b.peer.holds(kDeliver));

  // The first closes: automatic tracking stores the last offset, then
  // unsubscribes.
  a.store_offset("app", "sac", 3);
  EXPECT_EQ(a.rpc_code(kUnsubscribe, Out().u8(0)), kOk);
  ConsumerUpdate up2 = expect_consumer_update(b.peer);
  EXPECT_EQ(up2.subscription, 0);
  EXPECT_EQ(up2.active, 1);
  b.answer_activation(up2.corr, "app", "sac", {kFirst});
  publish(p, 0, 4, numbered(4, 6, "m"));
  std::vector<Chunk> chunks;
  auto got = receive(
      b.peer, 0, 2, 4, [&](const Chunk&) { b.credit(0, 1); }, &chunks);
  EXPECT_EQ(chunks.at(0).chunk_id, 4u) << "from the answered offset";
  EXPECT_EQ(bodies(got), amqp_all({"m4", "m5"}));
}

// A super stream created by the client, its topology, and single active
// consumers on it: all partitions of an instance on one connection, a second
// instance joining takes partition 1 over — the first is told it is
// inactive, stores its offset and answers with offset type 0 "none"; the
// second is then activated and starts after the stored offset.
TEST_F(JavaConformance, SuperStreamSingleActiveConsumerRebalance) {
  JavaConnection loc = locator();
  ASSERT_EQ(loc.rpc_code(kCreateSuperStream, Out()
                                                 .str("inv")
                                                 .strs({"inv-0", "inv-1", "inv-2"})
                                                 .strs({"0", "1", "2"})
                                                 .map({{"queue-leader-locator", "balanced"}})),
            kOk);
  uint32_t pc = loc.rpc(kPartitions, Out().str("inv"));
  EXPECT_EQ(expect_streams_answer(loc.peer, kPartitions, pc, kOk),
            (std::vector<std::string>{"inv-0", "inv-1", "inv-2"}));
  uint32_t rc = loc.rpc(kRoute, Out().str("1").str("inv"));
  EXPECT_EQ(expect_streams_answer(loc.peer, kRoute, rc, kOk), std::vector<std::string>{"inv-1"});
  rc = loc.rpc(kRoute, Out().str("7").str("inv"));
  EXPECT_TRUE(expect_streams_answer(loc.peer, kRoute, rc, kOk).empty()) << "no route";
  rc = loc.rpc(kRoute, Out().str("1").str("nope"));
  EXPECT_TRUE(expect_streams_answer(loc.peer, kRoute, rc, kStreamDoesNotExist).empty());

  JavaConnection p(port(), "rabbitmq-stream-producer-0");
  ASSERT_EQ(p.declare_publisher(0, "", "inv-1"), kOk);
  publish(p, 0, 0, numbered(0, 4, "m"));

  const Props props = {
      {"single-active-consumer", "true"}, {"super-stream", "inv"}, {"name", "app"}};
  // An instance subscribes to every partition on its one connection (sub i
  // on inv-i) and answers each activation.
  auto join = [&](JavaConnection& c, int expected_activations) {
    for (uint8_t i = 0; i < 3; ++i) {
      std::string part = "inv-" + std::to_string(i);
      EXPECT_EQ(c.query_offset("app", part).first, kNoOffset);
      ASSERT_EQ(c.subscribe(i, part, {kFirst}, 10, props), kOk);
    }
    for (int n = 0; n < expected_activations; ++n) {
      ConsumerUpdate up = expect_consumer_update(c.peer);
      EXPECT_EQ(up.active, 1);
      c.answer_activation(up.corr, "app", "inv-" + std::to_string(up.subscription), {kFirst});
    }
  };
  JavaConnection one(port(), "rabbitmq-stream-consumer-0");
  join(one, 3);
  EXPECT_EQ(bodies(one.consume(1, 4)), amqp_all(numbered(0, 4, "m")));

  JavaConnection two(port(), "rabbitmq-stream-consumer-1");
  join(two, 0);
  // Partition 1 of 2 members: the second instance's. The first steps down.
  ConsumerUpdate down = expect_consumer_update(one.peer);
  EXPECT_EQ(down.subscription, 1);
  EXPECT_EQ(down.active, 0);
  one.store_offset("app", "inv-1", 3);
  EXPECT_EQ(one.query_offset("app", "inv-1"), (std::pair<uint16_t, uint64_t>{kOk, 3}));
  one.consumer_update_answer(down.corr, {kNone});
  ConsumerUpdate up = expect_consumer_update(two.peer);
  EXPECT_EQ(up.subscription, 1);
  EXPECT_EQ(up.active, 1);
  two.answer_activation(up.corr, "app", "inv-1", {kFirst});
  EXPECT_TRUE(two.peer.quiet(kConsumerUpdate)) << "partitions 0 and 2 stay with the first";

  publish(p, 0, 4, numbered(4, 6, "m"));
  std::vector<Chunk> chunks;
  auto got = receive(
      two.peer, 1, 2, 4, [&](const Chunk&) { two.credit(1, 1); }, &chunks);
  EXPECT_EQ(chunks.at(0).chunk_id, 4u);
  EXPECT_EQ(bodies(got), amqp_all({"m4", "m5"}));
  EXPECT_TRUE(one.peer.quiet(kDeliver)) << "the inactive consumer gets nothing";
  uint32_t m = one.rpc(kMetadata, Out().strs({"inv-1"}));
  EXPECT_EQ(expect_metadata(one.peer, m).streams["inv-1"].code, kOk)
      << "the shared connection goes on";

  EXPECT_EQ(loc.rpc_code(kDeleteSuperStream, Out().str("inv")), kOk);
  pc = loc.rpc(kPartitions, Out().str("inv"));
  EXPECT_TRUE(expect_streams_answer(loc.peer, kPartitions, pc, kStreamDoesNotExist).empty());
}

// Publish v2 with filter values (the producer's filterValue extractor; a
// null value is int16 -1) and subscriptions with filter.N and
// match-unfiltered: the server skips the chunks whose Bloom filter cannot
// match (osiris), the client filters the messages of the chunks it gets.
TEST_F(JavaConformance, FilteringAsRabbitMqDoes) {
  JavaConnection loc = locator();
  ASSERT_EQ(create(loc, "filtered", {{"stream-filter-size-bytes", "32"}}), kOk);
  JavaConnection p(port(), "rabbitmq-stream-producer-0");
  ASSERT_TRUE(std::find(p.versions.begin(), p.versions.end(), CommandVersion{kPublish, 1, 2}) !=
              p.versions.end())
      << "filteringSupported(): Publish up to version 2";
  ASSERT_EQ(p.declare_publisher(0, "", "filtered"), kOk);
  auto publish_v2 = [&](uint64_t first, const std::vector<std::string>& bodies,
                        const char* filter) {
    Out o;
    o.u8(0).u32(uint32_t(bodies.size()));
    for (size_t i = 0; i < bodies.size(); ++i) {
      o.u64(first + i);
      if (filter) {
        o.str(filter);
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
  publish_v2(0, numbered(0, 3, "apple"), "apple");
  publish_v2(3, numbered(3, 6, "banana"), "banana");
  publish_v2(6, numbered(6, 8, "plain"), nullptr);

  JavaConnection c(port(), "rabbitmq-stream-consumer-0");
  ASSERT_EQ(c.subscribe(0, "filtered", {kFirst}, 10,
                        {{"filter.0", "banana"}, {"match-unfiltered", "false"}}),
            kOk);
  std::vector<Chunk> chunks;
  auto got = receive(
      c.peer, 0, 3, 0, [&](const Chunk&) { c.credit(0, 1); }, &chunks);
  EXPECT_EQ(chunks.at(0).chunk_id, 3u) << "the apple chunk is not sent";
  EXPECT_EQ(bodies(got), amqp_all(numbered(3, 6, "banana")));
  EXPECT_TRUE(c.peer.quiet(kDeliver)) << "nor the unfiltered one";

  ASSERT_EQ(c.subscribe(1, "filtered", {kFirst}, 10,
                        {{"filter.0", "banana"}, {"match-unfiltered", "true"}}),
            kOk);
  chunks.clear();
  got = receive(
      c.peer, 1, 5, 0, [&](const Chunk&) { c.credit(1, 1); }, &chunks);
  EXPECT_EQ(chunks.at(0).chunk_id, 3u);
  EXPECT_EQ(got.back(), (std::pair<uint64_t, std::string>{7, amqp("plain7")}));
}

}  // namespace
}  // namespace strata::test::conformance_java
