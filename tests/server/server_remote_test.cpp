// confirm = remote against a real `strata serve` child: a confirmed message
// is in a persisted manifest at the moment of its confirm. Checked the hard
// way — kill -9 of the server right after the confirms, its local logs
// deleted (the disk lost), a new server over the same bucket and catalog
// reads every confirmed message back from the remote tier — over the
// directory object store and over s3rver. With S3 refusing uploads (a
// fault proxy hanging every PUT) publishes wait, then fail at the deadline,
// and nothing is confirmed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "server/stream_client.h"
#include "support/fault_proxy.h"
#include "support/s3rver.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace proto;
using json = nlohmann::json;

constexpr const char* kBucket = "remote-bkt";

// Every offset wait that could hide behind the debounce is far beyond the
// test's timeouts: only the remote-confirm path (hurried cut, urgent
// persist) can confirm in time.
json remote_doc(const std::string& data_dir, json objstore, int64_t timeout_ms,
                const char* node_confirm = "remote") {
  return {{"data_dir", data_dir},
          {"objstore", std::move(objstore)},
          {"tiering",
           {{"confirm", node_confirm},
            {"remote_confirm_cut_ms", 20},
            {"remote_confirm_timeout_ms", timeout_ms},
            {"fragment_max_age_ms", 600'000},
            {"persist_interval_ms", 600'000},
            {"persist_threshold", 1000},
            {"request_timeout_ms", 1000}}}};
}

json s3_objstore(const std::string& endpoint) {
  return {{"backend", "s3"},
          {"s3",
           {{"endpoint", endpoint},
            {"bucket", kBucket},
            {"region", "us-east-1"},
            {"addressing", "path"},
            {"access_key_id", S3rver::kAccessKey},
            {"secret_access_key", S3rver::kSecretKey},
            {"connect_timeout_ms", 1000},
            {"request_timeout_ms", 1000},
            {"stall_timeout_ms", 1000}}}};
}

std::string write_config(const TempDir& dir, const std::string& name, const json& doc) {
  std::string path = dir.sub(name);
  std::ofstream(path) << doc.dump(2);
  return path;
}

void connect(ServeProcess& srv, StreamClient* out) {
  ASSERT_GT(srv.port(), 0) << srv.process().stderr_text();
  auto c = StreamClient::connect(srv.port());
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_TRUE(c->handshake().ok());
  *out = std::move(*c);
}

ResponseCode create(StreamClient& c, const std::string& name, Properties args = {}) {
  EXPECT_TRUE(c.send(CreateStreamRequest{c.corr(), name, std::move(args)}).ok());
  auto r = c.expect<CreateStreamResponse>();
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->code : ResponseCode::internal_error;
}

std::vector<std::string> bodies_from(uint64_t first, int n) {
  std::vector<std::string> b;
  for (int i = 0; i < n; ++i) b.push_back("id-" + std::to_string(first + uint64_t(i)));
  return b;
}

// Publishes with up to 4 frames in flight until `count` ids are confirmed,
// checking that confirms come in publishing order; then sends a few more
// frames and returns without waiting for them (the kill comes next).
std::set<uint64_t> publish_confirmed(StreamClient& c, size_t count) {
  std::set<uint64_t> confirmed;
  uint64_t next_id = 1, highest = 0;
  int in_flight = 0;
  Bytes storage;
  EXPECT_TRUE(c.send(DeclarePublisherRequest{c.corr(), 1, "pub", "r"}).ok());
  EXPECT_EQ(c.expect<DeclarePublisherResponse>()->code, ResponseCode::ok);
  while (confirmed.size() < count) {
    while (in_flight < 4) {
      EXPECT_TRUE(c.send(make_publish(1, next_id, bodies_from(next_id, 25), &storage)).ok());
      next_id += 25;
      in_flight += 1;
    }
    auto conf = c.expect<PublishConfirm>(20s);
    if (!conf.ok()) {
      ADD_FAILURE() << "no confirm: " << conf.error().to_string();
      break;
    }
    for (uint64_t id : conf->publishing_ids) {
      EXPECT_GT(id, highest) << "confirms out of order";
      highest = id;
      confirmed.insert(id);
    }
    // A frame's 25 ids come in one confirm (one drain); count frames by ids.
    in_flight -= int((conf->publishing_ids.size() + 24) / 25);
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(c.send(make_publish(1, next_id, bodies_from(next_id, 25), &storage)).ok());
    next_id += 25;
  }
  return confirmed;
}

// Reads stream r from its first offset until every id in `want` is seen
// (or a delivery does not come). A subscription made before the new node
// has loaded the stream's manifest is answered with a MetadataUpdate
// (stream_not_available), as a real client sees it: subscribe again.
std::set<uint64_t> read_back(StreamClient& c, const std::set<uint64_t>& want) {
  std::set<uint64_t> found;
  const uint8_t sub = 1;
  EXPECT_TRUE(c.send(SubscribeRequest{c.corr(), sub, "r", {OffsetType::first, 0}, 100, {}}).ok());
  int resubscribed = 0;
  while (!std::includes(found.begin(), found.end(), want.begin(), want.end())) {
    auto f = c.read(20s);
    if (!f.ok()) break;
    if (std::holds_alternative<MetadataUpdate>(*f) && resubscribed < 5000) {
      resubscribed += 1;
      EXPECT_TRUE(c.send(UnsubscribeRequest{c.corr(), sub}).ok());
      EXPECT_TRUE(
          c.send(SubscribeRequest{c.corr(), sub, "r", {OffsetType::first, 0}, 100, {}}).ok());
      continue;
    }
    if (auto* r = std::get_if<SubscribeResponse>(&*f)) {
      EXPECT_EQ(r->code, ResponseCode::ok);
      continue;
    }
    if (std::holds_alternative<UnsubscribeResponse>(*f)) continue;
    auto* d = std::get_if<DeliverFrame>(&*f);
    if (!d) continue;
    auto recs = chunk_records(*d);
    EXPECT_TRUE(recs.ok()) << recs.error().message;
    if (!recs.ok()) break;
    for (const auto& r : *recs) found.insert(std::stoull(r.substr(3)));
    EXPECT_TRUE(c.send(CreditRequest{d->subscription_id, 1}).ok());
  }
  return found;
}

// The scenario of both stores: confirmed under remote, kill -9, disk lost,
// every confirmed message read back from the bucket by a new server.
// `node_confirm`: the node's default; the stream asks for remote by its
// argument either way.
void confirmed_survives_disk_loss(const TempDir& dir, const json& objstore,
                                  const char* node_confirm = "remote") {
  std::string data = dir.sub("data");
  std::string cfg =
      write_config(dir, "serve.json", remote_doc(data, objstore, 20'000, node_confirm));
  std::set<uint64_t> confirmed;
  {
    ServeProcess srv = ServeProcess::start(data, {"--config", cfg}, dir.path());
    StreamClient c;
    ASSERT_NO_FATAL_FAILURE(connect(srv, &c));
    // The stream argument: checked, bad values refused (precondition failed).
    EXPECT_EQ(create(c, "bad", {{"x-strata-confirm", "sometimes"}}),
              ResponseCode::precondition_failed);
    EXPECT_EQ(create(c, "r", {{"x-strata-confirm", "remote"}}), ResponseCode::ok);
    confirmed = publish_confirmed(c, size_t(std::max(200, scaled(1000))));
    // At once: whatever was confirmed must already be remote.
    srv.process().kill(9);
    srv.process().wait();
  }
  ASSERT_FALSE(confirmed.empty());
  // The disk of the stream logs is lost; the catalog (and the bucket) stay.
  std::filesystem::remove_all(data + "/streams");
  ServeProcess srv = ServeProcess::start(data, {"--config", cfg}, dir.path());
  StreamClient c;
  ASSERT_NO_FATAL_FAILURE(connect(srv, &c));
  // A stream with no local log: the node serves it again at start, after
  // the remote tier (its catalog entry survived); a client's Create finds
  // it there, as RabbitMQ answers a Create of an existing stream.
  EXPECT_EQ(create(c, "r"), ResponseCode::stream_already_exists);
  ASSERT_TRUE(wait_served(c, "r"));
  std::set<uint64_t> found = read_back(c, confirmed);
  size_t missing = 0;
  for (uint64_t id : confirmed) missing += found.count(id) ? 0 : 1;
  EXPECT_EQ(missing, 0u) << "of " << confirmed.size() << " confirmed ids, " << missing
                         << " are not in the remote tier";
  EXPECT_EQ(srv.stop(), 0);
}

TEST(ServeRemoteConfirm, ConfirmedMessagesSurviveDiskLossOverTheDirectoryStore) {
  TempDir dir;
  json fs = {{"backend", "fs"}, {"fs", {{"root", dir.sub("bucket")}, {"create", true}}}};
  confirmed_survives_disk_loss(dir, fs);
}

// The stream's own setting on a node whose default is local.
TEST(ServeRemoteConfirm, TheStreamArgumentMakesOneStreamRemoteOnALocalNode) {
  TempDir dir;
  json fs = {{"backend", "fs"}, {"fs", {{"root", dir.sub("bucket")}, {"create", true}}}};
  confirmed_survives_disk_loss(dir, fs, "local");
}

TEST(ServeRemoteConfirm, ConfirmedMessagesSurviveDiskLossOverS3) {
  TempDir dir;
  std::string err;
  auto s3 = S3rver::start({dir.sub(""), {kBucket}}, &err);
  ASSERT_TRUE(s3) << err;
  confirmed_survives_disk_loss(dir, s3_objstore(s3->endpoint()));
}

TEST(ServeRemoteConfirm, WithUploadsFailingPublishesWaitThenFailAndNothingIsConfirmed) {
  TempDir dir;
  std::string err;
  auto s3 = S3rver::start({dir.sub(""), {kBucket}}, &err);
  ASSERT_TRUE(s3) << err;
  // Every PUT under the stream's keys hangs: no fragment, no root.
  json rules = json::array({{{"method", "PUT"},
                             {"path_prefix", std::string("/") + kBucket + "/strata/"},
                             {"action", "hang"}}});
  auto proxy = FaultProxy::start(dir.path(), s3->port(), rules, false, &err);
  ASSERT_TRUE(proxy) << err;
  std::string data = dir.sub("data");
  const int64_t timeout_ms = 1500;
  std::string cfg =
      write_config(dir, "serve.json", remote_doc(data, s3_objstore(proxy->endpoint()), timeout_ms));
  ServeProcess srv = ServeProcess::start(data, {"--config", cfg}, dir.path());
  StreamClient c;
  ASSERT_NO_FATAL_FAILURE(connect(srv, &c));
  ASSERT_EQ(create(c, "r"), ResponseCode::ok);
  ASSERT_TRUE(c.send(DeclarePublisherRequest{c.corr(), 1, "pub", "r"}).ok());
  ASSERT_EQ(c.expect<DeclarePublisherResponse>()->code, ResponseCode::ok);
  Bytes storage;
  std::set<uint64_t> sent;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t id = 1; id <= 100; id += 20) {
    ASSERT_TRUE(c.send(make_publish(1, id, bodies_from(id, 20), &storage)).ok());
    for (uint64_t i = id; i < id + 20; ++i) sent.insert(i);
  }
  std::set<uint64_t> failed;
  while (failed.size() < sent.size()) {
    auto f = c.read(20s);
    ASSERT_TRUE(f.ok()) << f.error().to_string() << "; failed so far " << failed.size();
    ASSERT_FALSE(std::holds_alternative<PublishConfirm>(*f)) << "confirmed although not persisted";
    if (auto* e = std::get_if<PublishError>(&*f)) {
      for (const auto& x : e->errors) {
        EXPECT_EQ(x.code, ResponseCode::stream_not_available);
        failed.insert(x.publishing_id);
      }
    }
  }
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(failed, sent);
  // They waited for the deadline, not less.
  EXPECT_GE(waited, std::chrono::milliseconds(timeout_ms));
  // And nothing trickles in as a confirm afterwards.
  auto late = c.read(500ms);
  if (late.ok()) {
    EXPECT_FALSE(std::holds_alternative<PublishConfirm>(*late));
  }
  srv.process().kill(9);
}

TEST(ServeRemoteConfirm, RemoteWithoutTieringIsRefused) {
  TempDir dir;
  std::string data = dir.sub("data");
  // The node's default: the configuration is refused, naming the setting.
  json doc = {{"data_dir", data}, {"tiering", {{"enabled", false}, {"confirm", "remote"}}}};
  std::string bad = write_config(dir, "bad.json", doc);
  ServeProcess refused = ServeProcess::start(data, {"--config", bad}, dir.path());
  EXPECT_EQ(refused.port(), 0);
  auto st = refused.process().wait(30s);
  ASSERT_TRUE(st.has_value());
  EXPECT_NE(*st, 0);
  EXPECT_NE(refused.process().stderr_text().find("tiering.confirm"), std::string::npos)
      << refused.process().stderr_text();
  // A stream's argument: its creation is refused (precondition failed).
  doc["tiering"] = {{"enabled", false}};
  std::string ok = write_config(dir, "ok.json", doc);
  ServeProcess srv = ServeProcess::start(data, {"--config", ok}, dir.path());
  StreamClient c;
  ASSERT_NO_FATAL_FAILURE(connect(srv, &c));
  EXPECT_EQ(create(c, "r", {{"x-strata-confirm", "remote"}}), ResponseCode::precondition_failed);
  EXPECT_EQ(create(c, "r", {{"x-strata-confirm", "local"}}), ResponseCode::ok);
  EXPECT_EQ(srv.stop(), 0);
}

}  // namespace
}  // namespace strata::test
