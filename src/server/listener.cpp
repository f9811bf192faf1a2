#include "server/listener.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio/bind_executor.hpp>
#include <asio/ip/address.hpp>
#include <asio/post.hpp>

#include "server/serve_config.h"
#include "server/server_limits.h"

namespace strata::server {

Listener::Listener(asio::io_context& io, std::unique_ptr<asio::ip::tcp::acceptor> acceptor)
    : io_(io),
      strand_(asio::make_strand(io)),
      acceptor_(std::move(acceptor)),
      retry_timer_(strand_) {}

Listener::~Listener() = default;

Result<std::unique_ptr<Listener>> Listener::open(asio::io_context& io, const std::string& listen) {
  STRATA_ASSIGN_OR_RETURN(auto hp, parse_host_port("listen", listen));
  std::error_code ec;
  auto addr = asio::ip::make_address(hp.first, ec);
  if (ec) {
    return Error(Errc::invalid_argument,
                 fmt::format("serve: listen address '{}' is not an IP address", hp.first));
  }
  asio::ip::tcp::endpoint ep(addr, hp.second);
  auto acc = std::make_unique<asio::ip::tcp::acceptor>(io);
  acc->open(ep.protocol(), ec);
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error(Errc::io, fmt::format("serve: cannot listen on {}: {}", listen, ec.message()));
  }
  std::unique_ptr<Listener> l(new Listener(io, std::move(acc)));
  l->host_ = hp.first;
  l->port_ = l->acceptor_->local_endpoint().port();
  return l;
}

void Listener::start(OnAccept on_accept) {
  on_accept_ = std::move(on_accept);
  asio::post(strand_, [this] { accept(); });
}

void Listener::accept() {
  if (closed_) return;
  Strand conn_strand = asio::make_strand(io_);
  acceptor_->async_accept(
      conn_strand, asio::bind_executor(strand_, [this, conn_strand](const std::error_code& ec,
                                                                    asio::ip::tcp::socket sock) {
        on_accepted(ec, std::move(sock), conn_strand);
      }));
}

void Listener::on_accepted(const std::error_code& ec, asio::ip::tcp::socket sock,
                           Strand conn_strand) {
  // Closed while this completion was queued: an accept on the closed
  // acceptor would fail at once, again and again (a stop that never ends).
  if (closed_ || ec == asio::error::operation_aborted) return;
  if (!ec) {
    failures_ = 0;
    on_accept_(std::move(sock), conn_strand);
    accept();
    return;
  }
  failures_ += 1;
  // Out of descriptors (EMFILE) fails every accept until a connection
  // closes: pause instead of spinning, and log the first failure and then
  // at powers of two.
  if ((failures_ & (failures_ - 1)) == 0) {
    spdlog::warn("serve: accepting on {}:{} failed ({} in a row): {}; retrying in {} ms", host_,
                 port_, failures_, ec.message(), kAcceptRetryPause.count());
  }
  retry_timer_.expires_after(kAcceptRetryPause);
  retry_timer_.async_wait([this](const std::error_code& wait_ec) {
    if (!wait_ec) accept();
  });
}

void Listener::close() {
  asio::post(strand_, [this] {
    closed_ = true;
    std::error_code ec;
    retry_timer_.cancel();
    acceptor_->close(ec);
  });
}

}  // namespace strata::server
