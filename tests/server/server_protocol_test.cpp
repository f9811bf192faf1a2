// `strata serve` as a child process, driven over the stream protocol.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "server/serve_fixture.h"
#include "support/eventually.h"

namespace strata::test {
namespace {

using namespace proto;

// The sizes of a stream's segment files on disk.
std::vector<uint64_t> segment_sizes(const std::string& stream_dir) {
  std::vector<uint64_t> out;
  for (const auto& e : std::filesystem::directory_iterator(stream_dir)) {
    if (e.path().extension() == ".segment") out.push_back(e.file_size());
  }
  return out;
}

std::map<std::string, int64_t> stream_stats(StreamClient& c, const std::string& stream) {
  EXPECT_TRUE(c.send(StreamStatsRequest{c.corr(), stream}).ok());
  auto s = c.expect<StreamStatsResponse>();
  EXPECT_TRUE(s.ok()) << s.error().message;
  if (!s.ok()) return {};
  EXPECT_EQ(s->code, ResponseCode::ok);
  return {s->stats.begin(), s->stats.end()};
}

TEST_F(ServeTest, HandshakeAnswersVersionAndAdvertisedAddress) {
  StreamClient c = open_client();
  std::map<std::string, std::string> props(c.peer_properties.properties.begin(),
                                           c.peer_properties.properties.end());
  EXPECT_EQ(props["product"], "strata");
  EXPECT_EQ(props["version"], "3.13.0");
  std::map<std::string, std::string> open(c.open_response.properties.begin(),
                                          c.open_response.properties.end());
  EXPECT_EQ(open["advertised_host"], "127.0.0.1");
  EXPECT_EQ(open["advertised_port"], std::to_string(server_.port()));
  EXPECT_GT(c.server_tune.frame_max, 0u);
  // Close both ways ends the connection.
  ASSERT_TRUE(c.send(CloseRequest{c.corr(), ResponseCode::ok, "bye"}).ok());
  auto r = c.expect<CloseResponse>();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->code, ResponseCode::ok);
  EXPECT_TRUE(c.closed_by_server());
  EXPECT_EQ(server_.stop(), 0);
}

// The default object store is a directory inside the data directory: the
// node says what that means at start; one elsewhere draws no warning.
TEST_F(ServeTest, AnObjectStoreInsideTheDataDirectoryIsWarnedAbout) {
  const std::string warning = "is inside the data directory";
  // The warning follows the node's "N stream(s) in" line (logs go to stdout).
  auto opened_log = [&] {
    std::string err;
    eventually(5s, [&] {
      err = server_.process().stdout_text();
      return err.find("stream(s) in") != std::string::npos;
    });
    return err;
  };
  std::string err = opened_log();
  EXPECT_NE(err.find(warning), std::string::npos) << err;
  restart_with_config("outside.json",
                      R"({"objstore": {"fs": {"root": ")" + dir_.sub("bucket") + R"("}}})");
  err = opened_log();
  EXPECT_NE(err.find("stream(s) in"), std::string::npos) << err;
  EXPECT_EQ(err.find(warning), std::string::npos) << err;
}

// A client may send Close twice before the first answer arrives (the
// JavaScript client 1.0.0 does after a stream deletion): both are answered,
// and the server closes once the client closes its side (or after
// server.close_linger_ms, 2 s by default: a Close 300 ms after the first
// answer is still answered).
TEST_F(ServeTest, CloseSentTwiceIsAnsweredTwice) {
  StreamClient c = open_client();
  const uint32_t first = c.corr(), second = c.corr(), third = c.corr();
  ASSERT_TRUE(c.send(CloseRequest{first, ResponseCode::ok, "bye"}).ok());
  ASSERT_TRUE(c.send(CloseRequest{second, ResponseCode::ok, "bye again"}).ok());
  auto r1 = c.expect<CloseResponse>();
  ASSERT_TRUE(r1.ok()) << r1.error().message;
  EXPECT_EQ(r1->correlation_id, first);
  auto r2 = c.expect<CloseResponse>();
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  EXPECT_EQ(r2->correlation_id, second);
  EXPECT_EQ(r2->code, ResponseCode::ok);
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(c.send(CloseRequest{third, ResponseCode::ok, "still there?"}).ok());
  auto r3 = c.expect<CloseResponse>();
  ASSERT_TRUE(r3.ok()) << r3.error().message;
  EXPECT_EQ(r3->correlation_id, third);
  EXPECT_TRUE(c.closed_by_server());
}

// server.close_linger_ms bounds how long an answered Close keeps the
// connection: a client that never closes its side is closed by the server
// well before the 2 s default would pass.
TEST_F(ServeTest, CloseLingerIsConfigurable) {
  restart_with_config("linger.json", R"({"server": {"close_linger_ms": 100}})");
  if (HasFatalFailure()) return;
  StreamClient c = open_client();
  ASSERT_TRUE(c.send(CloseRequest{c.corr(), ResponseCode::ok, "bye"}).ok());
  auto r = c.expect<CloseResponse>();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(c.closed_by_server(1500ms));
}

// The Java (1.11) and Go (1.4) clients answer Tune with key 0x8014 (the
// response bit set); RabbitMQ accepts it, and so must strata: the whole
// handshake as those clients send it, byte for byte at the Tune answer.
TEST_F(ServeTest, ATuneAnswerWithTheResponseBitOpensTheConnection) {
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->send(PeerPropertiesRequest{1, {{"product", "RabbitMQ Stream"}}}).ok());
  ASSERT_TRUE(c->expect<PeerPropertiesResponse>().ok());
  ASSERT_TRUE(c->send(SaslHandshakeRequest{2}).ok());
  ASSERT_TRUE(c->expect<SaslHandshakeResponse>().ok());
  ASSERT_TRUE(c->send(SaslAuthenticateRequest{3, "PLAIN", std::string("\0guest\0guest", 12)}).ok());
  auto auth = c->expect<SaslAuthenticateResponse>();
  ASSERT_TRUE(auth.ok()) << auth.error().message;
  ASSERT_EQ(auth->code, ResponseCode::ok);
  auto tune = c->expect<TuneFrame>();
  ASSERT_TRUE(tune.ok()) << tune.error().message;
  // size 12 | key 0x8014 | version 1 | frame_max | heartbeat
  Bytes answer;
  encode(*tune, &answer);
  ASSERT_EQ(answer.size(), 16u);
  answer[4] = char(0x80);
  ASSERT_TRUE(c->send_raw(answer).ok());
  ASSERT_TRUE(c->send(OpenRequest{4, "/"}).ok());
  auto open = c->expect<OpenResponse>();
  ASSERT_TRUE(open.ok()) << open.error().message;
  EXPECT_EQ(open->code, ResponseCode::ok);
  // The connection serves requests afterwards.
  ASSERT_TRUE(c->send(MetadataRequest{5, {"nope"}}).ok());
  auto md = c->expect<MetadataResponse>();
  ASSERT_TRUE(md.ok()) << md.error().message;
  EXPECT_EQ(md->correlation_id, 5u);
}

