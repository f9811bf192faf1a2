#include "server/frame_channel.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio/bind_executor.hpp>
#include <asio/post.hpp>
#include <asio/write.hpp>
#include <cstring>

#include "common/assert.h"
#include "server/server_limits.h"

namespace strata::server {

using Clock = std::chrono::steady_clock;

FrameChannel::FrameChannel(uint64_t id, Strand strand, std::unique_ptr<Transport> transport,
                           uint32_t frame_max, ServerCounters& counters)
    : id_(id),
      strand_(std::move(strand)),
      transport_(std::move(transport)),
      counters_(counters),
      frame_max_(frame_max),
      heartbeat_timer_(strand_),
      linger_timer_(strand_),
      partial_timer_(strand_),
      send_timer_(strand_) {
  std::error_code ec;
  auto ep = transport_->tcp().remote_endpoint(ec);
  if (!ec) {
    loopback_ = ep.address().is_loopback();
    peer_address_ = ep.address().to_string();
    peer_ = fmt::format("{}:{}", peer_address_, ep.port());
  }
  if (auto here = transport_->tcp().local_endpoint(ec); !ec) {
    local_ = fmt::format("{}:{}", here.address().to_string(), here.port());
  }
  transport_->tcp().set_option(asio::ip::tcp::no_delay(true), ec);
}

// Frames dropped with the channel are no longer held.
FrameChannel::~FrameChannel() {
  counters_.outbound.sub(buffered_);
}

void FrameChannel::start(const std::shared_ptr<FrameHandler>& handler,
                         std::chrono::milliseconds transport_deadline) {
  handler_ = handler;
  asio::post(strand_, [k = keep(), transport_deadline] {
    auto& self = k.channel;
    self->transport_->start(transport_deadline, [k](std::error_code ec) {
      auto& self = k.channel;
      if (self->closed_) return;
      if (ec) {
        self->counters_.tls_handshake_failures += 1;
        // A refused client certificate: OpenSSL's reason for it too.
        const std::string why = self->transport_->verify_error();
        spdlog::info("connection {} ({}): TLS handshake failed: {}{}", self->id_, self->peer_,
                     ec == asio::error::timed_out ? "not finished in time" : ec.message(),
                     why.empty() ? "" : " (client certificate: " + why + ")");
        self->close_now("TLS handshake: " + ec.message());
        return;
      }
      if (const TlsInfo* t = self->transport_->tls()) {
        spdlog::debug("connection {} ({}): {} {}{}{}", self->id_, self->peer_, t->version,
                      t->cipher, t->peer_subject.empty() ? "" : ", client " + t->peer_subject,
                      t->kernel_send ? ", kernel TLS" : "");
        if (t->kernel_send) self->counters_.tls_kernel_send += 1;
      }
      self->ready_ = true;
      self->last_read_ = self->last_write_ = Clock::now();
      self->read_more();
      if (!self->write_active_) self->write_more();
    });
  });
}

// ---- reading ----

void FrameChannel::read_more() {
  if (!ready_ || reading_ || closed_ || closing_) return;
  auto h = handler_.lock();
  if (!h || !h->reading_allowed()) return;  // resumed by resume_reading
  if (held_back()) return;                  // resumed by after_write
  const size_t floor = read_buffer_floor();
  if (in_.size() < floor) in_.resize(floor);
  if (in_.size() - in_end_ < floor / 4) {
    if (in_begin_ > 0) {
      std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
      in_end_ -= in_begin_;
      in_begin_ = 0;
    }
    // Only a frame larger than the buffer gets here (whole frames are taken
    // out as they complete): it grows with the bytes received, by half
    // again, so a size field alone reserves nothing and a large frame
    // costs a few copies.
    if (in_.size() - in_end_ < floor / 4) in_.resize(in_.size() + std::max(floor, in_.size() / 2));
  }
  reading_ = true;
  transport_->read_some(
      asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
      [k = keep()](const std::error_code& ec, size_t n) { k.channel->on_read(ec, n); });
}

size_t FrameChannel::read_buffer_floor() const {
  // 0: no limit negotiated.
  if (frame_max_ == 0) return kReadChunk;
  return std::min<size_t>(kReadChunk, size_t(frame_max_) + proto::kFrameSizeBytes);
}

void FrameChannel::on_read(const std::error_code& ec, size_t n) {
  reading_ = false;
  if (!ec) recv_oct_ += n;
  if (closed_) return;
  // Half-closing: the read in flight was cancelled (or brought bytes that
  // are dropped now); the transport ends the connection.
  if (draining_) return finish();
  if (ec) {
    // After an answered Close, the client's end of the stream: the answers
    // still queued go out first.
    if (ec == asio::error::eof && lingering_) {
      close_after_flush();
      return;
    }
    close_now(ec == asio::error::eof ? "peer closed" : ec.message());
    return;
  }
  last_read_ = Clock::now();
  in_end_ += n;
  process_frames();
  read_more();
}

void FrameChannel::resume_reading() {
  process_frames();
  read_more();
}

void FrameChannel::process_frames() {
  bool completed = false;
  bool paused = false;
  for (;;) {
    if (closed_ || closing_) break;
    auto h = handler_.lock();
    // Checked before each frame: the answers to one read's requests can
    // fill the queue.
    if (!h || !h->reading_allowed() || held_back()) {
      paused = true;
      break;
    }
    BytesView buf(in_.data() + in_begin_, in_end_ - in_begin_);
    proto::FrameSplit sp = proto::split_frame(buf, frame_max_);
    if (sp.kind == proto::FrameSplit::too_large) {
      counters_.protocol_errors += 1;
      counters_.frames_too_large += 1;
      close_with(proto::ResponseCode::frame_too_large,
                 fmt::format("frame size {} exceeds the limit of {}", sp.body_size, frame_max_));
      return;
    }
    if (sp.kind == proto::FrameSplit::need_more) break;
    h->on_frame(sp.body(buf));
    in_begin_ += sp.total();
    completed = true;
  }
  // Paused by flow control: a frame waiting now is the server's doing.
  if (paused) {
    partial_since_.reset();
  } else {
    track_partial(completed);
  }
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
    // A burst of large frames must not pin a large buffer for good.
    const size_t floor = read_buffer_floor();
    if (in_.size() > 4 * floor) {
      in_.resize(floor);
      in_.shrink_to_fit();
    }
  }
}

