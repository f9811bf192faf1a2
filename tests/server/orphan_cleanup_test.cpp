// A node cleans up after itself: rounds of `strata serve` killed (-9) and
// stopped (SIGTERM) while fragments are uploaded but not yet persisted
// leave objects no manifest references — scrub counts them — and a node
// started with a short tiering.orphan_grace_ms deletes them by itself,
// counted in /status: afterwards scrub finds no orphan and no damage, and
// every confirmed message reads back.
#include <gtest/gtest.h>

#include <fstream>

#include "server/serve_fixture.h"
#include "support/cli.h"
#include "support/eventually.h"

namespace strata::test {
namespace {

using json = nlohmann::json;

// Orphans (and damage) scrub reports over every stream of the node.
struct ScrubCount {
  int orphans = 0;
  int damage = 0;
};
ScrubCount scrub(const std::string& config) {
  auto out = strata_cli({"scrub", "--config", config, "--json"});
  auto j = json::parse(out.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << out.out << out.err;
  ScrubCount n;
  if (j.is_discarded()) return n;
  for (const auto& s : j["streams"]) {
    for (const auto& f : s["findings"]) {
      (f["kind"] == "orphan" ? n.orphans : n.damage) += 1;
    }
  }
  return n;
}

TEST(OrphanCleanup, ANodeDeletesWhatKilledAndStoppedRunsLeftBehind) {
  TempDir dir;
  const std::string data = dir.sub("data");
  // Fragments every 50 ms, persists only after a minute: every round ends
  // with uploaded fragments no manifest references yet.
  auto config = [&](const std::string& name, int64_t persist_ms, int64_t orphan_grace_ms) {
    const std::string path = dir.sub(name);
    std::ofstream(path) << json{{"data_dir", data},
                                {"objstore", {{"fs", {{"root", dir.sub("objects")}}}}},
                                {"tiering",
                                 {{"fragment_max_age_ms", 50},
                                  {"persist_interval_ms", persist_ms},
                                  {"persist_threshold", 1000},
                                  {"delete_grace_ms", 0},
                                  {"orphan_grace_ms", orphan_grace_ms}}},
                                {"http", {{"listen", "127.0.0.1:0"}}}}
                               .dump();
    return path;
  };
  const std::string rounds_cfg = config("rounds.json", 60'000, 0);
  uint64_t next_id = 0;
  for (int round = 0; round < 4; ++round) {
    ServeProcess srv = ServeProcess::start(data, {"--config", rounds_cfg}, dir.path());
    ASSERT_GT(srv.port(), 0) << srv.process().stderr_text();
    auto c = StreamClient::connect(srv.port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c->handshake().ok());
    if (round == 0) {
      ASSERT_TRUE(c->send(CreateStreamRequest{c->corr(), "o", {}}).ok());
      ASSERT_EQ(c->expect<CreateStreamResponse>()->code, ResponseCode::ok);
    }
    ASSERT_TRUE(c->send(DeclarePublisherRequest{c->corr(), 1, "", "o"}).ok());
    ASSERT_EQ(c->expect<DeclarePublisherResponse>()->code, ResponseCode::ok);
    for (int batch = 0; batch < 10; ++batch) {
      Bytes storage;
      auto msgs = bodies(50, "r", int(next_id));
      ASSERT_TRUE(c->send(make_publish(1, next_id, msgs, &storage)).ok());
      size_t confirmed = 0;
      while (confirmed < msgs.size()) {
        auto conf = c->expect<PublishConfirm>();
        ASSERT_TRUE(conf.ok()) << conf.error().message;
        confirmed += conf->publishing_ids.size();
      }
      next_id += msgs.size();
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
    }
    // Let the last fragments go up, then end the round the hard or the
    // polite way.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (round % 2 == 0) {
      srv.process().kill(9);
      srv.process().wait(std::chrono::seconds(10));
    } else {
      ASSERT_EQ(srv.stop(), 0);
    }
  }
  const ScrubCount before = scrub(rounds_cfg);
  EXPECT_EQ(before.damage, 0);
  ASSERT_GT(before.orphans, 0) << "the rounds left nothing to clean up: the test proves nothing";

  // Persists as usual now; the cleanup's first run 1.5 s after the open.
  const std::string final_cfg = config("final.json", 100, 1500);
  ServeProcess srv = ServeProcess::start(data, {"--config", final_cfg}, dir.path());
  ASSERT_GT(srv.port(), 0) << srv.process().stderr_text();
  json orphans;
  ASSERT_TRUE(eventually(std::chrono::seconds(20), [&] {
    auto st = serve_status(srv);
    orphans = st["node"]["orphans"];
    return orphans.is_object() && orphans["runs"].get<int>() >= 2 &&
           st["streams"]["o"]["tiering"]["unpersisted_tail_offsets"] == 0;
  })) << orphans.dump();
  EXPECT_GE(orphans["deleted"].get<int>(), before.orphans) << orphans.dump();
  EXPECT_EQ(orphans["failed_runs"], 0) << orphans.dump();
  EXPECT_NE(serve_http_get(srv, "/metrics").find("strata_node_orphans_deleted_total"),
            std::string::npos);
  const ScrubCount after = scrub(final_cfg);
  EXPECT_EQ(after.orphans, 0);
  EXPECT_EQ(after.damage, 0);

  // Nothing confirmed went with them.
  auto c = StreamClient::connect(srv.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->handshake().ok());
  ASSERT_TRUE(c->send(SubscribeRequest{c->corr(), 1, "o", {OffsetType::first, 0}, 100, {}}).ok());
  ASSERT_EQ(c->expect<SubscribeResponse>()->code, ResponseCode::ok);
  std::vector<std::string> got;
  while (got.size() < next_id) {
    auto d = c->expect<DeliverFrame>();
    ASSERT_TRUE(d.ok()) << d.error().message << " after " << got.size();
    auto recs = chunk_records(*d);
    ASSERT_TRUE(recs.ok());
    got.insert(got.end(), recs->begin(), recs->end());
    ASSERT_TRUE(c->send(CreditRequest{1, 1}).ok());
  }
  EXPECT_EQ(got, bodies(int(next_id), "r"));
}

}  // namespace
}  // namespace strata::test
