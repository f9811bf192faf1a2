// What a client that has not finished its handshake can make `strata serve`
// hold, as a hostile one would try it: frames announced larger than the
// ceiling before Open, half frames left hanging, silent sockets, handshakes
// stalled between steps, and password guessing in a loop.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "server/serve_fixture.h"

namespace strata::test {
namespace {

using namespace proto;
using Clock = std::chrono::steady_clock;

// A frame head announcing `size` bytes after the size field.
Bytes head_announcing(uint32_t size, uint16_t key) {
  Bytes f;
  ByteWriter w(&f);
  w.be32(size);
  w.be16(key);
  w.be16(1);
  return f;
}

// SASL PLAIN's response bytes.
std::string plain(const std::string& user, const std::string& password) {
  return std::string("\0", 1) + user + std::string("\0", 1) + password;
}

// Sends PeerProperties and SaslHandshake, then PLAIN for user/password;
// the SaslAuthenticate answer's code, and how long it took to come.
struct LoginAnswer {
  ResponseCode code = ResponseCode::ok;
  std::chrono::milliseconds took{0};
};
Result<LoginAnswer> login(StreamClient& c, const std::string& user, const std::string& password) {
  STRATA_TRY(c.send(PeerPropertiesRequest{c.corr(), {}}));
  if (auto pp = c.expect<PeerPropertiesResponse>(); !pp.ok()) return std::move(pp).error();
  STRATA_TRY(c.send(SaslHandshakeRequest{c.corr()}));
  if (auto sh = c.expect<SaslHandshakeResponse>(); !sh.ok()) return std::move(sh).error();
  const auto t0 = Clock::now();
  STRATA_TRY(c.send(SaslAuthenticateRequest{c.corr(), "PLAIN", plain(user, password)}));
  auto r = c.expect<SaslAuthenticateResponse>(30s);
  if (!r.ok()) return std::move(r).error();
  return LoginAnswer{r->code,
                     std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0)};
}

class StrangerLimitsTest : public ServeTest {
 protected:
  std::string server_log() {
    return server_.process().stdout_text() + server_.process().stderr_text();
  }
  void SetUp() override {
    ServeTest::SetUp();
    // 500 sockets here and 500 in the server: a CI machine's soft limit
    // may be 1024.
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
      r.rlim_cur = std::min<rlim_t>(r.rlim_max, 8192);
      ::setrlimit(RLIMIT_NOFILE, &r);
    }
  }
  // Handshake steps time out after `timeout_ms`, refused logins are
  // answered after `delay_ms`.
  void restart_with_limits(uint32_t timeout_ms, uint32_t delay_ms) {
    restart_with_config("limits.json",
                        fmt::format(R"({{"server": {{"handshake_timeout_ms": {},
                                                     "auth_failure_delay_ms": {}}}}})",
                                    timeout_ms, delay_ms),
                        {"--http", "127.0.0.1:0", "--log-level", "info"});
  }
};

// 500 strangers each announcing a 1 MB frame: each is refused at once with
// 14 (the ceiling before Open is 8 192 bytes) and nothing is reserved.
TEST_F(StrangerLimitsTest, AnnouncedLargeFramesAreRefusedBeforeAnyMemoryIsTaken) {
  const int pid = server_.process().pid();
  { StreamClient warm = open_client(); }
  const uint64_t before = rss_kb(pid);
  std::vector<StreamClient> strangers;
  for (int i = 0; i < 500; ++i) {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok()) << i << ": " << c.error().message;
    ASSERT_TRUE(c->send_raw(head_announcing(1'000'000, kPeerProperties)).ok());
    strangers.push_back(std::move(c).value());
  }
  for (auto& c : strangers) {
    auto close = c.expect<CloseRequest>(10s);
    ASSERT_TRUE(close.ok()) << close.error().message;
    EXPECT_EQ(close->code, ResponseCode::frame_too_large);
    EXPECT_TRUE(c.closed_by_server(10s));
  }
  const uint64_t after = rss_kb(pid);
  EXPECT_LT(after, before + 16 * 1024) << "RSS " << before << " kB -> " << after << " kB";
  // The server still serves.
  StreamClient ok = open_client();
  create(ok, "s");
}