// ---- writing ----

void FrameChannel::send(Bytes frame) {
  // Half-closing: our side has ended (a heartbeat due now is dropped).
  if (closed_ || draining_) return;
  out_bytes_ += frame.size();
  hold(frame.size());
  out_q_.push_back(OutItem{std::move(frame), nullptr, nullptr});
  if (!write_active_) write_more();
}

void FrameChannel::send(std::shared_ptr<const ChunkFrame> frame,
                        std::function<void(std::error_code)> done) {
  asio::post(strand_, [k = keep(), frame = std::move(frame), done = std::move(done)]() mutable {
    auto& self = k.channel;
    if (self->closed_ || self->draining_) return done(asio::error::operation_aborted);
    self->out_bytes_ += frame->wire_size();
    self->hold(frame->bytes.size());
    self->counters_.chunks_out += frame->chunks;
    self->counters_.chunks_joined += frame->joined;
    self->counters_.records_out += frame->num_records;
    self->counters_.bytes_out += frame->wire_size();
    self->out_q_.push_back(OutItem{Bytes(), std::move(frame), std::move(done)});
    if (!self->write_active_) self->write_more();
  });
}

void FrameChannel::write_more() {
  if (closed_) return;
  if (!ready_) {
    // Closed before the transport was ready (a TLS handshake cut short by
    // the handshake's deadline): nothing can be said to the peer.
    if (close_after_write_) close_now("closed before the transport was ready");
    return;
  }
  if (out_q_.empty()) {
    write_active_ = false;
    if (close_after_write_) half_close("closed after the last frame");
    return;
  }
  write_active_ = true;
  write_since_ = Clock::now();
  if (send_timeout_.count() != 0 && !send_armed_) arm_send_timer(send_timeout_);
  if (out_q_.front().chunk) {
    // A Deliver frame: its head from memory, its body possibly by sendfile.
    OutItem item = std::move(out_q_.front());
    out_q_.pop_front();
    uint64_t size = item.chunk->wire_size();
    uint64_t in_memory = item.chunk->bytes.size();
    // Over kernel TLS the file part goes by SSL_sendfile (tls_transport.cpp).
    const TlsInfo* tls = transport_->tls();
    const uint64_t by_ktls =
        tls && tls->kernel_send && item.chunk->file ? item.chunk->file->length : 0;
    transport_->write_frame(item.chunk, [k = keep(), size, in_memory, by_ktls,
                                         done = std::move(item.done)](std::error_code ec) mutable {
      auto& self = k.channel;
      // async_write_frame completes on the socket's executor: this
      // strand.
      STRATA_ASSERT(self->out_bytes_ >= size, "a written frame was never counted as queued");
      self->unqueue(size, in_memory, !ec);
      if (!ec && by_ktls > 0) self->counters_.tls_sendfile_bytes += by_ktls;
      done(ec);
      self->write_ended(ec);
    });
    return;
  }
  writing_.clear();
  std::vector<asio::const_buffer> bufs;
  while (!out_q_.empty() && !out_q_.front().chunk && writing_.size() < kWriteBatchFrames) {
    writing_.push_back(std::move(out_q_.front().bytes));
    out_q_.pop_front();
  }
  bufs.reserve(writing_.size());
  for (const auto& b : writing_) bufs.emplace_back(b.data(), b.size());
  transport_->write(bufs, [k = keep()](const std::error_code& ec, size_t) {
    auto& self = k.channel;
    // What was taken off the queue, written or not (a TLS write reports
    // the bytes of its joined copy).
    uint64_t n = 0;
    for (const auto& b : self->writing_) n += b.size();
    self->unqueue(n, n, !ec);
    self->writing_.clear();
    self->write_ended(ec);
  });
}

