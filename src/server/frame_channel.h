// FrameChannel: the frames of one client connection — its transport
// (transport.h: plain TCP or TLS) on its own strand, split into frames on
// the way in and written through one queue on the way out (Deliver bodies
// by sendfile where the transport allows it), with the heartbeat and the
// ways to close. Nothing is read or written before the transport is ready
// (a TLS handshake done). It knows frames,
// not commands: each whole frame goes to its handler (connection.h), which
// decodes and runs it.
//
// Frames above the limit — a fixed one before Tune, the negotiated one
// after — are answered with "frame too large" and a close. Reading pauses
// while the handler says so (a publisher over its unconfirmed budget) and
// resumes when told. What waits in the write queue is held back too:
// past kConnectionBacklogMax of queued bytes, or past
// kConnectionBacklogFloor while the server holds more than
// server.max_buffered_bytes for all its clients (ServerCounters::outbound),
// the connection is congested — its requests are not read and its
// deliveries read nothing more (FrameSink::when_room) until its client has
// read enough. A client that never reads what it asked for so makes the
// server hold a bounded amount, not all it would answer.
//
// Thread safety: the strand's, except send(ChunkFrame) and the FrameSink
// side, which post to it.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/task.h"
#include "proto/commands.h"
#include "server/delivery.h"
#include "server/server_counters.h"
#include "server/transport.h"

namespace strata::server {

// What a channel tells the one who runs its frames.
class FrameHandler {
 public:
  virtual ~FrameHandler() = default;
  // One whole frame, its size field stripped; on the strand.
  virtual void on_frame(BytesView body) = 0;
  // Whether the channel may read more now (false: paused until
  // FrameChannel::resume_reading).
  virtual bool reading_allowed() const = 0;
  // The channel closed (once, on the strand): `why` for the log.
  virtual void on_closed(const std::string& why) = 0;
};

class FrameChannel : public FrameSink, public std::enable_shared_from_this<FrameChannel> {
 public:
  // `frame_max`: the limit until set_frame_max (the one before Tune).
  FrameChannel(uint64_t id, Strand strand, std::unique_ptr<Transport> transport, uint32_t frame_max,
               ServerCounters& counters);
  ~FrameChannel() override;

  // Starts reading; frames go to `handler`. Every operation in flight
  // (read, write, timer) keeps the handler alive, as the handler (the
  // connection) keeps the channel: when the event loop stops, dropping
  // what is queued frees both. The transport must be ready within
  // `transport_deadline` (a TLS handshake), else the channel closes.
  void start(const std::shared_ptr<FrameHandler>& handler,
             std::chrono::milliseconds transport_deadline);
  const Transport& transport() const { return *transport_; }

  Strand& strand() { return strand_; }
  uint64_t id() const { return id_; }
  const std::string& peer() const { return peer_; }
  // This side's address and port ("127.0.0.1:5552").
  const std::string& local() const { return local_; }
  // The peer's address without its port.
  const std::string& peer_address() const { return peer_address_; }
  // Bytes read from and written to the peer so far (RabbitMQ's recv_oct
  // and send_oct; a TLS connection's plaintext). On the strand.
  uint64_t bytes_received() const { return recv_oct_; }
  uint64_t bytes_sent() const { return send_oct_; }
  // The TLS session (null over plain TCP, or before the handshake ended).
  const TlsInfo* tls() const { return ready_ ? transport_->tls() : nullptr; }
  bool loopback() const { return loopback_; }
  uint32_t frame_max() const { return frame_max_; }
  void set_frame_max(uint32_t n) { frame_max_ = n; }
  // Heartbeats every `seconds` (0: none), and a peer silent for two
  // intervals is closed.
  void set_heartbeat(uint32_t seconds);
  // From now on a frame begun must be complete within `timeout` while the
  // channel reads (0: no limit): a peer trickling one frame is closed.
  void set_partial_frame_timeout(std::chrono::milliseconds timeout);
  // From now on a write must end within `timeout` (0: no limit): a client
  // that stopped reading is closed even with heartbeats off, when the
  // heartbeat check would never see it.
  void set_send_timeout(std::chrono::milliseconds timeout);
  // Flow control was lifted: the frames already read run, and reading
  // goes on.
  void resume_reading();

  // ---- writing ----
  void send(Bytes frame);
  // FrameSink: a Deliver frame, in order with the other frames. Any thread.
  void send(std::shared_ptr<const ChunkFrame> frame,
            std::function<void(std::error_code)> done) override;
  bool congested() const override;
  void when_room(std::function<void()> fn) override;
  // Bytes queued and being written (wire bytes, a sendfile body's too), and
  // the part of them held in memory.
  uint64_t out_bytes() const { return out_bytes_; }
  uint64_t buffered_bytes() const { return buffered_; }
  uint32_t next_correlation() { return next_correlation_++; }

