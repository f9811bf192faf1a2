// ClientHandshake (proto/client_handshake.h): the frames a client sends to
// open a connection and how it checks the answers, driven with the
// answers a server gives.
#include "proto/client_handshake.h"

#include <gtest/gtest.h>

namespace strata::proto {
namespace {

// The client frames in `bytes`, decoded in order.
std::vector<ClientFrame> frames(const Bytes& bytes) {
  std::vector<ClientFrame> out;
  size_t at = 0;
  while (at < bytes.size()) {
    BytesView rest(bytes.data() + at, bytes.size() - at);
    FrameSplit sp = split_frame(rest, 0);
    EXPECT_EQ(sp.kind, FrameSplit::frame);
    if (sp.kind != FrameSplit::frame) break;
    auto f = decode_client_frame(sp.body(rest));
    EXPECT_TRUE(f.ok()) << f.error().message;
    if (f.ok()) out.push_back(*f);
    at += sp.total();
  }
  return out;
}

// By value: callers pass the temporary that frames() returns.
template <class T>
T only(const std::vector<ClientFrame>& fs) {
  EXPECT_EQ(fs.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<T>(fs.at(0)));
  return std::get<T>(fs.at(0));
}

PeerPropertiesResponse server_properties(std::string version) {
  return PeerPropertiesResponse{1, ResponseCode::ok, {{"product", "x"}, {"version", version}}};
}

ClientHandshakeOptions options() {
  ClientHandshakeOptions o;
  o.properties = {{"product", "test"}};
  o.user = "u";
  o.password = "p";
  o.frame_max = 4096;
  o.versions = {{kDeliver, 1, 2}};
  return o;
}

TEST(ClientHandshake, StepByStepEachFrameAfterTheAnswerBeforeIt) {
  ClientHandshake hs(options());
  EXPECT_EQ(only<PeerPropertiesRequest>(frames(hs.start())).correlation_id, 1u);
  auto next = hs.on(server_properties("3.13.0"));
  ASSERT_TRUE(next.ok());
  only<SaslHandshakeRequest>(frames(*next));
  next = hs.on(SaslHandshakeResponse{2, ResponseCode::ok, {"AMQPLAIN", "PLAIN"}});
  ASSERT_TRUE(next.ok());
  const auto auth = only<SaslAuthenticateRequest>(frames(*next));
  EXPECT_EQ(auth.mechanism, "PLAIN");
  EXPECT_EQ(auth.data, std::string("\0u\0p", 4));
  next = hs.on(SaslAuthenticateResponse{3, ResponseCode::ok, std::nullopt});
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->empty()) << "the server speaks next (Tune)";
  // The smaller frame limit; the server's heartbeat (none asked for).
  next = hs.on(TuneFrame{1u << 20, 60});
  ASSERT_TRUE(next.ok());
  auto fs = frames(*next);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(std::get<TuneFrame>(fs[0]).frame_max, 4096u);
  EXPECT_EQ(std::get<TuneFrame>(fs[0]).heartbeat, 60u);
  EXPECT_EQ(std::get<OpenRequest>(fs[1]).virtual_host, "/");
  next = hs.on(OpenResponse{4, ResponseCode::ok, {{"advertised_port", "5552"}}});
  ASSERT_TRUE(next.ok());
  only<ExchangeCommandVersionsRequest>(frames(*next));
  EXPECT_FALSE(hs.done());
  next = hs.on(ExchangeCommandVersionsResponse{5, ResponseCode::ok, {}});
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(hs.done());
  EXPECT_EQ(hs.next_correlation(), 6u);
  EXPECT_EQ(hs.tuned().frame_max, 4096u);
  EXPECT_EQ(hs.open_response().properties.size(), 1u);
}

// EXTERNAL (cluster.peer_auth "certificate"): the client certificate names
// the user, so the answer carries no credentials, and a server that does
// not offer EXTERNAL (it verified no certificate) is refused by name.
TEST(ClientHandshake, ExternalSendsNoCredentials) {
  ClientHandshakeOptions o = options();
  o.mechanism = "EXTERNAL";
  {
    ClientHandshake hs(o);
    (void)hs.start();
    ASSERT_TRUE(hs.on(server_properties("3.13.0")).ok());
    auto next = hs.on(SaslHandshakeResponse{2, ResponseCode::ok, {"PLAIN", "EXTERNAL"}});
    ASSERT_TRUE(next.ok());
    const auto auth = only<SaslAuthenticateRequest>(frames(*next));
    EXPECT_EQ(auth.mechanism, "EXTERNAL");
    EXPECT_EQ(auth.data, "");
  }
  ClientHandshake hs(o);
  (void)hs.start();
  ASSERT_TRUE(hs.on(server_properties("3.13.0")).ok());
  auto r = hs.on(SaslHandshakeResponse{2, ResponseCode::ok, {"PLAIN", "AMQPLAIN"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("does not offer SASL EXTERNAL (it offers PLAIN, AMQPLAIN)"),
            std::string::npos)
      << r.error().message;
}

// RabbitMQ 3.10 closes a connection that sends ExchangeCommandVersions.
TEST(ClientHandshake, NoVersionsWithAServerOlderThan311) {
  ClientHandshake hs(options());
  (void)hs.start();
  ASSERT_TRUE(hs.on(server_properties("3.10.8")).ok());
  ASSERT_TRUE(hs.on(SaslHandshakeResponse{2, ResponseCode::ok, {"PLAIN"}}).ok());
  ASSERT_TRUE(hs.on(SaslAuthenticateResponse{3, ResponseCode::ok, std::nullopt}).ok());
  ASSERT_TRUE(hs.on(TuneFrame{0, 0}).ok());
  EXPECT_EQ(hs.tuned().frame_max, 4096u) << "no server limit: the client's";
  auto next = hs.on(OpenResponse{4, ResponseCode::ok, {}});
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->empty());
  EXPECT_TRUE(hs.done());
}

TEST(ClientHandshake, PipelinedSendsEverythingAtOnceAndStillChecksEachAnswer) {
  ClientHandshakeOptions o = options();
  o.pipelined = true;
  o.frame_max = 0;
  o.heartbeat = 0;
  ClientHandshake hs(o);
  auto fs = frames(hs.start());
  ASSERT_EQ(fs.size(), 6u);
  EXPECT_TRUE(std::holds_alternative<PeerPropertiesRequest>(fs[0]));
  EXPECT_TRUE(std::holds_alternative<SaslHandshakeRequest>(fs[1]));
  EXPECT_TRUE(std::holds_alternative<SaslAuthenticateRequest>(fs[2]));
  EXPECT_EQ(std::get<TuneFrame>(fs[3]), (TuneFrame{0, 0}));
  EXPECT_TRUE(std::holds_alternative<OpenRequest>(fs[4]));
  EXPECT_TRUE(std::holds_alternative<ExchangeCommandVersionsRequest>(fs[5]));
  EXPECT_EQ(hs.next_correlation(), 6u);
  ASSERT_TRUE(hs.on(server_properties("3.13.0")).ok());
  ASSERT_TRUE(hs.on(SaslHandshakeResponse{2, ResponseCode::ok, {"PLAIN"}}).ok());
  auto refused = hs.on(SaslAuthenticateResponse{3, ResponseCode::authentication_failure, {}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), Errc::invalid_argument);
  EXPECT_NE(refused.error().message.find("authentication as u"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(hs.done());
}

TEST(ClientHandshakeRefusal, NoPlainAnOutOfOrderFrameOrAClose) {
  {
    ClientHandshake hs(options());
    (void)hs.start();
    ASSERT_TRUE(hs.on(server_properties("3.13.0")).ok());
    auto r = hs.on(SaslHandshakeResponse{2, ResponseCode::ok, {"EXTERNAL"}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("PLAIN"), std::string::npos);
  }
  {
    ClientHandshake hs(options());
    (void)hs.start();
    auto r = hs.on(TuneFrame{0, 0});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), Errc::corrupt);
  }
  {
    ClientHandshake hs(options());
    (void)hs.start();
    EXPECT_TRUE(hs.on(HeartbeatFrame{}).ok()) << "a heartbeat may come at any time";
    auto r = hs.on(CloseRequest{1, ResponseCode::frame_too_large, "too big"});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), Errc::closed);
    EXPECT_NE(r.error().message.find("too big"), std::string::npos);
  }
}

TEST(ClientHandshake, VersionsParseLikeRabbitMQsReleases) {
  EXPECT_EQ(parse_version("3.13.0"), (std::array<int, 3>{3, 13, 0}));
  EXPECT_EQ(parse_version("3.10.8"), (std::array<int, 3>{3, 10, 8}));
  EXPECT_EQ(parse_version("4.0.0-rc.1"), (std::array<int, 3>{4, 0, 0}));
  EXPECT_EQ(parse_version("3.11"), (std::array<int, 3>{3, 11, 0}));
  EXPECT_EQ(parse_version(""), (std::array<int, 3>{0, 0, 0}));
}

}  // namespace
}  // namespace strata::proto