void FrameChannel::unqueue(uint64_t wire, uint64_t in_memory, bool sent) {
  out_bytes_ -= wire;
  release(in_memory);
  if (sent) send_oct_ += wire;
}

void FrameChannel::write_ended(const std::error_code& ec) {
  if (ec) return close_now(ec.message());
  last_write_ = Clock::now();
  after_write();
  write_more();
}

// ---- what the client has not read yet ----

void FrameChannel::hold(uint64_t n) {
  buffered_ += n;
  counters_.outbound.add(n);
}

void FrameChannel::release(uint64_t n) {
  STRATA_ASSERT(buffered_ >= n, "released more than the channel holds");
  buffered_ -= n;
  counters_.outbound.sub(n);
}

bool FrameChannel::congested() const {
  return buffered_ > kConnectionBacklogMax ||
         (buffered_ > kConnectionBacklogFloor && counters_.outbound.over());
}

bool FrameChannel::held_back() {
  if (!congested()) return false;
  if (backlogged_) return true;
  backlogged_ = true;
  const bool own = buffered_ > kConnectionBacklogMax;
  (own ? counters_.outbound.backlog_pauses : counters_.outbound.limit_pauses) += 1;
  // Once per connection at info: a slow consumer may pause often.
  const auto level = backlog_logged_ ? spdlog::level::debug : spdlog::level::info;
  backlog_logged_ = true;
  if (own) {
    spdlog::log(level,
                "connection {} ({}): its client has not read {} bytes queued for it: its "
                "requests and deliveries wait until it does (strata_server_backlog_pauses_total)",
                id_, peer_, buffered_);
  } else {
    spdlog::log(level,
                "connection {} ({}): the server holds {} bytes its clients have not read, over "
                "server.max_buffered_bytes ({}): this connection ({} of them) waits until its "
                "client reads",
                id_, peer_, counters_.outbound.bytes.load(), counters_.outbound.limit.load(),
                buffered_);
  }
  return true;
}

