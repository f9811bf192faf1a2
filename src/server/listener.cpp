#include "server/listener.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio/ip/address.hpp>
#include <asio/post.hpp>

#include "server/serve_config.h"

namespace strata::server {

Listener::Listener(asio::io_context& io, std::unique_ptr<asio::ip::tcp::acceptor> acceptor)
    : io_(io), acceptor_(std::move(acceptor)) {}

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
  accept();
}

void Listener::accept() {
  Strand strand = asio::make_strand(io_);
  acceptor_->async_accept(strand,
                          [this, strand](const std::error_code& ec, asio::ip::tcp::socket sock) {
                            if (ec) {
                              if (ec == asio::error::operation_aborted) return;
                              spdlog::warn("serve: accept: {}", ec.message());
                            } else {
                              on_accept_(std::move(sock), strand);
                            }
                            accept();
                          });
}

void Listener::close() {
  asio::post(io_, [this] {
    std::error_code ec;
    acceptor_->close(ec);
  });
}

}  // namespace strata::server
