#include "server/connection.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <zlib.h>

#include <asio/bind_executor.hpp>
#include <asio/post.hpp>
#include <asio/write.hpp>

#include "catalog/stream_name.h"
#include "common/overloaded.h"
#include "server/server.h"
#include "server/stream_args.h"
#include "tier/stream_reader.h"

namespace strata::server {

using namespace proto;
using Clock = std::chrono::steady_clock;

namespace {

// Before Tune the peer is not even authenticated: it gets no more than this.
constexpr uint32_t kPreTuneFrameMax = 1u << 20;
// A publisher's bytes handed to the log but not confirmed yet, before the
// connection stops reading its socket.
constexpr uint64_t kUnconfirmedBudget = 16u << 20;
// Bytes queued for the socket before consumers of this connection stop
// being fed (they resume as the socket drains).
constexpr uint64_t kOutBudget = 8u << 20;
// One read task delivers at most this much.
constexpr uint64_t kReadBatchBytes = 1u << 20;
constexpr std::chrono::milliseconds kReadDeadline{300'000};
constexpr std::chrono::milliseconds kStreamOpDeadline{120'000};
constexpr size_t kReadChunk = 64u << 10;

struct ReadBatch {
  Bytes frames;
  uint32_t chunks = 0;
  bool at_end = false;
  uint64_t next_offset = 0;
};

// Reads chunks for one subscription (on the blocking pool) and frames them
// as Deliver: the osiris header is rebuilt from the stored chunk's header;
// the entries are the stored bytes, unchanged.
Result<ReadBatch> read_chunks(tier::StreamReader& r, uint8_t sub, uint16_t version,
                              const ServedStream& served, uint32_t max_chunks) {
  ReadBatch b;
  while (b.chunks < max_chunks && b.frames.size() < kReadBatchBytes) {
    auto c = r.next_chunk();
    if (!c.ok()) {
      // Deliver what was read; the error comes back on the next call.
      if (b.chunks > 0) break;
      return std::move(c).error();
    }
    if (!c->has_value()) {
      b.at_end = true;
      break;
    }
    const tier::TieredChunk& t = **c;
    if (t.header.type != log::ChunkType::user) continue;
    BytesView data = t.data();
    OsirisChunkHeader h;
    h.chunk_type = uint8_t(OsirisChunkType::user);
    h.num_entries = t.header.num_entries;
    h.num_records = t.header.num_records;
    h.timestamp_ms = t.header.timestamp_ms;
    h.epoch = t.header.epoch;
    h.chunk_id = t.header.first_offset;
    // The wire CRC is zlib's CRC32 of the entries (the log stores CRC32C).
    h.crc = uint32_t(::crc32(0L, u8(data.data()), uInt(data.size())));
    h.data_len = uint32_t(data.size());
    h.trailer_len = 0;
    uint64_t committed = uint64_t(std::max<int64_t>(served.last_chunk_id(), 0));
    encode_deliver_head(version, sub, std::max(committed, h.chunk_id), h, &b.frames);
    b.frames.append(data);
    b.chunks += 1;
  }
  b.next_offset = r.next_offset();
  return b;
}

log::OffsetSpec to_log_spec(const proto::OffsetSpec& s) {
  switch (s.type) {
    case OffsetType::first:
      return log::OffsetSpec::first();
    case OffsetType::last:
      return log::OffsetSpec::last();
    case OffsetType::next:
      return log::OffsetSpec::next();
    case OffsetType::offset:
      return log::OffsetSpec::at_offset(uint64_t(s.value));
    case OffsetType::timestamp:
      return log::OffsetSpec::at_timestamp(s.value);
  }
  return log::OffsetSpec::next();
}

ResponseCode code_for_stream_error(const Error& e) {
  switch (e.code) {
    case Errc::not_found:
      return ResponseCode::stream_does_not_exist;
    case Errc::already_exists:
      return ResponseCode::stream_already_exists;
    case Errc::invalid_argument:
      return ResponseCode::precondition_failed;
    case Errc::unavailable:
      return ResponseCode::stream_not_available;
    default:
      return ResponseCode::internal_error;
  }
}

}  // namespace

Connection::Connection(Server& server, Strand strand, asio::ip::tcp::socket socket, uint64_t id)
    : server_(server),
      strand_(std::move(strand)),
      socket_(std::move(socket)),
      id_(id),
      frame_max_(std::min(kPreTuneFrameMax, server.config().server.frame_max)),
      heartbeat_timer_(strand_) {
  std::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  if (!ec) {
    loopback_ = ep.address().is_loopback();
    peer_ = fmt::format("{}:{}", ep.address().to_string(), ep.port());
  }
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

Connection::~Connection() = default;

void Connection::start() {
  asio::post(strand_, [self = shared_from_this()] {
    self->last_read_ = self->last_write_ = Clock::now();
    self->in_.resize(kReadChunk);
    self->read_more();
  });
}

void Connection::shutdown() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->closed_) return;
    self->close_with(ResponseCode::ok, "server shutting down");
  });
}