void FrameChannel::when_room(std::function<void()> fn) {
  if (closed_) return;
  if (!held_back()) return fn();
  room_waiters_.push_back(std::move(fn));
}

void FrameChannel::after_write() {
  if (closed_ || congested()) return;
  if (!room_waiters_.empty()) {
    auto waiters = std::move(room_waiters_);
    room_waiters_.clear();
    for (auto& fn : waiters) fn();
  }
  if (backlogged_) {
    backlogged_ = false;
    process_frames();
    read_more();
  }
}

// ---- closing gracefully ----

void FrameChannel::half_close(const std::string& why) {
  if (closed_ || draining_) return;
  closing_ = true;
  draining_ = true;
  drain_why_ = why;
  // Closing a socket with bytes of the peer unread makes the kernel reset
  // the connection, and a reset can destroy the last frames (a Close saying
  // why) before the peer reads them — a client still writing a refused
  // frame is the usual case. So: our side ends (the peer reads our frames,
  // then end of stream — over TLS a close_notify), what the peer still
  // sends is read and dropped until it closes too (Transport::finish), and
  // after kHalfCloseLinger the socket closes whatever the peer does.
  linger_timer_.expires_after(kHalfCloseLinger);
  linger_timer_.async_wait([k = keep()](const std::error_code& ec) {
    auto& self = k.channel;
    if (ec || self->closed_) return;
    self->close_now(self->drain_why_);
  });
  if (!reading_) return finish();
  // The transport ends the connection with no read in flight: the one
  // waiting ends now, and on_read goes on.
  std::error_code ec;
  transport_->tcp().cancel(ec);
}

void FrameChannel::finish() {
  if (closed_ || finishing_) return;
  finishing_ = true;
  in_ = Bytes();
  in_begin_ = in_end_ = 0;
  transport_->finish([k = keep()] { k.channel->close_now(k.channel->drain_why_); });
}

// ---- a frame left unfinished ----

void FrameChannel::set_partial_frame_timeout(std::chrono::milliseconds timeout) {
  partial_timeout_ = timeout;
  track_partial(false);
}

void FrameChannel::track_partial(bool frame_completed) {
  if (partial_timeout_.count() == 0 || closed_ || closing_) return;
  if (frame_completed || in_begin_ == in_end_) partial_since_.reset();
  if (in_begin_ == in_end_ || partial_since_) return;
  partial_since_ = Clock::now();
  if (!partial_armed_) arm_partial_timer(partial_timeout_);
}

void FrameChannel::arm_partial_timer(std::chrono::milliseconds after) {
  partial_armed_ = true;
  partial_timer_.expires_after(after);
  partial_timer_.async_wait([k = keep()](const std::error_code& ec) {
    auto& self = k.channel;
    self->partial_armed_ = false;
    if (ec || self->closed_ || self->closing_ || !self->partial_since_) return;
    const auto waited = Clock::now() - *self->partial_since_;
    if (waited < self->partial_timeout_) {
      // The frame in the buffer now was begun later: its own deadline.
      self->arm_partial_timer(
          std::chrono::duration_cast<std::chrono::milliseconds>(self->partial_timeout_ - waited));
      return;
    }
    self->counters_.partial_frame_timeouts += 1;
    spdlog::info(
        "connection {} ({}): closing: a frame begun {} ms ago is still incomplete "
        "({} bytes of it arrived; server.partial_frame_timeout_ms)",
        self->id_, self->peer_,
        std::chrono::duration_cast<std::chrono::milliseconds>(waited).count(),
        self->in_end_ - self->in_begin_);
    self->close_now("partial frame timeout");
  });
}

// ---- a client that stopped reading ----

void FrameChannel::set_send_timeout(std::chrono::milliseconds timeout) {
  send_timeout_ = timeout;
  if (send_timeout_.count() != 0 && write_active_ && !send_armed_) arm_send_timer(send_timeout_);
}

