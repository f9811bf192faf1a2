#include "server/connection.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
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
constexpr std::chrono::milliseconds kStreamOpDeadline{120'000};
constexpr size_t kReadChunk = 64u << 10;

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

// The response code of a stream operation run as a task (create, delete,
// and their super stream forms), logging why it failed — a task that threw
// or missed its deadline included. "Already exists" is the client's answer,
// not a server problem.
ResponseCode code_for_stream_op(const TaskOutcome<Status>& out, std::string_view what) {
  if (out.end == TaskEnd::completed && out.value->ok()) return ResponseCode::ok;
  const Error& e = out.end == TaskEnd::completed ? out.value->error() : out.error;
  ResponseCode code =
      out.end == TaskEnd::completed ? code_for_stream_error(e) : ResponseCode::internal_error;
  if (code != ResponseCode::stream_already_exists) {
    spdlog::warn("{}: {}", what, e.to_string());
  }
  return code;
}

}  // namespace

Connection::Connection(Server& server, Strand strand, asio::ip::tcp::socket socket, uint64_t id)
    : server_(server),
      strand_(std::move(strand)),
      socket_(std::move(socket)),
      id_(id),
      frame_max_(std::min(kPreTuneFrameMax, server.config().server.frame_max)),
      heartbeat_timer_(strand_),
      linger_timer_(strand_) {
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
    if (self->closed_ || self->state_ == HandshakeState::closing) return;
    // As RabbitMQ does on shutdown: the frames already queued (confirms)
    // go out, then the socket closes without a Close request — clients take
    // that as a lost connection and reconnect, while the JavaScript client
    // 1.0.0 cannot decode a server-initiated Close and throws from its
    // socket handler (tests/server/js, reconnect_restart).
    spdlog::info("connection {} ({}): closing: server shutting down", self->id_, self->peer_);
    self->close_after_flush();
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
    // After an answered Close, the client's end of the stream: the answers
    // still queued go out first.
    if (ec == asio::error::eof && close_answered_) {
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
  out_q_.push_back(OutItem{std::move(frame), nullptr, nullptr});
  if (!write_active_) write_more();
}

void Connection::send(std::shared_ptr<const ChunkFrame> frame,
                      std::function<void(std::error_code)> done) {
  asio::post(strand_, [self = shared_from_this(), frame = std::move(frame),
                       done = std::move(done)]() mutable {
    if (self->closed_) return done(asio::error::operation_aborted);
    self->out_bytes_ += frame->wire_size();
    self->server_.counters().chunks_out += frame->chunks;
    self->server_.counters().chunks_joined += frame->joined;
    self->server_.counters().bytes_out += frame->wire_size();
    self->out_q_.push_back(OutItem{Bytes(), std::move(frame), std::move(done)});
    if (!self->write_active_) self->write_more();
  });
}

void Connection::write_more() {
  if (closed_) return;
  if (out_q_.empty()) {
    write_active_ = false;
    if (close_after_write_) close_now("closed after the last frame");
    return;
  }
  write_active_ = true;
  if (out_q_.front().chunk) {
    // A Deliver frame: its head from memory, its body possibly by sendfile.
    OutItem item = std::move(out_q_.front());
    out_q_.pop_front();
    uint64_t size = item.chunk->wire_size();
    async_write_frame(
        socket_, item.chunk,
        [self = shared_from_this(), size, done = std::move(item.done)](std::error_code ec) mutable {
          // async_write_frame completes on the socket's executor:
          // this strand.
          self->out_bytes_ -= size;
          done(ec);
          if (ec) {
            self->close_now(ec.message());
            return;
          }
          self->last_write_ = Clock::now();
          self->write_more();
        });
    return;
  }
  writing_.clear();
  std::vector<asio::const_buffer> bufs;
  while (!out_q_.empty() && !out_q_.front().chunk && writing_.size() < 64) {
    writing_.push_back(std::move(out_q_.front().bytes));
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
  linger_timer_.cancel();
  bool had_sac = false;
  for (auto& [id, s] : subscriptions_) {
    had_sac = had_sac || !s->sac_name.empty();
    s->closed = true;
    if (s->delivery) s->delivery->stop();
    if (s->replica) s->replica->stop();
  }
  server_.counters().consumers -= subscriptions_.size();
  server_.counters().publishers -= publishers_.size();
  subscriptions_.clear();
  publishers_.clear();
  // Frames not written: their deliveries learn it (each done runs once).
  auto q = std::move(out_q_);
  out_q_.clear();
  for (auto& item : q) {
    if (item.done) item.done(asio::error::operation_aborted);
  }
  if (had_sac) {
    uint64_t me = id_;
    server_.sac([me](SacGroups& g, SacTime now) { return g.connection_gone(me, now); });
  }
  server_.connection_closed(id_);
}

void Connection::close_with(ResponseCode code, const std::string& reason) {
  if (closed_ || state_ == HandshakeState::closing) return;
  spdlog::info("connection {} ({}): closing: {}", id_, peer_, reason);
  state_ = HandshakeState::closing;
  send_message(CloseRequest{next_server_correlation_++, code, reason});
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
      self->send_message(HeartbeatFrame{});
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
  if (close_answered_) {
    if (key == kClose) {
      auto c = decode_client_frame(body);
      if (c.ok() && std::holds_alternative<CloseRequest>(*c)) on(std::get<CloseRequest>(*c));
    }
    return;
  }
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
  send_message(resp);
  state_ = after(state_, kPeerProperties);
}

void Connection::on(const SaslHandshakeRequest& r) {
  SaslHandshakeResponse resp;
  resp.correlation_id = r.correlation_id;
  resp.mechanisms = {"PLAIN"};
  send_message(resp);
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
  send_message(TuneFrame{server_.config().server.frame_max, server_.config().server.heartbeat_s});
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
    send_message(resp);
    return;
  }
  resp.properties = {{"advertised_host", server_.advertised_host()},
                     {"advertised_port", std::to_string(server_.advertised_port())}};
  send_message(resp);
  state_ = after(state_, kOpen);
}

void Connection::on(const CloseRequest& r) {
  respond_code(kClose, r.correlation_id, ResponseCode::ok);
  if (close_answered_) return;
  // Not closed at once: a client may send Close more than once on a
  // connection before the first answer arrives — the JavaScript client
  // 1.0.0 does when a stream is deleted under its open publishers (the
  // server's MetadataUpdate closes the publishers' connection while
  // client.close() closes it too) and waits for every answer. RabbitMQ
  // answered both there only because its answer to Delete comes after the
  // publishers' connection closed. So the connection lingers: further
  // Close requests are answered, anything else ignored, and it closes when
  // the client closes its side or after server.close_linger_ms.
  close_answered_ = true;
  linger_timer_.expires_after(std::chrono::milliseconds(server_.config().server.close_linger_ms));
  linger_timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec || self->closed_) return;
    self->close_after_flush();
  });
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
  send_message(resp);
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
      [srv, name, settings = std::move(args).value()]() -> Status {
        return srv->create_stream(name, settings);
      },
      [self = shared_from_this(), corr = r.correlation_id, name](TaskOutcome<Status> out) {
        self->respond_code(kCreate, corr, code_for_stream_op(out, "create stream " + name));
      });
}

