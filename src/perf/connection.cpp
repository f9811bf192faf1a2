#include "perf/connection.h"

#include <fmt/format.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstring>

#include "net/tls_peer_name.h"
#include "proto/client_handshake.h"

namespace strata::perf {

using namespace strata::proto;

namespace {
// Incoming frames are not held to the negotiated frame max: servers deliver
// a chunk whole (RabbitMQ and strata both may exceed it); this only bounds
// what a broken peer can make us buffer.
constexpr uint32_t kMaxIncomingFrame = 256u << 20;
}  // namespace

std::string Connection::server_property(std::string_view key) const {
  for (const auto& [k, v] : server_properties_) {
    if (k == key) return v;
  }
  return {};
}

Result<std::shared_ptr<asio::ssl::context>> make_tls_client_context(const TlsClientOptions& o) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  // TLS 1.2 and 1.3 only, as strata's listener and RabbitMQ's defaults.
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                   asio::ssl::context::no_tlsv1_1);
  asio::error_code ec;
  if (o.verify) {
    ctx->set_verify_mode(asio::ssl::verify_peer, ec);
    if (o.ca_file.empty()) {
      ctx->set_default_verify_paths(ec);
    } else {
      ctx->load_verify_file(o.ca_file, ec);
    }
    if (ec) {
      return make_error(Errc::invalid_argument,
                        fmt::format("--tls-ca-file {}: {}", o.ca_file, ec.message()));
    }
  } else {
    ctx->set_verify_mode(asio::ssl::verify_none, ec);
  }
  if (o.cert_file.empty() != o.key_file.empty()) {
    return make_error(Errc::invalid_argument, "--tls-cert-file and --tls-key-file go together");
  }
  if (!o.cert_file.empty()) {
    ctx->use_certificate_chain_file(o.cert_file, ec);
    if (ec) {
      return make_error(Errc::invalid_argument,
                        fmt::format("--tls-cert-file {}: {}", o.cert_file, ec.message()));
    }
    ctx->use_private_key_file(o.key_file, asio::ssl::context::pem, ec);
    if (ec) {
      return make_error(Errc::invalid_argument,
                        fmt::format("--tls-key-file {}: {}", o.key_file, ec.message()));
    }
  }
  return ctx;
}

Status Connection::start_tls(const ConnectOptions& o) {
  tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, *o.tls);
  SSL* ssl = tls_->native_handle();
  const std::string& name = o.tls_options.server_name.empty() ? o.host : o.tls_options.server_name;
  if (!net::name_tls_peer(ssl, name, o.tls_options.verify)) {
    return make_error(Errc::invalid_argument, where_ + ": TLS: bad name " + name);
  }
  asio::error_code ec;
  tls_->handshake(asio::ssl::stream_base::client, ec);
  if (ec) {
    const long v = SSL_get_verify_result(ssl);
    return make_error(
        Errc::unavailable,
        fmt::format("{}: TLS handshake: {}{}", where_, ec.message(),
                    v == X509_V_OK ? std::string()
                                   : std::string(" (") + X509_verify_cert_error_string(v) + ")"));
  }
  if (o.open_times) {
    std::lock_guard l(o.open_times->mu);
    o.open_times->tls_version = SSL_get_version(ssl);
    o.open_times->tls_cipher = SSL_get_cipher_name(ssl);
  }
  return {};
}

Status Connection::write_sync(BytesView frame) {
  asio::error_code ec;
  with_stream([&](auto& s) { asio::write(s, asio::buffer(frame.data(), frame.size()), ec); });
  if (ec) return make_error(Errc::io, where_ + ": write: " + ec.message());
  return {};
}