TEST_F(ServeTest, BadCredentialsRefusedAndClosed) {
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  auto st = c->handshake("guest", "wrong");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("code 8"), std::string::npos) << st.error().message;
  EXPECT_TRUE(c->closed_by_server());
  auto c2 = StreamClient::connect(server_.port());
  st = c2->handshake("nobody", "guest");
  EXPECT_NE(st.error().message.find("code 8"), std::string::npos) << st.error().message;
}

TEST_F(ServeTest, PublishBeforeOpenClosesTheConnection) {
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  Bytes storage;
  ASSERT_TRUE(c->send(make_publish(1, 1, {"x"}, &storage)).ok());
  EXPECT_TRUE(c->closed_by_server());
  // The server is still fine for others.
  StreamClient ok = open_client();
  create(ok, "s");
}

TEST_F(ServeTest, OversizedFrameBeforeTuneClosesWithCode14) {
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  Bytes f;
  ByteWriter w(&f);
  w.be32(64u << 20);
  w.be16(kPeerProperties);
  w.be16(1);
  ASSERT_TRUE(c->send_raw(f).ok());
  auto close = c->expect<CloseRequest>();
  ASSERT_TRUE(close.ok()) << close.error().message;
  EXPECT_EQ(close->code, ResponseCode::frame_too_large);
  EXPECT_TRUE(c->closed_by_server());
}

TEST_F(ServeTest, OversizedFrameAfterTuneClosesWithCode14) {
  StreamClient c = open_client();
  Bytes f;
  ByteWriter w(&f);
  w.be32(c.server_tune.frame_max + 1);
  w.be16(kPublish);
  w.be16(1);
  ASSERT_TRUE(c.send_raw(f).ok());
  auto close = c.expect<CloseRequest>();
  ASSERT_TRUE(close.ok()) << close.error().message;
  EXPECT_EQ(close->code, ResponseCode::frame_too_large);
  EXPECT_TRUE(c.closed_by_server());
}

TEST_F(ServeTest, MalformedAndTruncatedFramesClose) {
  {
    // A string length running past the end of the frame.
    StreamClient c = open_client();
    Bytes f;
    size_t start = begin_frame(&f, kCreate, 1);
    WireWriter w(&f);
    w.u32(c.corr());
    w.u16(500);
    w.raw("abc");
    finish_frame(&f, start);
    ASSERT_TRUE(c.send_raw(f).ok());
    EXPECT_TRUE(c.closed_by_server());
  }
  {
    // A frame too short for its head.
    auto c = StreamClient::connect(server_.port());
    Bytes f;
    ByteWriter w(&f);
    w.be32(1);
    w.u8(0);
    ASSERT_TRUE(c->send_raw(f).ok());
    EXPECT_TRUE(c->closed_by_server());
  }
  StreamClient ok = open_client();
  create(ok, "after-garbage");
}