// 500 strangers each holding the largest half frame allowed before Open
// (8 000 of 8 192 bytes announced, 4 000 sent): the server holds little for
// them, and closes every one within the handshake timeout.
TEST_F(StrangerLimitsTest, HalfFramesAreHeldCheaplyAndClosedWithinTheTimeout) {
  restart_with_limits(3000, 0);
  const int pid = server_.process().pid();
  { StreamClient warm = open_client(); }
  const uint64_t before = rss_kb(pid);
  std::vector<StreamClient> strangers;
  const auto t0 = Clock::now();
  Bytes half = head_announcing(8000, kPeerProperties);
  half.append(4000 - 4, 'x');
  for (int i = 0; i < 500; ++i) {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok()) << i << ": " << c.error().message;
    ASSERT_TRUE(c->send_raw(half).ok());
    strangers.push_back(std::move(c).value());
  }
  // Every byte sent has been read by now (the server reads as they come).
  std::this_thread::sleep_for(500ms);
  const uint64_t held = rss_kb(pid);
  EXPECT_LT(held, before + 16 * 1024) << "RSS " << before << " kB -> " << held << " kB";
  for (auto& c : strangers) EXPECT_TRUE(c.closed_by_server(10s));
  const auto took = Clock::now() - t0;
  // Closed by the step deadline: not before it, and not long after.
  EXPECT_GE(took, 2500ms);
  EXPECT_LT(took, 9000ms);
  auto st = serve_status(server_);
  EXPECT_GE(st["server"]["handshake_timeouts"].get<uint64_t>(), 500u) << st.dump();
  EXPECT_NE(server_log().find("handshake step timed out"), std::string::npos);
  StreamClient ok = open_client();
  create(ok, "s");
}

// Each step has its own deadline: a silent socket, and a client that stops
// after PeerProperties, are closed; an open connection is not bound by it.
TEST_F(StrangerLimitsTest, EachHandshakeStepHasADeadlineAndAnOpenConnectionNone) {
  restart_with_limits(1000, 0);
  auto silent = StreamClient::connect(server_.port());
  ASSERT_TRUE(silent.ok());
  auto stalled = StreamClient::connect(server_.port());
  ASSERT_TRUE(stalled.ok());
  ASSERT_TRUE(stalled->send(PeerPropertiesRequest{stalled->corr(), {}}).ok());
  ASSERT_TRUE(stalled->expect<PeerPropertiesResponse>().ok());
  StreamClient open = open_client();
  const auto t0 = Clock::now();
  EXPECT_TRUE(silent->closed_by_server(10s));
  EXPECT_TRUE(stalled->closed_by_server(10s));
  EXPECT_GE(Clock::now() - t0, 500ms);
  std::this_thread::sleep_for(1500ms);
  create(open, "still-open");
}

// After Open: a frame trickled byte by byte (heartbeats cannot see it) is
// closed once it has been incomplete for server.partial_frame_timeout_ms;
// a connection sending whole frames slowly is not.
TEST_F(StrangerLimitsTest, AnOpenConnectionTricklingOneFrameIsClosed) {
  restart_with_config("partial.json", R"({"server": {"partial_frame_timeout_ms": 600}})",
                      {"--http", "127.0.0.1:0", "--log-level", "info"});
  StreamClient trickler = open_client();
  StreamClient steady = open_client();
  create(steady, "trickle");
  ASSERT_TRUE(trickler.send_raw(head_announcing(200, kPublish)).ok());
  const auto t0 = Clock::now();
  bool cut = false;
  for (int i = 0; i < 60 && !cut; ++i) {
    // One more byte of the frame every 100 ms, and a whole Metadata on the
    // steady connection, answered each time.
    cut = !trickler.send_raw(Bytes(1, 'x')).ok();
    ASSERT_TRUE(steady.send(MetadataRequest{steady.corr(), {"trickle"}}).ok());
    ASSERT_TRUE(steady.expect<MetadataResponse>().ok()) << "the steady connection was cut";
    std::this_thread::sleep_for(100ms);
    if (!cut) cut = trickler.closed_by_server(1ms);
  }
  EXPECT_TRUE(cut || trickler.closed_by_server(5s)) << "a trickled frame kept its connection";
  EXPECT_GE(Clock::now() - t0, 500ms);
  EXPECT_LT(Clock::now() - t0, 5s);
  auto st = serve_status(server_);
  EXPECT_EQ(st["server"]["partial_frame_timeouts"].get<uint64_t>(), 1u) << st.dump();
  EXPECT_NE(server_log().find("still incomplete"), std::string::npos) << server_log();
}

// A slow but steady handshake passes: each step comes within the deadline
// though the whole takes longer than one.
TEST_F(StrangerLimitsTest, ASlowHandshakeWithinEachStepsDeadlinePasses) {
  restart_with_limits(1000, 0);
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->send(PeerPropertiesRequest{c->corr(), {}}).ok());
  ASSERT_TRUE(c->expect<PeerPropertiesResponse>().ok());
  std::this_thread::sleep_for(600ms);
  ASSERT_TRUE(c->send(SaslHandshakeRequest{c->corr()}).ok());
  ASSERT_TRUE(c->expect<SaslHandshakeResponse>().ok());
  ASSERT_TRUE(c->send(SaslAuthenticateRequest{c->corr(), "PLAIN", plain("guest", "guest")}).ok());
  auto auth = c->expect<SaslAuthenticateResponse>();
  ASSERT_TRUE(auth.ok());
  ASSERT_EQ(auth->code, ResponseCode::ok);
  auto tune = c->expect<TuneFrame>();
  ASSERT_TRUE(tune.ok());
  std::this_thread::sleep_for(600ms);
  ASSERT_TRUE(c->send(TuneFrame{tune->frame_max, tune->heartbeat}).ok());
  std::this_thread::sleep_for(600ms);
  ASSERT_TRUE(c->send(OpenRequest{c->corr(), "/"}).ok());
  auto open = c->expect<OpenResponse>();
  ASSERT_TRUE(open.ok()) << open.error().message;
  EXPECT_EQ(open->code, ResponseCode::ok);
}

