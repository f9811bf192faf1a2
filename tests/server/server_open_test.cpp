// No lock is held across I/O on a node (node/node.h): while one stream's
// open waits on the object store — a stream created again after its local
// log was lost reads its persisted root, which a fault proxy holds for 5 s —
// every other stream is served at once: a publish to another stream is
// confirmed and Metadata is answered within 100 ms (1 s in the sanitizer
// stage). Before the node's table was split from its opens, both waited
// for the held GET.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/stream_client.h"
#include "support/fault_proxy.h"
#include "support/s3rver.h"
#include "support/temp_dir.h"
#include "tier/object_keys.h"

namespace strata::test {
namespace {

using namespace proto;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kBucket = "open-bkt";
constexpr auto kHold = std::chrono::milliseconds(5000);

json serve_doc(const std::string& data_dir, const std::string& endpoint) {
  return {{"data_dir", data_dir},
          {"objstore",
           {{"backend", "s3"},
            {"s3",
             {{"endpoint", endpoint},
              {"bucket", kBucket},
              {"region", "us-east-1"},
              {"addressing", "path"},
              {"access_key_id", S3rver::kAccessKey},
              {"secret_access_key", S3rver::kSecretKey},
              {"request_timeout_ms", 30'000},
              {"stall_timeout_ms", 30'000}}}}},
          {"tiering", {{"remote_confirm_cut_ms", 20}, {"request_timeout_ms", 30'000}}}};
}

std::string write_config(const TempDir& dir, const std::string& name, const json& doc) {
  std::string path = dir.sub(name);
  std::ofstream(path) << doc.dump(2);
  return path;
}

StreamClient connect(ServeProcess& srv) {
  EXPECT_GT(srv.port(), 0) << srv.process().stderr_text();
  auto c = StreamClient::connect(srv.port());
  EXPECT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_TRUE(c->handshake().ok());
  return std::move(c).value();
}

// Publishes `n` messages to `stream` as publisher 1 and waits for their
// confirms.
void publish_confirmed(StreamClient& c, const std::string& stream, uint64_t first_id, int n) {
  Bytes storage;
  std::vector<std::string> bodies;
  for (int i = 0; i < n; ++i) bodies.push_back("m" + std::to_string(first_id + uint64_t(i)));
  ASSERT_TRUE(c.send(make_publish(1, first_id, bodies, &storage)).ok());
  size_t confirmed = 0;
  while (confirmed < bodies.size()) {
    auto conf = c.expect<PublishConfirm>(30s);
    ASSERT_TRUE(conf.ok()) << conf.error().to_string() << " on " << stream;
    confirmed += conf->publishing_ids.size();
  }
}

TEST(ServeNoLockAcrossIo, AStreamOpenWaitingOnTheBucketStallsNoOtherStream) {
  TempDir dir;
  std::string err;
  auto s3 = S3rver::start({dir.sub(""), {kBucket}}, &err);
  ASSERT_TRUE(s3) << err;
  const std::string data = dir.sub("data");

  // Two streams; "held" persisted remotely (confirm = remote: confirmed once
  // a persisted manifest covers it).
  {
    std::string cfg = write_config(dir, "direct.json", serve_doc(data, s3->endpoint()));
    ServeProcess srv = ServeProcess::start(data, {"--config", cfg}, dir.path());
    StreamClient c = connect(srv);
    for (const char* name : {"held", "free"}) {
      ASSERT_TRUE(
          c.send(CreateStreamRequest{c.corr(), name, {{"x-strata-confirm", "remote"}}}).ok());
      ASSERT_EQ(c.expect<CreateStreamResponse>()->code, ResponseCode::ok);
    }
    ASSERT_TRUE(c.send(DeclarePublisherRequest{c.corr(), 1, "", "held"}).ok());
    ASSERT_EQ(c.expect<DeclarePublisherResponse>()->code, ResponseCode::ok);
    ASSERT_NO_FATAL_FAILURE(publish_confirmed(c, "held", 1, 50));
    ASSERT_EQ(srv.stop(), 0);
  }
  // Its local log is lost: the node recovers it from the bucket at start,
  // in the background — its open reads the persisted root to start after
  // the remote tier.
  std::filesystem::remove_all(data + "/streams/held");

  auto keys = tier::ObjectKeys::make("strata", "held");
  ASSERT_TRUE(keys.ok());
  const std::string root_prefix =
      std::string("/") + kBucket + "/" + keys->stream_prefix() + "meta/root";
  json rules = json::array({{{"method", "GET"},
                             {"path_prefix", root_prefix},
                             {"action", "delay"},
                             {"ms", kHold.count()}}});
  auto proxy = FaultProxy::start(dir.path(), s3->port(), rules, /*record=*/true, &err);
  ASSERT_TRUE(proxy) << err;
  std::string cfg = write_config(dir, "proxied.json", serve_doc(data, proxy->endpoint()));
  const auto started = Clock::now();
  ServeProcess srv = ServeProcess::start(data, {"--config", cfg}, dir.path());
  StreamClient opener = connect(srv);
  StreamClient other = connect(srv);
  EXPECT_LT(Clock::now() - started, kHold / 2) << "the server's start waited for the open";

  // Wait until the open's GET of the root is held at the proxy.
  auto held_get_seen = [&] {
    for (const auto& r : proxy->recorded()) {
      if (r.value("method", "") == "GET" && r.value("target", "").rfind(root_prefix, 0) == 0) {
        return true;
      }
    }
    return false;
  };
  while (!held_get_seen()) {
    ASSERT_LT(Clock::now() - started, 10s) << "the open never asked for the root";
    std::this_thread::sleep_for(10ms);
  }
  // Waiting for the held open would take most of kHold; a loaded machine
  // (the compiler beside the tests) can take a few hundred ms for anything.
  const auto bound = kHold / 5;

  // A publisher declared on the other stream now, and a publish confirmed.
  auto t0 = Clock::now();
  ASSERT_TRUE(other.send(DeclarePublisherRequest{other.corr(), 1, "", "free"}).ok());
  ASSERT_EQ(other.expect<DeclarePublisherResponse>(10s)->code, ResponseCode::ok);
  ASSERT_NO_FATAL_FAILURE(publish_confirmed(other, "free", 1, 10));
  auto publish_took = Clock::now() - t0;
  EXPECT_LT(publish_took, bound) << "a publish waited for another stream's open";

  // Metadata of both streams: answered at once, the held one as being opened.
  t0 = Clock::now();
  ASSERT_TRUE(other.send(MetadataRequest{other.corr(), {"free", "held"}}).ok());
  auto md = other.expect<MetadataResponse>(10s);
  auto metadata_took = Clock::now() - t0;
  ASSERT_TRUE(md.ok()) << md.error().to_string();
  ASSERT_EQ(md->streams.size(), 2u);
  EXPECT_EQ(md->streams[0].code, ResponseCode::ok);
  EXPECT_EQ(md->streams[1].code, ResponseCode::stream_not_available);
  EXPECT_LT(metadata_took, bound) << "Metadata waited for another stream's open";

  // A Create finds it there (being opened), as RabbitMQ answers a Create of
  // an existing stream.
  ASSERT_TRUE(opener.send(CreateStreamRequest{opener.corr(), "held", {}}).ok());
  EXPECT_EQ(opener.expect<CreateStreamResponse>(10s)->code, ResponseCode::stream_already_exists);
  // The open itself took the hold, and then succeeded: served.
  bool served = false;
  while (!served && Clock::now() - started < kHold + 20s) {
    ASSERT_TRUE(opener.send(MetadataRequest{opener.corr(), {"held"}}).ok());
    auto m = opener.expect<MetadataResponse>(10s);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    served = m->streams.size() == 1 && m->streams[0].code == ResponseCode::ok;
    if (!served) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(served) << "the held stream was never served";
  EXPECT_GE(Clock::now() - started, kHold - 500ms) << "the root GET was not held";
  EXPECT_EQ(srv.stop(), 0);
}

}  // namespace
}  // namespace strata::test
