#include "server/transport.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <array>
#include <asio/bind_executor.hpp>
#include <asio/post.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

namespace strata::server {
namespace {

// Reads and drops what arrives on `socket` until its end (or an error, or
// close()), then calls `done`.
void drain_socket(asio::ip::tcp::socket& socket, const Strand& strand, std::function<void()> done) {
  auto scratch = std::make_shared<std::array<uint8_t, 4096>>();
  socket.async_read_some(
      asio::buffer(*scratch),
      asio::bind_executor(strand, [&socket, strand, scratch, done = std::move(done)](
                                      const std::error_code& ec, size_t) mutable {
        if (ec) return done();
        drain_socket(socket, strand, std::move(done));
      }));
}

class PlainTransport final : public Transport {
 public:
  PlainTransport(asio::ip::tcp::socket socket, Strand strand)
      : socket_(std::move(socket)), strand_(std::move(strand)) {}

  asio::ip::tcp::socket& tcp() override { return socket_; }
  void start(std::chrono::milliseconds, std::function<void(std::error_code)> ready) override {
    asio::post(strand_, [ready = std::move(ready)] { ready(std::error_code()); });
  }
  void read_some(asio::mutable_buffer into, IoDone done) override {
    socket_.async_read_some(into, asio::bind_executor(strand_, std::move(done)));
  }
  void write(const std::vector<asio::const_buffer>& buffers, IoDone done) override {
    asio::async_write(socket_, buffers, asio::bind_executor(strand_, std::move(done)));
  }
  void write_frame(std::shared_ptr<const ChunkFrame> frame,
                   std::function<void(std::error_code)> done) override {
    async_write_frame(socket_, std::move(frame), std::move(done));
  }
  void finish(std::function<void()> done) override {
    std::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    drain_socket(socket_, strand_, std::move(done));
  }
  void close() override {
    std::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }
  bool sendfile() const override { return true; }
  const TlsInfo* tls() const override { return nullptr; }

 private:
  asio::ip::tcp::socket socket_;
  Strand strand_;
};

// RFC 4514 text of a certificate's subject, as RabbitMQ gives it for
// ssl_cert_login_from = distinguished_name (most specific first).
std::string subject_text(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, n > 0 ? size_t(n) : 0);
  BIO_free(bio);
  return out;
}

std::string common_name(X509* cert) {
  X509_NAME* name = X509_get_subject_name(cert);
  int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (i < 0) return "";
  ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, s);
  if (n < 0) return "";
  std::string out(reinterpret_cast<char*>(utf8), size_t(n));
  OPENSSL_free(utf8);
  return out;
}

class TlsTransport final : public Transport {
 public:
  // `peer_host` empty: the server's side of a client connection. Else the
  // client's side of a link to a cluster peer reached at that host, whose
  // certificate must name it when `verify_host`.
  TlsTransport(asio::ip::tcp::socket socket, Strand strand,
               std::shared_ptr<asio::ssl::context> context, std::string peer_host = "",
               bool verify_host = false)
      : context_(std::move(context)),
        stream_(std::move(socket), *context_),
        strand_(std::move(strand)),
        deadline_(strand_),
        peer_host_(std::move(peer_host)),
        verify_host_(verify_host) {}
  ~TlsTransport() override { *alive_ = false; }

  asio::ip::tcp::socket& tcp() override { return stream_.next_layer(); }

  void start(std::chrono::milliseconds deadline,
             std::function<void(std::error_code)> ready) override {
    // A client that stalls its handshake is cut off: closing the socket
    // ends the handshake with an error, and `timed_out` says why.
    deadline_.expires_after(deadline);
    deadline_.async_wait(
        asio::bind_executor(strand_, [this, alive = alive_](const std::error_code& ec) {
          // A wait that fired just as the handshake ended may run after the
          // transport is gone.
          if (ec || !*alive) return;
          timed_out_ = true;
          close();
        }));
    const bool client = !peer_host_.empty();
    if (client) {
      if (auto ec = name_peer(); ec) {
        return asio::post(strand_, [ready = std::move(ready), ec] { ready(ec); });
      }
    }
    stream_.async_handshake(
        client ? asio::ssl::stream_base::client : asio::ssl::stream_base::server,
        asio::bind_executor(strand_, [this, ready = std::move(ready)](const std::error_code& ec) {
          deadline_.cancel();
          if (ec) {
            if (timed_out_) return ready(std::error_code(asio::error::timed_out));
            // A peer's certificate refused: OpenSSL's reason says why
            // (unknown CA, expired, another host's), the handshake's error
            // only that verification failed.
            const long v = SSL_get_verify_result(stream_.native_handle());
            if (!peer_host_.empty() && v != X509_V_OK) {
              verify_error_ = X509_verify_cert_error_string(v);
            }
            return ready(ec);
          }
          settle();
          ready(std::error_code());
        }));
  }

  void read_some(asio::mutable_buffer into, IoDone done) override {
    stream_.async_read_some(into, asio::bind_executor(strand_, std::move(done)));
  }

