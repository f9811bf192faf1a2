// The Go client's conversation (rabbitmq/rabbitmq-stream-go-client): every
// frame as its encoder writes it — pkg/stream/client.go (handshake,
// requests, Subscribe properties, DeclarePublisher after
// QueryPublisherSequence, Close without waiting), server_frame.go (the
// Tune answer with the response bit, uShortEncodeResponseCode),
// available_features.go and exchange_commands.go (ExchangeCommandVersions:
// Publish 1..2), buffer_writer.go (fields), producer.go and aggregation.go
// (Publish v1, sub-entries keyed by their first message's id, Publish v2),
// consumer.go (credits, ConsumerUpdate answers), stream_options.go and
// super_stream.go (creation arguments), coordinator.go (correlation ids
// from 1, one taken by the Tune wait), constants.go — checked against the
// answers RabbitMQ 3.13/4.x gives. The single-active-consumer answers are
// the ones of examples/single_active_consumer: the stored offset + 1, else
// first, whether activated or not.
#include <memory>

#include "server/conformance/wire_bytes.h"

namespace strata::test::conformance_go {
namespace {

using namespace wire;

uint32_t negotiated(uint32_t client, uint32_t server) {
  return client == 0 || server == 0 ? std::max(client, server) : std::min(client, server);
}

// One connection of the Go client (Client.connect).
class GoConnection : public ClientConnection {
 public:
  GoConnection(int port, const std::string& name) : ClientConnection(port, 1) {
    // peerProperties(): a Go map, in some order.
    uint32_t pp =
        rpc(kPeerProperties,
            Out().map({{"connection_name", name},
                       {"product", "RabbitMQ Stream"},
                       {"copyright", "Copyright (c) 2021 VMware, Inc. or its affiliates."},
                       {"information", "Licensed under the MPL 2.0. See https://www.rabbitmq.com/"},
                       {"version", "1.8.1"},
                       {"platform", "Golang"}}));
    server = expect_peer_properties(peer, pp);
    uint32_t hs = rpc(kSaslHandshake, Out());
    auto mechanisms = expect_sasl_mechanisms(peer, hs);
    EXPECT_NE(std::find(mechanisms.begin(), mechanisms.end(), "PLAIN"), mechanisms.end());
    // sendSaslAuthenticate: the Tune wait takes the next correlation id.
    uint32_t au =
        rpc(kSaslAuthenticate, Out().str("PLAIN").blob(std::string("\0guest\0guest", 12)));
    corr();
    expect_code(peer, kSaslAuthenticate, au, kOk);
    // handleTune: 0x8014, requested 1048574 bytes and 60 s.
    Tune t = expect_server_tune(peer);
    cast(kTune | kAnswer, 1,
         Out().u32(negotiated(1048574, t.frame_max)).u32(negotiated(60, t.heartbeat)));
    uint32_t op = rpc(kOpen, Out().str("/"));
    connection = expect_open(peer, op);
    // exchangeVersion from 3.11: GetCommands() = {PublishFilter}.
    if (version_at_least(server["version"], 3, 11, 0)) {
      uint32_t ev = rpc(kExchangeCommandVersions, Out().u32(1).u16(kPublish).u16(1).u16(2));
      versions = expect_command_versions(peer, ev);
    }
  }
  // internalDeclarePublisher: a name is asked its sequence first; the
  // reference is an int16 length + bytes.
  uint64_t declare_named_publisher(uint8_t id, const std::string& name, const std::string& stream) {
    uint64_t seq = publisher_sequence(name, stream);
    EXPECT_EQ(
        rpc_code(kDeclarePublisher, Out().u8(id).i16(int16_t(name.size())).raw(name).str(stream)),
        kOk);
    return seq;
  }
  uint64_t publisher_sequence(const std::string& name, const std::string& stream) {
    uint32_t c = rpc(kQueryPublisherSequence, Out().str(name).str(stream));
    return expect_u64_answer(peer, kQueryPublisherSequence, c, kOk);
  }
  // declareSubscriber: properties only when there are some.
  uint16_t subscribe(uint8_t id, const std::string& stream, Spec spec, const Props& props = {},
                     uint16_t credits = 10) {
    Out o;
    o.u8(id).str(stream);
    put_spec(o, spec).i16(int16_t(credits));
    if (!props.empty()) o.map(props);
    return rpc_code(kSubscribe, o);
  }
  std::pair<uint16_t, uint64_t> query_offset(const std::string& name, const std::string& stream) {
    uint32_t c = rpc(kQueryOffset, Out().str(name).str(stream));
    Bytes b = peer.next(kQueryOffset | kAnswer);
    In in(b);
    uint16_t code = answer_head(in, kQueryOffset, c);
    uint64_t offset = in.u64();
    EXPECT_TRUE(in.done()) << hex(b);
    return {code, offset};
  }
  // writeConsumeUpdateOffsetToSocket: 0x801a, ok, the spec the function gave.
  void consumer_update_answer(uint32_t corr, Spec spec) {
    Out o;
    o.u32(corr).u16(kOk);
    put_spec(o, spec);
    cast(kConsumerUpdate | kAnswer, 1, o);
  }
  // The example's ConsumerUpdate function: QueryOffset, then offset + 1 or
  // first — active or not.
  void answer_update(uint32_t corr, const std::string& name, const std::string& stream) {
    auto [code, offset] = query_offset(name, stream);
    consumer_update_answer(corr, code == kOk ? Spec{kOffset, int64_t(offset + 1)} : Spec{kFirst});
  }
  // The consumer asks one credit when it reaches the middle of a chunk.
  Received consume(uint8_t id, size_t n, uint64_t from = 0, std::vector<Chunk>* chunks = nullptr) {
    return receive(
        peer, id, n, from,
        [&](const Chunk& c) {
          EXPECT_EQ(c.version, 1) << "the Go client did not ask for Deliver 2";
          cast(kCredit, 1, Out().u8(id).i16(1));
        },
        chunks);
  }
  // Close(): Close(1, "OK"), then the socket is shut without waiting.
  uint32_t close() { return rpc(kClose, Out().u16(kOk).str("OK")); }