void Connection::on(const DeleteStreamRequest& r) {
  Server* srv = &server_;
  std::string name = r.stream;
  run_task<Status>(
      server_.tasks(), strand_, kStreamOpDeadline, "delete stream " + name,
      [srv, name]() -> Status { return srv->delete_stream(name); },
      [self = shared_from_this(), corr = r.correlation_id, name](TaskOutcome<Status> out) {
        self->respond_code(kDelete, corr, code_for_stream_op(out, "delete stream " + name));
      });
}

void Connection::on(const MetadataRequest& r) {
  MetadataResponse resp;
  resp.correlation_id = r.correlation_id;
  if (server_.ownership()) {
    cluster_metadata(r, &resp);
    send_message(resp);
    return;
  }
  resp.brokers.push_back(Broker{0, server_.advertised_host(), server_.advertised_port()});
  for (const auto& s : r.streams) {
    StreamMetadata m;
    m.stream = s;
    auto st = server_.node().stream(s);
    if (st.ok()) {
      m.leader_reference = 0;
    } else {
      // Being opened (node/stream_table.h): there in a moment, as a stream
      // is during a takeover in a cluster.
      m.code = st.code() == Errc::unavailable ? ResponseCode::stream_not_available
                                              : ResponseCode::stream_does_not_exist;
      m.leader_reference = 0xffff;
    }
    resp.streams.push_back(std::move(m));
  }
  send_message(resp);
}

