#include "server/transport.h"

#include <array>
#include <asio/bind_executor.hpp>
#include <asio/post.hpp>
#include <asio/write.hpp>

namespace strata::server {

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

namespace {

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

}  // namespace

std::unique_ptr<Transport> plain_transport(asio::ip::tcp::socket socket, Strand strand) {
  return std::make_unique<PlainTransport>(std::move(socket), std::move(strand));
}

}  // namespace strata::server