  void write(const std::vector<asio::const_buffer>& buffers, IoDone done) override {
    // Asio's SSL stream encrypts one buffer per step: many small frames
    // would each become a record and a system call. They are joined first
    // (a copy is cheap beside the encryption).
    if (buffers.size() == 1) {
      asio::async_write(stream_, buffers, asio::bind_executor(strand_, std::move(done)));
      return;
    }
    joined_.clear();
    for (const auto& b : buffers) {
      const auto* p = static_cast<const uint8_t*>(b.data());
      joined_.insert(joined_.end(), p, p + b.size());
    }
    asio::async_write(stream_, asio::buffer(joined_),
                      asio::bind_executor(strand_, std::move(done)));
  }

  void write_frame(std::shared_ptr<const ChunkFrame> frame,
                   std::function<void(std::error_code)> done) override {
    std::vector<asio::const_buffer> bufs{asio::buffer(frame->bytes)};
    std::shared_ptr<Bytes> body;
    if (frame->file) {
      // Deliveries over TLS ask for in-memory bodies (sendfile() is false);
      // a frame with a file part is still written, by a copy.
      const FileSpan& f = *frame->file;
      body = std::make_shared<Bytes>();
      body->resize(f.length);
      uint64_t got = 0;
      while (got < f.length) {
        ssize_t n = ::pread(f.fd, body->data() + got, f.length - got, off_t(f.offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          auto ec = n == 0 ? std::make_error_code(std::errc::io_error)
                           : std::error_code(errno, std::system_category());
          asio::post(strand_, [done = std::move(done), ec] { done(ec); });
          return;
        }
        got += uint64_t(n);
      }
      bufs.emplace_back(asio::buffer(*body));
    }
    write(bufs,
          [frame, body, done = std::move(done)](const std::error_code& ec, size_t) { done(ec); });
  }

  void finish(std::function<void()> done) override {
    // close_notify, then the peer's: SSL_shutdown reads records until it
    // comes, or the peer's end. A peer that still sends data ends the TLS
    // exchange with an error; the rest of its bytes are then read raw until
    // it closes.
    stream_.async_shutdown(asio::bind_executor(
        strand_, [this, done = std::move(done)](const std::error_code& ec) mutable {
          // Its close_notify, or its end without one (stream_truncated).
          if (!ec || ec == asio::error::eof || ec == asio::ssl::error::stream_truncated ||
              !tcp().is_open()) {
            return done();
          }
          drain_socket(tcp(), strand_, std::move(done));
        }));
  }
  void close() override {
    std::error_code ec;
    tcp().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    tcp().close(ec);
    deadline_.cancel();
  }
  bool sendfile() const override { return false; }
  const TlsInfo* tls() const override { return settled_ ? &info_ : nullptr; }

  std::string verify_error() const override { return verify_error_; }

 private:
  // The client's side: SNI for a host name, and what the certificate must
  // name (an IP address is matched against the certificate's IP entries).
  std::error_code name_peer() {
    SSL* ssl = stream_.native_handle();
    std::error_code ec;
    const auto ip = asio::ip::make_address(peer_host_, ec);
    if (ec) SSL_set_tlsext_host_name(ssl, peer_host_.c_str());
    if (!verify_host_) return {};
    X509_VERIFY_PARAM* p = SSL_get0_param(ssl);
    const int ok = ec ? X509_VERIFY_PARAM_set1_host(p, peer_host_.c_str(), 0)
                      : X509_VERIFY_PARAM_set1_ip_asc(p, ip.to_string().c_str());
    if (ok != 1) return std::make_error_code(std::errc::invalid_argument);
    return {};
  }

  void settle() {
    SSL* ssl = stream_.native_handle();
    info_.version = SSL_get_version(ssl);
    info_.cipher = SSL_get_cipher_name(ssl);
    if (X509* cert = SSL_get1_peer_certificate(ssl)) {
      info_.peer_verified = SSL_get_verify_result(ssl) == X509_V_OK;
      info_.peer_subject = subject_text(cert);
      info_.peer_common_name = common_name(cert);
      X509_free(cert);
    }
    settled_ = true;
  }

  std::shared_ptr<asio::ssl::context> context_;
  asio::ssl::stream<asio::ip::tcp::socket> stream_;
  Strand strand_;
  asio::steady_timer deadline_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool timed_out_ = false;
  bool settled_ = false;
  TlsInfo info_;
  Bytes joined_;
  const std::string peer_host_;
  const bool verify_host_;
  std::string verify_error_;
};

}  // namespace

std::unique_ptr<Transport> plain_transport(asio::ip::tcp::socket socket, Strand strand) {
  return std::make_unique<PlainTransport>(std::move(socket), std::move(strand));
}

std::unique_ptr<Transport> tls_transport(asio::ip::tcp::socket socket, Strand strand,
                                         std::shared_ptr<asio::ssl::context> context) {
  return std::make_unique<TlsTransport>(std::move(socket), std::move(strand), std::move(context));
}

std::unique_ptr<Transport> tls_client_transport(asio::ip::tcp::socket socket, Strand strand,
                                                std::shared_ptr<asio::ssl::context> context,
                                                const std::string& host, bool verify_host) {
  return std::make_unique<TlsTransport>(std::move(socket), std::move(strand), std::move(context),
                                        host, verify_host);
}

}  // namespace strata::server
