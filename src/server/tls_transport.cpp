// TLS over a TCP socket, with OpenSSL reading and writing the socket itself
// (a socket BIO on the non-blocking descriptor) and Asio only telling when
// the socket is ready. Asio's own SSL stream feeds OpenSSL through a pair of
// memory BIOs instead: every record is copied out of one and into the
// socket, and kernel TLS, which OpenSSL turns on only on a socket BIO, can
// never engage. Here it can: the handshake asks for it (SSL_OP_ENABLE_KTLS)
// and, where the kernel has its `tls` module and OpenSSL was built with it,
// records are encrypted by the kernel and a Deliver's body goes out by
// SSL_sendfile straight from the segment file, as sendfile(2) does on plain
// TCP (sendfile() true, TlsInfo::kernel_send). Elsewhere bodies are read
// into memory and encrypted by OpenSSL.
//
// One read and one write may be in flight at once (the channel reads
// frames while it writes); each is an operation that is retried when the
// socket becomes readable or writable, as OpenSSL asks (WANT_READ,
// WANT_WRITE) — a write may need to read and a read to write.
// Renegotiation is off (tls_context.cpp), so neither waits for the other.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <array>
#include <asio/bind_executor.hpp>
#include <asio/post.hpp>
#include <asio/ssl/error.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <optional>
#include <variant>

#include "net/tls_peer_name.h"
#include "server/transport.h"

namespace strata::server {
namespace {

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

struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};

// Which way the socket must turn before an operation can go on.
enum class Need { nothing, readable, writable };

class TlsTransport final : public Transport {
 public:
  // `peer_host` empty: the server's side of a client connection. Else the
  // client's side of a link to a cluster peer reached at that host, whose
  // certificate must name it when `verify_host`.
  TlsTransport(asio::ip::tcp::socket socket, Strand strand,
               std::shared_ptr<asio::ssl::context> context, std::string peer_host = "",
               bool verify_host = false)
      : context_(std::move(context)),
        socket_(std::move(socket)),
        strand_(std::move(strand)),
        deadline_(strand_),
        peer_host_(std::move(peer_host)),
        verify_host_(verify_host) {}
  ~TlsTransport() override { *alive_ = false; }

  asio::ip::tcp::socket& tcp() override { return socket_; }

  void start(std::chrono::milliseconds deadline,
             std::function<void(std::error_code)> ready) override {
    if (auto ec = open_ssl(); ec) {
      return asio::post(strand_, [ready = std::move(ready), ec] { ready(ec); });
    }
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
    handshake_.emplace(Handshake{std::move(ready)});
    pump();
  }

  void read_some(asio::mutable_buffer into, IoDone done) override {
    read_.emplace(Read{into, std::move(done)});
    pump();
  }

  void write(const std::vector<asio::const_buffer>& buffers, IoDone done) override {
    Write w;
    // Each buffer would become at least one record and one system call:
    // several (many small frames) are joined first.
    if (buffers.size() == 1) {
      w.data = static_cast<const uint8_t*>(buffers[0].data());
      w.size = buffers[0].size();
    } else {
      joined_.clear();
      for (const auto& b : buffers) {
        const auto* p = static_cast<const uint8_t*>(b.data());
        joined_.insert(joined_.end(), p, p + b.size());
      }
      w.data = reinterpret_cast<const uint8_t*>(joined_.data());
      w.size = joined_.size();
    }
    w.done = std::move(done);
    write_.emplace(std::move(w));
    pump();
  }

