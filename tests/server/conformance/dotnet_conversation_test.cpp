// The .NET client's conversation (rabbitmq/rabbitmq-stream-dotnet-client):
// every frame as its encoder writes it — RabbitMQ.Stream.Client/Client.cs
// (handshake order, correlation ids from 1 then from 101, the Tune answer
// TuneRequest(0, heartbeat): key 0x0014, no frame limit), PeerProperties.cs,
// TuneRequest.cs, SaslAuthenticateRequest.cs, CommandVersionsRequest.cs and
// PublishFilter.cs (ExchangeCommandVersions: Publish 2..2), Create.cs and
// StreamSpec.cs (arguments), CreateSuperStream.cs, DeclarePublisherRequest.cs,
// Publish.cs, SubEntryPublish.cs (one root entry), Subscribe.cs (properties
// only when present), RawConsumer.cs (subscription properties, the
// ConsumerUpdate answer: the subscription's own offset spec),
// ConsumerUpdateRequest.cs (0x801a), Credit.cs, StoreOffsetRequest.cs,
// CloseRequest.cs, WireFormatting.cs (an empty string is u16 0) — checked
// against the answers RabbitMQ 3.13/4.x gives.
#include <memory>

#include "server/conformance/wire_bytes.h"

namespace strata::test::conformance_dotnet {
namespace {

using namespace wire;

// One connection of RabbitMQ.Stream.Client.Client (Client.Create).
class DotnetConnection : public ClientConnection {
 public:
  DotnetConnection(int port, const std::string& name) : ClientConnection(port, 1) {
    // ClientParameters.Properties, in the dictionary's order; the
    // connection name replaces "Unknown" in place.
    uint32_t pp = rpc(
        kPeerProperties,
        Out().map(
            {{"product", "RabbitMQ Stream"},
             {"version", "1.11.2"},
             {"platform", ".NET"},
             {"copyright",
              "Copyright (c) 2017-2023 Broadcom. All Rights Reserved. The term Broadcom "
              "refers to Broadcom Inc. and/or its subsidiaries."},
             {"information",
              "Licensed under the Apache 2.0 and MPL 2.0 licenses. See https://www.rabbitmq.com/"},
             {"connection_name", name}}));
    server = expect_peer_properties(peer, pp);
    uint32_t hs = rpc(kSaslHandshake, Out());
    auto mechanisms = expect_sasl_mechanisms(peer, hs);
    EXPECT_NE(std::find(mechanisms.begin(), mechanisms.end(), "PLAIN"), mechanisms.end());
    uint32_t au =
        rpc(kSaslAuthenticate, Out().str("PLAIN").blob(std::string("\0guest\0guest", 12)));
    expect_code(peer, kSaslAuthenticate, au, kOk);
    server_tune = expect_server_tune(peer);
    // new TuneRequest(0, Heartbeat.TotalSeconds): key 20, no frame limit.
    cast(kTune, 1, Out().u32(0).u32(60));
    uint32_t op = rpc(kOpen, Out().str("/"));
    connection = expect_open(peer, op);
    if (version_at_least(server["version"], 3, 11, 0)) {
      // CommandVersionsRequest: { new PublishFilter() } = Publish 2..2.
      uint32_t ev = rpc(kExchangeCommandVersions, Out().i32(1).u16(kPublish).u16(2).u16(2));
      versions = expect_command_versions(peer, ev);
    }
    set_next_corr(101);  // client.correlationId = 100
  }
  // QueryPublisherSequence only for a reference; an empty one is u16 0.
  uint16_t declare_publisher(uint8_t id, const std::string& ref, const std::string& stream) {
    return rpc_code(kDeclarePublisher, Out().u8(id).str(ref).str(stream));
  }
  uint64_t publisher_sequence(const std::string& ref, const std::string& stream) {
    uint32_t c = rpc(kQueryPublisherSequence, Out().str(ref).str(stream));
    return expect_u64_answer(peer, kQueryPublisherSequence, c, kOk);
  }
  uint16_t subscribe(uint8_t id, const std::string& stream, Spec spec, const Props& props = {},
                     uint16_t credits = 2) {
    Out o;
    o.u8(id).str(stream);
    put_spec(o, spec).u16(credits);
    if (!props.empty()) o.map(props);
    return rpc_code(kSubscribe, o);
  }
  // ConsumerUpdateRequest: 0x801a, correlation id, Ok, the offset spec.
  void consumer_update_answer(uint32_t corr, Spec spec) {
    Out o;
    o.u32(corr).u16(kOk);
    put_spec(o, spec);
    cast(kConsumerUpdate | kAnswer, 1, o);
  }
  // ProcessChunks: Credit(EntityId, 1) once a chunk is handled.
  Received consume(uint8_t id, size_t n, uint64_t from = 0, std::vector<Chunk>* chunks = nullptr) {
    return receive(
        peer, id, n, from,
        [&](const Chunk& c) {
          EXPECT_EQ(c.version, 1) << "the .NET client did not ask for Deliver 2";
          cast(kCredit, 1, Out().u8(id).u16(1));
        },
        chunks);
  }