// Frames stay within 8 192 bytes until Open, whatever was tuned; after
// Open the tuned size holds.
TEST_F(StrangerLimitsTest, TheCeilingBeforeOpenIs8192Bytes) {
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->send(PeerPropertiesRequest{c->corr(), {{"pad", std::string(8200, 'p')}}}).ok());
  auto close = c->expect<CloseRequest>();
  ASSERT_TRUE(close.ok()) << close.error().message;
  EXPECT_EQ(close->code, ResponseCode::frame_too_large);
  EXPECT_TRUE(c->closed_by_server());
  // Exactly 8 192 bytes after the size field passes.
  auto fits = StreamClient::connect(server_.port());
  ASSERT_TRUE(fits.ok());
  const size_t fixed = 4 + 4 + 4 + 2 + 3 + 2;  // head, corr, count, "pad", value length
  PeerPropertiesRequest pp{fits->corr(), {{"pad", std::string(8192 - fixed, 'p')}}};
  Bytes f;
  encode(pp, &f);
  ASSERT_EQ(f.size(), 4u + 8192u);
  ASSERT_TRUE(fits->send_raw(f).ok());
  ASSERT_TRUE(fits->expect<PeerPropertiesResponse>().ok());
  // Open: a 20 000-byte Metadata request is fine under the tuned 1 MiB.
  StreamClient open = open_client();
  ASSERT_TRUE(open.send(MetadataRequest{open.corr(), {std::string(20'000, 'm')}}).ok());
  auto md = open.expect<MetadataResponse>();
  ASSERT_TRUE(md.ok()) << md.error().message;
}

// A refused login is answered only after the configured delay, never says
// which half was wrong, and is counted.
TEST_F(StrangerLimitsTest, ARefusedLoginIsAnsweredLateAndCounted) {
  restart_with_limits(10'000, 600);
  auto a = StreamClient::connect(server_.port());
  ASSERT_TRUE(a.ok());
  auto wrong_password = login(*a, "guest", "nope");
  ASSERT_TRUE(wrong_password.ok()) << wrong_password.error().message;
  EXPECT_EQ(wrong_password->code, ResponseCode::authentication_failure);
  EXPECT_GE(wrong_password->took, 550ms);
  EXPECT_TRUE(a->closed_by_server());
  auto b = StreamClient::connect(server_.port());
  ASSERT_TRUE(b.ok());
  auto unknown_user = login(*b, "nobody", "guest");
  ASSERT_TRUE(unknown_user.ok()) << unknown_user.error().message;
  EXPECT_EQ(unknown_user->code, ResponseCode::authentication_failure);
  EXPECT_GE(unknown_user->took, 550ms);
  auto st = serve_status(server_);
  EXPECT_EQ(st["server"]["auth_failures"].get<uint64_t>(), 2u) << st.dump();
}

// Guessing in a loop from one address: after a few failures every login
// from it waits, growing, before its credentials are even checked — the
// right password too, so giving up early learns nothing — and attempts
// made side by side queue behind each other.
TEST_F(StrangerLimitsTest, GuessingInALoopIsSlowed) {
  restart_with_limits(10'000, 0);
  std::vector<std::chrono::milliseconds> took;
  for (int i = 0; i < 6; ++i) {
    auto c = StreamClient::connect(server_.port());
    ASSERT_TRUE(c.ok());
    auto r = login(*c, "guest", fmt::format("guess-{}", i));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->code, ResponseCode::authentication_failure);
    took.push_back(r->took);
  }
  // Three free failures, then 250 ms, 500 ms, 1 s.
  EXPECT_LT(took[0], 250ms);
  EXPECT_GE(took[3], 200ms);
  EXPECT_GE(took[4], 450ms);
  EXPECT_GE(took[5], 950ms);
  // The right password now waits too (2 s), then passes and clears the
  // record.
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok());
  auto right = login(*c, "guest", "guest");
  ASSERT_TRUE(right.ok()) << right.error().message;
  EXPECT_EQ(right->code, ResponseCode::ok);
  EXPECT_GE(right->took, 1900ms);
  EXPECT_NE(server_log().find("login held"), std::string::npos);
  StreamClient after = open_client();
  create(after, "s");
}

}  // namespace
}  // namespace strata::test