TEST_F(ServeTest, PublishConfirmConsume) {
  StreamClient c = open_client();
  create(c, "orders");
  declare(c, 1, "orders");
  std::vector<std::string> all;
  for (int batch = 0; batch < 20; ++batch) {
    auto b = bodies(50, "m", batch * 50);
    publish_confirmed(c, 1, uint64_t(batch * 50), b);
    all.insert(all.end(), b.begin(), b.end());
  }
  StreamClient r = open_client();
  ASSERT_TRUE(r.send(SubscribeRequest{r.corr(), 7, "orders", {OffsetType::first, 0}, 2, {}}).ok());
  auto sr = r.expect<SubscribeResponse>();
  ASSERT_TRUE(sr.ok()) << sr.error().message;
  ASSERT_EQ(sr->code, ResponseCode::ok);
  auto got = consume(r, 7, all.size());
  EXPECT_EQ(got, all);
  // Live: what is published now reaches the waiting consumer.
  auto more = bodies(10, "late");
  publish_confirmed(c, 1, 1000, more);
  got = consume(r, 7, more.size());
  EXPECT_EQ(got, more);
  // From an offset: the chunk holding it comes first (joined with the
  // chunks after it: one Deliver may hold several stored chunks).
  all.insert(all.end(), more.begin(), more.end());
  StreamClient r2 = open_client();
  ASSERT_TRUE(
      r2.send(SubscribeRequest{r2.corr(), 1, "orders", {OffsetType::offset, 525}, 10, {}}).ok());
  ASSERT_EQ(r2.expect<SubscribeResponse>()->code, ResponseCode::ok);
  std::vector<uint64_t> ids;
  got = consume(r2, 1, 1, &ids);
  ASSERT_FALSE(ids.empty());
  EXPECT_LE(ids[0], 525u);
  EXPECT_GT(ids[0] + got.size(), 525u);
  EXPECT_EQ(got.back(), all[ids[0] + got.size() - 1]);
}

// A consumer that goes away while large chunks are on their way to it
// (sendfile(2), which unlike send(2) cannot be told MSG_NOSIGNAL) must not
// take the server down with SIGPIPE: it was killed by it before
// cmd_serve.cpp ignored the signal.
TEST_F(ServeTest, AConsumerClosingMidDeliveryLeavesTheServerRunning) {
  StreamClient c = open_client();
  create(c, "big");
  declare(c, 1, "big");
  // 100 messages of 2 000 B per publish: one ~200 KB chunk each, above
  // sendfile_min_bytes.
  for (int b = 0; b < 30; ++b) {
    std::vector<std::string> bodies;
    for (int i = 0; i < 100; ++i)
      bodies.push_back(fmt::format("{:06}", b * 100 + i) + Bytes(2000, 'x'));
    publish_confirmed(c, 1, uint64_t(b * 100), bodies);
  }
  for (int round = 0; round < 5; ++round) {
    StreamClient r = open_client();
    ASSERT_TRUE(r.send(SubscribeRequest{r.corr(), 1, "big", {OffsetType::first, 0}, 100, {}}).ok());
    ASSERT_EQ(r.expect<SubscribeResponse>()->code, ResponseCode::ok);
    ASSERT_TRUE(r.expect<DeliverFrame>().ok());
    // r closes here with most of 6 MB unread: the server's next writes fail.
  }
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(server_.process().running()) << server_.process().stderr_text();
  StreamClient after = open_client();
  create(after, "still-serving");
}

TEST_F(ServeTest, PublisherIdReuseAndUnknownPublisher) {
  StreamClient c = open_client();
  create(c, "s");
  declare(c, 3, "s");
  declare(c, 3, "s", "", ResponseCode::precondition_failed);
  declare(c, 4, "missing", "", ResponseCode::stream_does_not_exist);
  Bytes storage;
  ASSERT_TRUE(c.send(make_publish(9, 1, {"a", "b"}, &storage)).ok());
  auto e = c.expect<PublishError>();
  ASSERT_TRUE(e.ok()) << e.error().message;
  ASSERT_EQ(e->errors.size(), 2u);
  EXPECT_EQ(e->errors[0].code, ResponseCode::publisher_does_not_exist);
  ASSERT_TRUE(c.send(DeletePublisherRequest{c.corr(), 3}).ok());
  EXPECT_EQ(c.expect<DeletePublisherResponse>()->code, ResponseCode::ok);
  ASSERT_TRUE(c.send(DeletePublisherRequest{c.corr(), 3}).ok());
  EXPECT_EQ(c.expect<DeletePublisherResponse>()->code, ResponseCode::publisher_does_not_exist);
  // Create twice: stream already exists.
  ASSERT_TRUE(c.send(CreateStreamRequest{c.corr(), "s", {}}).ok());
  EXPECT_EQ(c.expect<CreateStreamResponse>()->code, ResponseCode::stream_already_exists);
  ASSERT_TRUE(c.send(CreateStreamRequest{c.corr(), "bad", {{"max-age", "forever"}}}).ok());
  EXPECT_EQ(c.expect<CreateStreamResponse>()->code, ResponseCode::precondition_failed);
}

