// Stream filtering as RabbitMQ 3.13 does it, against a real `strata serve`:
// Publish v2 filter values become each chunk's filter (log/chunk_filter.h);
// a subscription with filter.N / match-unfiltered is sent only the chunks
// that may hold what it asks for — from the local log and from the remote
// tier alike — each Deliver carrying the chunk's data right after the
// osiris header, as osiris sends it (the filter bytes stay on the server).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "proto/osiris_chunk.h"
#include "server/serve_fixture.h"

namespace strata::test {
namespace {

using json = nlohmann::json;

// One Publish v2 frame: `n` messages "<value>-<i>" with filter value
// `value` (nullopt: none), ids from `first_id`.
Status publish_v2(StreamClient& c, uint8_t pub, uint64_t first_id, int n,
                  const std::optional<std::string>& value) {
  std::vector<Bytes> entries(n);
  PublishRequest p;
  p.version = 2;
  p.publisher_id = pub;
  for (int i = 0; i < n; ++i) {
    append_simple_entry(&entries[i], value.value_or("none") + "-" + std::to_string(i));
    PublishedMessage m;
    m.publishing_id = first_id + uint64_t(i);
    if (value) m.filter_value = BytesView(*value);
    m.entry = entries[i];
    p.messages.push_back(m);
  }
  return c.send(p);
}

// Publishes `values` one Publish frame (one chunk) each, `per` messages
// with that value, and waits for every confirm.
void publish_values(StreamClient& c, const std::vector<std::optional<std::string>>& values,
                    int per) {
  uint64_t id = 0;
  for (const auto& v : values) {
    ASSERT_TRUE(publish_v2(c, 1, id, per, v).ok());
    std::set<uint64_t> want;
    for (int i = 0; i < per; ++i) want.insert(id + uint64_t(i));
    while (!want.empty()) {
      auto conf = c.expect<PublishConfirm>();
      ASSERT_TRUE(conf.ok()) << conf.error().message;
      for (uint64_t got : conf->publishing_ids) want.erase(got);
    }
    id += uint64_t(per);
  }
}

struct Consumed {
  std::map<std::string, int> per_value;  // messages received per value prefix
  int messages = 0;
  size_t chunks = 0;
  uint64_t bytes = 0;  // Deliver frame bytes
  std::set<uint8_t> bloom_sizes;
};

// Subscribes with `props` from the first offset and reads Deliver frames
// until a quiet 2 s after the last one.
Consumed consume_all(StreamClient& c, uint8_t sub, const std::string& stream, Properties props) {
  Consumed out;
  EXPECT_TRUE(c.send(SubscribeRequest{
                         c.corr(), sub, stream, {OffsetType::first, 0}, 1000, std::move(props)})
                  .ok());
  auto r = c.expect<SubscribeResponse>();
  EXPECT_TRUE(r.ok() && r->code == ResponseCode::ok);
  for (;;) {
    // Quiet for 2 s: the server has sent all it will (a loaded machine,
    // the sanitizer build, may pause for a while between chunks).
    auto frame = c.read_frame(2000ms);
    if (!frame.ok()) break;
    auto f = decode_server_frame(*frame);
    EXPECT_TRUE(f.ok()) << f.error().to_string();
    if (!f.ok()) break;
    auto* d = std::get_if<DeliverFrame>(&*f);
    if (!d) continue;
    out.chunks += 1;
    out.bytes += frame->size() + 4;
    auto h = decode_osiris_header(d->chunk);
    EXPECT_TRUE(h.ok());
    out.bloom_sizes.insert(h->bloom_size);
    auto recs = chunk_records(*d);
    EXPECT_TRUE(recs.ok()) << recs.error().message;
    if (!recs.ok()) break;
    for (const auto& rec : *recs) out.per_value[rec.substr(0, rec.rfind('-'))] += 1;
    out.messages += int(recs->size());
  }
  return out;
}

std::vector<std::optional<std::string>> hundred_values() {
  std::vector<std::optional<std::string>> v;
  for (int i = 0; i < 100; ++i) v.push_back("v" + std::to_string(i));
  return v;
}

class FilterTest : public ServeTest {};

// A consumer of 1 value out of 100 gets every message of its value and few
// other chunks (Bloom false positives, which the client drops); the same
// consumer unfiltered gets all 100 chunks without filter bytes.
TEST_F(FilterTest, AFilteredConsumerGetsItsValuesChunksOnly) {
  StreamClient c = open_client();
  create(c, "f", {{"stream-filter-size-bytes", "32"}});
  declare(c, 1, "f");
  ASSERT_NO_FATAL_FAILURE(publish_values(c, hundred_values(), 20));
  StreamClient a = open_client();
  Consumed all = consume_all(a, 1, "f", {});
  EXPECT_EQ(all.messages, 2000);
  EXPECT_EQ(all.bloom_sizes, (std::set<uint8_t>{0}));
  StreamClient b = open_client();
  Consumed one = consume_all(b, 1, "f", {{"filter.0", "v42"}});
  EXPECT_EQ(one.per_value["v42"], 20);
  EXPECT_LE(one.chunks, 5u) << "chunks the filter should have ruled out were sent";
  EXPECT_LE(one.messages, 100);
  // As any chunk: the filter stays on the server (osiris skips its bytes).
  EXPECT_EQ(one.bloom_sizes, (std::set<uint8_t>{0}));
  EXPECT_LE(one.bytes * 20, all.bytes) << "filtered " << one.bytes << " of " << all.bytes;
  // Two values: both complete.
  StreamClient d = open_client();
  Consumed two = consume_all(d, 1, "f", {{"filter.1", "v7"}, {"filter.2", "v99"}});
  EXPECT_EQ(two.per_value["v7"], 20);
  EXPECT_EQ(two.per_value["v99"], 20);
}

// Messages without a value: sent to a filtered consumer only with
// match-unfiltered = true, as RabbitMQ does; chunks holding both kinds
// match either way by their value.
TEST_F(FilterTest, MatchUnfilteredTakesTheMessagesWithoutAValue) {
  StreamClient c = open_client();
  create(c, "u");
  declare(c, 1, "u");
  ASSERT_NO_FATAL_FAILURE(
      publish_values(c, {std::string("a"), std::nullopt, std::string("b"), std::nullopt}, 5));
  StreamClient x = open_client();
  Consumed strict = consume_all(x, 1, "u", {{"filter.0", "a"}});
  EXPECT_EQ(strict.per_value["a"], 5);
  EXPECT_EQ(strict.per_value["none"], 0);
  StreamClient y = open_client();
  Consumed lenient = consume_all(y, 1, "u", {{"filter.0", "a"}, {"match-unfiltered", "true"}});
  EXPECT_EQ(lenient.per_value["a"], 5);
  EXPECT_EQ(lenient.per_value["none"], 10);
  // match-unfiltered alone is no filter (RabbitMQ needs a filter.N).
  StreamClient z = open_client();
  Consumed everything = consume_all(z, 1, "u", {{"match-unfiltered", "true"}});
  EXPECT_EQ(everything.messages, 20);
}

// The filter is stored with the chunk: it survives a restart.
TEST_F(FilterTest, FiltersSurviveARestart) {
  {
    StreamClient c = open_client();
    create(c, "r");
    declare(c, 1, "r");
    ASSERT_NO_FATAL_FAILURE(publish_values(c, {std::string("x"), std::string("y")}, 3));
  }
  restart_with_config("plain.json", "{}");
  StreamClient c = open_client();
  Consumed got = consume_all(c, 1, "r", {{"filter.0", "y"}});
  EXPECT_EQ(got.per_value["y"], 3);
  EXPECT_EQ(got.per_value["x"], 0);
  EXPECT_EQ(got.chunks, 1u);
}

// From the remote tier: confirmed under `confirm = remote` (so in the
// bucket), the local log lost, a new server reads the stream from the
// bucket and still sends a filtered consumer only its chunks — the filter
// travelled with the chunk.
TEST(FilterRemote, TheRemoteTierIsFilteredToo) {
  TempDir dir;
  const std::string data = dir.sub("data");
  json doc = {
      {"data_dir", data},
      {"objstore", {{"backend", "fs"}, {"fs", {{"root", dir.sub("bucket")}, {"create", true}}}}},
      {"tiering",
       {{"confirm", "remote"},
        {"remote_confirm_cut_ms", 20},
        {"remote_confirm_timeout_ms", 20'000},
        {"request_timeout_ms", 1000}}}};
  const std::string cfg = dir.sub("serve.json");
  std::ofstream(cfg) << doc.dump(2);
  std::vector<std::optional<std::string>> values;
  for (int i = 0; i < 20; ++i) values.push_back("k" + std::to_string(i));
  {
    ServeProcess srv = ServeProcess::start(data, {"--config", cfg}, dir.path());
    ASSERT_GT(srv.port(), 0) << srv.process().stderr_text();
    auto c = StreamClient::connect(srv.port());
    ASSERT_TRUE(c.ok() && c->handshake().ok());
    ASSERT_TRUE(c->send(CreateStreamRequest{c->corr(), "t", {}}).ok());
    ASSERT_EQ(c->expect<CreateStreamResponse>()->code, ResponseCode::ok);
    ASSERT_TRUE(c->send(DeclarePublisherRequest{c->corr(), 1, "", "t"}).ok());
    ASSERT_EQ(c->expect<DeclarePublisherResponse>()->code, ResponseCode::ok);
    ASSERT_NO_FATAL_FAILURE(publish_values(*c, values, 4));
    srv.process().kill(9);
    srv.process().wait();
  }
  std::filesystem::remove_all(data + "/streams");
  ServeProcess srv = ServeProcess::start(data, {"--config", cfg}, dir.path());
  ASSERT_GT(srv.port(), 0) << srv.process().stderr_text();
  auto c = StreamClient::connect(srv.port());
  ASSERT_TRUE(c.ok() && c->handshake().ok());
  // Served again at start from the bucket (its catalog entry survived).
  ASSERT_TRUE(c->send(CreateStreamRequest{c->corr(), "t", {}}).ok());
  ASSERT_EQ(c->expect<CreateStreamResponse>()->code, ResponseCode::stream_already_exists);
  ASSERT_TRUE(wait_served(*c, "t"));
  Consumed got = consume_all(*c, 1, "t", {{"filter.0", "k13"}});
  EXPECT_EQ(got.per_value["k13"], 4);
  EXPECT_LE(got.chunks, 3u);
  // At most two other chunks' messages (false positives).
  EXPECT_LE(got.messages, 12);
  auto d = StreamClient::connect(srv.port());
  ASSERT_TRUE(d.ok() && d->handshake().ok());
  Consumed all = consume_all(*d, 1, "t", {});
  EXPECT_EQ(all.messages, 80);
  EXPECT_EQ(srv.stop(), 0);
}

}  // namespace
}  // namespace strata::test
