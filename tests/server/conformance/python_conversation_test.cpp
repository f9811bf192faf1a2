// The Python client's conversation (qweeze/rstream): every frame as its
// encoder writes it — rstream/schema.py (each frame's fields: Subscribe
// always carries its properties' count; the ConsumerUpdate answer's
// OffsetSpecification always carries a u64 offset; the Tune answer is key
// 20), rstream/encoding.py (encode_frame, encode_publish for Publish v1/v2),
// rstream/client.py (handshake order, a Heartbeat right after the Tune
// answer and before Open, correlation ids from 1 (utils.MonotonicSeq), the
// filtering check that reads ExchangeCommandVersions' answer by position),
// rstream/producer.py (DeclarePublisher then QueryPublisherSequence, ids
// from sequence + 1, PublishSubBatching keyed by its last id),
// rstream/compression.py (uncompressed sub-batches), rstream/consumer.py
// (Credit before handling a chunk, the default ConsumerUpdate answer
// OffsetSpecification(NEXT, 0)), rstream/superstream_producer.py
// (partitions and binding keys), docs/examples/single_active_consumer (the
// listener answering OFFSET when active and (NEXT, 0) when not) — checked
// against the answers RabbitMQ 3.13/4.x gives. rstream sends raw bytes as
// messages when given bytes.
#include <algorithm>

#include "server/conformance/wire_bytes.h"

namespace strata::test::conformance_python {
namespace {

using namespace wire;

class PythonConnection : public ClientConnection {
 public:
  // Client.peer_properties, authenticate, open.
  PythonConnection(int port, const std::string& name) : ClientConnection(port, 1) {
    uint32_t pp = rpc(kPeerProperties, Out().map({{"connection_name", name},
                                                  {"product", "RabbitMQ Stream"},
                                                  {"platform", "Python"},
                                                  {"version", "0.20.8"},
                                                  {"license", "MIT"}}));
    server = expect_peer_properties(peer, pp);
    uint32_t hs = rpc(kSaslHandshake, Out());
    auto mechanisms = expect_sasl_mechanisms(peer, hs);
    EXPECT_NE(std::find(mechanisms.begin(), mechanisms.end(), "PLAIN"), mechanisms.end());
    uint32_t au =
        rpc(kSaslAuthenticate, Out().str("PLAIN").blob(std::string("\0guest\0guest", 12)));
    expect_code(peer, kSaslAuthenticate, au, kOk);
    Tune t = expect_server_tune(peer);
    // schema.Tune (key 20): min(frame_max, server's), min(heartbeat, server's).
    cast(kTune, 1,
         Out()
             .i32(int32_t(std::min<uint32_t>(1048576, t.frame_max)))
             .i32(int32_t(std::min<uint32_t>(60, t.heartbeat))));
    // _start_heartbeat: the first Heartbeat goes out at once, before Open.
    cast(kHeartbeat, 1, Out());
    uint32_t op = rpc(kOpen, Out().str("/"));
    connection = expect_open(peer, op);
  }
  // schema.Subscribe: the properties' count is always there.
  uint16_t subscribe(uint8_t id, const std::string& stream, Spec spec, const Props& props = {},
                     uint16_t credit = 10) {
    Out o;
    o.u8(id).str(stream);
    put_spec(o, spec).u16(credit).map(props);
    return rpc_code(kSubscribe, o);
  }
  // ConsumerUpdateServerResponse: OffsetSpecification(offset_type, offset),
  // the u64 whatever the type.
  void consumer_update_answer(uint32_t corr, uint16_t type, uint64_t offset) {
    cast(kConsumerUpdate | kAnswer, 1, Out().u32(corr).u16(kOk).u16(type).u64(offset));
  }
  // _on_deliver: Credit(1), then the messages.
  Received consume(uint8_t id, size_t n, uint64_t from = 0, std::vector<Chunk>* chunks = nullptr) {
    return receive(
        peer, id, n, from,
        [&](const Chunk& c) {
          cast(kCredit, 1, Out().u8(id).u16(1));
          EXPECT_EQ(c.version, 1) << "rstream reads Deliver 1 only";
          EXPECT_EQ(c.trailer_len, 0u);
          EXPECT_EQ(c.bloom_size, 0) << "schema.Deliver: data_length == len(data)";
        },
        chunks);
  }

