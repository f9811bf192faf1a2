#include "server/owner_link.h"

#include <fmt/format.h>

#include <asio/bind_executor.hpp>
#include <asio/connect.hpp>
#include <asio/write.hpp>
#include <cstring>

#include "common/overloaded.h"
#include "server/server_limits.h"

namespace strata::server {

using namespace proto;

namespace {

constexpr uint8_t kSubscriptionId = 0;

// The owner is a strata node: it reads a connection's frames in order, so
// the whole setup goes at once. No heartbeats: the replica notices an owner
// change from the cluster's view and from the owner's MetadataUpdate, and a
// dead owner by the connection's end. No frame limit from this side.
ClientHandshakeOptions handshake_options(const OwnerLinkOptions& o) {
  ClientHandshakeOptions h;
  h.properties = {{"product", std::string(kPeerProduct)}};
  h.user = o.user;
  h.password = o.password;
  h.mechanism = o.mechanism;
  h.frame_max = 0;
  h.heartbeat = 0;
  h.versions = {CommandVersion{kDeliver, 1, 2}};
  h.pipelined = true;
  return h;
}

}  // namespace

OwnerLink::OwnerLink(Strand strand, OwnerLinkOptions opts, OwnerLinkHandlers handlers)
    : strand_(strand),
      opts_(std::move(opts)),
      h_(std::move(handlers)),
      resolver_(strand),
      socket_(strand),
      setup_timer_(strand),
      handshake_(handshake_options(opts_)) {}

OwnerLink::~OwnerLink() = default;

std::shared_ptr<OwnerLink> OwnerLink::start(Strand strand, OwnerLinkOptions opts,
                                            OwnerLinkHandlers handlers) {
  std::shared_ptr<OwnerLink> l(new OwnerLink(strand, std::move(opts), std::move(handlers)));
  l->setup_timer_.expires_after(l->opts_.setup_deadline);
  l->setup_timer_.async_wait([w = std::weak_ptr<OwnerLink>(l)](const std::error_code& ec) {
    auto self = w.lock();
    if (ec || !self || self->up_) return;
    self->fail(Error(Errc::timeout,
                     fmt::format("owner {}:{} did not answer the {} within {} ms", self->opts_.host,
                                 self->opts_.port, self->opts_.ask ? "question" : "subscription",
                                 self->opts_.setup_deadline.count())));
  });
  l->connect();
  return l;
}

void OwnerLink::stop() {
  if (ended_) return;
  ended_ = true;
  std::error_code ec;
  setup_timer_.cancel();
  resolver_.cancel();
  if (transport_) {
    transport_->close();
  } else {
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }
}

void OwnerLink::fail(Error e) {
  if (ended_) return;
  stop();
  if (h_.down) h_.down(e);
}

void OwnerLink::connect() {
  resolver_.async_resolve(
      opts_.host, std::to_string(opts_.port),
      [self = shared_from_this()](std::error_code ec, asio::ip::tcp::resolver::results_type r) {
        if (self->ended_) return;
        if (ec) {
          return self->fail(Error(Errc::unavailable, fmt::format("resolving owner {}: {}",
                                                                 self->opts_.host, ec.message())));
        }
        asio::async_connect(
            self->socket_, r, [self](std::error_code ec2, const asio::ip::tcp::endpoint&) {
              if (self->ended_) return;
              if (ec2) {
                return self->fail(
                    Error(Errc::unavailable,
                          fmt::format("connecting to owner {}:{}: {}", self->opts_.host,
                                      self->opts_.port, ec2.message())));
              }
              std::error_code e;
              self->socket_.set_option(asio::ip::tcp::no_delay(true), e);
              self->on_connected();
            });
      });
}

void OwnerLink::on_connected() {
  if (opts_.tls) {
    transport_ = tls_client_transport(std::move(socket_), strand_, opts_.tls, opts_.host,
                                      opts_.tls_verify_host);
  } else {
    transport_ = plain_transport(std::move(socket_), strand_);
  }
  // The setup timer bounds the handshake too (it closes the transport).
  transport_->start(opts_.setup_deadline, [self = shared_from_this()](std::error_code ec) {
    if (self->ended_) return;
    if (ec) {
      const std::string why = self->transport_->verify_error();
      return self->fail(
          Error(Errc::unavailable,
                fmt::format("TLS handshake with owner {}:{}: {}{}", self->opts_.host,
                            self->opts_.port, ec.message(), why.empty() ? "" : " (" + why + ")")));
    }
    self->connected_ = true;
    self->send_setup();
    self->in_.resize(kLinkReadChunk);
    self->read_more();
  });
}

void OwnerLink::send_setup() {
  Bytes f = handshake_.start();
  subscribe_corr_ = handshake_.next_correlation();
  if (opts_.ask) {
    opts_.ask(subscribe_corr_, &f);
    out_.push_front(std::move(f));
    write_more();
    return;
  }
  SubscribeRequest s;
  s.correlation_id = subscribe_corr_;
  s.subscription_id = kSubscriptionId;
  s.stream = opts_.stream;
  s.offset = opts_.spec;
  s.credit = opts_.credit;
  if (opts_.copy) {
    s.properties = {{std::string(kCopyProperty), "1"},
                    {std::string(kCopyNodeProperty), opts_.copy_node}};
    if (opts_.copy_holds_first) s.properties.emplace_back(std::string(kCopyHoldsProperty), "1");
  }
  encode(s, &f);
  // Ahead of any Credit given while the link was connecting.
  out_.push_front(std::move(f));
  write_more();
}

void OwnerLink::credit(uint16_t n) {
  if (ended_ || n == 0) return;
  Bytes f;
  encode(CreditRequest{kSubscriptionId, n}, &f);
  write(std::move(f));
}

void OwnerLink::write(Bytes frame) {
  out_.push_back(std::move(frame));
  if (!writing_) write_more();
}

void OwnerLink::write_more() {
  // Until connected (and past the TLS handshake) frames wait in out_.
  if (ended_ || out_.empty() || !connected_) {
    writing_ = false;
    return;
  }
  writing_ = true;
  transport_->write(
      {asio::buffer(out_.front())}, [self = shared_from_this()](std::error_code ec, size_t) {
        if (self->ended_) return;
        if (ec) {
          return self->fail(
              Error(Errc::unavailable, fmt::format("writing to owner {}:{}: {}", self->opts_.host,
                                                   self->opts_.port, ec.message())));
        }
        self->out_.pop_front();
        self->write_more();
      });
}

void OwnerLink::read_more() {
  if (ended_) return;
  if (in_.size() - in_end_ < kLinkReadChunk / 4) {
    std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
    if (in_.size() - in_end_ < kLinkReadChunk / 4) in_.resize(in_.size() + kLinkReadChunk);
  }
  transport_->read_some(
      asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
      [self = shared_from_this()](std::error_code ec, size_t n) {
        if (self->ended_) return;
        if (ec) {
          return self->fail(
              Error(Errc::unavailable,
                    fmt::format("connection to owner {}:{}: {}", self->opts_.host, self->opts_.port,
                                ec == asio::error::eof ? "closed" : ec.message())));
        }
        self->in_end_ += n;
        while (!self->ended_) {
          BytesView buf(self->in_.data() + self->in_begin_, self->in_end_ - self->in_begin_);
          FrameSplit sp = split_frame(buf, 0);
          if (sp.kind != FrameSplit::frame) {
            // Make room for the whole frame in one buffer.
            if (buf.size() >= kFrameSizeBytes) {
              size_t need = kFrameSizeBytes + get_be32(u8(buf.data()));
              if (self->in_.size() - self->in_begin_ < need) {
                std::memmove(self->in_.data(), buf.data(), buf.size());
                self->in_end_ = buf.size();
                self->in_begin_ = 0;
                self->in_.resize(need + kLinkReadChunk);
              }
            }
            break;
          }
          self->on_frame(sp.body(buf));
          self->in_begin_ += sp.total();
        }
        if (self->in_begin_ == self->in_end_) self->in_begin_ = self->in_end_ = 0;
        self->read_more();
      });
}

void OwnerLink::on_frame(BytesView body) {
  auto f = decode_server_frame(body);
  if (!f.ok()) {
    // A command this side does not read is not ours to answer: skip it.
    if (f.error().code == Errc::unsupported_version) return;
    return fail(std::move(f).error().with_context("a frame from the owner"));
  }
  if (!handshake_.done()) {
    auto r = handshake_.on(*f);
    if (!r.ok()) {
      return fail(Error(r.code() == Errc::closed ? Errc::unavailable : r.code(),
                        fmt::format("owner {}:{}: {}", opts_.host, opts_.port, r.error().message)));
    }
    return;  // pipelined: nothing more to send
  }
  if (opts_.ask) return on_answer(*f);
  std::visit(
      [this](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, DeliverFrame>) {
          if (h_.deliver) h_.deliver(m);
        } else if constexpr (std::is_same_v<T, MetadataUpdate>) {
          fail(Error(Errc::unavailable,
                     fmt::format("owner {}:{} no longer serves {} ({})", opts_.host, opts_.port,
                                 m.stream, response_code_name(m.code))));
        } else if constexpr (std::is_same_v<T, CloseRequest>) {
          fail(Error(Errc::unavailable, fmt::format("owner {}:{} closed the connection: {}",
                                                    opts_.host, opts_.port, m.reason)));
        } else if constexpr (std::is_same_v<T, CreditResponse>) {
          fail(Error(Errc::unavailable, fmt::format("owner {}:{} refused credit: {}", opts_.host,
                                                    opts_.port, response_code_name(m.code))));
        } else if constexpr (requires {
                               m.code;
                               m.correlation_id;
                             }) {
          if (m.code != ResponseCode::ok) {
            Errc code = Errc::unavailable;
            if (m.code == ResponseCode::stream_does_not_exist) code = Errc::not_found;
            // A copy subscription refused because the owner's log ends
            // before the copy's last chunk (kCopyHoldsProperty).
            if (opts_.copy_holds_first && m.correlation_id == subscribe_corr_ &&
                m.code == ResponseCode::precondition_failed) {
              code = Errc::conflict;
            }
            return fail(
                Error(code, fmt::format("owner {}:{}: {} answered {}", opts_.host, opts_.port,
                                        command_name(T::kKey), response_code_name(m.code))));
          }
          if (m.correlation_id == subscribe_corr_ && !up_) {
            up_ = true;
            setup_timer_.cancel();
            if (h_.up) h_.up();
          }
        }
      },
      *f);
}

// A question's link: the frame answering it (whatever its code: the
// owner's refusal is the client's answer too) ends the link; a Close ends
// it as a failure; anything else (heartbeats, notices) is not for it.
void OwnerLink::on_answer(const ServerFrame& f) {
  if (const auto* c = std::get_if<CloseRequest>(&f)) {
    return fail(Error(Errc::unavailable, fmt::format("owner {}:{} closed the connection: {}",
                                                     opts_.host, opts_.port, c->reason)));
  }
  const bool answers = std::visit(
      [this](const auto& m) {
        if constexpr (requires { m.correlation_id; }) {
          using T = std::decay_t<decltype(m)>;
          return (T::kKey & kResponseFlag) != 0 && m.correlation_id == subscribe_corr_;
        } else {
          return false;
        }
      },
      f);
  if (!answers) return;
  stop();
  if (h_.answer) h_.answer(f);
}

}  // namespace strata::server