  void write_frame(std::shared_ptr<const ChunkFrame> frame,
                   std::function<void(std::error_code)> done) override {
    Write w;
    w.data = reinterpret_cast<const uint8_t*>(frame->bytes.data());
    w.size = frame->bytes.size();
    if (frame->file && kernel_send_) {
      // Kernel TLS: the body from the file by SSL_sendfile, no copy here.
      w.file = *frame->file;
    } else if (frame->file) {
      // Deliveries over user-space TLS ask for in-memory bodies (sendfile()
      // is false); a frame with a file part is still written, its body read
      // in after its head.
      const FileSpan& f = *frame->file;
      joined_.assign(frame->bytes);
      const size_t head = joined_.size();
      joined_.resize(head + f.length);
      uint64_t got = 0;
      while (got < f.length) {
        ssize_t n =
            ::pread(f.fd, joined_.data() + head + got, f.length - got, off_t(f.offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          auto ec = n == 0 ? std::make_error_code(std::errc::io_error)
                           : std::error_code(errno, std::system_category());
          asio::post(strand_, [done = std::move(done), ec] { done(ec); });
          return;
        }
        got += uint64_t(n);
      }
      w.data = reinterpret_cast<const uint8_t*>(joined_.data());
      w.size = joined_.size();
    }
    w.done = [frame, done = std::move(done)](const std::error_code& ec, size_t) { done(ec); };
    write_.emplace(std::move(w));
    pump();
  }

  void finish(std::function<void()> done) override {
    shutdown_.emplace(Shutdown{std::move(done)});
    pump();
  }

  void close() override {
    std::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    deadline_.cancel();
  }
  bool sendfile() const override { return kernel_send_; }
  const TlsInfo* tls() const override { return settled_ ? &info_ : nullptr; }
  std::string verify_error() const override { return verify_error_; }

 private:
  struct Handshake {
    std::function<void(std::error_code)> ready;
    Need need = Need::nothing;
  };
  struct Read {
    asio::mutable_buffer into;
    IoDone done;
    Need need = Need::nothing;
  };
  struct Write {
    const uint8_t* data = nullptr;
    size_t size = 0;
    size_t sent = 0;
    std::optional<FileSpan> file;  // after `data`, by SSL_sendfile
    uint64_t file_sent = 0;
    IoDone done;
    Need need = Need::nothing;
  };
  struct Shutdown {
    std::function<void()> done;
    bool sent = false;  // our close_notify is out; now the peer's is read
    Need need = Need::nothing;
  };

  std::error_code open_ssl() {
    ssl_.reset(SSL_new(context_->native_handle()));
    if (!ssl_) return last_ssl_error();
    std::error_code ec;
    socket_.non_blocking(true, ec);
    if (ec) return ec;
    if (SSL_set_fd(ssl_.get(), socket_.native_handle()) != 1) return last_ssl_error();
    // Partial writes: a large frame goes out record by record as the socket
    // takes them, and a write retried after WANT_WRITE may come from a
    // buffer that moved (joined_ is reused).
    SSL_set_mode(ssl_.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
#ifdef SSL_OP_ENABLE_KTLS
    SSL_set_options(ssl_.get(), SSL_OP_ENABLE_KTLS);
#endif
    if (peer_host_.empty()) {
      SSL_set_accept_state(ssl_.get());
      return {};
    }
    SSL_set_connect_state(ssl_.get());
    return name_peer();
  }

  // The client's side: SNI, and the name the peer's certificate must bear.
  std::error_code name_peer() {
    if (!net::name_tls_peer(ssl_.get(), peer_host_, verify_host_)) {
      return std::make_error_code(std::errc::invalid_argument);
    }
    return {};
  }

  // OpenSSL's queued reason, as Asio reports it (asio::error::get_ssl_category).
  static std::error_code last_ssl_error() {
    const unsigned long e = ERR_get_error();
    if (e == 0) return std::make_error_code(std::errc::protocol_error);
    return std::error_code(int(e), asio::error::get_ssl_category());
  }

  // What a failed SSL call means: a socket turn to wait for, or the
  // operation's end with an error (the peer's close_notify is eof, its end
  // without one stream_truncated, as from Asio's SSL stream).
  static std::variant<Need, std::error_code> outcome(SSL* ssl, int ret) {
    const int saved_errno = errno;
    switch (SSL_get_error(ssl, ret)) {
      case SSL_ERROR_WANT_READ:
        return Need::readable;
      case SSL_ERROR_WANT_WRITE:
        return Need::writable;
      case SSL_ERROR_ZERO_RETURN:
        return std::error_code(asio::error::eof);
      case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() != 0) return last_ssl_error();
        if (saved_errno != 0 && saved_errno != EAGAIN) {
          return std::error_code(saved_errno, std::system_category());
        }
        return std::error_code(asio::ssl::error::stream_truncated);
      default:
        // OpenSSL 3 reports a peer's end without close_notify so.
        if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
          ERR_clear_error();
          return std::error_code(asio::ssl::error::stream_truncated);
        }
        return last_ssl_error();
    }
  }