// ---- reading and writing ----

void Connection::read_more() {
  if (reading_ || closed_ || state_ == HandshakeState::closing) return;
  if (unconfirmed_bytes_ > kUnconfirmedBudget) return;  // resumed by on_appended
  if (in_.size() - in_end_ < kReadChunk / 4) {
    if (in_begin_ > 0) {
      std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
      in_end_ -= in_begin_;
      in_begin_ = 0;
    }
    if (in_.size() - in_end_ < kReadChunk / 4) in_.resize(in_.size() + kReadChunk);
  }
  reading_ = true;
  socket_.async_read_some(asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
                          asio::bind_executor(strand_, [self = shared_from_this()](
                                                           const std::error_code& ec, size_t n) {
                            self->on_read(ec, n);
                          }));
}

void Connection::on_read(const std::error_code& ec, size_t n) {
  reading_ = false;
  if (closed_) return;
  if (ec) {
    close_now(ec == asio::error::eof ? "peer closed" : ec.message());
    return;
  }
  last_read_ = Clock::now();
  in_end_ += n;
  process_frames();
  read_more();
}

void Connection::process_frames() {
  while (!closed_ && state_ != HandshakeState::closing) {
    BytesView buf(in_.data() + in_begin_, in_end_ - in_begin_);
    FrameSplit sp = split_frame(buf, frame_max_);
    if (sp.kind == FrameSplit::too_large) {
      server_.counters().protocol_errors += 1;
      close_with(
          ResponseCode::frame_too_large,
          fmt::format("frame of {} bytes exceeds the limit of {}", sp.body_size + 4, frame_max_));
      return;
    }
    if (sp.kind == FrameSplit::need_more) {
      // Make room for the whole frame in one buffer.
      if (buf.size() >= kFrameSizeBytes) {
        size_t need = kFrameSizeBytes + get_be32(u8(buf.data()));
        if (in_.size() - in_begin_ < need) {
          std::memmove(in_.data(), in_.data() + in_begin_, buf.size());
          in_end_ = buf.size();
          in_begin_ = 0;
          in_.resize(need + kReadChunk);
        }
      }
      break;
    }
    handle(sp.body(buf));
    in_begin_ += sp.total();
    if (unconfirmed_bytes_ > kUnconfirmedBudget) break;
  }
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
    // A burst of large frames must not pin a large buffer for good.
    if (in_.size() > 4 * kReadChunk) {
      in_.resize(kReadChunk);
      in_.shrink_to_fit();
    }
  }
}

void Connection::send(Bytes frame) {
  if (closed_) return;
  out_bytes_ += frame.size();
  out_q_.push_back(std::move(frame));
  if (!write_active_) write_more();
}

void Connection::write_more() {
  if (closed_) return;
  if (out_q_.empty()) {
    write_active_ = false;
    if (close_after_write_) close_now("closed after the last frame");
    return;
  }
  write_active_ = true;
  writing_.clear();
  std::vector<asio::const_buffer> bufs;
  while (!out_q_.empty() && writing_.size() < 64) {
    writing_.push_back(std::move(out_q_.front()));
    out_q_.pop_front();
  }
  bufs.reserve(writing_.size());
  for (const auto& b : writing_) bufs.emplace_back(b.data(), b.size());
  asio::async_write(socket_, bufs,
                    asio::bind_executor(
                        strand_, [self = shared_from_this()](const std::error_code& ec, size_t n) {
                          self->out_bytes_ -= n;
                          self->writing_.clear();
                          if (ec) {
                            self->close_now(ec.message());
                            return;
                          }
                          self->last_write_ = Clock::now();
                          self->write_more();
                          self->pump_all();
                        }));
}