TEST_F(ServeTest, DeduplicationByPublisherReference) {
  StreamClient c = open_client();
  create(c, "dedup");
  declare(c, 1, "dedup", "app-1");
  publish_confirmed(c, 1, 1, bodies(10, "x", 1));
  // Ids 5..15: 5..10 are stored already — confirmed, not stored again.
  publish_confirmed(c, 1, 5, bodies(11, "x", 5));
  ASSERT_TRUE(c.send(QueryPublisherSequenceRequest{c.corr(), "app-1", "dedup"}).ok());
  auto q = c.expect<QueryPublisherSequenceResponse>();
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->sequence, 15u);
  ASSERT_TRUE(c.send(SubscribeRequest{c.corr(), 1, "dedup", {OffsetType::first, 0}, 5, {}}).ok());
  ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);
  auto got = consume(c, 1, 15);
  EXPECT_EQ(got, bodies(15, "x", 1));
}

TEST_F(ServeTest, MetadataAndStats) {
  StreamClient c = open_client();
  create(c, "m1");
  ASSERT_TRUE(c.send(MetadataRequest{c.corr(), {"m1", "nope"}}).ok());
  auto m = c.expect<MetadataResponse>();
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->brokers.size(), 1u);
  EXPECT_EQ(m->brokers[0].host, "127.0.0.1");
  EXPECT_EQ(m->brokers[0].port, uint32_t(server_.port()));
  ASSERT_EQ(m->streams.size(), 2u);
  EXPECT_EQ(m->streams[0].code, ResponseCode::ok);
  EXPECT_EQ(m->streams[0].leader_reference, 0);
  EXPECT_EQ(m->streams[1].code, ResponseCode::stream_does_not_exist);
  declare(c, 1, "m1");
  publish_confirmed(c, 1, 0, bodies(3, "a"));
  publish_confirmed(c, 1, 3, bodies(3, "b"));
  ASSERT_TRUE(c.send(StreamStatsRequest{c.corr(), "m1"}).ok());
  auto s = c.expect<StreamStatsResponse>();
  ASSERT_TRUE(s.ok());
  std::map<std::string, int64_t> st(s->stats.begin(), s->stats.end());
  EXPECT_EQ(st["first_chunk_id"], 0);
  EXPECT_EQ(st["committed_chunk_id"], 3);
}

TEST_F(ServeTest, CreditHoldsAConsumerWithoutBlockingOthers) {
  StreamClient c = open_client();
  create(c, "credit");
  declare(c, 1, "credit");
  for (int i = 0; i < 5; ++i) publish_confirmed(c, 1, uint64_t(i), {"c" + std::to_string(i)});
  // No credit: nothing is delivered; a request on the same connection is
  // answered meanwhile.
  StreamClient slow = open_client();
  ASSERT_TRUE(
      slow.send(SubscribeRequest{slow.corr(), 1, "credit", {OffsetType::first, 0}, 0, {}}).ok());
  ASSERT_EQ(slow.expect<SubscribeResponse>()->code, ResponseCode::ok);
  ASSERT_TRUE(slow.send(MetadataRequest{slow.corr(), {"credit"}}).ok());
  ASSERT_TRUE(slow.expect<MetadataResponse>().ok());
  EXPECT_TRUE(slow.skipped.empty());
  // Another consumer on the same stream is served in full.
  StreamClient fast = open_client();
  ASSERT_TRUE(
      fast.send(SubscribeRequest{fast.corr(), 1, "credit", {OffsetType::first, 0}, 10, {}}).ok());
  ASSERT_EQ(fast.expect<SubscribeResponse>()->code, ResponseCode::ok);
  EXPECT_EQ(consume(fast, 1, 5).size(), 5u);
  // One credit: exactly one chunk.
  ASSERT_TRUE(slow.send(CreditRequest{1, 1}).ok());
  auto d = slow.expect<DeliverFrame>();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(chunk_records(*d)->at(0), "c0");
  EXPECT_FALSE(slow.read(300ms).ok());
  // Credit for an unknown subscription: answered with code 4.
  ASSERT_TRUE(slow.send(CreditRequest{99, 1}).ok());
  auto cr = slow.expect<CreditResponse>();
  ASSERT_TRUE(cr.ok());
  EXPECT_EQ(cr->code, ResponseCode::subscription_id_does_not_exist);
}