void FrameChannel::arm_send_timer(std::chrono::milliseconds after) {
  send_armed_ = true;
  send_timer_.expires_after(after);
  send_timer_.async_wait([k = keep()](const std::error_code& ec) {
    auto& self = k.channel;
    self->send_armed_ = false;
    // No write in flight: the next one arms the clock again.
    if (ec || self->closed_ || !self->write_active_) return;
    const auto waited = Clock::now() - self->write_since_;
    if (waited < self->send_timeout_) {
      // Writes ended meanwhile: the one in flight now has its own deadline.
      self->arm_send_timer(
          std::chrono::duration_cast<std::chrono::milliseconds>(self->send_timeout_ - waited));
      return;
    }
    self->counters_.send_timeouts += 1;
    spdlog::info(
        "connection {} ({}): closing: its client has read nothing for {} ms ({} bytes wait for "
        "it; server.send_timeout_ms)",
        self->id_, self->peer_,
        std::chrono::duration_cast<std::chrono::milliseconds>(waited).count(), self->out_bytes_);
    self->close_now("send timeout");
  });
}

// ---- heartbeat ----

void FrameChannel::set_heartbeat(uint32_t seconds) {
  const bool arm = seconds != 0 && heartbeat_s_ == 0;
  heartbeat_s_ = seconds;
  if (arm) arm_heartbeat();
}

void FrameChannel::arm_heartbeat() {
  if (heartbeat_s_ == 0 || closed_) return;
  heartbeat_timer_.expires_after(std::chrono::seconds(heartbeat_s_));
  heartbeat_timer_.async_wait([k = keep()](const std::error_code& ec) {
    auto& self = k.channel;
    if (ec || self->closed_) return;
    auto now = Clock::now();
    // Two missed intervals: the peer is gone (or hung); free its resources.
    // While its reading waits for it to read, what it reads is its sign of
    // life (its heartbeats wait unread).
    auto alive = self->last_read_;
    if (self->backlogged_) alive = std::max(alive, self->last_write_);
    if (now - alive > std::chrono::seconds(2 * self->heartbeat_s_)) {
      self->close_now("missed heartbeats");
      return;
    }
    if (now - self->last_write_ >= std::chrono::seconds(self->heartbeat_s_) / 2) {
      Bytes f;
      encode(proto::HeartbeatFrame{}, &f);
      self->send(std::move(f));
    }
    self->arm_heartbeat();
  });
}

// ---- closing ----

void FrameChannel::close_now(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  closing_ = true;
  spdlog::debug("connection {} ({}): closed: {}", id_, peer_, why);
  transport_->close();
  heartbeat_timer_.cancel();
  linger_timer_.cancel();
  partial_timer_.cancel();
  send_timer_.cancel();
  // Frames not written: their deliveries learn it (each done runs once).
  auto q = std::move(out_q_);
  out_q_.clear();
  room_waiters_.clear();
  for (auto& item : q) {
    release(item.chunk ? item.chunk->bytes.size() : item.bytes.size());
    if (item.done) item.done(asio::error::operation_aborted);
  }
  if (auto h = handler_.lock()) h->on_closed(why);
}

void FrameChannel::close_with(proto::ResponseCode code, const std::string& reason) {
  if (closed_ || closing_) return;
  spdlog::info("connection {} ({}): closing: {}", id_, peer_, reason);
  Bytes f;
  encode(proto::CloseRequest{next_correlation(), code, reason}, &f);
  send(std::move(f));
  close_after_flush();
}

void FrameChannel::close_after_flush() {
  closing_ = true;
  close_after_write_ = true;
  if (!write_active_) write_more();
}

void FrameChannel::close_after(std::chrono::milliseconds linger) {
  // Reading goes on (the client's own end, or its repeated Close); the
  // handler takes only Close now.
  lingering_ = true;
  linger_timer_.expires_after(linger);
  linger_timer_.async_wait([k = keep()](const std::error_code& ec) {
    auto& self = k.channel;
    if (ec || self->closed_) return;
    self->close_after_flush();
  });
}

}  // namespace strata::server