  std::map<std::string, std::string> server, connection;
  std::vector<CommandVersion> versions;
};

// internalBatchSendProdId: simple entries of AMQP messages.
void publish(GoConnection& c, uint8_t pub, uint64_t first_id,
             const std::vector<std::string>& bodies) {
  c.cast(kPublish, 1, simple_publish(pub, first_id, amqp_all(bodies)));
  std::set<uint64_t> ids;
  for (size_t i = 0; i < bodies.size(); ++i) ids.insert(first_id + i);
  expect_confirms(c.peer, pub, ids);
}

class GoConformance : public ServeTest {
 protected:
  int port() { return server_.port(); }
};

TEST_F(GoConformance, HandshakeAndClose) {
  GoConnection c(port(), "go-stream-locator");
  EXPECT_TRUE(version_at_least(c.server["version"], 3, 13, 0))
      << "single active consumers from 3.11, super streams from 3.13: " << c.server["version"];
  EXPECT_EQ(c.versions, rabbit_command_versions());
  // ParseCommandVersions: filtering needs Publish min <= 1 and max >= 2.
  auto publish = std::find_if(c.versions.begin(), c.versions.end(),
                              [](const CommandVersion& v) { return v.key == kPublish; });
  ASSERT_NE(publish, c.versions.end());
  EXPECT_LE(publish->min, 1);
  EXPECT_GE(publish->max, 2);
  EXPECT_EQ(c.connection["advertised_port"], std::to_string(port()));
  uint32_t corr = c.close();
  EXPECT_EQ(corr, 7u) << "1 PeerProperties, 2 SaslHandshake, 3 SaslAuthenticate, 4 the Tune wait, "
                         "5 Open, 6 ExchangeCommandVersions";
  expect_code(c.peer, kClose, corr, kOk);
  EXPECT_TRUE(c.peer.closed_by_server());
}

TEST_F(GoConformance, DeclareStreamWithGoArguments) {
  GoConnection c(port(), "go-stream-locator");
  // StreamOptions.buildParameters: the leader locator always, then what was set.
  const Props args = {{"queue-leader-locator", "least-leaders"},
                      {"max-length-bytes", "2000000000"},
                      {"stream-max-segment-size-bytes", "500000000"},
                      {"max-age", "7200s"}};
  EXPECT_EQ(c.rpc_code(kCreate, Out().str("go-stream").map(args)), kOk);
  EXPECT_EQ(c.rpc_code(kCreate, Out().str("go-stream").map(args)), kStreamAlreadyExists);
  EXPECT_EQ(
      c.rpc_code(kCreate, Out().str("go-default").map({{"queue-leader-locator", "least-leaders"}})),
      kOk);
  // StreamExists / BrokerLeader: Metadata of one stream.
  uint32_t m = c.rpc(kMetadata, Out().strs({"go-stream"}));
  Metadata md = expect_metadata(c.peer, m);
  ASSERT_EQ(md.brokers.size(), 1u);
  EXPECT_EQ(md.brokers[0].port, uint32_t(port()));
  EXPECT_EQ(md.streams["go-stream"].code, kOk);
  ASSERT_LT(md.streams["go-stream"].leader, md.brokers.size());
  EXPECT_EQ(md.brokers[md.streams["go-stream"].leader].host, c.connection["advertised_host"]);
  EXPECT_EQ(c.rpc_code(kDelete, Out().str("go-stream")), kOk);
  m = c.rpc(kMetadata, Out().strs({"go-stream"}));
  EXPECT_EQ(expect_metadata(c.peer, m).streams["go-stream"].code, kStreamDoesNotExist);
}

// A named producer: its sequence first, ids from sequence + 1, explicit ids
// for deduplication, and a sub-entry producer (SubEntrySize 3, no
// compression), whose entries carry their first message's id.
TEST_F(GoConformance, NamedProducerDeduplicates) {
  GoConnection loc(port(), "go-stream-locator");
  ASSERT_EQ(
      loc.rpc_code(kCreate, Out().str("dedup").map({{"queue-leader-locator", "least-leaders"}})),
      kOk);
  GoConnection p(port(), "go-stream-producer");
  EXPECT_EQ(p.declare_named_publisher(0, "go-app", "dedup"), 0u);
  publish(p, 0, 1, numbered(1, 5, "m"));
  publish(p, 0, 3, numbered(3, 5, "m"));  // SetPublishingId on a resend: duplicates
  EXPECT_EQ(p.publisher_sequence("go-app", "dedup"), 4u);

  // A second producer batching sub-entries: two entries, ids 1 and 4.
  EXPECT_EQ(p.declare_named_publisher(1, "go-batch", "dedup"), 0u);
  auto all = amqp_all(numbered(5, 10, "m"));
  Out o;
  o.u8(1).u32(2).u64(1);
  put_sub_batch(o, {all.begin(), all.begin() + 3});
  o.u64(4);
  put_sub_batch(o, {all.begin() + 3, all.end()});
  p.cast(kPublish, 1, o);
  expect_confirms(p.peer, 1, {1, 4});
  EXPECT_EQ(p.publisher_sequence("go-batch", "dedup"), 4u);

  GoConnection c(port(), "go-stream-consumer");
  ASSERT_EQ(c.subscribe(0, "dedup", {kFirst}), kOk);
  EXPECT_EQ(bodies(c.consume(0, 9)), amqp_all(numbered(1, 10, "m")));
  EXPECT_TRUE(c.peer.quiet(kDeliver));
}

// The offset specifications, the deprecated LastConsumed (QueryOffset, then
// the stored offset itself), StoreOffset, and credits.
TEST_F(GoConformance, OffsetsAndTracking) {
  GoConnection loc(port(), "go-stream-locator");
  ASSERT_EQ(
      loc.rpc_code(kCreate, Out().str("offsets").map({{"queue-leader-locator", "least-leaders"}})),
      kOk);
  GoConnection p(port(), "go-stream-producer");
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(0).i16(0).str("offsets")), kOk);
  publish(p, 0, 1, numbered(0, 3, "a"));
  std::this_thread::sleep_for(50ms);
  const int64_t between = now_ms();
  std::this_thread::sleep_for(50ms);
  publish(p, 0, 4, numbered(3, 6, "b"));

