// The stream listener under failing accepts and a close: it neither spins
// (a stop once hung for a minute in an accept loop on a closed acceptor)
// nor stops accepting for good after a transient failure.
#include "server/listener.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <asio/connect.hpp>
#include <vector>

#include "server/admin_http.h"

namespace strata::server {
namespace {

using namespace std::chrono_literals;

class ListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = Listener::open(io, "127.0.0.1:0");
    ASSERT_TRUE(l.ok()) << l.error().message;
    listener = std::move(*l);
    listener->start([this](asio::ip::tcp::socket s, Strand) { accepted.push_back(std::move(s)); });
  }
  // A client whose connection the kernel completes before any accept.
  asio::ip::tcp::socket connect() {
    asio::ip::tcp::socket s(client_io);
    s.connect({asio::ip::make_address("127.0.0.1"), listener->port()});
    return s;
  }

  asio::io_context io;
  asio::io_context client_io;
  std::unique_ptr<Listener> listener;
  std::vector<asio::ip::tcp::socket> accepted;
};

TEST_F(ListenerTest, OutOfDescriptorsPausesThenAcceptsWhenOneIsFree) {
#if defined(STRATA_SANITIZE)
  // The sanitizers' runtime needs descriptors of its own (UBSan probes
  // memory through a pipe): with none left it reports false errors.
  GTEST_SKIP() << "runs in the regular build only";
#endif
  auto client = connect();
  // Lower the descriptor limit and use up what is left under it.
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = 128;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> hoard;
  for (;;) {
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;
    hoard.push_back(fd);
  }
  ASSERT_EQ(errno, EMFILE);
  // Every accept fails with EMFILE: a few retries in 350 ms, not a loop
  // running thousands of handlers.
  const size_t handlers = io.run_for(350ms);
  EXPECT_LT(handlers, 30u);
  EXPECT_GE(handlers, 3u);
  EXPECT_TRUE(accepted.empty());
  for (int fd : hoard) ::close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  for (int i = 0; i < 20 && accepted.empty(); ++i) io.run_for(50ms);
  EXPECT_EQ(accepted.size(), 1u);
}

TEST_F(ListenerTest, AfterCloseNothingIsAcceptedAndNothingSpins) {
  auto a = connect();
  io.run_for(100ms);
  ASSERT_EQ(accepted.size(), 1u);
  // A connection already waiting when the listener closes: its completion
  // may be queued behind the close; it is dropped, and nothing re-arms.
  auto b = connect();
  listener->close();
  const size_t handlers = io.run_for(300ms);
  EXPECT_LT(handlers, 10u);
  EXPECT_LE(accepted.size(), 2u);
  const size_t after = accepted.size();
  // The port is closed: a new client is refused by the kernel.
  asio::ip::tcp::socket c(client_io);
  std::error_code ec;
  c.connect({asio::ip::make_address("127.0.0.1"), listener->port()}, ec);
  EXPECT_EQ(ec, asio::error::connection_refused);
  io.run_for(200ms);
  EXPECT_EQ(accepted.size(), after);
  // The event loop has nothing left to do: the listener holds no work.
  io.restart();
  EXPECT_EQ(io.poll(), 0u);
}

// A second HTTP endpoint on a port one already holds is refused: with
// SO_REUSEPORT both would bind and share the requests at random.
TEST(AdminHttpTest, APortInUseIsRefused) {
  AdminHandlers h{[] { return std::string("m"); }, [] { return std::string("{}"); }, nullptr};
  auto first = AdminHttp::start("127.0.0.1:0", h);
  ASSERT_TRUE(first.ok()) << first.error().message;
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = AdminHttp::start(taken, h);
  ASSERT_FALSE(second.ok()) << "two endpoints on " << taken;
  EXPECT_NE(second.error().message.find(taken), std::string::npos) << second.error().message;
  // The first still answers.
  auto m = admin_get((*first)->url(), "/metrics");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(*m, "m");
}

}  // namespace
}  // namespace strata::server
