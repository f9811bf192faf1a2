// A blocking stream-protocol client for the server tests: frames through
// proto/ (the codec under test elsewhere), a TCP socket with timeouts, and
// `strata serve` as a child process on 127.0.0.1 port 0.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "proto/dispatch.h"
#include "support/process.h"

namespace strata::test {

using namespace std::chrono_literals;

class StreamClient {
 public:
  static Result<StreamClient> connect(int port, const std::string& host = "127.0.0.1");
  StreamClient() = default;
  StreamClient(StreamClient&& o) noexcept;
  StreamClient& operator=(StreamClient&& o) noexcept;
  ~StreamClient();

  Status send_raw(BytesView bytes);
  // Sends as much of `bytes` as the socket takes until `wait` passes with
  // no room (a server that stopped reading): the bytes sent.
  size_t send_within(BytesView bytes, std::chrono::milliseconds wait);
  template <typename T>
  Status send(const T& m) {
    Bytes b;
    proto::encode(m, &b);
    return send_raw(b);
  }
  // The next frame's body (after the size), or an error: timeout, or
  // Errc::closed when the server closed the connection.
  Result<Bytes> read_frame(std::chrono::milliseconds timeout = 10s);
  Result<proto::ServerFrame> read(std::chrono::milliseconds timeout = 10s);
  // Reads until a frame of type T arrives (heartbeats skipped; other frames
  // kept for next()). Errors if another frame type arrives and `strict`.
  template <typename T>
  Result<T> expect(std::chrono::milliseconds timeout = 10s) {
    for (;;) {
      auto f = read(timeout);
      if (!f.ok()) return std::move(f).error();
      if (auto* m = std::get_if<T>(&*f)) return std::move(*m);
      if (std::holds_alternative<proto::HeartbeatFrame>(*f)) continue;
      skipped.push_back(std::move(*f));
    }
  }
  // Waits for the server to close the connection (EOF), discarding frames.
  bool closed_by_server(std::chrono::milliseconds timeout = 10s);

  // PeerProperties, SASL PLAIN, Tune, Open `vhost`; the response codes of
  // the authentication and open steps.
  Status handshake(const std::string& user = "guest", const std::string& password = "guest",
                   bool exchange_versions = true, const std::string& vhost = "/");
  uint32_t corr() { return next_corr_++; }

  std::vector<proto::ServerFrame> skipped;
  proto::PeerPropertiesResponse peer_properties;
  proto::OpenResponse open_response;
  proto::TuneFrame server_tune;

 private:
  int fd_ = -1;
  Bytes in_;
  uint32_t next_corr_ = 1;
};

// `strata serve` on a data directory, listening on 127.0.0.1 port 0.
class ServeProcess {
 public:
  // Starts and waits for the "listening on" line. Extra args appended.
  static ServeProcess start(const std::string& data_dir, const std::vector<std::string>& extra = {},
                            const std::string& log_dir = "");
  int port() const { return port_; }
  Process& process() { return proc_; }
  // "http://127.0.0.1:PORT" of its HTTP endpoint (started with an http
  // listen address), from its "http on" line, waited for up to `wait`;
  // "" when it printed none.
  std::string http_url(std::chrono::milliseconds wait = 0ms);
  // SIGTERM and wait; the exit status.
  std::optional<int> stop(std::chrono::milliseconds timeout = 60s);

 private:
  Process proc_;
  int port_ = 0;
};

// Waits (Metadata, every 50 ms, at most `timeout`) until `stream` is
// served: a stream recovered from the bucket at start is opened in the
// background, answering stream_not_available until then.
bool wait_served(StreamClient& c, const std::string& stream,
                 std::chrono::milliseconds timeout = 20s);

// Encodes a Publish with simple entries for `bodies`, ids from `first_id`.
proto::PublishRequest make_publish(uint8_t publisher_id, uint64_t first_id,
                                   const std::vector<std::string>& bodies, Bytes* storage);

// The simple-entry records of a delivered chunk (and checks its CRC).
Result<std::vector<std::string>> chunk_records(const proto::DeliverFrame& d);

}  // namespace strata::test