  // ---- closing ----
  bool closed() const { return closed_; }
  // Closing: no further frame is read or run.
  bool closing() const { return closing_; }
  void close_now(const std::string& why);
  void close_with(proto::ResponseCode code, const std::string& reason);
  void close_after_flush();
  // Closes once what is queued is written, at the latest after `linger`
  // (a client that answered its own Close lingers to take repeated ones).
  void close_after(std::chrono::milliseconds linger);

 private:
  void read_more();
  // Ends our side after the last frame and drops what the peer still sends
  // until it closes (at most kHalfCloseLinger), then closes.
  void half_close(const std::string& why);
  // ... once no read is in flight: Transport::finish.
  void finish();
  // The read buffer's usual size: a read's worth once open, no more than
  // one frame may take before.
  size_t read_buffer_floor() const;
  void on_read(const std::error_code& ec, size_t n);
  void process_frames();
  void write_more();
  // A write ended: `wire` bytes (`in_memory` of them held) leave the
  // queue, counted as sent if they were.
  void unqueue(uint64_t wire, uint64_t in_memory, bool sent);
  // ... then the next write starts, or an error closes the channel.
  void write_ended(const std::error_code& ec);
  void arm_heartbeat();
  // The partial-frame clock: started when bytes of an unfinished frame wait
  // in the buffer while reading, stopped by a completed frame, an empty
  // buffer or a pause.
  void track_partial(bool frame_completed);
  void arm_partial_timer(std::chrono::milliseconds after);
  // The send clock: armed while a write is in flight, it closes the
  // channel when one has waited send_timeout_.
  void arm_send_timer(std::chrono::milliseconds after);
  // Memory queued for the peer: counted here and in the server's total.
  void hold(uint64_t n);
  void release(uint64_t n);
  // Whether reading and deliveries wait for the write queue (congested),
  // counting and logging a pause when it begins; after a write, whether
  // they can go on.
  bool held_back();
  void after_write();

  const uint64_t id_;
  Strand strand_;
  std::unique_ptr<Transport> transport_;
  ServerCounters& counters_;
  std::weak_ptr<FrameHandler> handler_;
  // Captured by every operation started, with the channel itself.
  struct Keep {
    std::shared_ptr<FrameChannel> channel;
    std::shared_ptr<FrameHandler> handler;
  };
  Keep keep() { return Keep{shared_from_this(), handler_.lock()}; }
  bool loopback_ = false;
  std::string peer_;
  std::string local_;
  std::string peer_address_;
  uint64_t recv_oct_ = 0;  // on the strand
  uint64_t send_oct_ = 0;
  uint32_t frame_max_;
  uint32_t heartbeat_s_ = 0;
  asio::steady_timer heartbeat_timer_;
  asio::steady_timer linger_timer_;
  asio::steady_timer partial_timer_;
  std::chrono::milliseconds partial_timeout_{0};
  std::optional<std::chrono::steady_clock::time_point> partial_since_;
  bool partial_armed_ = false;
  asio::steady_timer send_timer_;
  std::chrono::milliseconds send_timeout_{0};
  bool send_armed_ = false;
  // When the write in flight began.
  std::chrono::steady_clock::time_point write_since_;
  std::chrono::steady_clock::time_point last_read_;
  std::chrono::steady_clock::time_point last_write_;

  Bytes in_;
  size_t in_begin_ = 0;
  size_t in_end_ = 0;
  bool reading_ = false;
  bool ready_ = false;  // the transport carries frames

  // One entry of the write queue: frame bytes, or a Deliver frame that may
  // carry file bytes for sendfile.
  struct OutItem {
    Bytes bytes;
    std::shared_ptr<const ChunkFrame> chunk;
    std::function<void(std::error_code)> done;
  };
  std::deque<OutItem> out_q_;
  std::vector<Bytes> writing_;
  uint64_t out_bytes_ = 0;
  uint64_t buffered_ = 0;    // of out_bytes_, in memory
  bool backlogged_ = false;  // reading and deliveries wait for the queue to drain
  bool backlog_logged_ = false;
  std::vector<std::function<void()>> room_waiters_;
  bool write_active_ = false;
  bool close_after_write_ = false;
  bool closing_ = false;
  bool lingering_ = false;  // close_after: the client's end closes it at once
  bool draining_ = false;   // half_close: our side ended, the peer's read and dropped
  bool finishing_ = false;  // Transport::finish started
  std::string drain_why_;
  bool closed_ = false;
  uint32_t next_correlation_ = 1;
};

}  // namespace strata::server