  std::map<std::string, std::string> server, connection;
};

// encode_publish, version 1: raw bytes.
void publish(PythonConnection& c, uint8_t pub, uint64_t first_id,
             const std::vector<std::string>& bodies) {
  c.cast(kPublish, 1, simple_publish(pub, first_id, bodies));
  std::set<uint64_t> ids;
  for (size_t i = 0; i < bodies.size(); ++i) ids.insert(first_id + i);
  expect_confirms(c.peer, pub, ids);
}

class PythonConformance : public ServeTest {
 protected:
  int port() { return server_.port(); }
};

TEST_F(PythonConformance, HandshakeHeartbeatBeforeOpenAndClose) {
  PythonConnection c(port(), "rstream-producer");
  EXPECT_FALSE(c.server["version"].empty());
  EXPECT_EQ(c.connection["advertised_port"], std::to_string(port()))
      << "_resolve_broker compares it with the leader's";
  // BaseClient.close: Close(1, "OK"), waits for the answer.
  EXPECT_EQ(c.rpc_code(kClose, Out().u16(kOk).str("OK")), kOk);
  EXPECT_TRUE(c.peer.closed_by_server());
}

// _check_if_filtering_is_supported sends {Publish, 1, 2} and reads the
// answer's entry at index key - 1 = 1: RabbitMQ's list, in its order, puts
// Publish there.
TEST_F(PythonConformance, FilteringSupportCheckReadsTheAnswerByPosition) {
  PythonConnection c(port(), "rstream-locator");
  uint32_t ev = c.rpc(kExchangeCommandVersions, Out().u32(1).u16(kPublish).u16(1).u16(2));
  auto versions = expect_command_versions(c.peer, ev);
  EXPECT_EQ(versions, rabbit_command_versions());
  ASSERT_GE(versions.size(), 2u);
  EXPECT_EQ(versions[kPublish - 1].key, kPublish);
  EXPECT_GE(versions[kPublish - 1].max, 2);
}

TEST_F(PythonConformance, StreamsAndSuperStreams) {
  PythonConnection c(port(), "rstream-producer");
  // create_stream(arguments={"max-length-bytes": 5000000000}): str(value).
  const Props args = {{"max-length-bytes", "5000000000"}, {"max-age", "1h"}};
  EXPECT_EQ(c.rpc_code(kCreate, Out().str("py-stream").map(args)), kOk);
  EXPECT_EQ(c.rpc_code(kCreate, Out().str("py-stream").map(args)), kStreamAlreadyExists)
      << "exists_ok=True swallows it";
  // create_super_stream(n_partitions=3): no arguments.
  EXPECT_EQ(c.rpc_code(kCreateSuperStream, Out()
                                               .str("py-inv")
                                               .strs({"py-inv-0", "py-inv-1", "py-inv-2"})
                                               .strs({"0", "1", "2"})
                                               .map({})),
            kOk);
  uint32_t q = c.rpc(kPartitions, Out().str("py-inv"));
  EXPECT_EQ(expect_streams_answer(c.peer, kPartitions, q, kOk),
            (std::vector<std::string>{"py-inv-0", "py-inv-1", "py-inv-2"}));
  q = c.rpc(kRoute, Out().str("0").str("py-inv"));
  EXPECT_EQ(expect_streams_answer(c.peer, kRoute, q, kOk), std::vector<std::string>{"py-inv-0"});
  // query_leader_and_replicas: the leader's address is where rstream connects.
  uint32_t m = c.rpc(kMetadata, Out().strs({"py-inv-1"}));
  Metadata md = expect_metadata(c.peer, m);
  ASSERT_LT(md.streams["py-inv-1"].leader, md.brokers.size());
  const auto& leader = md.brokers[md.streams["py-inv-1"].leader];
  EXPECT_EQ(leader.host, c.connection["advertised_host"]);
  EXPECT_EQ(std::to_string(leader.port), c.connection["advertised_port"]);
  EXPECT_EQ(c.rpc_code(kDeleteSuperStream, Out().str("py-inv")), kOk);
  EXPECT_EQ(c.rpc_code(kDelete, Out().str("py-stream")), kOk);
}

// Producer: DeclarePublisher with the default reference, then the sequence
// (ids from sequence + 1); send_sub_entry takes as many ids as it has
// messages and sends the last; a resend with explicit ids is deduplicated.
TEST_F(PythonConformance, ProducerDeduplicates) {
  PythonConnection c(port(), "rstream-producer");
  ASSERT_EQ(c.rpc_code(kCreate, Out().str("py-dedup").map({})), kOk);
  const std::string ref = "py-dedup_publisher_0";
  ASSERT_EQ(c.rpc_code(kDeclarePublisher, Out().u8(0).str(ref).str("py-dedup")), kOk);
  uint32_t q = c.rpc(kQueryPublisherSequence, Out().str(ref).str("py-dedup"));
  EXPECT_EQ(expect_u64_answer(c.peer, kQueryPublisherSequence, q, kOk), 0u);
  publish(c, 0, 1, numbered(1, 4, "m"));
  Out batch;
  batch.u8(0).i32(1).u64(6);
  put_sub_batch(batch, numbered(4, 7, "m"));
  c.cast(kPublish, 1, batch);
  expect_confirms(c.peer, 0, {6});
  publish(c, 0, 2, numbered(2, 4, "m"));
  q = c.rpc(kQueryPublisherSequence, Out().str(ref).str("py-dedup"));
  EXPECT_EQ(expect_u64_answer(c.peer, kQueryPublisherSequence, q, kOk), 6u);

  PythonConnection r(port(), "rstream-consumer");
  ASSERT_EQ(r.subscribe(0, "py-dedup", {kFirst}), kOk);
  EXPECT_EQ(bodies(r.consume(0, 6)), numbered(1, 7, "m"));
  EXPECT_TRUE(r.peer.quiet(kDeliver));
}

TEST_F(PythonConformance, OffsetsCreditsAndTracking) {
  PythonConnection c(port(), "rstream-producer");
  ASSERT_EQ(c.rpc_code(kCreate, Out().str("py-offsets").map({})), kOk);
  ASSERT_EQ(c.rpc_code(kDeclarePublisher, Out().u8(0).str("p").str("py-offsets")), kOk);
  publish(c, 0, 1, numbered(0, 3, "a"));
  std::this_thread::sleep_for(50ms);
  const int64_t between = now_ms();
  std::this_thread::sleep_for(50ms);
  publish(c, 0, 4, numbered(3, 6, "b"));

  // One shared connection, subscription ids 0.. (get_available_id).
  PythonConnection r(port(), "rstream-consumer");
  std::vector<Chunk> chunks;
  ASSERT_EQ(r.subscribe(0, "py-offsets", {kFirst}), kOk);
  EXPECT_EQ(bodies(r.consume(0, 6)),
            (std::vector<std::string>{"a0", "a1", "a2", "b3", "b4", "b5"}));
  ASSERT_EQ(r.subscribe(1, "py-offsets", {kLast}), kOk);
  EXPECT_EQ(bodies(r.consume(1, 3, 0, &chunks)), (std::vector<std::string>{"b3", "b4", "b5"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 3u);
  ASSERT_EQ(r.subscribe(2, "py-offsets", {kOffset, 2}), kOk);
  EXPECT_EQ(bodies(r.consume(2, 4, 2)), (std::vector<std::string>{"a2", "b3", "b4", "b5"}));
  chunks.clear();
  ASSERT_EQ(r.subscribe(3, "py-offsets", {kTimestamp, between}), kOk);
  EXPECT_EQ(bodies(r.consume(3, 3, 0, &chunks)), (std::vector<std::string>{"b3", "b4", "b5"}));
  EXPECT_EQ(chunks.at(0).chunk_id, 3u);
  for (uint8_t id = 0; id < 4; ++id) EXPECT_EQ(r.rpc_code(kUnsubscribe, Out().u8(id)), kOk);

  // Credit 1 to start with, one more per chunk.
  ASSERT_EQ(r.subscribe(4, "py-offsets", {kNext}, {}, 1), kOk);
  EXPECT_TRUE(r.peer.quiet(kDeliver));
  publish(c, 0, 7, {"c6"});
  EXPECT_EQ(bodies(r.consume(4, 1)), std::vector<std::string>{"c6"});
  publish(c, 0, 8, {"c7"});
  EXPECT_EQ(bodies(r.consume(4, 1)), std::vector<std::string>{"c7"});

  // store_offset / query_offset: the subscriber's name is the reference.
  r.cast(kStoreOffset, 1, Out().str("py-offsets_subscriber_4").str("py-offsets").u64(7));
  uint32_t q = r.rpc(kQueryOffset, Out().str("py-offsets_subscriber_4").str("py-offsets"));
  EXPECT_EQ(expect_u64_answer(r.peer, kQueryOffset, q, kOk), 7u);
  q = r.rpc(kQueryOffset, Out().str("nobody").str("py-offsets"));
  EXPECT_EQ(expect_u64_answer(r.peer, kQueryOffset, q, kNoOffset), 0u);
}

// A single active consumer without a listener answers every ConsumerUpdate
// with OffsetSpecification(NEXT, 0): type 3 and a u64 RabbitMQ does not
// read. The connection goes on and the consumer starts at the end.
TEST_F(PythonConformance, SingleActiveConsumerDefaultAnswer) {
  PythonConnection c(port(), "rstream-producer");
  ASSERT_EQ(c.rpc_code(kCreate, Out().str("py-sac").map({})), kOk);
  ASSERT_EQ(c.rpc_code(kDeclarePublisher, Out().u8(0).str("p").str("py-sac")), kOk);
  publish(c, 0, 1, numbered(0, 3, "old"));
  const Props props = {{"single-active-consumer", "true"}, {"name", "py-group"}};

  PythonConnection a(port(), "rstream-consumer");
  ASSERT_EQ(a.subscribe(0, "py-sac", {kFirst}, props), kOk);
  ConsumerUpdate up = expect_consumer_update(a.peer);
  EXPECT_EQ(up.active, 1);
  a.consumer_update_answer(up.corr, kNext, 0);
  ASSERT_EQ(a.peer.close_within(), "") << "RabbitMQ reads the type and leaves the extra u64";
  EXPECT_TRUE(a.peer.quiet(kDeliver)) << "next: only what comes after";
  publish(c, 0, 4, {"new3"});
  EXPECT_EQ(bodies(a.consume(0, 1, 3)), std::vector<std::string>{"new3"});

  PythonConnection b(port(), "rstream-consumer");
  ASSERT_EQ(b.subscribe(0, "py-sac", {kFirst}, props), kOk);
  EXPECT_TRUE(b.peer.quiet(kConsumerUpdate));
  EXPECT_EQ(a.rpc_code(kUnsubscribe, Out().u8(0)), kOk);
  ConsumerUpdate up2 = expect_consumer_update(b.peer);
  EXPECT_EQ(up2.active, 1);
  b.consumer_update_answer(up2.corr, kNext, 0);
  ASSERT_EQ(b.peer.close_within(), "");
  publish(c, 0, 5, {"new4"});
  EXPECT_EQ(bodies(b.consume(0, 1, 4)), std::vector<std::string>{"new4"});
}

// The super stream consumer with the example's listener: OFFSET when
// activated, (NEXT, 0) when deactivated — all partitions' subscriptions on
// one shared connection per instance.
TEST_F(PythonConformance, SuperStreamSingleActiveConsumerWithListener) {
  PythonConnection c(port(), "rstream-locator");
  ASSERT_EQ(c.rpc_code(kCreateSuperStream, Out()
                                               .str("invoices")
                                               .strs({"invoices-0", "invoices-1", "invoices-2"})
                                               .strs({"0", "1", "2"})
                                               .map({})),
            kOk);
  ASSERT_EQ(c.rpc_code(kDeclarePublisher, Out().u8(0).str("p").str("invoices-1")), kOk);
  publish(c, 0, 1, numbered(0, 4, "inv"));
  const Props props = {{"single-active-consumer", "true"},
                       {"name", "consumer-group-1"},
                       {"super-stream", "invoices"}};
  auto join = [&](PythonConnection& r, int activations) {
    for (uint8_t i = 0; i < 3; ++i) {
      EXPECT_EQ(r.subscribe(i, "invoices-" + std::to_string(i), {kFirst}, props), kOk);
    }
    for (int n = 0; n < activations; ++n) {
      ConsumerUpdate up = expect_consumer_update(r.peer);
      EXPECT_EQ(up.active, 1);
      r.consumer_update_answer(up.corr, kOffset, 2);
    }
  };
  PythonConnection one(port(), "rstream-consumer");
  join(one, 3);
  EXPECT_EQ(bodies(one.consume(1, 2, 2)), (std::vector<std::string>{"inv2", "inv3"}));

  PythonConnection two(port(), "rstream-consumer");
  join(two, 0);
  ConsumerUpdate down = expect_consumer_update(one.peer);
  EXPECT_EQ(down.subscription, 1);
  EXPECT_EQ(down.active, 0);
  one.consumer_update_answer(down.corr, kNext, 0);
  ASSERT_EQ(one.peer.close_within(), "") << "a deactivation answered with (NEXT, 0)";
  ConsumerUpdate up = expect_consumer_update(two.peer);
  EXPECT_EQ(up.subscription, 1);
  EXPECT_EQ(up.active, 1);
  two.consumer_update_answer(up.corr, kOffset, 3);
  EXPECT_EQ(bodies(two.consume(1, 1, 3)), std::vector<std::string>{"inv3"});
  EXPECT_TRUE(two.peer.quiet(kConsumerUpdate, 100ms));
  publish(c, 0, 5, {"inv4"});
  EXPECT_EQ(bodies(two.consume(1, 1, 4)), std::vector<std::string>{"inv4"});
  EXPECT_TRUE(one.peer.quiet(kDeliver));
  EXPECT_EQ(one.peer.close_within(100ms), "");
}

// encode_publish version 2: a filter value (str) per message; subscribe with
// filter_input: filter.N and match-unfiltered.
TEST_F(PythonConformance, FilteringAsRabbitMqDoes) {
  PythonConnection c(port(), "rstream-producer");
  ASSERT_EQ(c.rpc_code(kCreate, Out().str("py-filtered").map({})), kOk);
  ASSERT_EQ(c.rpc_code(kDeclarePublisher, Out().u8(0).str("p").str("py-filtered")), kOk);
  auto send = [&](uint64_t first, const std::vector<std::string>& bodies, const std::string& f) {
    Out o;
    o.u8(0).u32(uint32_t(bodies.size()));
    for (size_t i = 0; i < bodies.size(); ++i) o.u64(first + i).str(f).blob(bodies[i]);
    c.cast(kPublish, 2, o);
    std::set<uint64_t> ids;
    for (size_t i = 0; i < bodies.size(); ++i) ids.insert(first + i);
    expect_confirms(c.peer, 0, ids);
  };
  send(1, numbered(0, 2, "italy"), "italy");
  send(3, numbered(2, 4, "spain"), "spain");
  PythonConnection r(port(), "rstream-consumer");
  ASSERT_EQ(r.subscribe(0, "py-filtered", {kFirst},
                        {{"filter.0", "spain"}, {"match-unfiltered", "false"}}),
            kOk);
  std::vector<Chunk> chunks;
  EXPECT_EQ(bodies(r.consume(0, 2, 0, &chunks)), numbered(2, 4, "spain"));
  EXPECT_EQ(chunks.at(0).chunk_id, 2u);
}

}  // namespace
}  // namespace strata::test::conformance_python
