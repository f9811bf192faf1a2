// One client connection of `strata perf` to a stream protocol server
// (strata serve or RabbitMQ). Setup is synchronous — connect, the handshake
// and request/response calls, before the event loop runs — and the load
// phase is asynchronous on a single-threaded io_context: frames are handed
// to a handler as they arrive, writes are coalesced into one buffer that is
// written while the next fills.
#pragma once

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "proto/dispatch.h"

namespace strata::perf {

// How the connections of a run opened: the time from the TCP connect to
// Open's answer, and the TLS handshake's part of it (TLS only). Shared by
// every connection of a run (opened from any thread).
struct OpenTimes {
  std::mutex mu;
  std::vector<double> open_ms;
  std::vector<double> tls_handshake_ms;
  std::string tls_version, tls_cipher;  // the last TLS session's
};

// TLS to the server (RabbitMQ's convention: port 5551): the server's
// certificate checked against `ca_file` (the system's CAs when empty) and
// the host name, unless `verify` is off; a client certificate when given.
struct TlsClientOptions {
  std::string ca_file;
  std::string cert_file, key_file;
  // The name the certificate must carry and SNI (default: the host).
  std::string server_name;
  bool verify = true;
};
// invalid_argument naming the file OpenSSL could not load.
Result<std::shared_ptr<asio::ssl::context>> make_tls_client_context(const TlsClientOptions& o);

struct ConnectOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 5552;
  std::string username = "guest";
  std::string password = "guest";
  std::string virtual_host = "/";
  std::string connection_name = "strata-perf";
  // Largest frame we accept; the server's Tune may lower it.
  uint32_t frame_max = 1048576;
  // Set: TLS over the TCP connection (make_tls_client_context).
  std::shared_ptr<asio::ssl::context> tls;
  TlsClientOptions tls_options;
  // Set: each connection records how long it took to open.
  std::shared_ptr<OpenTimes> open_times;
};

class Connection {
 public:
  explicit Connection(asio::io_context& io) : socket_(io) {}

  // Connects and runs PeerProperties, SASL PLAIN, Tune, Open and — only for
  // servers 3.11 or newer (RabbitMQ 3.10 closes the connection on an
  // unknown key) — ExchangeCommandVersions.
  Status open(const ConnectOptions& o);

  // The server's peer properties ("product", "version", ...).
  std::string server_property(std::string_view key) const;
  uint32_t frame_max() const { return frame_max_; }

  // Synchronous request/response (setup and teardown, never while the
  // event loop reads this connection). Fills in the correlation id.
  template <typename Response, typename Request>
  Result<Response> call(Request req) {
    req.correlation_id = next_correlation_++;
    Bytes frame;
    proto::encode(req, &frame);
    STRATA_TRY(write_sync(frame));
    auto body = read_response_sync(Response::kKey, req.correlation_id);
    if (!body.ok()) return std::move(body).error();
    return proto::decode<Response>(*body);
  }
  Status write_sync(BytesView frame);

  // Load phase. The handler gets each frame (views valid during the call);
  // on_error gets the first failure (read, write, undecodable frame).
  using FrameHandler = std::function<void(const proto::ServerFrame&)>;
  using ErrorHandler = std::function<void(const Error&)>;
  void start(FrameHandler on_frame, ErrorHandler on_error);
  // Frames appended here are sent by flush(); encode straight into it.
  Bytes* out() { return &pending_; }
  void flush();
  size_t queued_bytes() const { return pending_.size() + in_flight_.size(); }
  void close();

 private:
  // TLS: the handshake (SNI, the certificate's name checked) on socket_.
  Status start_tls(const ConnectOptions& o);
  // `f(stream)` with the stream frames go through: the TLS stream over
  // socket_, or socket_ itself.
  template <class F>
  decltype(auto) with_stream(F&& f) {
    if (tls_) return f(*tls_);
    return f(socket_);
  }
  Result<Bytes> read_frame_sync();
  Result<Bytes> read_response_sync(uint16_t key, uint32_t correlation_id);
  void read_more();
  void on_read(asio::error_code ec, size_t n);
  void fail(const Error& e);

  asio::ip::tcp::socket socket_;
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_;
  proto::Properties server_properties_;
  uint32_t frame_max_ = 0;
  uint32_t next_correlation_ = 1;
  std::string where_;

  // Received bytes: [begin_, end_) of in_ are not yet parsed.
  std::vector<char> in_ = std::vector<char>(256 * 1024);
  size_t begin_ = 0, end_ = 0;

  Bytes pending_, in_flight_;
  bool writing_ = false;
  bool failed_ = false;
  FrameHandler on_frame_;
  ErrorHandler on_error_;
};

}  // namespace strata::perf