// A cluster's Metadata: every registered node is a broker (references in
// node id order); a stream's leader is its owner, the only node that
// writes it, and every other registered node is a replica: it serves the
// stream's consumers (replica_feed.h), so clients may place them there. A
// stream in the catalog without an owner (during a takeover) is
// stream_not_available: clients retry.
void Connection::cluster_metadata(const MetadataRequest& r, MetadataResponse* resp) {
  auto view = server_.ownership()->view();
  std::map<std::string, uint16_t> refs;
  for (const auto& [id, address] : view.nodes) {
    auto hp = parse_host_port("node " + id, address);
    if (!hp.ok()) continue;
    uint16_t ref = uint16_t(resp->brokers.size());
    refs[id] = ref;
    resp->brokers.push_back(Broker{ref, hp->first, hp->second});
  }
  for (const auto& s : r.streams) {
    StreamMetadata m;
    m.stream = s;
    m.leader_reference = 0xffff;
    auto owner = view.owners.find(s);
    if (owner != view.owners.end() && refs.count(owner->second.node_id)) {
      m.leader_reference = refs[owner->second.node_id];
      for (const auto& [id, ref] : refs) {
        if (id != owner->second.node_id) m.replica_references.push_back(ref);
      }
    } else if (owner != view.owners.end() ||
               std::find(view.streams.begin(), view.streams.end(), s) != view.streams.end()) {
      m.code = ResponseCode::stream_not_available;
    } else {
      m.code = ResponseCode::stream_does_not_exist;
    }
    resp->streams.push_back(std::move(m));
  }
}

void Connection::on(const StreamStatsRequest& r) {
  StreamStatsResponse resp;
  resp.correlation_id = r.correlation_id;
  auto s = server_.served(r.stream);
  if (!s.ok()) {
    resp.code = missing_stream_code(r.stream);
  } else {
    int64_t last = (*s)->last_chunk_id();
    // The oldest offset over both tiers.
    int64_t first = last >= 0 ? int64_t((*s)->stream()->first_offset()) : -1;
    resp.stats = {{"first_chunk_id", first}, {"committed_chunk_id", last}, {"last_chunk_id", last}};
  }
  send_message(resp);
}

// ---- publishing ----