TEST_F(ServeTest, RestartKeepsEverythingConfirmed) {
  std::vector<std::string> all;
  {
    StreamClient c = open_client();
    create(c, "durable");
    declare(c, 1, "durable", "p");
    for (int i = 0; i < 10; ++i) {
      auto b = bodies(100, "d", i * 100);
      publish_confirmed(c, 1, uint64_t(i * 100 + 1), b);
      all.insert(all.end(), b.begin(), b.end());
    }
  }
  ASSERT_EQ(server_.stop(), 0) << server_.process().stderr_text();
  server_ = ServeProcess::start(dir_.sub("data"), {}, dir_.path());
  ASSERT_GT(server_.port(), 0);
  StreamClient c = open_client();
  ASSERT_TRUE(c.send(SubscribeRequest{c.corr(), 1, "durable", {OffsetType::first, 0}, 5, {}}).ok());
  ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);
  EXPECT_EQ(consume(c, 1, all.size()), all);
}

TEST_F(ServeTest, DeleteStreamSendsMetadataUpdate) {
  StreamClient c = open_client();
  create(c, "gone");
  declare(c, 1, "gone");
  StreamClient admin = open_client();
  ASSERT_TRUE(admin.send(DeleteStreamRequest{admin.corr(), "gone"}).ok());
  EXPECT_EQ(admin.expect<DeleteStreamResponse>()->code, ResponseCode::ok);
  auto u = c.expect<MetadataUpdate>();
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u->stream, "gone");
  ASSERT_TRUE(admin.send(DeleteStreamRequest{admin.corr(), "gone"}).ok());
  EXPECT_EQ(admin.expect<DeleteStreamResponse>()->code, ResponseCode::stream_does_not_exist);
}

TEST_F(ServeTest, StoredOffsetsSurviveRestart) {
  {
    StreamClient c = open_client();
    create(c, "tracked");
    ASSERT_TRUE(c.send(QueryOffsetRequest{c.corr(), "app", "tracked"}).ok());
    EXPECT_EQ(c.expect<QueryOffsetResponse>()->code, ResponseCode::no_offset);
    ASSERT_TRUE(c.send(StoreOffsetRequest{"app", "tracked", 42}).ok());
    // StoreOffset has no answer; the query after it on the same connection
    // sees it.
    ASSERT_TRUE(c.send(QueryOffsetRequest{c.corr(), "app", "tracked"}).ok());
    auto q = c.expect<QueryOffsetResponse>();
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->code, ResponseCode::ok);
    EXPECT_EQ(q->offset, 42u);
  }
  ASSERT_EQ(server_.stop(), 0);
  server_ = ServeProcess::start(dir_.sub("data"), {}, dir_.path());
  StreamClient c = open_client();
  ASSERT_TRUE(c.send(QueryOffsetRequest{c.corr(), "app", "tracked"}).ok());
  auto q = c.expect<QueryOffsetResponse>();
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->code, ResponseCode::ok);
  EXPECT_EQ(q->offset, 42u);
}

TEST_F(ServeTest, SuperStreamRouteAndPartitions) {
  StreamClient c = open_client();
  ASSERT_TRUE(c.send(CreateSuperStreamRequest{
                         c.corr(), "inv", {"inv-0", "inv-1", "inv-2"}, {"a", "b", "c"}, {}})
                  .ok());
  ASSERT_EQ(c.expect<CreateSuperStreamResponse>()->code, ResponseCode::ok);
  ASSERT_TRUE(c.send(PartitionsRequest{c.corr(), "inv"}).ok());
  auto p = c.expect<PartitionsResponse>();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->streams, (std::vector<std::string>{"inv-0", "inv-1", "inv-2"}));
  ASSERT_TRUE(c.send(RouteRequest{c.corr(), "b", "inv"}).ok());
  auto r = c.expect<RouteResponse>();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->streams, (std::vector<std::string>{"inv-1"}));
  // The partitions are ordinary streams.
  declare(c, 1, "inv-2");
  ASSERT_TRUE(c.send(DeleteSuperStreamRequest{c.corr(), "inv"}).ok());
  ASSERT_EQ(c.expect<DeleteSuperStreamResponse>()->code, ResponseCode::ok);
  ASSERT_TRUE(c.send(PartitionsRequest{c.corr(), "inv"}).ok());
  EXPECT_EQ(c.expect<PartitionsResponse>()->code, ResponseCode::stream_does_not_exist);
  ASSERT_TRUE(c.send(MetadataRequest{c.corr(), {"inv-0"}}).ok());
  EXPECT_EQ(c.expect<MetadataResponse>()->streams.at(0).code, ResponseCode::stream_does_not_exist);
}

