// The client's side of TLS (server/transport.h, tls_client_transport) as a
// cluster node dials a peer's TLS listener with make_tls_client_context:
// certificates made by the `openssl` program, a real handshake over
// 127.0.0.1 against the server's side (tls_transport). A peer is accepted
// only with a certificate from the configured CA that names the host it is
// dialled at; each refusal says why, in OpenSSL's words. And the transport
// itself against another TLS implementation (Asio's SSL stream): a read and
// a write in flight at once, each waiting for the other side.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/strand.hpp>
#include <asio/write.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>

#include "server/tls_context.h"
#include "server/transport.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

namespace strata::server {
namespace {

class PeerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(test::have_program("openssl"))
        << "the openssl program is needed (scripts/setup.sh)";
    std::string error;
    ASSERT_TRUE(test::make_test_certs(dir_.path(), "node-b", &certs_, &error)) << error;
    ASSERT_TRUE(test::make_test_certs(dir_.path(), "rogue", &rogue_, &error, "rogue-")) << error;
  }

  // A node's TLS settings: its certificate (CN=localhost, IP:127.0.0.1),
  // the CA its peers are checked against.
  TlsSettings node(const test::TestCerts& c, const std::string& ca) const {
    TlsSettings s;
    s.listen = "127.0.0.1:0";
    s.cert_file = c.server_cert;
    s.key_file = c.server_key;
    s.ca_file = ca;
    s.verify_peer = true;
    return s;
  }

  struct Outcome {
    std::error_code client, server;
    std::string verify_error;
    TlsInfo server_saw;  // what the accepting side settled
  };

  // One handshake: `server` accepts on 127.0.0.1, `client` dials it
  // naming `host`.
  Outcome handshake(const TlsSettings& server, const TlsSettings& client, const std::string& host,
                    bool verify_host) {
    auto sctx = make_tls_context(server);
    EXPECT_TRUE(sctx.ok()) << sctx.error().message;
    auto cctx = make_tls_client_context(client);
    EXPECT_TRUE(cctx.ok()) << cctx.error().message;
    asio::io_context io;
    Strand strand = asio::make_strand(io);
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket accepted(io), dialled(io);
    Outcome out;
    std::unique_ptr<Transport> s, c;
    dialled.connect(acceptor.local_endpoint());
    acceptor.accept(accepted);
    s = tls_transport(std::move(accepted), strand, *sctx);
    c = tls_client_transport(std::move(dialled), strand, *cctx, host, verify_host);
    std::optional<std::error_code> sdone, cdone;
    s->start(std::chrono::seconds(5), [&](std::error_code ec) {
      sdone = ec;
      if (ec) c->close();
    });
    c->start(std::chrono::seconds(5), [&](std::error_code ec) {
      cdone = ec;
      // A refused peer certificate ends the client's side; the server's
      // then reads the alert (or the close).
      if (ec) s->close();
    });
    io.run_for(std::chrono::seconds(10));
    EXPECT_TRUE(sdone && cdone) << "both handshakes end";
    out.client = cdone.value_or(asio::error::timed_out);
    out.server = sdone.value_or(asio::error::timed_out);
    out.verify_error = c->verify_error();
    if (s->tls()) out.server_saw = *s->tls();
    return out;
  }

