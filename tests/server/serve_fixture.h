// The fixture of the tests that drive `strata serve` as a child process
// over the stream protocol: a server on a temporary data directory and the
// steps most conversations take (open, create, declare, publish with
// confirms, consume with credit).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "server/stream_client.h"
#include "support/http_get.h"
#include "support/temp_dir.h"

namespace strata::test {

using namespace proto;

// GET `path` on the HTTP port a server started with `--http 127.0.0.1:0`
// printed ("" when it printed none).
inline std::string serve_http_get(ServeProcess& server, const std::string& path) {
  static const std::regex re("http on 127\\.0\\.0\\.1:([0-9]+)\n");
  std::smatch m;
  const std::string out = server.process().stdout_text();
  if (!std::regex_search(out, m, re)) {
    ADD_FAILURE() << "no http port in: " << out;
    return "";
  }
  return http_get(fmt::format("http://127.0.0.1:{}{}", m[1].str(), path), std::chrono::seconds(10));
}
// The base URL of that HTTP port ("" when it printed none).
inline std::string serve_http_url(ServeProcess& server) { return server.http_url(); }
// Its /status as JSON.
inline nlohmann::json serve_status(ServeProcess& server) {
  return nlohmann::json::parse(serve_http_get(server, "/status"), nullptr, false);
}

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = ServeProcess::start(dir_.sub("data"), {}, dir_.path());
    ASSERT_GT(server_.port(), 0) << server_.process().stderr_text();
  }
  // Stops the server and starts it again on the same data with a config
  // file holding `config` (JSON).
  void restart_with_config(const std::string& name, const std::string& config,
                           std::vector<std::string> extra = {}) {
    ASSERT_EQ(server_.stop(), 0);
    const std::string cfg = dir_.sub(name);
    std::ofstream(cfg) << config;
    extra.insert(extra.begin(), {"--config", cfg});
    server_ = ServeProcess::start(dir_.sub("data"), extra, dir_.path());
    ASSERT_GT(server_.port(), 0) << server_.process().stderr_text();
  }
  StreamClient open_client() {
    auto c = StreamClient::connect(server_.port());
    EXPECT_TRUE(c.ok()) << c.error().message;
    auto st = c->handshake();
    EXPECT_TRUE(st.ok()) << st.error().message;
    return std::move(c).value();
  }
  void create(StreamClient& c, const std::string& name, Properties args = {}) {
    uint32_t corr = c.corr();
    ASSERT_TRUE(c.send(CreateStreamRequest{corr, name, std::move(args)}).ok());
    auto r = c.expect<CreateStreamResponse>();
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->correlation_id, corr);
    ASSERT_EQ(r->code, ResponseCode::ok);
  }
  void declare(StreamClient& c, uint8_t id, const std::string& stream, const std::string& ref = "",
               ResponseCode want = ResponseCode::ok) {
    ASSERT_TRUE(c.send(DeclarePublisherRequest{c.corr(), id, ref, stream}).ok());
    auto r = c.expect<DeclarePublisherResponse>();
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->code, want);
  }
  // Publishes `bodies` with ids from first_id and waits for every confirm.
  void publish_confirmed(StreamClient& c, uint8_t pub, uint64_t first_id,
                         const std::vector<std::string>& bodies) {
    Bytes storage;
    ASSERT_TRUE(c.send(make_publish(pub, first_id, bodies, &storage)).ok());
    std::set<uint64_t> want;
    for (size_t i = 0; i < bodies.size(); ++i) want.insert(first_id + i);
    while (!want.empty()) {
      auto conf = c.expect<PublishConfirm>();
      ASSERT_TRUE(conf.ok()) << conf.error().message;
      EXPECT_EQ(conf->publisher_id, pub);
      for (uint64_t id : conf->publishing_ids) EXPECT_EQ(want.erase(id), 1u) << id;
    }
  }
  // Reads Deliver frames of `sub` until `n` records have arrived.
  std::vector<std::string> consume(StreamClient& c, uint8_t sub, size_t n,
                                   std::vector<uint64_t>* chunk_ids = nullptr) {
    std::vector<std::string> out;
    while (out.size() < n) {
      auto d = c.expect<DeliverFrame>();
      EXPECT_TRUE(d.ok()) << d.error().message << " after " << out.size() << " records";
      if (!d.ok()) break;
      EXPECT_EQ(d->subscription_id, sub);
      auto recs = chunk_records(*d);
      EXPECT_TRUE(recs.ok()) << recs.error().message;
      if (!recs.ok()) break;
      if (chunk_ids) {
        auto h = decode_osiris_header(d->chunk);
        chunk_ids->push_back(h->chunk_id);
      }
      out.insert(out.end(), recs->begin(), recs->end());
      EXPECT_TRUE(c.send(CreditRequest{sub, 1}).ok());
    }
    return out;
  }
  TempDir dir_;
  ServeProcess server_;
};

// "<prefix><from>", ..., n message bodies.
inline std::vector<std::string> bodies(int n, const std::string& prefix, int from = 0) {
  std::vector<std::string> v;
  for (int i = from; i < from + n; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

}  // namespace strata::test