TEST_F(ServeTest, SingleActiveConsumerFailsOver) {
  StreamClient pub = open_client();
  create(pub, "sac");
  declare(pub, 1, "sac");
  publish_confirmed(pub, 1, 0, bodies(5, "s"));
  Properties props = {{"single-active-consumer", "true"}, {"name", "grp"}};
  StreamClient a = open_client();
  ASSERT_TRUE(a.send(SubscribeRequest{a.corr(), 1, "sac", {OffsetType::first, 0}, 10, props}).ok());
  ASSERT_EQ(a.expect<SubscribeResponse>()->code, ResponseCode::ok);
  auto up = a.expect<ConsumerUpdateRequest>();
  ASSERT_TRUE(up.ok()) << up.error().message;
  EXPECT_EQ(up->active, 1);
  ASSERT_TRUE(a.send(ConsumerUpdateResponse{up->correlation_id, ResponseCode::ok,
                                            OffsetSpec{OffsetType::first, 0}})
                  .ok());
  EXPECT_EQ(consume(a, 1, 5), bodies(5, "s"));
  // A second member waits: no update, no chunks.
  StreamClient b = open_client();
  ASSERT_TRUE(b.send(SubscribeRequest{b.corr(), 2, "sac", {OffsetType::first, 0}, 10, props}).ok());
  ASSERT_EQ(b.expect<SubscribeResponse>()->code, ResponseCode::ok);
  ASSERT_TRUE(b.send(MetadataRequest{b.corr(), {"sac"}}).ok());
  ASSERT_TRUE(b.expect<MetadataResponse>().ok());
  EXPECT_TRUE(b.skipped.empty());
  // The active one leaves: the second is activated and resumes where it asks.
  ASSERT_TRUE(a.send(UnsubscribeRequest{a.corr(), 1}).ok());
  ASSERT_EQ(a.expect<UnsubscribeResponse>()->code, ResponseCode::ok);
  auto up2 = b.expect<ConsumerUpdateRequest>();
  ASSERT_TRUE(up2.ok()) << up2.error().message;
  EXPECT_EQ(up2->active, 1);
  EXPECT_EQ(up2->subscription_id, 2);
  ASSERT_TRUE(b.send(ConsumerUpdateResponse{up2->correlation_id, ResponseCode::ok,
                                            OffsetSpec{OffsetType::offset, 3}})
                  .ok());
  std::vector<uint64_t> ids;
  auto got = consume(b, 2, 2, &ids);
  ASSERT_FALSE(ids.empty());
  EXPECT_LE(ids[0], 3u);
  EXPECT_EQ(got.back(), "s4");
}

// Many deletions at once: each client's DeleteStream runs as a job of the
// server's blocking pool (8 threads) and waits for its deletion's steps,
// which are jobs of the same pool. Sixteen at once once took every thread
// and waited for steps queued behind them until the jobs' 120 s deadline;
// now a waiting deletion lets the pool run one more thread.
TEST_F(ServeTest, SixteenDeletionsAtOnceEndPromptly) {
  StreamClient admin = open_client();
  std::vector<StreamClient> clients;
  for (int i = 0; i < 16; ++i) {
    create(admin, "many-" + std::to_string(i));
    clients.push_back(open_client());
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(
        clients[i].send(DeleteStreamRequest{clients[i].corr(), "many-" + std::to_string(i)}).ok());
  }
  for (int i = 0; i < 16; ++i) {
    auto d = clients[i].expect<DeleteStreamResponse>(60s);
    ASSERT_TRUE(d.ok()) << i << ": " << d.error().message;
    EXPECT_EQ(d->code, ResponseCode::ok) << i;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(admin.send(MetadataRequest{admin.corr(), {"many-" + std::to_string(i)}}).ok());
    auto m = admin.expect<MetadataResponse>();
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->streams.at(0).code, ResponseCode::stream_does_not_exist) << i;
  }
}

// Offsets stored while the stream is deleted leave nothing behind: a
// second connection stores in a loop while the first deletes; the stream
// re-created under the same name has no stored offset (QueryOffset: 19),
// and no tracking file outlives the deletion.
TEST_F(ServeTest, OffsetsStoredDuringDeletionLeaveNothingBehind) {
  StreamClient admin = open_client();
  const int rounds = scaled(10);
  for (int round = 0; round < rounds; ++round) {
    const std::string stream = "del-offsets-" + std::to_string(round);
    create(admin, stream);
    StreamClient storer = open_client();
    std::atomic<bool> deleted{false};
    std::atomic<uint64_t> sent{0};
    std::thread t([&] {
      // StoreOffset has no answer: store until the deletion is answered and
      // a while after, then a query on the same connection (frames are
      // handled in order) shows every store was handled.
      uint64_t after = 0;
      for (uint64_t i = 0; after < 200; ++i) {
        if (!storer.send(StoreOffsetRequest{"app", stream, i}).ok()) return;
        sent += 1;
        if (deleted) ++after;
      }
    });
    while (sent < 200) std::this_thread::yield();
    ASSERT_TRUE(admin.send(DeleteStreamRequest{admin.corr(), stream}).ok());
    auto d = admin.expect<DeleteStreamResponse>();
    deleted = true;
    t.join();
    ASSERT_TRUE(d.ok()) << d.error().message;
    ASSERT_EQ(d->code, ResponseCode::ok);
    ASSERT_TRUE(storer.send(QueryOffsetRequest{storer.corr(), "app", stream}).ok());
    auto gone = storer.expect<QueryOffsetResponse>();
    ASSERT_TRUE(gone.ok()) << gone.error().message;
    EXPECT_EQ(gone->code, ResponseCode::stream_does_not_exist);
    create(admin, stream);
    ASSERT_TRUE(admin.send(QueryOffsetRequest{admin.corr(), "app", stream}).ok());
    auto q = admin.expect<QueryOffsetResponse>();
    ASSERT_TRUE(q.ok()) << q.error().message;
    EXPECT_EQ(q->code, ResponseCode::no_offset) << stream << " inherited offset " << q->offset;
  }
  // A clean stop flushes every stored offset: none of the re-created
  // streams (which were never stored to) has a tracking file.
  ASSERT_EQ(server_.stop(), 0);
  for (int round = 0; round < rounds; ++round) {
    EXPECT_FALSE(std::filesystem::exists(dir_.sub("data") + "/tracking/del-offsets-" +
                                         std::to_string(round)))
        << round;
  }
}