void Connection::close_now(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  spdlog::debug("connection {} ({}): closed: {}", id_, peer_, why);
  std::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  heartbeat_timer_.cancel();
  for (auto& [id, s] : subscriptions_) s->closed = true;
  server_.counters().consumers -= subscriptions_.size();
  server_.counters().publishers -= publishers_.size();
  subscriptions_.clear();
  publishers_.clear();
  out_q_.clear();
  server_.connection_closed(id_);
}

void Connection::close_with(ResponseCode code, const std::string& reason) {
  if (closed_ || state_ == HandshakeState::closing) return;
  spdlog::info("connection {} ({}): closing: {}", id_, peer_, reason);
  state_ = HandshakeState::closing;
  Bytes f;
  encode(CloseRequest{next_server_correlation_++, code, reason}, &f);
  send(std::move(f));
  close_after_flush();
}

void Connection::close_after_flush() {
  state_ = HandshakeState::closing;
  close_after_write_ = true;
  if (!write_active_) write_more();
}

void Connection::arm_heartbeat() {
  if (heartbeat_s_ == 0 || closed_) return;
  heartbeat_timer_.expires_after(std::chrono::seconds(heartbeat_s_));
  heartbeat_timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec || self->closed_) return;
    auto now = Clock::now();
    // Two missed intervals: the peer is gone (or hung); free its resources.
    if (now - self->last_read_ > std::chrono::seconds(2 * self->heartbeat_s_)) {
      self->close_now("missed heartbeats");
      return;
    }
    if (now - self->last_write_ >= std::chrono::seconds(self->heartbeat_s_) / 2) {
      Bytes f;
      encode(HeartbeatFrame{}, &f);
      self->send(std::move(f));
    }
    self->arm_heartbeat();
  });
}

void Connection::respond_code(uint16_t key, uint32_t correlation_id, ResponseCode code) {
  Bytes f;
  size_t start = begin_frame(&f, uint16_t(key | kResponseFlag), 1);
  WireWriter w(&f);
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  finish_frame(&f, start);
  send(std::move(f));
}

// ---- dispatch ----

void Connection::handle(BytesView body) {
  auto head = peek_head(body);
  if (!head.ok()) {
    server_.counters().protocol_errors += 1;
    close_now("frame shorter than its head");
    return;
  }
  uint16_t key = head->key;
  bool response = (key & kResponseFlag) != 0;
  uint16_t command = uint16_t(key & ~kResponseFlag);
  if (!response && !command_allowed(state_, command)) {
    server_.counters().protocol_errors += 1;
    close_with(
        ResponseCode::unknown_frame,
        fmt::format("{} not allowed while {}", command_name(key), handshake_state_name(state_)));
    return;
  }
  auto f = decode_client_frame(body);
  if (!f.ok()) {
    server_.counters().protocol_errors += 1;
    auto corr = peek_correlation_id(body);
    if (f.error().code == Errc::unsupported_version && corr && !response) {
      spdlog::debug("connection {}: {}", id_, f.error().message);
      respond_code(key, *corr, ResponseCode::unknown_frame);
      return;
    }
    close_with(ResponseCode::unknown_frame, f.error().message);
    return;
  }
  if (response && state_ != HandshakeState::open && state_ != HandshakeState::closing) {
    close_with(ResponseCode::unknown_frame, "response before the connection is open");
    return;
  }
  std::visit([this](const auto& m) { on(m); }, *f);
}

// ---- handshake ----

void Connection::on(const PeerPropertiesRequest& r) {
  PeerPropertiesResponse resp;
  resp.correlation_id = r.correlation_id;
  // Clients read `version` as the broker's: 3.13 or later enables super
  // streams, filtering and Deliver v2 in the JS client.
  resp.properties = {{"product", "strata"},
                     {"version", "3.13.0"},
                     {"platform", "C++20"},
                     {"copyright", "strata authors"},
                     {"information", "strata: tiered stream storage"}};
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
  state_ = after(state_, kPeerProperties);
}

void Connection::on(const SaslHandshakeRequest& r) {
  SaslHandshakeResponse resp;
  resp.correlation_id = r.correlation_id;
  resp.mechanisms = {"PLAIN"};
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
}