  GoConnection c(port(), "go-stream-consumer");
  std::vector<Chunk> chunks;
  ASSERT_EQ(c.subscribe(0, "offsets", {kLast}), kOk);  // NewConsumerOptions: Last
  EXPECT_EQ(bodies(c.consume(0, 3, 0, &chunks)), amqp_all({"b3", "b4", "b5"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 3u);
  ASSERT_EQ(c.subscribe(1, "offsets", {kTimestamp, between}), kOk);
  chunks.clear();
  EXPECT_EQ(bodies(c.consume(1, 3, 0, &chunks)), amqp_all({"b3", "b4", "b5"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 3u);
  ASSERT_EQ(c.subscribe(2, "offsets", {kOffset, 1}), kOk);
  EXPECT_EQ(bodies(c.consume(2, 5, 1)), amqp_all({"a1", "a2", "b3", "b4", "b5"}));
  ASSERT_EQ(c.subscribe(3, "offsets", {kNext}), kOk);
  EXPECT_TRUE(c.peer.quiet(kDeliver));
  EXPECT_EQ(c.subscribe(3, "offsets", {kFirst}), kSubscriptionIdExists);

  // StoreOffset (no answer), then a consumer with LastConsumed.
  c.cast(kStoreOffset, 1, Out().str("go-reader").str("offsets").i64(4));
  EXPECT_EQ(c.query_offset("go-reader", "offsets"), (std::pair<uint16_t, uint64_t>{kOk, 4}));
  GoConnection d(port(), "go-stream-consumer");
  auto [code, stored] = d.query_offset("go-reader", "offsets");
  ASSERT_EQ(code, kOk);
  ASSERT_EQ(d.subscribe(0, "offsets", {kOffset, int64_t(stored)}, {{"name", "go-reader"}}), kOk);
  EXPECT_EQ(bodies(d.consume(0, 2, stored)), amqp_all({"b4", "b5"}));
  EXPECT_EQ(d.query_offset("nobody", "offsets"), (std::pair<uint16_t, uint64_t>{kNoOffset, 0}));

  // Credits: one initial credit, then none until the consumer asks.
  GoConnection e(port(), "go-stream-consumer");
  ASSERT_EQ(e.subscribe(0, "offsets", {kNext}, {}, 1), kOk);
  publish(p, 0, 7, {"c6"});
  EXPECT_EQ(bodies(receive(e.peer, 0, 1, 0, nullptr)), amqp_all({"c6"}));
  publish(p, 0, 8, {"c7"});
  EXPECT_TRUE(e.peer.quiet(kDeliver));
  e.cast(kCredit, 1, Out().u8(0).i16(1));
  EXPECT_EQ(bodies(receive(e.peer, 0, 1, 0, nullptr)), amqp_all({"c7"}));
}

// Single active consumer on a stream: the active one's connection closes
// (Go's Close does not wait for the answer); the waiting one is activated
// and answers with the stored offset + 1.
TEST_F(GoConformance, SingleActiveConsumerOnAStream) {
  GoConnection loc(port(), "go-stream-locator");
  ASSERT_EQ(
      loc.rpc_code(kCreate, Out().str("sac").map({{"queue-leader-locator", "least-leaders"}})),
      kOk);
  GoConnection p(port(), "go-stream-producer");
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(0).i16(0).str("sac")), kOk);
  publish(p, 0, 1, numbered(0, 4, "m"));
  const Props props = {{"name", "go-app"}, {"single-active-consumer", "true"}};

  auto a = std::make_unique<GoConnection>(port(), "go-stream-consumer");
  ASSERT_EQ(a->subscribe(0, "sac", {kLast}, props), kOk);
  ConsumerUpdate up = expect_consumer_update(a->peer);
  EXPECT_EQ(up.active, 1);
  a->answer_update(up.corr, "go-app", "sac");  // nothing stored: first
  EXPECT_EQ(bodies(a->consume(0, 4)), amqp_all(numbered(0, 4, "m")));
  a->cast(kStoreOffset, 1, Out().str("go-app").str("sac").i64(1));

  GoConnection b(port(), "go-stream-consumer");
  ASSERT_EQ(b.subscribe(0, "sac", {kLast}, props), kOk);
  EXPECT_TRUE(b.peer.quiet(kConsumerUpdate));
  a->close();
  a.reset();
  ConsumerUpdate up2 = expect_consumer_update(b.peer);
  EXPECT_EQ(up2.active, 1);
  b.answer_update(up2.corr, "go-app", "sac");
  EXPECT_EQ(bodies(b.consume(0, 2, 2)), amqp_all({"m2", "m3"}));
}

// A super stream declared by the client (no arguments: an empty map), its
// partitions and routes, and a super stream consumer per instance with one
// connection per partition. A second instance takes partition 1 over: the
// first is told it is inactive and answers as the function answers (an
// offset: RabbitMQ has no use for it), then the second is activated.
TEST_F(GoConformance, SuperStreamSingleActiveConsumerRebalance) {
  GoConnection loc(port(), "go-stream-locator");
  ASSERT_EQ(loc.rpc_code(kCreateSuperStream, Out()
                                                 .str("go-inv")
                                                 .strs({"go-inv-0", "go-inv-1", "go-inv-2"})
                                                 .strs({"0", "1", "2"})
                                                 .map({})),
            kOk);
  uint32_t pc = loc.rpc(kPartitions, Out().str("go-inv"));
  EXPECT_EQ(expect_streams_answer(loc.peer, kPartitions, pc, kOk),
            (std::vector<std::string>{"go-inv-0", "go-inv-1", "go-inv-2"}));
  uint32_t rc = loc.rpc(kRoute, Out().str("2").str("go-inv"));
  EXPECT_EQ(expect_streams_answer(loc.peer, kRoute, rc, kOk), std::vector<std::string>{"go-inv-2"});

  GoConnection p(port(), "go-stream-producer");
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(0).i16(0).str("go-inv-1")), kOk);
  publish(p, 0, 1, numbered(0, 4, "m"));