  // Moves every operation in flight as far as the socket lets it, then
  // waits for the turns the blocked ones need. Completions are posted, so
  // a handler that starts the next operation finds this one gone.
  void pump() {
    if (!ssl_) return;
    // Closed: OpenSSL holds the descriptor's number, which a new socket
    // may have taken since; nothing touches it again.
    if (!socket_.is_open()) return fail_all(asio::error::operation_aborted);
    if (handshake_) {
      step_handshake();
    } else {
      if (read_) step_read();
      if (write_) step_write();
      if (shutdown_) step_shutdown();
    }
    arm();
  }

  void step_handshake() {
    Handshake& h = *handshake_;
    ERR_clear_error();
    errno = 0;
    const int r = SSL_do_handshake(ssl_.get());
    if (r == 1) {
      deadline_.cancel();
      settle();
      auto ready = std::move(h.ready);
      handshake_.reset();
      asio::post(strand_, [ready = std::move(ready)] { ready(std::error_code()); });
      return;
    }
    auto o = outcome(ssl_.get(), r);
    if (auto* need = std::get_if<Need>(&o)) {
      h.need = *need;
      return;
    }
    deadline_.cancel();
    std::error_code ec = std::get<std::error_code>(o);
    if (timed_out_) ec = asio::error::timed_out;
    // A peer's certificate refused — the server's on a peer link, a
    // client's on the listener: OpenSSL's reason says why (unknown CA,
    // expired, another host's), the handshake's error only that
    // verification failed.
    const long v = SSL_get_verify_result(ssl_.get());
    if (v != X509_V_OK) verify_error_ = X509_verify_cert_error_string(v);
    auto ready = std::move(h.ready);
    handshake_.reset();
    asio::post(strand_, [ready = std::move(ready), ec] { ready(ec); });
  }

  void step_read() {
    Read& rd = *read_;
    size_t n = 0;
    ERR_clear_error();
    errno = 0;
    const int r = SSL_read_ex(ssl_.get(), rd.into.data(), rd.into.size(), &n);
    if (r == 1) return end_read(std::error_code(), n);
    auto o = outcome(ssl_.get(), r);
    if (auto* need = std::get_if<Need>(&o)) {
      rd.need = *need;
      return;
    }
    end_read(std::get<std::error_code>(o), 0);
  }

  void end_read(std::error_code ec, size_t n) {
    auto done = std::move(read_->done);
    read_.reset();
    asio::post(strand_, [done = std::move(done), ec, n] { done(ec, n); });
  }

  void step_write() {
    Write& w = *write_;
    while (w.sent < w.size) {
      size_t n = 0;
      ERR_clear_error();
      errno = 0;
      const int r = SSL_write_ex(ssl_.get(), w.data + w.sent, w.size - w.sent, &n);
      if (r == 1) {
        w.sent += n;
        continue;
      }
      auto o = outcome(ssl_.get(), r);
      if (auto* need = std::get_if<Need>(&o)) {
        w.need = *need;
        return;
      }
      return end_write(std::get<std::error_code>(o));
    }
    while (w.file && w.file_sent < w.file->length) {
      ERR_clear_error();
      errno = 0;
      const ossl_ssize_t r =
          SSL_sendfile(ssl_.get(), w.file->fd, off_t(w.file->offset + w.file_sent),
                       size_t(w.file->length - w.file_sent), 0);
      if (r > 0) {
        w.file_sent += uint64_t(r);
        continue;
      }
      auto o = outcome(ssl_.get(), int(r));
      if (auto* need = std::get_if<Need>(&o)) {
        w.need = *need;
        return;
      }
      return end_write(std::get<std::error_code>(o));
    }
    end_write(std::error_code());
  }

  void end_write(std::error_code ec) {
    const size_t n = write_->sent + size_t(write_->file_sent);
    auto done = std::move(write_->done);
    write_.reset();
    asio::post(strand_, [done = std::move(done), ec, n] { done(ec, n); });
  }

  // close_notify, then the peer's: records are read and dropped until it
  // comes, or the peer's end. A peer that still sends what is no TLS record
  // ends the exchange with an error; the rest of its bytes are then read
  // raw until it closes.
  void step_shutdown() {
    Shutdown& s = *shutdown_;
    if (!s.sent) {
      ERR_clear_error();
      errno = 0;
      const int r = SSL_shutdown(ssl_.get());
      if (r == 1) return end_shutdown(false);
      if (r < 0) {
        auto o = outcome(ssl_.get(), r);
        if (auto* need = std::get_if<Need>(&o)) {
          s.need = *need;
          return;
        }
        return end_shutdown(true);
      }
      s.sent = true;
    }
    std::array<uint8_t, 4096> scratch;
    for (;;) {
      size_t n = 0;
      ERR_clear_error();
      errno = 0;
      const int r = SSL_read_ex(ssl_.get(), scratch.data(), scratch.size(), &n);
      if (r == 1) continue;
      auto o = outcome(ssl_.get(), r);
      if (auto* need = std::get_if<Need>(&o)) {
        s.need = *need;
        return;
      }
      const std::error_code ec = std::get<std::error_code>(o);
      return end_shutdown(ec != asio::error::eof && ec != asio::ssl::error::stream_truncated);
    }
  }