void Connection::on(const SaslAuthenticateRequest& r) {
  if (r.mechanism != "PLAIN") {
    respond_code(kSaslAuthenticate, r.correlation_id, ResponseCode::sasl_mechanism_not_supported);
    return;
  }
  ResponseCode code = authenticate_plain(r.data, server_.config().server.users, loopback_, &user_);
  respond_code(kSaslAuthenticate, r.correlation_id, code);
  if (code != ResponseCode::ok) {
    spdlog::info("connection {} ({}): authentication of '{}' failed: {}", id_, peer_, user_,
                 response_code_name(code));
    close_after_flush();
    return;
  }
  state_ = after(state_, kSaslAuthenticate);
  Bytes f;
  encode(TuneFrame{server_.config().server.frame_max, server_.config().server.heartbeat_s}, &f);
  send(std::move(f));
}

void Connection::on(const TuneFrame& r) {
  frame_max_ = negotiate_frame_max(server_.config().server.frame_max, r.frame_max);
  uint32_t hb = negotiate_heartbeat(server_.config().server.heartbeat_s, r.heartbeat);
  bool arm = hb != 0 && heartbeat_s_ == 0;
  heartbeat_s_ = hb;
  if (arm) arm_heartbeat();
  state_ = after(state_, kTune);
}

void Connection::on(const OpenRequest& r) {
  OpenResponse resp;
  resp.correlation_id = r.correlation_id;
  if (r.virtual_host != "/") {
    resp.code = ResponseCode::virtual_host_access_failure;
    Bytes f;
    encode(resp, &f);
    send(std::move(f));
    return;
  }
  resp.properties = {{"advertised_host", server_.advertised_host()},
                     {"advertised_port", std::to_string(server_.advertised_port())}};
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
  state_ = after(state_, kOpen);
}

void Connection::on(const CloseRequest& r) {
  respond_code(kClose, r.correlation_id, ResponseCode::ok);
  close_after_flush();
}

void Connection::on(const CloseResponse&) {
  close_now("close acknowledged");
}

void Connection::on(const HeartbeatFrame&) {}

void Connection::on(const ExchangeCommandVersionsRequest& r) {
  for (const auto& v : r.versions) {
    if (v.key == kDeliver && v.max_version >= 2) deliver_version_ = 2;
  }
  ExchangeCommandVersionsResponse resp;
  resp.correlation_id = r.correlation_id;
  resp.versions = supported_client_versions();
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
}

// ---- streams ----

