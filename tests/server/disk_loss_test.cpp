// A lost disk, one node, the etcd catalog: `strata serve` on an empty data
// directory over the same etcd and bucket serves the stream the client
// created — its arguments (max-age, remote confirms), every confirmed
// message, the publisher's sequence (deduplication) and the consumer's
// stored offset — without the client creating it again.
#include <gtest/gtest.h>

#include <fstream>

#include "server/serve_fixture.h"
#include "support/etcd_cluster.h"

namespace strata::test {
namespace {

using json = nlohmann::json;

TEST(DiskLoss, ANodeOnANewDiskServesItsStreamsFromEtcdAndTheBucket) {
  TempDir dir;
  std::string err;
  auto etcd = EtcdCluster::start(dir.path(), 1, &err);
  ASSERT_NE(etcd, nullptr) << err;
  const std::string cfg = dir.sub("strata.json");
  std::ofstream(cfg) << json{
      {"catalog", {{"backend", "etcd"}, {"endpoints", etcd->endpoints()}, {"namespace", "loss"}}},
      {"objstore", {{"fs", {{"root", dir.sub("bucket")}}}}},
      {"tiering", {{"fragment_max_age_ms", 100}, {"persist_interval_ms", 100}}},
      {"http",
       {{"listen",
         "127.0.0.1:0"}}}}.dump();
  const auto msgs = bodies(20, "m");
  {
    ServeProcess srv = ServeProcess::start(dir.sub("disk1"), {"--config", cfg}, dir.path());
    ASSERT_GT(srv.port(), 0) << srv.process().stderr_text();
    auto c = StreamClient::connect(srv.port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c->handshake().ok());
    ASSERT_TRUE(c->send(CreateStreamRequest{
                            c->corr(), "kept", {{"max-age", "7D"}, {"x-strata-confirm", "remote"}}})
                    .ok());
    ASSERT_EQ(c->expect<CreateStreamResponse>()->code, ResponseCode::ok);
    ASSERT_TRUE(c->send(DeclarePublisherRequest{c->corr(), 1, "app", "kept"}).ok());
    ASSERT_EQ(c->expect<DeclarePublisherResponse>()->code, ResponseCode::ok);
    Bytes storage;
    ASSERT_TRUE(c->send(make_publish(1, 1, msgs, &storage)).ok());
    size_t confirmed = 0;
    while (confirmed < msgs.size()) {
      auto conf = c->expect<PublishConfirm>();
      ASSERT_TRUE(conf.ok()) << conf.error().message;
      confirmed += conf->publishing_ids.size();
    }
    ASSERT_TRUE(c->send(StoreOffsetRequest{"reader", "kept", 12}).ok());
    ASSERT_TRUE(c->send(QueryOffsetRequest{c->corr(), "reader", "kept"}).ok());
    ASSERT_EQ(c->expect<QueryOffsetResponse>()->offset, 12u);
    ASSERT_EQ(srv.stop(), 0);
  }

  // The first disk is gone.
  ServeProcess srv = ServeProcess::start(dir.sub("disk2"), {"--config", cfg}, dir.path());
  ASSERT_GT(srv.port(), 0) << srv.process().stderr_text();
  auto c = StreamClient::connect(srv.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->handshake().ok());
  // Recovered from the bucket in the background: served once it is open.
  ASSERT_TRUE(wait_served(*c, "kept"));
  auto status = serve_status(srv);
  ASSERT_TRUE(status["streams"].contains("kept")) << status.dump();
  EXPECT_EQ(status["streams"]["kept"]["settings"]["max_age_ms"], 7 * 86'400'000LL)
      << status["streams"]["kept"].dump();
  EXPECT_EQ(status["streams"]["kept"]["effective"]["confirm"], "remote");
  ASSERT_TRUE(c->send(QueryOffsetRequest{c->corr(), "reader", "kept"}).ok());
  auto off = c->expect<QueryOffsetResponse>();
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->code, ResponseCode::ok);
  EXPECT_EQ(off->offset, 12u);
  ASSERT_TRUE(c->send(QueryPublisherSequenceRequest{c->corr(), "app", "kept"}).ok());
  auto seq = c->expect<QueryPublisherSequenceResponse>();
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(seq->code, ResponseCode::ok);
  EXPECT_EQ(seq->sequence, 20u);
  ASSERT_TRUE(c->send(SubscribeRequest{c->corr(), 1, "kept", {OffsetType::first, 0}, 10, {}}).ok());
  ASSERT_EQ(c->expect<SubscribeResponse>()->code, ResponseCode::ok);
  std::vector<std::string> got;
  while (got.size() < msgs.size()) {
    auto d = c->expect<DeliverFrame>();
    ASSERT_TRUE(d.ok()) << d.error().message << " after " << got.size();
    auto recs = chunk_records(*d);
    ASSERT_TRUE(recs.ok());
    got.insert(got.end(), recs->begin(), recs->end());
    ASSERT_TRUE(c->send(CreditRequest{1, 1}).ok());
  }
  EXPECT_EQ(got, msgs);
  EXPECT_NE(srv.process().stdout_text().find("recovered from the bucket"), std::string::npos);
}

}  // namespace
}  // namespace strata::test