void Connection::on(const DeclarePublisherRequest& r) {
  if (publishers_.count(r.publisher_id) || r.reference.size() > 255) {
    respond_code(kDeclarePublisher, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  auto s = server_.served(r.stream);
  if (!s.ok()) {
    respond_code(kDeclarePublisher, r.correlation_id, missing_stream_code(r.stream));
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
    send_message(e);
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
    resp.code = missing_stream_code(r.stream);
  } else {
    resp.sequence = (*s)->appender().sequence(r.reference).value_or(0);
  }
  send_message(resp);
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
    if (subscribe_replica(r)) return;
    respond_code(kSubscribe, r.correlation_id, missing_stream_code(r.stream));
    return;
  }
  std::map<std::string, std::string> props(r.properties.begin(), r.properties.end());
  bool sac = props["single-active-consumer"] == "true";
  if (sac && props["name"].empty()) {
    // A group needs a name: RabbitMQ refuses this too.
    respond_code(kSubscribe, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  auto sub = std::make_shared<Subscription>();
  sub->id = r.subscription_id;
  sub->stream = r.stream;
  sub->served = *s;
  sub->credit = r.credit;
  sub->spec = r.offset;
  if (sac) sub->sac_name = props["name"];
  subscriptions_[r.subscription_id] = sub;
  server_.counters().consumers += 1;
  (*s)->watch(shared_from_this());
  respond_code(kSubscribe, r.correlation_id, ResponseCode::ok);
  if (!sac) {
    start_delivery(sub, to_log_spec(r.offset));
    return;
  }
  // A partition of a super stream: consumers spread over the partitions.
  std::optional<uint32_t> index;
  if (!props["super-stream"].empty()) {
    auto parts = server_.supers().partitions(props["super-stream"]);
    if (parts.ok()) {
      for (size_t i = 0; i < parts->size(); ++i) {
        if ((*parts)[i] == r.stream) index = uint32_t(i);
      }
    }
  }
  ConsumerRef ref{id_, r.subscription_id};
  std::string stream = r.stream, name = sub->sac_name;
  server_.sac(
      [&](SacGroups& g, SacTime now) { return g.subscribe(stream, name, ref, index, now); });
}

// A consumer of a stream another node owns: remote offsets read from the
// bucket here, the tail forwarded from the owner (replica_feed.h). Single
// active consumer groups live on the owner: such a subscription keeps the
// owner-only answer.
bool Connection::subscribe_replica(const SubscribeRequest& r) {
  for (const auto& [k, v] : r.properties) {
    if (k == "single-active-consumer" && v == "true") return false;
  }
  auto env = server_.replica_env(r.stream);
  if (!env.ok()) return false;
  env->coalesce_bytes = coalesce_limit();
  auto sub = std::make_shared<Subscription>();
  sub->id = r.subscription_id;
  sub->stream = r.stream;
  sub->spec = r.offset;
  subscriptions_[r.subscription_id] = sub;
  server_.counters().consumers += 1;
  respond_code(kSubscribe, r.correlation_id, ResponseCode::ok);
  std::weak_ptr<Connection> weak = shared_from_this();
  std::weak_ptr<Subscription> wsub = sub;
  uint8_t id = sub->id;
  std::string stream = sub->stream;
  sub->replica = ReplicaFeed::start(
      std::move(env).value(), r.offset, shared_from_this(), strand_, server_.tasks(), sub->id,
      deliver_version_, r.credit, [weak, wsub, id, stream](const Error& e) {
        spdlog::warn("subscription {} on {} (replica): {}", id, stream, e.to_string());
        auto c = weak.lock();
        auto sub = wsub.lock();
        if (!c || !sub || sub->closed) return;
        // Told like a consumer of a stream this node stopped serving: the
        // client asks Metadata again and subscribes anew.
        c->subscriptions_.erase(id);
        c->stop_subscription(sub);
        c->send_message(MetadataUpdate{ResponseCode::stream_not_available, stream});
      });
  return true;
}

uint64_t Connection::coalesce_limit() const {
  // A joined chunk stays within the frame size both sides agreed on.
  uint64_t limit = server_.config().server.coalesce_bytes;
  if (frame_max_ > 0) {
    const uint64_t fixed = proto::deliver_head_size(deliver_version_);
    limit = std::min<uint64_t>(limit, frame_max_ > fixed ? frame_max_ - fixed : 0);
  }
  return limit;
}

void Connection::start_delivery(const SubPtr& sub, const log::OffsetSpec& spec) {
  std::string name = sub->stream;
  uint64_t gen = sub->generation;
  using ReaderResult = Result<std::unique_ptr<tier::StreamReader>>;
  run_task<ReaderResult>(
      server_.tasks(), strand_, kStreamOpDeadline, "open reader of " + name,
      [stream = sub->served->stream(), spec]() -> ReaderResult {
        return stream->open_reader(spec);
      },
      [self = shared_from_this(), sub, gen](TaskOutcome<ReaderResult> out) {
        if (self->closed_ || sub->closed || sub->generation != gen) return;
        if (out.end != TaskEnd::completed || !out.value->ok()) {
          const Error& e = out.end != TaskEnd::completed ? out.error : out.value->error();
          // The subscription was answered already: the client learns of
          // the failure as the stream becoming unavailable to it.
          spdlog::warn("subscription {} on {}: opening its reader: {}", sub->id, sub->stream,
                       e.to_string());
          self->send_message(MetadataUpdate{ResponseCode::stream_not_available, sub->stream});
          return;
        }
        DeliveryOptions opts;
        opts.subscription_id = sub->id;
        opts.version = self->deliver_version_;
        opts.coalesce_bytes = self->coalesce_limit();
        std::weak_ptr<Connection> weak = self;
        uint8_t id = sub->id;
        std::string stream = sub->stream;
        sub->delivery = Delivery::start(
            std::move(*out.value).value(), sub->served->stream(), self, self->strand_,
            self->server_.tasks(), opts, uint16_t(std::min<uint32_t>(sub->credit, 65535)),
            [weak, id, stream](const Error& e) {
              spdlog::warn("subscription {} on {}: delivery stopped: {}", id, stream,
                           e.to_string());
              if (auto c = weak.lock()) {
                c->send_message(MetadataUpdate{ResponseCode::stream_not_available, stream});
              }
            },
            sub->served->delivery_limit());
        sub->credit = 0;
      });
}

void Connection::on(const CreditRequest& r) {
  auto it = subscriptions_.find(r.subscription_id);
  if (it == subscriptions_.end()) {
    send_message(CreditResponse{ResponseCode::subscription_id_does_not_exist, r.subscription_id});
    return;
  }
  if (it->second->replica) {
    it->second->replica->add_credit(r.credit);
  } else if (it->second->delivery) {
    it->second->delivery->add_credit(r.credit);
  } else {
    it->second->credit = std::min<uint32_t>(it->second->credit + r.credit, 65535);
  }
}

void Connection::stop_subscription(const SubPtr& s) {
  s->closed = true;
  if (s->delivery) s->delivery->stop();
  if (s->replica) s->replica->stop();
  server_.counters().consumers -= 1;
  if (!s->sac_name.empty()) {
    ConsumerRef ref{id_, s->id};
    std::string stream = s->stream, name = s->sac_name;
    server_.sac([&](SacGroups& g, SacTime now) { return g.unsubscribe(stream, name, ref, now); });
  }
}

void Connection::on(const UnsubscribeRequest& r) {
  auto it = subscriptions_.find(r.subscription_id);
  if (it == subscriptions_.end()) {
    respond_code(kUnsubscribe, r.correlation_id, ResponseCode::subscription_id_does_not_exist);
    return;
  }
  SubPtr s = it->second;
  subscriptions_.erase(it);
  stop_subscription(s);
  respond_code(kUnsubscribe, r.correlation_id, ResponseCode::ok);
}

// ---- single active consumer ----

void Connection::sac_effect(const SacEffect& e) {
  asio::post(strand_, [self = shared_from_this(), e] {
    if (self->closed_) return;
    if (e.kind == SacEffect::Kind::timed_out) {
      // As RabbitMQ does when a request to the client times out: the
      // connection is closed (without a Close request, which the JavaScript
      // client 1.0.0 cannot decode); its other consumers leave their groups.
      spdlog::info(
          "connection {} ({}): closing: subscription {} did not answer ConsumerUpdate "
          "within {} ms",
          self->id_, self->peer_, e.consumer.subscription,
          self->server_.config().server.consumer_update_timeout_ms);
      self->close_now("ConsumerUpdate not answered in time");
      return;
    }
    auto it = self->subscriptions_.find(e.consumer.subscription);
    if (it == self->subscriptions_.end()) return;
    SubPtr s = it->second;
    switch (e.kind) {
      case SacEffect::Kind::send_update: {
        uint32_t corr = self->next_server_correlation_++;
        self->pending_updates_[corr] = s->id;
        self->send_message(ConsumerUpdateRequest{corr, s->id, uint8_t(e.active ? 1 : 0)});
        break;
      }
      case SacEffect::Kind::activate:
        s->generation += 1;
        if (s->delivery) s->delivery->stop();
        s->delivery.reset();
        self->start_delivery(s, to_log_spec(s->spec));
        break;
      case SacEffect::Kind::deactivate:
        s->generation += 1;
        if (s->delivery) {
          // Credit not used by the stepping-down delivery stays with the
          // subscription for its next activation.
          s->credit = s->delivery->credit();
          s->delivery->stop();
        }
        s->delivery.reset();
        break;
      case SacEffect::Kind::timed_out:  // handled above
        break;
    }
  });
}

void Connection::on(const ConsumerUpdateResponse& r) {
  auto p = pending_updates_.find(r.correlation_id);
  if (p == pending_updates_.end()) return;  // stale or unknown: nothing waits for it
  uint8_t sub_id = p->second;
  pending_updates_.erase(p);
  auto it = subscriptions_.find(sub_id);
  if (it == subscriptions_.end() || it->second->sac_name.empty()) return;
  SubPtr s = it->second;
  if (r.code == ResponseCode::ok) s->spec = r.offset;
  ConsumerRef ref{id_, sub_id};
  std::string stream = s->stream, name = s->sac_name;
  server_.sac([&](SacGroups& g, SacTime now) {
    return g.consumer_update_answered(stream, name, ref, now);
  });
}

// ---- offsets ----

void Connection::on(const StoreOffsetRequest& r) {
  // No response in the protocol: a bad request is only logged.
  if (server_.cluster_offsets()) {
    store_cluster_offset(r);
    return;
  }
  if (!server_.node().stream(r.stream).ok()) return;
  if (auto st = server_.offsets().store(r.stream, r.reference, r.offset); !st.ok()) {
    spdlog::info("connection {}: store offset: {}", id_, st.error().message);
  }
}

void Connection::on(const QueryOffsetRequest& r) {
  if (server_.cluster_offsets()) {
    query_cluster_offset(r);
    return;
  }
  QueryOffsetResponse resp;
  resp.correlation_id = r.correlation_id;
  if (!server_.node().stream(r.stream).ok()) {
    resp.code = ResponseCode::stream_does_not_exist;
  } else if (auto o = server_.offsets().query(r.stream, r.reference)) {
    resp.offset = *o;
  } else {
    resp.code = ResponseCode::no_offset;
  }
  send_message(resp);
}

// ---- super streams ----

void Connection::on(const RouteRequest& r) {
  RouteResponse resp;
  resp.correlation_id = r.correlation_id;
  auto streams = server_.supers().route(r.super_stream, r.routing_key);
  if (streams.ok()) {
    resp.streams = std::move(streams).value();
  } else {
    resp.code = ResponseCode::stream_does_not_exist;
  }
  send_message(resp);
}

void Connection::on(const PartitionsRequest& r) {
  PartitionsResponse resp;
  resp.correlation_id = r.correlation_id;
  auto streams = server_.supers().partitions(r.super_stream);
  if (streams.ok()) {
    resp.streams = std::move(streams).value();
  } else {
    resp.code = ResponseCode::stream_does_not_exist;
  }
  send_message(resp);
}

void Connection::on(const CreateSuperStreamRequest& r) {
  auto args = parse_stream_args(r.arguments);
  if (!args.ok()) {
    spdlog::info("connection {}: create super stream {}: {}", id_, r.name, args.error().message);
    respond_code(kCreateSuperStream, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  Server* srv = &server_;
  SuperStream ss{r.name, r.partitions, r.binding_keys};
  run_task<Status>(
      server_.tasks(), strand_, kStreamOpDeadline, "create super stream " + r.name,
      [srv, ss, settings = std::move(args).value()]() -> Status {
        return srv->supers().create(
            ss,
            // Every partition gets the super stream's arguments, as in RabbitMQ.
            [srv, settings](const std::string& p) { return srv->create_stream(p, settings); },
            [srv](const std::string& p) { return srv->delete_stream(p); });
      },
      [self = shared_from_this(), corr = r.correlation_id, name = r.name](TaskOutcome<Status> out) {
        self->respond_code(kCreateSuperStream, corr,
                           code_for_stream_op(out, "create super stream " + name));
      });
}

void Connection::on(const DeleteSuperStreamRequest& r) {
  Server* srv = &server_;
  std::string name = r.name;
  run_task<Status>(
      server_.tasks(), strand_, kStreamOpDeadline, "delete super stream " + name,
      [srv, name]() -> Status {
        return srv->supers().remove(name, [srv](const std::string& p) -> Status {
          Status st = srv->delete_stream(p);
          if (!st.ok() && st.error().code == Errc::not_found) return Status::OK();
          return st;
        });
      },
      [self = shared_from_this(), corr = r.correlation_id, name](TaskOutcome<Status> out) {
        self->respond_code(kDeleteSuperStream, corr,
                           code_for_stream_op(out, "delete super stream " + name));
      });
}

// ---- stream deletion ----

// A stream this node cannot serve: in a cluster one another node owns (or
// will own after a takeover) is "not available" here — RabbitMQ's answer
// to a publisher on a non-leader — so the client asks Metadata for the
// leader; anything else does not exist.
ResponseCode Connection::missing_stream_code(const std::string& stream) {
  return server_.served_elsewhere(stream) ? ResponseCode::stream_not_available
                                          : ResponseCode::stream_does_not_exist;
}

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
      SubPtr s = it->second;
      it = subscriptions_.erase(it);
      stop_subscription(s);
      affected = true;
    } else {
      ++it;
    }
  }
  if (!affected) return;
  send_message(MetadataUpdate{ResponseCode::stream_not_available, stream});
}

}  // namespace strata::server