  std::map<std::string, std::string> server, connection;
  std::vector<CommandVersion> versions;
  Tune server_tune;
};

void publish(DotnetConnection& c, uint8_t pub, uint64_t first_id,
             const std::vector<std::string>& bodies) {
  c.cast(kPublish, 1, simple_publish(pub, first_id, amqp_all(bodies)));
  std::set<uint64_t> ids;
  for (size_t i = 0; i < bodies.size(); ++i) ids.insert(first_id + i);
  expect_confirms(c.peer, pub, ids);
}

// StreamSpec: the leader locator is always there.
Props spec_args(Props more = {}) {
  more.insert(more.begin(), {"queue-leader-locator", "least-leaders"});
  return more;
}

class DotnetConformance : public ServeTest {
 protected:
  int port() { return server_.port(); }
  DotnetConnection system() { return DotnetConnection(port(), "dotnet-stream-locator"); }
};

// A Metadata request whose size field is `size`: names of up to 30000
// bytes.
Out padded_metadata(uint32_t corr, uint32_t size) {
  std::vector<std::string> names;
  uint32_t rest = size - 12;  // key, version, correlation id, count
  while (rest > 0) {
    uint32_t cost = std::min<uint32_t>(rest, 30002);
    if (rest - cost == 1) --cost;
    names.emplace_back(cost - 2, 'n');
    rest -= cost;
  }
  Out o;
  o.u32(corr).strs(names);
  return o;
}

TEST_F(DotnetConformance, HandshakeFrameLimitAndClose) {
  DotnetConnection c = system();
  EXPECT_TRUE(version_at_least(c.server["version"], 3, 13, 0)) << c.server["version"];
  EXPECT_EQ(c.versions, rabbit_command_versions());
  // AvailableFeatures.ParseCommandVersions: filtering when Publish covers 2..2.
  auto p = std::find_if(c.versions.begin(), c.versions.end(),
                        [](const CommandVersion& v) { return v.key == kPublish; });
  ASSERT_NE(p, c.versions.end());
  EXPECT_TRUE(p->min <= 2 && p->max >= 2);
  uint32_t m = c.rpc(kMetadata, Out().strs({"nothing"}));
  EXPECT_EQ(m, 101u);
  EXPECT_EQ(expect_metadata(c.peer, m).streams["nothing"].code, kStreamDoesNotExist);
  // Close("system close").
  EXPECT_EQ(c.rpc_code(kClose, Out().u16(kOk).str("system close")), kOk);
  EXPECT_TRUE(c.peer.closed_by_server());

  // A Tune answer of 0 leaves the server's own limit (0 means no limit on
  // that side): a frame over it is refused with 14.
  DotnetConnection d = system();
  ASSERT_GT(d.server_tune.frame_max, 64u);
  d.peer.send(frame(kMetadata, 1, padded_metadata(d.corr(), d.server_tune.frame_max + 1)));
  Bytes close = d.peer.next(kClose);
  In in(close);
  in.u16();
  in.u16();
  in.u32();
  EXPECT_EQ(in.u16(), kFrameTooLarge);
}

TEST_F(DotnetConformance, StreamsAndSuperStreams) {
  DotnetConnection c = system();
  const Props args = spec_args({{"max-age", "3600s"},
                                {"max-length-bytes", "2000000000"},
                                {"stream-max-segment-size-bytes", "500000000"}});
  EXPECT_EQ(c.rpc_code(kCreate, Out().str("dn-stream").map(args)), kOk);
  EXPECT_EQ(c.rpc_code(kCreate, Out().str("dn-stream").map(args)), kStreamAlreadyExists);
  // PartitionsSuperStreamSpec("dn-inv", 3).
  EXPECT_EQ(c.rpc_code(kCreateSuperStream, Out()
                                               .str("dn-inv")
                                               .i32(3)
                                               .str("dn-inv-0")
                                               .str("dn-inv-1")
                                               .str("dn-inv-2")
                                               .i32(3)
                                               .str("0")
                                               .str("1")
                                               .str("2")
                                               .map(spec_args())),
            kOk);
  // BindingsSuperStreamSpec("dn-regions", ["eu", "us"]).
  EXPECT_EQ(c.rpc_code(kCreateSuperStream, Out()
                                               .str("dn-regions")
                                               .strs({"dn-regions-eu", "dn-regions-us"})
                                               .strs({"eu", "us"})
                                               .map(spec_args())),
            kOk);
  uint32_t q = c.rpc(kPartitions, Out().str("dn-regions"));
  EXPECT_EQ(expect_streams_answer(c.peer, kPartitions, q, kOk),
            (std::vector<std::string>{"dn-regions-eu", "dn-regions-us"}));
  q = c.rpc(kRoute, Out().str("us").str("dn-regions"));
  EXPECT_EQ(expect_streams_answer(c.peer, kRoute, q, kOk),
            std::vector<std::string>{"dn-regions-us"});
  q = c.rpc(kPartitions, Out().str("dn-none"));
  EXPECT_TRUE(expect_streams_answer(c.peer, kPartitions, q, kStreamDoesNotExist).empty());
  uint32_t m = c.rpc(kMetadata, Out().strs({"dn-inv-2", "dn-regions-eu"}));
  Metadata md = expect_metadata(c.peer, m);
  EXPECT_EQ(md.streams["dn-inv-2"].code, kOk);
  EXPECT_EQ(md.streams["dn-regions-eu"].code, kOk);
  EXPECT_EQ(c.rpc_code(kDeleteSuperStream, Out().str("dn-regions")), kOk);
  EXPECT_EQ(c.rpc_code(kDeleteSuperStream, Out().str("dn-regions")), kStreamDoesNotExist);
  m = c.rpc(kMetadata, Out().strs({"dn-regions-eu"}));
  EXPECT_EQ(expect_metadata(c.peer, m).streams["dn-regions-eu"].code, kStreamDoesNotExist);
  EXPECT_EQ(c.rpc_code(kDelete, Out().str("dn-stream")), kOk);
}

// RawProducer with a Reference: declare, then its sequence; ids given by
// the application; a SubEntryPublish (one root entry of three records, no
// compression); ids sent again are confirmed and not stored.
TEST_F(DotnetConformance, ProducerDeduplicates) {
  DotnetConnection c = system();
  ASSERT_EQ(c.rpc_code(kCreate, Out().str("dn-dedup").map(spec_args())), kOk);
  DotnetConnection p(port(), "dotnet-stream-producer");
  ASSERT_EQ(p.declare_publisher(0, "dotnet-app", "dn-dedup"), kOk);
  EXPECT_EQ(p.publisher_sequence("dotnet-app", "dn-dedup"), 0u);
  publish(p, 0, 1, numbered(1, 4, "m"));
  Out sub;
  sub.u8(0).i32(1).u64(4);
  put_sub_batch(sub, amqp_all(numbered(4, 7, "m")));
  p.cast(kPublish, 1, sub);
  expect_confirms(p.peer, 0, {4});
  publish(p, 0, 2, numbered(2, 4, "m"));  // again
  EXPECT_EQ(p.publisher_sequence("dotnet-app", "dn-dedup"), 4u);
  // A producer without a reference: no deduplication.
  ASSERT_EQ(p.declare_publisher(1, "", "dn-dedup"), kOk);
  publish(p, 1, 0, {"x"});
  publish(p, 1, 0, {"x"});
  EXPECT_EQ(p.rpc_code(kDeletePublisher, Out().u8(1)), kOk);
  EXPECT_EQ(p.rpc_code(kDeletePublisher, Out().u8(1)), kPublisherDoesNotExist);

  DotnetConnection r(port(), "dotnet-stream-consumer");
  ASSERT_EQ(r.subscribe(0, "dn-dedup", {kFirst}), kOk);
  auto want = amqp_all(numbered(1, 7, "m"));
  want.push_back(amqp("x"));
  want.push_back(amqp("x"));
  EXPECT_EQ(bodies(r.consume(0, 8)), want);
  EXPECT_TRUE(r.peer.quiet(kDeliver));
}

TEST_F(DotnetConformance, OffsetsCreditsAndTracking) {
  DotnetConnection c = system();
  ASSERT_EQ(c.rpc_code(kCreate, Out().str("dn-offsets").map(spec_args())), kOk);
  DotnetConnection p(port(), "dotnet-stream-producer");
  ASSERT_EQ(p.declare_publisher(0, "", "dn-offsets"), kOk);
  publish(p, 0, 0, numbered(0, 3, "a"));
  std::this_thread::sleep_for(50ms);
  const int64_t between = now_ms();
  std::this_thread::sleep_for(50ms);
  publish(p, 0, 3, numbered(3, 6, "b"));

  // One consumer per connection (ConsumersPerConnection = 1), id 0.
  auto consumer = [&](Spec spec, size_t n, uint64_t from, std::vector<Chunk>* chunks) {
    DotnetConnection r(port(), "dotnet-stream-consumer");
    EXPECT_EQ(r.subscribe(0, "dn-offsets", spec, {{"name", "dn-reader"}}), kOk);
    return bodies(r.consume(0, n, from, chunks));
  };
  std::vector<Chunk> chunks;
  EXPECT_EQ(consumer({kFirst}, 6, 0, nullptr), amqp_all({"a0", "a1", "a2", "b3", "b4", "b5"}));
  EXPECT_EQ(consumer({kLast}, 3, 0, &chunks), amqp_all({"b3", "b4", "b5"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 3u);
  EXPECT_EQ(consumer({kOffset, 5}, 1, 5, nullptr), amqp_all({"b5"}));
  chunks.clear();
  EXPECT_EQ(consumer({kTimestamp, between}, 3, 0, &chunks), amqp_all({"b3", "b4", "b5"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 3u);

  // Next, two initial credits, one more per handled chunk.
  DotnetConnection r(port(), "dotnet-stream-consumer");
  ASSERT_EQ(r.subscribe(0, "dn-offsets", {kNext}), kOk);
  EXPECT_TRUE(r.peer.quiet(kDeliver));
  publish(p, 0, 6, {"c6"});
  EXPECT_EQ(bodies(receive(r.peer, 0, 1, 0, nullptr)), amqp_all({"c6"}));
  publish(p, 0, 7, {"c7"});
  EXPECT_EQ(bodies(receive(r.peer, 0, 1, 0, nullptr)), amqp_all({"c7"}));
  publish(p, 0, 8, {"c8"});
  EXPECT_TRUE(r.peer.quiet(kDeliver)) << "two credits, two chunks";
  r.cast(kCredit, 1, Out().u8(0).u16(1));
  EXPECT_EQ(bodies(receive(r.peer, 0, 1, 0, nullptr)), amqp_all({"c8"}));
  // StoreOffset(reference, stream, offset), QueryOffset.
  r.cast(kStoreOffset, 1, Out().str("dn-reader").str("dn-offsets").u64(8));
  uint32_t q = r.rpc(kQueryOffset, Out().str("dn-reader").str("dn-offsets"));
  EXPECT_EQ(expect_u64_answer(r.peer, kQueryOffset, q, kOk), 8u);
  q = r.rpc(kQueryOffset, Out().str("dn-other").str("dn-offsets"));
  EXPECT_EQ(expect_u64_answer(r.peer, kQueryOffset, q, kNoOffset), 0u);
  EXPECT_EQ(r.rpc_code(kUnsubscribe, Out().u8(0)), kOk);
}

// Single active consumer on a stream without a ConsumerUpdateListener: the
// answer is the subscription's own spec, activated or not.
TEST_F(DotnetConformance, SingleActiveConsumerOnAStream) {
  DotnetConnection c = system();
  ASSERT_EQ(c.rpc_code(kCreate, Out().str("dn-sac").map(spec_args())), kOk);
  DotnetConnection p(port(), "dotnet-stream-producer");
  ASSERT_EQ(p.declare_publisher(0, "", "dn-sac"), kOk);
  publish(p, 0, 0, numbered(0, 3, "m"));
  const Props props = {{"name", "dn-app"}, {"single-active-consumer", "true"}};

  auto a = std::make_unique<DotnetConnection>(port(), "dotnet-stream-consumer");
  ASSERT_EQ(a->subscribe(0, "dn-sac", {kOffset, 1}, props), kOk);
  ConsumerUpdate up = expect_consumer_update(a->peer);
  EXPECT_EQ(up.active, 1);
  a->consumer_update_answer(up.corr, {kOffset, 1});
  EXPECT_EQ(bodies(a->consume(0, 2, 1)), amqp_all({"m1", "m2"}));

  DotnetConnection b(port(), "dotnet-stream-consumer");
  ASSERT_EQ(b.subscribe(0, "dn-sac", {kNext}, props), kOk);
  EXPECT_TRUE(b.peer.quiet(kConsumerUpdate));
  EXPECT_EQ(a->rpc_code(kUnsubscribe, Out().u8(0)), kOk);
  ConsumerUpdate up2 = expect_consumer_update(b.peer);
  EXPECT_EQ(up2.active, 1);
  b.consumer_update_answer(up2.corr, {kNext});
  EXPECT_TRUE(b.peer.quiet(kDeliver)) << "next: what comes after";
  publish(p, 0, 3, {"m3"});
  EXPECT_EQ(bodies(b.consume(0, 1)), amqp_all({"m3"}));
}

// RawSuperStreamConsumer: a consumer per partition, one per connection. A
// second instance takes partition 1 over; the first answers its
// deactivation with its subscription's spec (first), the second its
// activation with first, and starts from the beginning.
TEST_F(DotnetConformance, SuperStreamSingleActiveConsumerRebalance) {
  DotnetConnection c = system();
  ASSERT_EQ(c.rpc_code(kCreateSuperStream, Out()
                                               .str("dn-inv")
                                               .strs({"dn-inv-0", "dn-inv-1", "dn-inv-2"})
                                               .strs({"0", "1", "2"})
                                               .map(spec_args())),
            kOk);
  DotnetConnection p(port(), "dotnet-stream-producer");
  ASSERT_EQ(p.declare_publisher(0, "", "dn-inv-1"), kOk);
  publish(p, 0, 0, numbered(0, 3, "m"));
  const Props props = {
      {"name", "dn-app"}, {"single-active-consumer", "true"}, {"super-stream", "dn-inv"}};
  auto instance = [&](bool active) {
    std::vector<std::unique_ptr<DotnetConnection>> v;
    for (int i = 0; i < 3; ++i) {
      auto r = std::make_unique<DotnetConnection>(port(), "dotnet-stream-consumer");
      EXPECT_EQ(r->subscribe(0, "dn-inv-" + std::to_string(i), {kFirst}, props), kOk);
      if (active) {
        ConsumerUpdate up = expect_consumer_update(r->peer);
        EXPECT_EQ(up.active, 1);
        r->consumer_update_answer(up.corr, {kFirst});
      }
      v.push_back(std::move(r));
    }
    return v;
  };
  auto one = instance(true);
  EXPECT_EQ(bodies(one[1]->consume(0, 3)), amqp_all(numbered(0, 3, "m")));
  auto two = instance(false);
  ConsumerUpdate down = expect_consumer_update(one[1]->peer);
  EXPECT_EQ(down.active, 0);
  one[1]->consumer_update_answer(down.corr, {kFirst});
  ConsumerUpdate up = expect_consumer_update(two[1]->peer);
  EXPECT_EQ(up.active, 1);
  two[1]->consumer_update_answer(up.corr, {kFirst});
  EXPECT_EQ(bodies(two[1]->consume(0, 3)), amqp_all(numbered(0, 3, "m")));
  EXPECT_TRUE(two[0]->peer.quiet(kConsumerUpdate, 100ms));
  EXPECT_TRUE(two[2]->peer.quiet(kConsumerUpdate, 100ms));
  publish(p, 0, 3, {"m3"});
  EXPECT_EQ(bodies(two[1]->consume(0, 1)), amqp_all({"m3"}));
  EXPECT_TRUE(one[1]->peer.quiet(kDeliver));
}

// PublishFilter (version 2): every message's filter value, as the
// extractor gives it; a consumer with ConsumerFilter values and
// MatchUnfiltered ("true"/"false").
TEST_F(DotnetConformance, FilteringAsRabbitMqDoes) {
  DotnetConnection c = system();
  ASSERT_EQ(c.rpc_code(kCreate, Out().str("dn-filtered").map(spec_args())), kOk);
  DotnetConnection p(port(), "dotnet-stream-producer");
  ASSERT_EQ(p.declare_publisher(0, "", "dn-filtered"), kOk);
  auto send = [&](uint64_t first, const std::vector<std::string>& bodies, const std::string& f) {
    Out o;
    o.u8(0).i32(int32_t(bodies.size()));
    for (size_t i = 0; i < bodies.size(); ++i) o.u64(first + i).str(f).blob(amqp(bodies[i]));
    p.cast(kPublish, 2, o);
    std::set<uint64_t> ids;
    for (size_t i = 0; i < bodies.size(); ++i) ids.insert(first + i);
    expect_confirms(p.peer, 0, ids);
  };
  send(0, numbered(0, 2, "eu"), "eu");
  send(2, numbered(2, 4, "us"), "us");
  DotnetConnection r(port(), "dotnet-stream-consumer");
  ASSERT_EQ(
      r.subscribe(0, "dn-filtered", {kFirst}, {{"filter.0", "us"}, {"match-unfiltered", "false"}}),
      kOk);
  std::vector<Chunk> chunks;
  EXPECT_EQ(bodies(r.consume(0, 2, 0, &chunks)), amqp_all(numbered(2, 4, "us")));
  EXPECT_EQ(chunks.at(0).chunk_id, 2u);
}

}  // namespace
}  // namespace strata::test::conformance_dotnet