  // The server's side (tls_transport) of a connection whose client is
  // Asio's own SSL stream, another path through OpenSSL (memory BIOs); the
  // handshakes are the test's to start.
  struct AgainstAsio {
    asio::io_context io;
    std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket>> client;
    std::unique_ptr<Transport> server;
  };
  std::unique_ptr<AgainstAsio> against_asio() {
    const TlsSettings s = node(certs_, certs_.ca);
    auto sctx = make_tls_context(s);
    auto cctx = make_tls_client_context(s);
    EXPECT_TRUE(sctx.ok() && cctx.ok());
    if (!sctx.ok() || !cctx.ok()) return nullptr;
    auto p = std::make_unique<AgainstAsio>();
    asio::ip::tcp::acceptor acceptor(p->io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket accepted(p->io);
    p->client = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket>>(p->io, **cctx);
    p->client->next_layer().connect(acceptor.local_endpoint());
    acceptor.accept(accepted);
    p->server = tls_transport(std::move(accepted), asio::make_strand(p->io), *sctx);
    return p;
  }

  test::TempDir dir_;
  test::TestCerts certs_, rogue_;
};

TEST_F(PeerTlsTest, APeerWithTheCasCertificateForItsAddressIsAccepted) {
  const TlsSettings s = node(certs_, certs_.ca);
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    Outcome o = handshake(s, s, host, /*verify_host=*/true);
    EXPECT_FALSE(o.client) << host << ": " << o.client.message() << " " << o.verify_error;
    EXPECT_FALSE(o.server) << host << ": " << o.server.message();
    EXPECT_EQ(o.verify_error, "");
    // The dialling node presented its own certificate, which the listener
    // verified against the CA.
    EXPECT_TRUE(o.server_saw.peer_verified) << host;
    EXPECT_EQ(o.server_saw.peer_common_name, "localhost") << host;
  }
}

TEST_F(PeerTlsTest, ACertificateForAnotherHostIsRefusedUnlessHostChecksAreOff) {
  const TlsSettings s = node(certs_, certs_.ca);
  // The certificate names 127.0.0.1 and localhost; the peer is dialled as
  // another name (an advertised host the certificate was not made for).
  Outcome o = handshake(s, s, "peer.example", /*verify_host=*/true);
  EXPECT_TRUE(o.client);
  EXPECT_NE(o.verify_error.find("hostname mismatch"), std::string::npos) << o.verify_error;
  Outcome ip = handshake(s, s, "127.0.0.2", /*verify_host=*/true);
  EXPECT_TRUE(ip.client);
  EXPECT_NE(ip.verify_error.find("IP address mismatch"), std::string::npos) << ip.verify_error;
  // cluster.peer_tls_verify_host false: the CA alone decides.
  Outcome off = handshake(s, s, "peer.example", /*verify_host=*/false);
  EXPECT_FALSE(off.client) << off.client.message() << " " << off.verify_error;
  EXPECT_FALSE(off.server) << off.server.message();
}

TEST_F(PeerTlsTest, APeerFromAnotherCaIsRefusedBothWays) {
  // The listener's certificate is from another CA than the dialler trusts.
  Outcome o = handshake(node(rogue_, certs_.ca), node(certs_, certs_.ca), "127.0.0.1", true);
  EXPECT_TRUE(o.client);
  EXPECT_NE(o.verify_error, "") << "OpenSSL's reason is kept";
  EXPECT_NE(o.verify_error.find("certificate"), std::string::npos) << o.verify_error;
  // The dialler's certificate is from another CA than the listener
  // trusts: the listener refuses it.
  Outcome back = handshake(node(certs_, certs_.ca), node(rogue_, certs_.ca), "127.0.0.1", true);
  EXPECT_TRUE(back.server);
  EXPECT_FALSE(back.server_saw.peer_verified);
}

TEST_F(PeerTlsTest, VersionsAreTheListenersAndTheCaIsRequired) {
  TlsSettings only12 = node(certs_, certs_.ca);
  only12.versions = {"tlsv1.2"};
  TlsSettings only13 = node(certs_, certs_.ca);
  only13.versions = {"tlsv1.3"};
  Outcome o = handshake(only12, only13, "127.0.0.1", true);
  EXPECT_TRUE(o.client);
  EXPECT_TRUE(o.server);
  Outcome same = handshake(only12, only12, "127.0.0.1", true);
  EXPECT_FALSE(same.client) << same.client.message() << " " << same.verify_error;

  TlsSettings no_ca = node(certs_, "");
  auto r = make_tls_client_context(no_ca);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("tls.ca_file"), std::string::npos) << r.error().message;
}

