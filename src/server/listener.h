// Listener: the stream protocol's TCP listener. Each accepted socket gets a
// strand of its own on the event loop and goes to `on_accept`; accepting
// goes on until close(). An accept that fails (out of file descriptors, a
// connection reset before it was taken) is logged and retried after a pause,
// never in a busy loop; after close() nothing is accepted or retried.
//
// Thread safety: open() and close() from any thread; the acceptor is used
// only on a strand of its own; on_accept runs on the event loop.
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/task.h"

namespace strata::server {

class Listener {
 public:
  using OnAccept = std::function<void(asio::ip::tcp::socket socket, Strand strand)>;
  // Binds "host:port" (port 0: a free one). Errors name the address.
  static Result<std::unique_ptr<Listener>> open(asio::io_context& io, const std::string& listen);
  ~Listener();

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  void start(OnAccept on_accept);
  // Stops accepting (posted to the event loop). Idempotent.
  void close();

 private:
  Listener(asio::io_context& io, std::unique_ptr<asio::ip::tcp::acceptor> acceptor);
  void accept();
  void on_accepted(const std::error_code& ec, asio::ip::tcp::socket sock, Strand strand);

  asio::io_context& io_;
  // The acceptor, the retry timer and closed_ are touched only on here.
  Strand strand_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  asio::steady_timer retry_timer_;
  bool closed_ = false;
  // Failed accepts in a row (for the pause and for logging less).
  uint64_t failures_ = 0;
  OnAccept on_accept_;
  std::string host_;
  uint16_t port_ = 0;
};

}  // namespace strata::server