  void end_shutdown(bool drain) {
    auto done = std::move(shutdown_->done);
    shutdown_.reset();
    if (drain && socket_.is_open()) return drain_socket(socket_, strand_, std::move(done));
    asio::post(strand_, std::move(done));
  }

  // Waits for each turn some operation needs, once.
  void arm() {
    bool readable = false, writable = false;
    auto want = [&](Need n) {
      readable |= n == Need::readable;
      writable |= n == Need::writable;
    };
    if (handshake_) want(handshake_->need);
    if (read_) want(read_->need);
    if (write_) want(write_->need);
    if (shutdown_) want(shutdown_->need);
    if (readable && !waiting_readable_) wait(asio::socket_base::wait_read, &waiting_readable_);
    if (writable && !waiting_writable_) wait(asio::socket_base::wait_write, &waiting_writable_);
  }

  void wait(asio::socket_base::wait_type type, bool* waiting) {
    *waiting = true;
    socket_.async_wait(
        type,
        asio::bind_executor(strand_, [this, waiting, alive = alive_](const std::error_code& ec) {
          if (!*alive) return;
          *waiting = false;
          if (ec) return fail_all(ec);
          const Need turned = waiting == &waiting_readable_ ? Need::readable : Need::writable;
          // Only the operations that waited for this turn are retried now;
          // the others wait on.
          auto clear = [turned](Need& n) {
            if (n == turned) n = Need::nothing;
          };
          if (handshake_) clear(handshake_->need);
          if (read_) clear(read_->need);
          if (write_) clear(write_->need);
          if (shutdown_) clear(shutdown_->need);
          pump();
        }));
  }

  // The socket was closed (close(), the deadline) or failed: every
  // operation in flight ends with its error.
  void fail_all(std::error_code ec) {
    if (handshake_) {
      if (timed_out_) ec = asio::error::timed_out;
      auto ready = std::move(handshake_->ready);
      handshake_.reset();
      asio::post(strand_, [ready = std::move(ready), ec] { ready(ec); });
    }
    if (read_) end_read(ec, 0);
    if (write_) end_write(ec);
    if (shutdown_) {
      auto done = std::move(shutdown_->done);
      shutdown_.reset();
      asio::post(strand_, std::move(done));
    }
  }

  void settle() {
    SSL* ssl = ssl_.get();
    info_.version = SSL_get_version(ssl);
    info_.cipher = SSL_get_cipher_name(ssl);
    if (X509* cert = SSL_get1_peer_certificate(ssl)) {
      info_.peer_verified = SSL_get_verify_result(ssl) == X509_V_OK;
      info_.peer_subject = subject_text(cert);
      info_.peer_common_name = common_name(cert);
      X509_free(cert);
    }
    // Whether the kernel took the records over (its `tls` module, and an
    // OpenSSL built for it): then bodies go by SSL_sendfile.
    kernel_send_ = BIO_get_ktls_send(SSL_get_wbio(ssl)) == 1;
    info_.kernel_send = kernel_send_;
    settled_ = true;
  }

  std::shared_ptr<asio::ssl::context> context_;
  asio::ip::tcp::socket socket_;
  Strand strand_;
  asio::steady_timer deadline_;
  std::unique_ptr<SSL, SslFree> ssl_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::optional<Handshake> handshake_;
  std::optional<Read> read_;
  std::optional<Write> write_;
  std::optional<Shutdown> shutdown_;
  bool waiting_readable_ = false;
  bool waiting_writable_ = false;
  bool timed_out_ = false;
  bool settled_ = false;
  bool kernel_send_ = false;
  TlsInfo info_;
  Bytes joined_;
  const std::string peer_host_;
  const bool verify_host_;
  std::string verify_error_;
};

}  // namespace

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
