// What a client that asks and does not read can make `strata serve` hold:
// requests sent in a loop whose answers are never read, and consumers that
// grant a large credit and read nothing. The server stops reading such a
// connection and feeding its deliveries once its own backlog is large, or
// once the server holds more than server.max_buffered_bytes for all its
// clients; clients that keep up are served meanwhile, and nothing asked for
// is lost once the slow client reads.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "server/serve_fixture.h"

namespace strata::test {
namespace {

using namespace proto;
using Clock = std::chrono::steady_clock;

class SlowReaderTest : public ServeTest {
 protected:
  nlohmann::json buffered() { return serve_status(server_)["server"]["buffered"]; }
  // Polls until the server holds nothing for its clients.
  bool drains(std::chrono::milliseconds within) {
    const auto end = Clock::now() + within;
    while (Clock::now() < end) {
      if (buffered()["bytes"].get<uint64_t>() == 0) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  // Sends Metadata requests for `names`, 100 at a time from correlation
  // `*corr` on, until a send stalls for 2 s (the part not taken left in
  // `*pending`) or `cap` bytes went out; the bytes sent.
  size_t send_until_stalled(StreamClient& c, const std::vector<std::string>& names, uint32_t* corr,
                            Bytes* pending, size_t cap = 64u << 20) {
    size_t sent = 0;
    while (sent < cap) {
      Bytes batch;
      for (int i = 0; i < 100; ++i) encode(MetadataRequest{(*corr)++, names}, &batch);
      const size_t n = c.send_within(batch, 2s);
      sent += n;
      if (n < batch.size()) {
        *pending = batch.substr(n);
        break;
      }
    }
    return sent;
  }
};

// A client sends Metadata requests (each answer about 3.5 times its request)
// and reads nothing. Before, the server read on and queued every answer.
// Now it stops reading the connection past 4 MiB queued: the client's
// sends stall, the server's memory stays flat, and once the client reads,
// every answer arrives in order.
TEST_F(SlowReaderTest, RequestsWhoseAnswersAreNotReadStopBeingRead) {
  restart_with_config("c.json", R"({"server": {}})", {"--http", "127.0.0.1:0"});
  const int pid = server_.process().pid();
  StreamClient c = open_client();
  create(c, "s");
  const uint64_t rss_before = rss_kb(pid);

  const std::vector<std::string> names(2000, "s");
  Bytes one;
  encode(MetadataRequest{1, names}, &one);
  const size_t req_size = one.size();
  const uint32_t first_corr = c.corr();
  uint32_t corr = first_corr;
  Bytes pending;
  const size_t sent = send_until_stalled(c, names, &corr, &pending);
  ASSERT_FALSE(pending.empty()) << "the server read " << sent
                                << " bytes of requests without a pause";
  // The kernel's buffers on both sides hold some megabytes; the server
  // itself about 4 MiB of answers.
  EXPECT_LT(sent, 32u << 20);
  const auto held = buffered();
  EXPECT_GT(held["bytes"].get<uint64_t>(), 1u << 20) << held.dump();
  EXPECT_LT(held["bytes"].get<uint64_t>(), 5u << 20) << held.dump();
  EXPECT_GE(held["backlog_pauses"].get<uint64_t>(), 1u) << held.dump();
  const uint64_t rss_after = rss_kb(pid);
  // (Under AddressSanitizer freed answers stay resident in its quarantine.)
  if (!kAddressSanitizer) {
    EXPECT_LT(rss_after, rss_before + 48 * 1024)
        << "RSS " << rss_before << " kB -> " << rss_after << " kB";
  }

  // The client reads now: the rest of its last request goes out while the
  // answers come, each one, in order.
  const size_t want = (sent + pending.size()) / req_size;
  std::thread rest([&] { EXPECT_TRUE(c.send_raw(pending).ok()); });
  size_t answered = 0;
  for (; answered < want; ++answered) {
    auto r = c.expect<MetadataResponse>(30s);
    if (!r.ok()) {
      ADD_FAILURE() << answered << " of " << want << ": " << r.error().message;
      break;
    }
    if (r->correlation_id != first_corr + answered || r->streams.size() != names.size() ||
        r->streams.front().code != ResponseCode::ok) {
      ADD_FAILURE() << "answer " << answered << ": correlation " << r->correlation_id << ", "
                    << r->streams.size() << " streams";
      break;
    }
  }
  rest.join();
  ASSERT_EQ(answered, want);
  EXPECT_TRUE(drains(10s)) << buffered().dump();
  // The connection goes on as before.
  create(c, "t");
  EXPECT_NE(server_.process().stdout_text().find("has not read"), std::string::npos);
}

// Eight consumers subscribe to a 40 MB stream of small chunks (delivered
// from memory) with a credit of 65535 and read nothing, on a server whose
// limit is 1 MiB. Before, each delivery read the stream ahead into memory
// up to its credit. Now each holds about a batch; another client publishes
// and consumes meanwhile; then every consumer reads the whole stream.
TEST_F(SlowReaderTest, SlowConsumersAreHeldToTheLimitAndOthersGoOn) {
  restart_with_config("c.json", R"({"server": {"max_buffered_bytes": 1048576}})",
                      {"--http", "127.0.0.1:0", "--log-level", "info"});
  const int pid = server_.process().pid();
  StreamClient pub = open_client();
  create(pub, "big");
  declare(pub, 1, "big");
  constexpr int kChunks = 1000;
  constexpr int kPerChunk = 100;
  const std::string pad(400, 'x');
  for (int i = 0; i < kChunks; ++i) {
    std::vector<std::string> b;
    for (int j = 0; j < kPerChunk; ++j) b.push_back(pad + std::to_string(i * kPerChunk + j));
    publish_confirmed(pub, 1, uint64_t(i) * kPerChunk, b);
  }
  const uint64_t rss_before = rss_kb(pid);

  std::vector<StreamClient> slow;
  for (int i = 0; i < 8; ++i) {
    slow.push_back(open_client());
    StreamClient& c = slow.back();
    ASSERT_TRUE(
        c.send(SubscribeRequest{c.corr(), 1, "big", OffsetSpec{OffsetType::first, 0}, 65535, {}})
            .ok());
    auto r = c.expect<SubscribeResponse>();
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->code, ResponseCode::ok);
  }
  std::this_thread::sleep_for(2s);
  // Each slow client now asks for more (a credit) while the server holds
  // more than its limit for them: the server does not read it, and counts
  // that pause. (Without a request, whether a pause is counted depends on
  // whether a delivery looked again after its frame was queued: a race.)
  for (auto& c : slow) ASSERT_TRUE(c.send(CreditRequest{1, 1}).ok());
  nlohmann::json held;
  for (const auto end = Clock::now() + 10s; Clock::now() < end;) {
    held = buffered();
    if (held["limit_pauses"].get<uint64_t>() + held["backlog_pauses"].get<uint64_t>() >= 1) break;
    std::this_thread::sleep_for(50ms);
  }
  // About a batch read and a frame queued per consumer (1 MiB each at
  // most), not the 30 MB each would otherwise have read ahead.
  EXPECT_LT(held["bytes"].get<uint64_t>(), 8u * (3u << 20)) << held.dump();
  EXPECT_GE(held["limit_pauses"].get<uint64_t>() + held["backlog_pauses"].get<uint64_t>(), 1u)
      << held.dump();
  const uint64_t rss_held = rss_kb(pid);
  if (!kAddressSanitizer) {
    EXPECT_LT(rss_held, rss_before + 64 * 1024)
        << "RSS " << rss_before << " kB -> " << rss_held << " kB";
  }

  // A client that keeps up is served while the others wait.
  StreamClient quick = open_client();
  create(quick, "other");
  declare(quick, 1, "other");
  publish_confirmed(quick, 1, 0, bodies(10, "m"));
  ASSERT_TRUE(quick
                  .send(SubscribeRequest{
                      quick.corr(), 1, "other", OffsetSpec{OffsetType::first, 0}, 10, {}})
                  .ok());
  ASSERT_EQ(quick.expect<SubscribeResponse>()->code, ResponseCode::ok);
  EXPECT_EQ(consume(quick, 1, 10), bodies(10, "m"));

  // Each slow consumer now reads the whole stream, chunk after chunk.
  for (auto& c : slow) {
    uint64_t records = 0;
    uint64_t next_chunk = 0;
    while (records < uint64_t(kChunks) * kPerChunk) {
      auto d = c.expect<DeliverFrame>(30s);
      ASSERT_TRUE(d.ok()) << d.error().message << " after " << records << " records";
      auto h = decode_osiris_header(d->chunk);
      ASSERT_TRUE(h.ok());
      ASSERT_EQ(h->chunk_id, next_chunk);
      next_chunk = h->chunk_id + h->num_records;
      records += h->num_records;
    }
  }
  EXPECT_TRUE(drains(10s)) << buffered().dump();
}

// A client with heartbeats off that stops reading. The heartbeat check
// never closes it, so before, it kept what the server held for it (here
// megabytes of answers) for as long as it stayed connected. Now a write
// that does not end within server.send_timeout_ms closes it; a connection
// with nothing to write is not touched by that clock, however long idle.
TEST_F(SlowReaderTest, AClientThatStopsReadingWithHeartbeatsOffIsClosed) {
  restart_with_config("c.json", R"({"server": {"heartbeat_s": 0, "send_timeout_ms": 1500}})",
                      {"--http", "127.0.0.1:0", "--log-level", "info"});
  StreamClient c = open_client();
  EXPECT_EQ(c.server_tune.heartbeat, 0u);
  create(c, "s");
  // Idle for longer than the timeout: nothing is being written, it stays.
  std::this_thread::sleep_for(2500ms);
  create(c, "t");

  const std::vector<std::string> names(2000, "s");
  uint32_t corr = c.corr();
  Bytes pending;
  const size_t sent = send_until_stalled(c, names, &corr, &pending);
  ASSERT_FALSE(pending.empty()) << "the server read " << sent
                                << " bytes of requests without a pause";
  const auto end = Clock::now() + 20s;
  nlohmann::json server;
  while (Clock::now() < end) {
    server = serve_status(server_)["server"];
    if (server["send_timeouts"] == 1 && server["buffered"]["bytes"] == 0) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(server["send_timeouts"], 1) << server.dump();
  EXPECT_EQ(server["buffered"]["bytes"], 0) << server.dump();
  EXPECT_EQ(server["connections"], 0) << server.dump();
  EXPECT_NE(server_.process().stdout_text().find("has read nothing for"), std::string::npos);
  EXPECT_TRUE(c.closed_by_server(10s));
}

}  // namespace
}  // namespace strata::test