  const Props props = {
      {"name", "go-app"}, {"single-active-consumer", "true"}, {"super-stream", "go-inv"}};
  // One connection per partition, subscription id 0 on each.
  auto instance = [&](bool first) {
    std::vector<std::unique_ptr<GoConnection>> conns;
    for (int i = 0; i < 3; ++i) {
      auto c = std::make_unique<GoConnection>(port(), "go-stream-consumer");
      std::string part = "go-inv-" + std::to_string(i);
      EXPECT_EQ(c->subscribe(0, part, {kLast}, props), kOk);
      if (first) {
        ConsumerUpdate up = expect_consumer_update(c->peer);
        EXPECT_EQ(up.active, 1);
        c->answer_update(up.corr, "go-app", part);
      }
      conns.push_back(std::move(c));
    }
    return conns;
  };
  auto one = instance(true);
  EXPECT_EQ(bodies(one[1]->consume(0, 4)), amqp_all(numbered(0, 4, "m")));
  one[1]->cast(kStoreOffset, 1, Out().str("go-app").str("go-inv-1").i64(3));

  auto two = instance(false);
  ConsumerUpdate down = expect_consumer_update(one[1]->peer);
  EXPECT_EQ(down.active, 0);
  one[1]->answer_update(down.corr, "go-app", "go-inv-1");  // offset 4, for a deactivation
  ConsumerUpdate up = expect_consumer_update(two[1]->peer);
  EXPECT_EQ(up.active, 1);
  two[1]->answer_update(up.corr, "go-app", "go-inv-1");
  EXPECT_TRUE(two[0]->peer.quiet(kConsumerUpdate, 100ms));
  EXPECT_TRUE(two[2]->peer.quiet(kConsumerUpdate, 100ms));