// A single active consumer that never answers its ConsumerUpdate does not
// stall the group: after server.consumer_update_timeout_ms its connection
// is closed (as RabbitMQ does when a request to the client times out) and
// the next consumer is activated.
TEST_F(ServeTest, SingleActiveConsumerThatNeverAnswersIsFailed) {
  restart_with_config("sac-timeout.json", R"({"server": {"consumer_update_timeout_ms": 300}})");
  if (HasFatalFailure()) return;
  StreamClient pub = open_client();
  create(pub, "sac-deaf");
  declare(pub, 1, "sac-deaf");
  publish_confirmed(pub, 1, 0, bodies(5, "d"));
  Properties props = {{"single-active-consumer", "true"}, {"name", "grp"}};
  // A: asked to become active, never answers.
  StreamClient deaf = open_client();
  ASSERT_TRUE(
      deaf.send(SubscribeRequest{deaf.corr(), 1, "sac-deaf", {OffsetType::first, 0}, 10, props})
          .ok());
  ASSERT_EQ(deaf.expect<SubscribeResponse>()->code, ResponseCode::ok);
  auto up = deaf.expect<ConsumerUpdateRequest>();
  ASSERT_TRUE(up.ok()) << up.error().message;
  EXPECT_EQ(up->active, 1);
  // B joins behind it and is asked once A's deadline has passed.
  StreamClient b = open_client();
  ASSERT_TRUE(
      b.send(SubscribeRequest{b.corr(), 2, "sac-deaf", {OffsetType::first, 0}, 10, props}).ok());
  ASSERT_EQ(b.expect<SubscribeResponse>()->code, ResponseCode::ok);
  auto up2 = b.expect<ConsumerUpdateRequest>(10s);
  ASSERT_TRUE(up2.ok()) << up2.error().message;
  EXPECT_EQ(up2->active, 1);
  EXPECT_EQ(up2->subscription_id, 2);
  EXPECT_TRUE(deaf.closed_by_server(10s));
  ASSERT_TRUE(b.send(ConsumerUpdateResponse{up2->correlation_id, ResponseCode::ok,
                                            OffsetSpec{OffsetType::first, 0}})
                  .ok());
  EXPECT_EQ(consume(b, 2, 5), bodies(5, "d"));
  // B answered: twice the deadline later it is neither asked again nor
  // closed (nothing arrives), and it still gets new messages.
  auto quiet = b.read(600ms);
  ASSERT_FALSE(quiet.ok());
  EXPECT_EQ(quiet.error().code, Errc::timeout) << quiet.error().message;
  publish_confirmed(pub, 1, 5, bodies(1, "late"));
  EXPECT_EQ(consume(b, 2, 1), bodies(1, "late"));
}

}  // namespace
}  // namespace strata::test