// A side that ends a TLS connection (Transport::finish, as a connection
// the server closes) sends close_notify after its last bytes: the peer
// reads them, then a clean end — not the truncation a bare TCP close would
// look like. Once the peer answers with its own, the ending side is done;
// a peer that goes on sending is read until it closes.
TEST_F(PeerTlsTest, EndingAConnectionSendsCloseNotifyAfterTheLastBytes) {
  const TlsSettings s = node(certs_, certs_.ca);
  auto sctx = make_tls_context(s);
  ASSERT_TRUE(sctx.ok()) << sctx.error().message;
  auto cctx = make_tls_client_context(s);
  ASSERT_TRUE(cctx.ok()) << cctx.error().message;
  for (const bool peer_answers : {true, false}) {
    asio::io_context io;
    Strand strand = asio::make_strand(io);
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket accepted(io), dialled(io);
    dialled.connect(acceptor.local_endpoint());
    acceptor.accept(accepted);
    auto srv = tls_transport(std::move(accepted), strand, *sctx);
    auto cli = tls_client_transport(std::move(dialled), strand, *cctx, "127.0.0.1", true);
    const std::string last = "the last frame";
    std::string got;
    std::array<char, 256> buf{};
    std::optional<std::error_code> end;
    bool finished = false;
    std::function<void()> read_on = [&] {
      cli->read_some(asio::buffer(buf), [&](const std::error_code& ec, size_t n) {
        if (ec) {
          end = ec;
          if (peer_answers) {
            cli->finish([] {});
          } else {
            cli->close();
          }
          return;
        }
        got.append(buf.data(), n);
        read_on();
      });
    };
    srv->start(std::chrono::seconds(5), [&](std::error_code ec) {
      ASSERT_FALSE(ec) << ec.message();
      std::vector<asio::const_buffer> b{asio::buffer(last)};
      srv->write(b, [&](const std::error_code& wec, size_t) {
        ASSERT_FALSE(wec) << wec.message();
        srv->finish([&] { finished = true; });
      });
    });
    cli->start(std::chrono::seconds(5), [&](std::error_code ec) {
      ASSERT_FALSE(ec) << ec.message();
      read_on();
    });
    io.run_for(std::chrono::seconds(10));
    EXPECT_EQ(got, last) << "peer_answers " << peer_answers;
    ASSERT_TRUE(end.has_value());
    // asio reports a close_notify as eof, an end without one as
    // stream_truncated.
    EXPECT_EQ(*end, asio::error::eof) << end->message();
    EXPECT_TRUE(finished) << "peer_answers " << peer_answers;
  }
}