  publish(p, 0, 5, numbered(4, 6, "m"));
  std::vector<Chunk> chunks;
  EXPECT_EQ(bodies(two[1]->consume(0, 2, 4, &chunks)), amqp_all({"m4", "m5"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 4u);
  EXPECT_TRUE(one[1]->peer.quiet(kDeliver));
  EXPECT_EQ(loc.rpc_code(kDeleteSuperStream, Out().str("go-inv")), kOk);
}

// Publish v2 (a producer with a filter: every message's filter value is a
// string) and a consumer with Filter values and MatchUnfiltered.
TEST_F(GoConformance, FilteringAsRabbitMqDoes) {
  GoConnection loc(port(), "go-stream-locator");
  ASSERT_EQ(
      loc.rpc_code(kCreate, Out().str("filtered").map({{"queue-leader-locator", "least-leaders"}})),
      kOk);
  GoConnection p(port(), "go-stream-producer");
  ASSERT_EQ(p.rpc_code(kDeclarePublisher, Out().u8(0).i16(0).str("filtered")), kOk);
  auto send = [&](uint64_t first, const std::vector<std::string>& bodies, const std::string& f) {
    Out o;
    o.u8(0).u32(uint32_t(bodies.size()));
    for (size_t i = 0; i < bodies.size(); ++i) o.u64(first + i).str(f).blob(amqp(bodies[i]));
    p.cast(kPublish, 2, o);
    std::set<uint64_t> ids;
    for (size_t i = 0; i < bodies.size(); ++i) ids.insert(first + i);
    expect_confirms(p.peer, 0, ids);
  };
  send(1, numbered(0, 3, "red"), "red");
  send(4, numbered(3, 6, "blue"), "blue");

  GoConnection c(port(), "go-stream-consumer");
  ASSERT_EQ(
      c.subscribe(0, "filtered", {kFirst}, {{"filter.0", "blue"}, {"match-unfiltered", "false"}}),
      kOk);
  std::vector<Chunk> chunks;
  EXPECT_EQ(bodies(c.consume(0, 3, 0, &chunks)), amqp_all(numbered(3, 6, "blue")));
  EXPECT_EQ(chunks.at(0).chunk_id, 3u) << "the red chunk is not sent";
}

}  // namespace
}  // namespace strata::test::conformance_go