namespace strata::test {
namespace {

// 100 bodies of ~300 bytes: one chunk of ~31 KiB per publish.
std::vector<std::string> big_bodies(int batch) {
  std::vector<std::string> v;
  for (int i = 0; i < 100; ++i)
    v.push_back(fmt::format("{:06}-{:06}", batch, i) + std::string(290, 'x'));
  return v;
}

TEST_F(ServeTest, CreateArgumentsSetSegmentSizeAndRetentionAndSurviveARestart) {
  const std::string stream_dir = dir_.sub("data/streams/ret");
  {
    StreamClient c = open_client();
    create(c, "ret",
           {{"max-length-bytes", "262144"},
            {"stream-max-segment-size-bytes", "65536"},
            {"x-strata-tiering", "false"}});
    declare(c, 1, "ret");
    for (int b = 0; b < 40; ++b) publish_confirmed(c, 1, uint64_t(b * 100), big_bodies(b));
    // 1.2 MiB published; the stream keeps 256 KiB (plus the active segment).
    auto st = stream_stats(c, "ret");
    EXPECT_GT(st["first_chunk_id"], 0);
    EXPECT_EQ(st["committed_chunk_id"], 3900);
    auto sizes = segment_sizes(stream_dir);
    uint64_t total = 0;
    for (uint64_t z : sizes) {
      EXPECT_LE(z, 65536u + 40000u);  // a segment takes a chunk that starts below the bound
      total += z;
    }
    EXPECT_LE(total, 262144u + 2 * (65536u + 40000u));
    // Consumers from `first` start at what retention kept.
    ASSERT_TRUE(c.send(SubscribeRequest{c.corr(), 1, "ret", {OffsetType::first, 0}, 1, {}}).ok());
    ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);
    std::vector<uint64_t> ids;
    consume(c, 1, 100, &ids);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(int64_t(ids[0]), st["first_chunk_id"]);
  }
  std::ifstream f(stream_dir + "/settings.json");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"max_bytes\":262144"), std::string::npos) << text;
  // After a restart the stream still runs with its own settings.
  ASSERT_EQ(server_.stop(), 0) << server_.process().stderr_text();
  server_ = ServeProcess::start(dir_.sub("data"), {}, dir_.path());
  ASSERT_GT(server_.port(), 0);
  StreamClient c = open_client();
  declare(c, 1, "ret");
  for (int b = 40; b < 60; ++b) publish_confirmed(c, 1, uint64_t(b * 100), big_bodies(b));
  uint64_t total = 0;
  for (uint64_t z : segment_sizes(stream_dir)) {
    EXPECT_LE(z, 65536u + 40000u);
    total += z;
  }
  EXPECT_LE(total, 262144u + 2 * (65536u + 40000u));
}

TEST_F(ServeTest, CreateAgainWithOtherArgumentsAndBadArgumentsAnswer17) {
  StreamClient c = open_client();
  create(c, "once", {{"max-length-bytes", "1000000"}});
  auto answer = [&](const std::string& name, Properties args) {
    uint32_t corr = c.corr();
    EXPECT_TRUE(c.send(CreateStreamRequest{corr, name, std::move(args)}).ok());
    auto r = c.expect<CreateStreamResponse>();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->code : ResponseCode::internal_error;
  };
  EXPECT_EQ(answer("once", {{"max-length-bytes", "2000000"}}), ResponseCode::precondition_failed);
  EXPECT_EQ(answer("once", {}), ResponseCode::precondition_failed);
  EXPECT_EQ(answer("once", {{"max-length-bytes", "1000000"}}), ResponseCode::stream_already_exists);
  EXPECT_EQ(answer("bad", {{"max-age", "7W"}}), ResponseCode::precondition_failed);
  // Well-formed, but it would do nothing: a local stream has no local bound
  // apart from its retention.
  EXPECT_EQ(answer("bad", {{"x-strata-tiering", "false"}, {"x-strata-local-max-bytes", "1000"}}),
            ResponseCode::precondition_failed);
  EXPECT_FALSE(std::filesystem::exists(dir_.sub("data/streams/bad")));
  std::ifstream f(dir_.sub("data/streams/once/settings.json"));
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"max_bytes\":1000000"), std::string::npos) << text;
}

TEST_F(ServeTest, TieredStreamRetentionFromCreateArguments) {
  // Small fragments cut quickly: data reaches the remote tier, which keeps
  // max-length-bytes, and so does the local log once it is uploaded.
  StreamClient c = open_client();
  create(c, "tiered",
         {{"max-length-bytes", "131072"},
          {"stream-max-segment-size-bytes", "16384"},
          {"x-strata-fragment-target-bytes", "16384"},
          {"x-strata-fragment-max-age-ms", "50"}});
  declare(c, 1, "tiered");
  int64_t first = 0;
  int b = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (first == 0 && std::chrono::steady_clock::now() < until) {
    publish_confirmed(c, 1, uint64_t(b * 100), big_bodies(b));
    b += 1;
    first = stream_stats(c, "tiered")["first_chunk_id"];
  }
  ASSERT_GT(first, 0) << "retention never dropped anything after " << b << " batches";
  // Whatever the local log dropped had been uploaded: a consumer from
  // `first` starts at the oldest retained chunk, with no gap after it.
  ASSERT_TRUE(c.send(SubscribeRequest{c.corr(), 2, "tiered", {OffsetType::first, 0}, 1, {}}).ok());
  ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);
  std::vector<uint64_t> ids;
  auto recs = consume(c, 2, 200, &ids);
  ASSERT_GE(ids.size(), 1u);
  // Retention may have gone on since the stats were read.
  EXPECT_GE(int64_t(ids[0]), first);
  // Every batch is 100 records, so offset o holds record o % 100 of batch
  // o / 100: the records from the first chunk on are exactly those.
  EXPECT_EQ(ids[0] % 100, 0u);
  ASSERT_GE(recs.size(), 200u);
  for (size_t k = 0; k < recs.size(); ++k) {
    const uint64_t o = ids[0] + k;
    ASSERT_EQ(recs[k].substr(0, 13), fmt::format("{:06}-{:06}", o / 100, o % 100))
        << "offset " << o;
  }
}

}  // namespace
}  // namespace strata::test