// The transport reads and writes the socket through OpenSSL itself, one
// read and one write in flight at once. Against Asio's own SSL stream (its
// memory-BIO engine, another path through OpenSSL): the server writes 16
// MiB at once while the client, before it reads any of it, writes 4 MiB.
// The server's write fills the socket and waits (WANT_WRITE); the client's
// write completes only if the server's read goes on meanwhile. Both arrive
// whole and in order.
TEST_F(PeerTlsTest, AReadAndAWriteInFlightTogetherBothCompleteUnderBackpressure) {
  auto pair = against_asio();
  ASSERT_TRUE(pair);
  asio::io_context& io = pair->io;
  auto& client = *pair->client;
  std::unique_ptr<Transport>& srv = pair->server;

  auto pattern = [](size_t n, uint8_t seed) {
    std::string b(n, '\0');
    for (size_t i = 0; i < n; ++i) b[i] = char(uint8_t((i * 131 + seed) ^ (i >> 12)));
    return b;
  };
  const std::string down = pattern(16 << 20, 7), up = pattern(4 << 20, 3);
  std::string server_got, client_got(down.size(), '\0');
  std::array<char, 65536> buf{};
  std::optional<std::error_code> server_wrote, server_read, client_wrote, client_read;
  std::function<void()> read_on = [&] {
    srv->read_some(asio::buffer(buf), [&](const std::error_code& ec, size_t n) {
      if (ec) {
        server_read = ec;
        return;
      }
      server_got.append(buf.data(), n);
      if (server_got.size() >= up.size()) {
        server_read = std::error_code();
        return;
      }
      read_on();
    });
  };
  srv->start(std::chrono::seconds(5), [&](std::error_code ec) {
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_NE(srv->tls(), nullptr);
    // No kernel TLS without the kernel's `tls` module: bodies by copy.
    EXPECT_EQ(srv->sendfile(), srv->tls()->kernel_send);
    read_on();
    srv->write({asio::buffer(down)}, [&](const std::error_code& wec, size_t n) {
      server_wrote = wec;
      EXPECT_EQ(n, down.size());
    });
  });
  client.async_handshake(asio::ssl::stream_base::client, [&](const std::error_code& ec) {
    ASSERT_FALSE(ec) << ec.message();
    asio::async_write(client, asio::buffer(up), [&](const std::error_code& wec, size_t) {
      client_wrote = wec;
      // Only now does the client read: the server's write waited all along.
      asio::async_read(client, asio::buffer(client_got),
                       [&](const std::error_code& rec, size_t) { client_read = rec; });
    });
  });
  io.run_for(std::chrono::seconds(60));
  ASSERT_TRUE(server_wrote && server_read && client_wrote && client_read)
      << "server wrote " << server_wrote.has_value() << ", read " << server_got.size()
      << "; client wrote " << client_wrote.has_value() << ", read " << client_read.has_value();
  EXPECT_FALSE(*server_wrote) << server_wrote->message();
  EXPECT_FALSE(*server_read) << server_read->message();
  EXPECT_FALSE(*client_wrote) << client_wrote->message();
  EXPECT_FALSE(*client_read) << client_read->message();
  EXPECT_TRUE(server_got == up) << "the server read " << server_got.size() << " bytes";
  EXPECT_TRUE(client_got == down);
}

// A Deliver frame with a file part (what plain TCP sends by sendfile) over
// TLS: its head, then the body, arrive whole and in order. Without kernel
// TLS the body is read from the file and encrypted here; with it (the VM of
// tests/vm/ktls_vm_test.sh) it goes by SSL_sendfile.
TEST_F(PeerTlsTest, AFramesFilePartGoesOutOverTls) {
  std::string body(300000, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = char('a' + i % 26);
  const std::string path = dir_.sub("segment");
  std::ofstream(path, std::ios::binary) << "skipped" << body << "after";
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  auto frame = std::make_shared<ChunkFrame>();
  frame->bytes = "HEAD";
  frame->file = FileSpan{nullptr, fd, 7, body.size()};

  auto pair = against_asio();
  ASSERT_TRUE(pair);
  asio::io_context& io = pair->io;
  auto& client = *pair->client;
  std::unique_ptr<Transport>& srv = pair->server;
  std::string got(4 + body.size(), '\0');
  std::optional<std::error_code> wrote, read;
  srv->start(std::chrono::seconds(5), [&](std::error_code ec) {
    ASSERT_FALSE(ec) << ec.message();
    srv->write_frame(frame, [&](std::error_code wec) { wrote = wec; });
  });
  client.async_handshake(asio::ssl::stream_base::client, [&](const std::error_code& ec) {
    ASSERT_FALSE(ec) << ec.message();
    asio::async_read(client, asio::buffer(got),
                     [&](const std::error_code& rec, size_t) { read = rec; });
  });
  io.run_for(std::chrono::seconds(30));
  ::close(fd);
  ASSERT_TRUE(wrote && read);
  EXPECT_FALSE(*wrote) << wrote->message();
  EXPECT_FALSE(*read) << read->message();
  EXPECT_TRUE(got == "HEAD" + body);
  // Where the kernel has its tls module (tests/vm/ktls_vm_test.sh runs this
  // test there) the body went by SSL_sendfile: say it must have.
  if (std::getenv("STRATA_EXPECT_KERNEL_TLS") != nullptr) {
    ASSERT_NE(srv->tls(), nullptr);
    EXPECT_TRUE(srv->tls()->kernel_send) << "kernel TLS did not engage";
  }
}

}  // namespace
}  // namespace strata::server