void Connection::on(const CreateStreamRequest& r) {
  if (auto st = catalog::validate_stream_name(r.stream); !st.ok()) {
    respond_code(kCreate, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  auto args = parse_stream_args(r.arguments);
  if (!args.ok()) {
    spdlog::info("connection {}: create {}: {}", id_, r.stream, args.error().message);
    respond_code(kCreate, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  Server* srv = &server_;
  std::string name = r.stream;
  run_task<Status>(
      server_.tasks(), strand_, kStreamOpDeadline, "create stream " + name,
      [srv, name]() -> Status {
        auto s = srv->node().create_stream(name);
        if (!s.ok()) return std::move(s).error();
        return Status::OK();
      },
      [self = shared_from_this(), corr = r.correlation_id, name](TaskOutcome<Status> out) {
        ResponseCode code = ResponseCode::ok;
        if (out.end != TaskEnd::completed) {
          code = ResponseCode::internal_error;
        } else if (!out.value->ok()) {
          code = code_for_stream_error(out.value->error());
          if (code != ResponseCode::stream_already_exists) {
            spdlog::warn("create stream {}: {}", name, out.value->error().to_string());
          }
        }
        self->respond_code(kCreate, corr, code);
      });
}

void Connection::on(const DeleteStreamRequest& r) {
  Server* srv = &server_;
  std::string name = r.stream;
  run_task<Status>(
      server_.tasks(), strand_, kStreamOpDeadline, "delete stream " + name,
      [srv, name]() -> Status {
        // Stop appending first, so that nothing is confirmed that the
        // deletion removes.
        if (auto s = srv->served(name); s.ok()) (*s)->retire();
        return srv->node().delete_stream(name);
      },
      [self = shared_from_this(), corr = r.correlation_id, name](TaskOutcome<Status> out) {
        ResponseCode code = ResponseCode::ok;
        if (out.end != TaskEnd::completed) {
          code = ResponseCode::internal_error;
        } else if (!out.value->ok()) {
          code = code_for_stream_error(out.value->error());
        }
        if (code == ResponseCode::ok || code == ResponseCode::stream_does_not_exist) {
          self->server_.stream_deleted(name);
        }
        self->respond_code(kDelete, corr, code);
      });
}

void Connection::on(const MetadataRequest& r) {
  MetadataResponse resp;
  resp.correlation_id = r.correlation_id;
  resp.brokers.push_back(Broker{0, server_.advertised_host(), server_.advertised_port()});
  for (const auto& s : r.streams) {
    StreamMetadata m;
    m.stream = s;
    if (server_.node().stream(s).ok()) {
      m.leader_reference = 0;
    } else {
      m.code = ResponseCode::stream_does_not_exist;
      m.leader_reference = 0xffff;
    }
    resp.streams.push_back(std::move(m));
  }
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
}

void Connection::on(const StreamStatsRequest& r) {
  StreamStatsResponse resp;
  resp.correlation_id = r.correlation_id;
  auto s = server_.served(r.stream);
  if (!s.ok()) {
    resp.code = ResponseCode::stream_does_not_exist;
  } else {
    auto& log = *(*s)->log();
    int64_t last = (*s)->last_chunk_id();
    int64_t first = -1;
    if (last >= 0) {
      // The oldest offset over both tiers: the remote tier's first if it
      // holds data below the local log.
      first = int64_t(log.first_offset());
      auto ctx = server_.node().tier_context(r.stream);
      if (ctx.cache) {
        auto m = ctx.cache->get(r.stream);
        if (m.ok() && m->manifest && !m->manifest->empty() &&
            m->manifest->first_offset < uint64_t(first)) {
          first = int64_t(m->manifest->first_offset);
        }
      }
    }
    resp.stats = {{"first_chunk_id", first}, {"committed_chunk_id", last}, {"last_chunk_id", last}};
  }
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
}

// ---- publishing ----

void Connection::on(const DeclarePublisherRequest& r) {
  if (publishers_.count(r.publisher_id) || r.reference.size() > 255) {
    respond_code(kDeclarePublisher, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  auto s = server_.served(r.stream);
  if (!s.ok()) {
    respond_code(kDeclarePublisher, r.correlation_id, ResponseCode::stream_does_not_exist);
    return;
  }
  (*s)->watch(shared_from_this());
  publishers_[r.publisher_id] = Publisher{r.stream, r.reference, *s};
  server_.counters().publishers += 1;
  respond_code(kDeclarePublisher, r.correlation_id, ResponseCode::ok);
}

void Connection::on(const PublishRequest& r) {
  server_.counters().messages_in += r.messages.size();
  auto it = publishers_.find(r.publisher_id);
  if (it == publishers_.end() || it->second.served->retired()) {
    PublishError e;
    e.publisher_id = r.publisher_id;
    ResponseCode code = it == publishers_.end() ? ResponseCode::publisher_does_not_exist
                                                : ResponseCode::stream_not_available;
    for (const auto& m : r.messages) e.errors.push_back({m.publishing_id, code});
    Bytes f;
    encode(e, &f);
    send(std::move(f));
    return;
  }
  if (r.messages.empty()) return;
  uint64_t bytes = 0;
  for (const auto& m : r.messages) bytes += m.entry.size() + 8;
  unconfirmed_bytes_ += bytes;
  it->second.served->appender().submit(weak_from_this(), r.publisher_id, it->second.ref, r.messages,
                                       bytes);
}

void Connection::on_appended(uint8_t publisher_id, std::vector<uint64_t> ids, ResponseCode code,
                             uint64_t bytes) {
  asio::post(strand_, [self = shared_from_this(), publisher_id, ids = std::move(ids), code,
                       bytes]() mutable {
    bool was_paused = self->unconfirmed_bytes_ > kUnconfirmedBudget;
    self->unconfirmed_bytes_ -= std::min(bytes, self->unconfirmed_bytes_);
    if (self->closed_) return;
    if (!ids.empty()) {
      Bytes f;
      if (code == ResponseCode::ok) {
        self->server_.counters().messages_confirmed += ids.size();
        encode(PublishConfirm{publisher_id, std::move(ids)}, &f);
      } else {
        PublishError e;
        e.publisher_id = publisher_id;
        for (uint64_t id : ids) e.errors.push_back({id, code});
        encode(e, &f);
      }
      self->send(std::move(f));
    }
    if (was_paused && self->unconfirmed_bytes_ <= kUnconfirmedBudget) {
      self->process_frames();
      self->read_more();
    }
  });
}

void Connection::on(const QueryPublisherSequenceRequest& r) {
  QueryPublisherSequenceResponse resp;
  resp.correlation_id = r.correlation_id;
  auto s = server_.served(r.stream);
  if (!s.ok()) {
    resp.code = ResponseCode::stream_does_not_exist;
  } else {
    resp.sequence = (*s)->appender().sequence(r.reference).value_or(0);
  }
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
}

void Connection::on(const DeletePublisherRequest& r) {
  if (publishers_.erase(r.publisher_id) == 0) {
    respond_code(kDeletePublisher, r.correlation_id, ResponseCode::publisher_does_not_exist);
    return;
  }
  server_.counters().publishers -= 1;
  respond_code(kDeletePublisher, r.correlation_id, ResponseCode::ok);
}

// ---- consuming ----

void Connection::on(const SubscribeRequest& r) {
  if (subscriptions_.count(r.subscription_id)) {
    respond_code(kSubscribe, r.correlation_id, ResponseCode::subscription_id_already_exists);
    return;
  }
  auto s = server_.served(r.stream);
  if (!s.ok()) {
    respond_code(kSubscribe, r.correlation_id, ResponseCode::stream_does_not_exist);
    return;
  }
  auto sub = std::make_shared<Subscription>();
  sub->id = r.subscription_id;
  sub->stream = r.stream;
  sub->served = *s;
  sub->credit = r.credit;
  sub->busy = true;  // until its reader is open
  subscriptions_[r.subscription_id] = sub;
  server_.counters().consumers += 1;
  (*s)->watch(shared_from_this());
  Server* srv = &server_;
  std::string name = r.stream;
  log::OffsetSpec spec = to_log_spec(r.offset);
  run_task<Result<std::shared_ptr<tier::StreamReader>>>(
      server_.tasks(), strand_, kStreamOpDeadline, "open reader of " + name,
      [srv, name, spec]() -> Result<std::shared_ptr<tier::StreamReader>> {
        auto rd = srv->node().open_reader(name, spec);
        if (!rd.ok()) return std::move(rd).error();
        return std::shared_ptr<tier::StreamReader>(std::move(rd).value());
      },
      [self = shared_from_this(), sub,
       corr = r.correlation_id](TaskOutcome<Result<std::shared_ptr<tier::StreamReader>>> out) {
        ResponseCode code = ResponseCode::ok;
        if (out.end != TaskEnd::completed) {
          code = ResponseCode::internal_error;
        } else if (!out.value->ok()) {
          code = code_for_stream_error(out.value->error());
          spdlog::warn("subscribe to {}: {}", sub->stream, out.value->error().to_string());
        }
        if (self->closed_) return;
        if (code != ResponseCode::ok) {
          if (!sub->closed) {
            self->subscriptions_.erase(sub->id);
            self->server_.counters().consumers -= 1;
          }
          self->respond_code(kSubscribe, corr, code);
          return;
        }
        sub->reader = std::move(*out.value).value();
        sub->busy = false;
        self->respond_code(kSubscribe, corr, ResponseCode::ok);
        self->pump(sub);
      });
}

void Connection::on(const CreditRequest& r) {
  auto it = subscriptions_.find(r.subscription_id);
  if (it == subscriptions_.end()) {
    Bytes f;
    encode(CreditResponse{ResponseCode::subscription_id_does_not_exist, r.subscription_id}, &f);
    send(std::move(f));
    return;
  }
  it->second->credit = std::min<uint32_t>(it->second->credit + r.credit, 1u << 20);
  pump(it->second);
}

void Connection::on(const UnsubscribeRequest& r) {
  auto it = subscriptions_.find(r.subscription_id);
  if (it == subscriptions_.end()) {
    respond_code(kUnsubscribe, r.correlation_id, ResponseCode::subscription_id_does_not_exist);
    return;
  }
  it->second->closed = true;
  subscriptions_.erase(it);
  server_.counters().consumers -= 1;
  respond_code(kUnsubscribe, r.correlation_id, ResponseCode::ok);
}

void Connection::pump_all() {
  for (auto& [id, s] : subscriptions_) pump(s);
}

void Connection::pump(const SubPtr& s) {
  if (closed_ || s->closed || s->busy || s->waiting || s->credit == 0 || !s->reader) return;
  if (out_bytes_ > kOutBudget) return;  // resumed when the socket drains
  s->busy = true;
  auto reader = s->reader;
  auto served = s->served;
  uint8_t sub_id = s->id;
  uint16_t version = deliver_version_;
  uint32_t max_chunks = s->credit;
  run_task<Result<ReadBatch>>(
      server_.tasks(), strand_, kReadDeadline, "read " + s->stream,
      [reader, served, sub_id, version, max_chunks] {
        return read_chunks(*reader, sub_id, version, *served, max_chunks);
      },
      [self = shared_from_this(), s](TaskOutcome<Result<ReadBatch>> out) {
        s->busy = false;
        if (self->closed_ || s->closed) return;
        if (out.end != TaskEnd::completed) {
          // The reader may still be in use by the abandoned job: this
          // subscription cannot go on.
          spdlog::error("subscription {} on {}: {}", s->id, s->stream, out.error.to_string());
          s->closed = true;
          s->reader.reset();
          return;
        }
        if (!out.value->ok()) {
          const Error& e = out.value->error();
          spdlog::warn("subscription {} on {}: {}", s->id, s->stream, e.to_string());
          if (s->served->retired()) return;
          // Transient (remote tier unavailable, a GET failed): try again
          // after a pause, from where the reader stands.
          auto t = std::make_shared<asio::steady_timer>(self->strand_);
          t->expires_after(std::chrono::seconds(1));
          t->async_wait([self, s, t](const std::error_code&) { self->pump(s); });
          return;
        }
        ReadBatch& b = **out.value;
        if (b.chunks > 0) {
          s->credit -= std::min(s->credit, b.chunks);
          self->server_.counters().chunks_out += b.chunks;
          self->server_.counters().bytes_out += b.frames.size();
          self->send(std::move(b.frames));
        }
        if (b.at_end) {
          s->waiting = true;
          std::weak_ptr<Connection> weak = self;
          Strand strand = self->strand_;
          s->served->wait_for_commit(b.next_offset, [weak, s, strand] {
            asio::post(strand, [weak, s] {
              auto c = weak.lock();
              if (!c) return;
              s->waiting = false;
              if (!s->served->retired()) c->pump(s);
            });
          });
          return;
        }
        self->pump(s);
      });
}

// ---- offsets ----

void Connection::on(const StoreOffsetRequest& r) {
  server_.store_offset(r.stream, r.reference, r.offset);
}

void Connection::on(const QueryOffsetRequest& r) {
  QueryOffsetResponse resp;
  resp.correlation_id = r.correlation_id;
  if (!server_.node().stream(r.stream).ok()) {
    resp.code = ResponseCode::stream_does_not_exist;
  } else if (auto o = server_.query_offset(r.stream, r.reference)) {
    resp.offset = *o;
  } else {
    resp.code = ResponseCode::no_offset;
  }
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
}

// ---- super streams (not in this build yet) ----

void Connection::on(const RouteRequest& r) {
  RouteResponse resp;
  resp.correlation_id = r.correlation_id;
  resp.code = ResponseCode::stream_does_not_exist;
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
}

void Connection::on(const PartitionsRequest& r) {
  PartitionsResponse resp;
  resp.correlation_id = r.correlation_id;
  resp.code = ResponseCode::stream_does_not_exist;
  Bytes f;
  encode(resp, &f);
  send(std::move(f));
}

void Connection::on(const ConsumerUpdateResponse&) {}

void Connection::on(const CreateSuperStreamRequest& r) {
  respond_code(kCreateSuperStream, r.correlation_id, ResponseCode::precondition_failed);
}

void Connection::on(const DeleteSuperStreamRequest& r) {
  respond_code(kDeleteSuperStream, r.correlation_id, ResponseCode::stream_does_not_exist);
}

// ---- stream deletion ----

void Connection::stream_gone(const std::string& stream) {
  asio::post(strand_, [self = shared_from_this(), stream] {
    if (self->closed_) return;
    self->drop_stream(stream);
  });
}

void Connection::drop_stream(const std::string& stream) {
  bool affected = false;
  for (auto it = publishers_.begin(); it != publishers_.end();) {
    if (it->second.stream == stream) {
      it = publishers_.erase(it);
      server_.counters().publishers -= 1;
      affected = true;
    } else {
      ++it;
    }
  }
  for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
    if (it->second->stream == stream) {
      it->second->closed = true;
      it = subscriptions_.erase(it);
      server_.counters().consumers -= 1;
      affected = true;
    } else {
      ++it;
    }
  }
  if (!affected) return;
  Bytes f;
  encode(MetadataUpdate{ResponseCode::stream_not_available, stream}, &f);
  send(std::move(f));
}

}  // namespace strata::server
