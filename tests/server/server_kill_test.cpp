// kill -9 of `strata serve` under load: every publishing id the server
// confirmed is found after a restart.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "server/stream_client.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace proto;

TEST(ServeKill, EveryConfirmedMessageSurvivesKill9) {
  TempDir dir;
  std::string data = dir.sub("data");
  uint64_t seed = test_seed(std::random_device{}());
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::set<uint64_t> confirmed;
  uint64_t next_id = 1;
  int rounds = std::max(1, scaled(3));
  for (int round = 0; round < rounds; ++round) {
    ServeProcess srv = ServeProcess::start(data, {}, dir.path());
    ASSERT_GT(srv.port(), 0) << srv.process().stderr_text();
    auto c = StreamClient::connect(srv.port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c->handshake().ok());
    if (round == 0) {
      ASSERT_TRUE(c->send(CreateStreamRequest{c->corr(), "k", {}}).ok());
      ASSERT_EQ(c->expect<CreateStreamResponse>()->code, ResponseCode::ok);
    }
    ASSERT_TRUE(c->send(DeclarePublisherRequest{c->corr(), 1, "", "k"}).ok());
    ASSERT_EQ(c->expect<DeclarePublisherResponse>()->code, ResponseCode::ok);
    // Kill after a random number of confirms, with publishes in flight.
    size_t kill_after = confirmed.size() + 200 + rng() % 3000;
    int in_flight = 0;
    Bytes storage;
    while (confirmed.size() < kill_after) {
      while (in_flight < 8) {
        std::vector<std::string> bodies;
        for (int i = 0; i < 50; ++i) bodies.push_back("id-" + std::to_string(next_id + i));
        ASSERT_TRUE(c->send(make_publish(1, next_id, bodies, &storage)).ok());
        next_id += 50;
        in_flight += 1;
      }
      auto conf = c->expect<PublishConfirm>();
      ASSERT_TRUE(conf.ok()) << conf.error().message;
      confirmed.insert(conf->publishing_ids.begin(), conf->publishing_ids.end());
      in_flight -= 1;
    }
    srv.process().kill(9);
    srv.process().wait();
  }
  ServeProcess srv = ServeProcess::start(data, {}, dir.path());
  ASSERT_GT(srv.port(), 0);
  auto c = StreamClient::connect(srv.port());
  ASSERT_TRUE(c->handshake().ok());
  ASSERT_TRUE(c->send(StreamStatsRequest{c->corr(), "k"}).ok());
  auto stats = c->expect<StreamStatsResponse>();
  ASSERT_TRUE(stats.ok());
  ASSERT_TRUE(c->send(SubscribeRequest{c->corr(), 1, "k", {OffsetType::first, 0}, 100, {}}).ok());
  ASSERT_EQ(c->expect<SubscribeResponse>()->code, ResponseCode::ok);
  std::set<uint64_t> found;
  int64_t last_chunk = -1;
  for (auto& [k, v] : stats->stats) {
    if (k == "committed_chunk_id") last_chunk = v;
  }
  ASSERT_GE(last_chunk, 0);
  for (;;) {
    auto d = c->expect<DeliverFrame>();
    ASSERT_TRUE(d.ok()) << d.error().message;
    auto recs = chunk_records(*d);
    ASSERT_TRUE(recs.ok()) << recs.error().message;
    for (const auto& r : *recs) found.insert(std::stoull(r.substr(3)));
    ASSERT_TRUE(c->send(CreditRequest{1, 1}).ok());
    // Through the last committed chunk (a Deliver may hold several).
    auto h = decode_osiris_header(d->chunk);
    if (h->chunk_id + h->num_records > uint64_t(last_chunk)) break;
  }
  for (uint64_t id : confirmed) ASSERT_TRUE(found.count(id)) << "confirmed id " << id << " lost";
  EXPECT_EQ(srv.stop(), 0);
}

}  // namespace
}  // namespace strata::test