Result<Bytes> Connection::read_frame_sync() {
  for (;;) {
    BytesView buf(in_.data() + begin_, end_ - begin_);
    FrameSplit s = split_frame(buf, kMaxIncomingFrame);
    if (s.kind == FrameSplit::too_large) {
      return make_error(Errc::corrupt,
                        fmt::format("{}: server sent a frame of {} bytes", where_, s.total()));
    }
    if (s.kind == FrameSplit::frame) {
      Bytes body(s.body(buf));
      begin_ += s.total();
      return body;
    }
    if (begin_ > 0) {
      std::memmove(in_.data(), in_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (s.kind == FrameSplit::need_more && buf.size() >= kFrameSizeBytes &&
        s.total() > in_.size()) {
      in_.resize(s.total());
    }
    asio::error_code ec;
    size_t n = with_stream([&](auto& s) {
      return s.read_some(asio::buffer(in_.data() + end_, in_.size() - end_), ec);
    });
    if (ec) return make_error(Errc::io, where_ + ": read: " + ec.message());
    end_ += n;
  }
}

Result<Bytes> Connection::read_response_sync(uint16_t key, uint32_t correlation_id) {
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(Bytes body, read_frame_sync());
    auto head = peek_head(body);
    if (!head.ok()) return std::move(head).error();
    if (head->key == key && peek_correlation_id(body) == correlation_id) return body;
    if (head->key == kHeartbeat || head->key == kMetadataUpdate) continue;
    if (head->key == kClose) {
      auto c = decode<CloseRequest>(body);
      std::string reason = c.ok() ? c->reason : std::string("?");
      return make_error(Errc::closed,
                        fmt::format("{}: server closed the connection waiting for {}: {}", where_,
                                    command_name(key), reason));
    }
    return make_error(Errc::corrupt,
                      fmt::format("{}: expected {} (correlation {}), got {}", where_,
                                  command_name(key), correlation_id, command_name(head->key)));
  }
}

Status Connection::open(const ConnectOptions& o) {
  where_ = fmt::format("{}:{}", o.host, o.port);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  asio::error_code ec;
  asio::ip::tcp::resolver resolver(socket_.get_executor());
  auto endpoints = resolver.resolve(o.host, std::to_string(o.port), ec);
  if (ec) return make_error(Errc::io, where_ + ": resolve: " + ec.message());
  asio::connect(socket_, endpoints, ec);
  if (ec) return make_error(Errc::unavailable, where_ + ": connect: " + ec.message());
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  const auto t_tls = Clock::now();
  if (o.tls) STRATA_TRY(start_tls(o));
  const auto t_tls_done = Clock::now();

  ClientHandshakeOptions ho;
  ho.properties = {{"product", "strata-perf"},
                   {"version", "0.1.0"},
                   {"platform", "C++"},
                   {"connection_name", o.connection_name}};
  ho.user = o.username;
  ho.password = o.password;
  ho.virtual_host = o.virtual_host;
  // The smaller frame limit and no heartbeats (a run is short and every
  // connection is busy).
  ho.frame_max = o.frame_max;
  ho.heartbeat = 0;
  ho.versions = {{kDeclarePublisher, 1, 1}, {kPublish, 1, 1}, {kDeliver, 1, 1}};
  ClientHandshake hs(std::move(ho));
  Bytes out = hs.start();
  while (!hs.done()) {
    STRATA_TRY(write_sync(out));
    STRATA_ASSIGN_OR_RETURN(Bytes body, read_frame_sync());
    auto f = decode_server_frame(body);
    if (!f.ok()) return std::move(f).error().with_context(where_ + ": opening the connection");
    auto next = hs.on(*f);
    if (!next.ok()) return std::move(next).error().with_context(where_);
    out = std::move(next).value();
  }
  STRATA_TRY(write_sync(out));
  server_properties_ = hs.server_properties();
  frame_max_ = hs.tuned().frame_max;
  next_correlation_ = hs.next_correlation();
  if (o.open_times) {
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    std::lock_guard l(o.open_times->mu);
    o.open_times->open_ms.push_back(ms(Clock::now() - t0));
    if (o.tls) o.open_times->tls_handshake_ms.push_back(ms(t_tls_done - t_tls));
  }
  return {};
}

void Connection::start(FrameHandler on_frame, ErrorHandler on_error) {
  on_frame_ = std::move(on_frame);
  on_error_ = std::move(on_error);
  read_more();
}

void Connection::fail(const Error& e) {
  if (failed_) return;
  failed_ = true;
  if (on_error_) on_error_(e);
}

void Connection::read_more() {
  if (begin_ > 0) {
    std::memmove(in_.data(), in_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == in_.size()) in_.resize(in_.size() * 2);
  with_stream([this](auto& s) {
    s.async_read_some(asio::buffer(in_.data() + end_, in_.size() - end_),
                      [this](asio::error_code ec, size_t n) { on_read(ec, n); });
  });
}

void Connection::on_read(asio::error_code ec, size_t n) {
  if (ec) {
    if (ec != asio::error::operation_aborted) {
      fail(make_error(Errc::io, where_ + ": read: " + ec.message()));
    }
    return;
  }
  end_ += n;
  for (;;) {
    BytesView buf(in_.data() + begin_, end_ - begin_);
    FrameSplit s = split_frame(buf, kMaxIncomingFrame);
    if (s.kind == FrameSplit::too_large) {
      fail(make_error(Errc::corrupt,
                      fmt::format("{}: server sent a frame of {} bytes", where_, s.total())));
      return;
    }
    if (s.kind == FrameSplit::need_more) {
      if (buf.size() >= kFrameSizeBytes && s.total() > in_.size()) in_.resize(s.total());
      break;
    }
    auto f = decode_server_frame(s.body(buf));
    if (!f.ok()) {
      fail(std::move(f).error().with_context(where_));
      return;
    }
    on_frame_(*f);
    begin_ += s.total();
    if (failed_) return;
  }
  read_more();
}

void Connection::flush() {
  if (writing_ || pending_.empty() || failed_) return;
  writing_ = true;
  std::swap(pending_, in_flight_);
  with_stream([this](auto& s) {
    asio::async_write(s, asio::buffer(in_flight_), [this](asio::error_code ec, size_t) {
      writing_ = false;
      in_flight_.clear();
      if (ec) {
        if (ec != asio::error::operation_aborted) {
          fail(make_error(Errc::io, where_ + ": write: " + ec.message()));
        }
        return;
      }
      flush();
    });
  });
}

void Connection::close() {
  asio::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

}  // namespace strata::perf
