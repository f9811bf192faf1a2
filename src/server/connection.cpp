#include "server/connection.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/post.hpp>

#include "common/stream_name.h"
#include "server/frame_channel.h"
#include "server/offset_room.h"
#include "server/publisher_room.h"
#include "server/server_limits.h"
#include "server/stream_admin_room.h"
#include "server/subscription_room.h"
#include "server/vhost_names.h"

namespace strata::server {

using namespace proto;

void respond_code(Session& s, uint16_t key, uint32_t correlation_id, ResponseCode code) {
  if (code != ResponseCode::ok) s.count_error(code);
  Bytes f;
  size_t start = begin_frame(&f, uint16_t(key | kResponseFlag), 1);
  WireWriter w(&f);
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  finish_frame(&f, start);
  s.send(std::move(f));
}

namespace {

class ConnectionImpl final : public Connection,
                             public Session,
                             public FrameHandler,
                             public StreamWatcher,
                             public std::enable_shared_from_this<ConnectionImpl> {
 public:
  ConnectionImpl(const ConnectionEnv& env, uint64_t id, Strand strand,
                 std::unique_ptr<Transport> transport, ConnectionOrigin origin)
      : env_(env),
        id_(id),
        advertised_(origin.advertised),
        channel_(std::make_shared<FrameChannel>(id, std::move(strand), std::move(transport),
                                                std::min(kPreOpenFrameMax, env.settings->frame_max),
                                                *env.counters)),
        handshake_(*this, *channel_, *env.settings, *env.access, std::move(origin), *env.counters,
                   *env.logins, *env.quota),
        owners_(*this, *env.replicas, handshake_),
        admin_(*this, *env.admin, *env.streams, owners_, env.tasks),
        publishers_(*this, *env.streams, owners_, *env.counters,
                    [this] { channel_->resume_reading(); }),
        subscriptions_(*this, handshake_, *env.streams, *env.replicas, *env.sac, *env.settings,
                       *env.counters, env.tasks),
        offsets_(*this, *env.offsets, env.tasks) {}

  // ---- Connection ----
  uint64_t id() const override { return id_; }
  void start() override {
    channel_->start(shared_from_this(),
                    std::chrono::milliseconds(env_.settings->handshake_timeout_ms));
    asio::post(strand(), [self = shared_from_this()] { self->handshake_.start(); });
  }
  void shutdown() override {
    asio::post(strand(), [self = shared_from_this()] {
      if (self->channel_->closing()) return;
      // As RabbitMQ does on shutdown: the frames already queued (confirms)
      // go out, then the socket closes without a Close request — clients
      // take that as a lost connection and reconnect, while the JavaScript
      // client 1.0.0 cannot decode a server-initiated Close and throws from
      // its socket handler (tests/server/js, reconnect_restart).
      spdlog::info("connection {} ({}): closing: server shutting down", self->id_, self->peer());
      self->channel_->close_after_flush();
    });
  }
  void close_by_operator(std::string why) override {
    asio::post(strand(), [self = shared_from_this(), why = std::move(why)] {
      if (self->channel_->closing()) return;
      spdlog::info("connection {} ({}): closing: {}", self->id_, self->peer(), why);
      self->channel_->close_after_flush();
    });
  }
  void sac_effect(const SacEffect& e) override { subscriptions_.sac_effect(e); }
  void recheck_access() override {
    asio::post(strand(), [self = shared_from_this()] {
      const std::string& user = self->handshake_.user();
      const std::string& vhost = self->handshake_.vhost();
      // Not open yet: its login and Open are checked against the new rules.
      if (vhost.empty() || self->channel_->closing()) return;
      auto rules = self->env_.access->current();
      if (rules->find_user(user) == nullptr) {
        self->channel_->close_with(ResponseCode::authentication_failure,
                                   fmt::format("user '{}' was deleted", user));
      } else if (!rules->vhost_access(user, vhost)) {
        self->channel_->close_with(
            ResponseCode::virtual_host_access_failure,
            fmt::format("user '{}' has no permissions in vhost '{}' any more", user, vhost));
      }
    });
  }

  void describe(std::function<void(nlohmann::json)> done) override {
    asio::post(strand(), [self = shared_from_this(), done = std::move(done)] {
      nlohmann::json props = nlohmann::json::object();
      for (const auto& [k, v] : self->handshake_.client_properties()) props[k] = v;
      nlohmann::json j = {
          {"id", self->id_},
          // RabbitMQ's name for a connection: its two ends.
          {"name", fmt::format("{} -> {}", self->channel_->peer(), self->channel_->local())},
          {"peer", self->channel_->peer_address()},
          {"user", self->handshake_.user()},
          {"auth_mechanism", self->handshake_.auth_mechanism()},
          {"vhost", self->handshake_.vhost()},
          {"state", handshake_state_name(self->handshake_.state())},
          {"client_properties", std::move(props)},
          {"tls", self->channel_->tls() != nullptr},
          {"recv_oct", self->channel_->bytes_received()},
          {"send_oct", self->channel_->bytes_sent()},
          {"publishers", self->publishers_.describe()},
          {"subscriptions", self->subscriptions_.describe()},
      };
      // The rooms describe stored names; the lists show the client's.
      for (const char* list : {"publishers", "subscriptions"}) {
        for (auto& e : j[list]) {
          if (e.contains("stream") && e["stream"].is_string()) {
            e["stream"] = self->client_name(e["stream"].get<std::string>());
          }
        }
      }
      if (const TlsInfo* t = self->channel_->tls()) {
        j["tls_version"] = t->version;
        j["tls_cipher"] = t->cipher;
        if (!t->peer_subject.empty()) j["tls_peer_subject"] = t->peer_subject;
        j["tls_kernel_send"] = t->kernel_send;
      }
      done(std::move(j));
    });
  }

  void tally(std::function<void(ClientTally)> done) override {
    asio::post(strand(), [self = shared_from_this(), done = std::move(done)] {
      ClientTally t;
      self->publishers_.tally(&t);
      self->subscriptions_.tally(&t);
      done(std::move(t));
    });
  }

  // ---- Session ----
  const std::string& peer() const override { return channel_->peer(); }
  bool loopback() const override { return channel_->loopback(); }
  const Advertised& advertised() const override { return advertised_; }
  bool sendfile() const override { return channel_->transport().sendfile(); }
  Strand& strand() override { return channel_->strand(); }
  std::shared_ptr<void> hold() override { return shared_from_this(); }
  bool closed() const override { return channel_->closed(); }
  void send(Bytes frame) override { channel_->send(std::move(frame)); }
  std::shared_ptr<FrameSink> frames() override { return channel_; }
  std::shared_ptr<StreamWatcher> watcher() override { return shared_from_this(); }
  uint32_t next_correlation() override { return channel_->next_correlation(); }
  std::string client_name(const std::string& stored) const override {
    return names().shown(stored);
  }
  bool permitted(Permission p, const std::string& resource) override {
    // Permissions match the name the client gave, within its vhost.
    if (auto name = names().client_name(resource)) {
      return env_.access->permitted(handshake_.user(), handshake_.vhost(), p, *name);
    }
    // A stored name of another vhost, which only a peer link can name: the
    // cluster reads every vhost's streams (copies, replica reads, questions
    // to an owner) and does nothing else there.
    return peer_link() && p == Permission::read;
  }
  bool allowed(Permission p, const std::string& resource, std::string_view command) override {
    if (permitted(p, resource)) return true;
    env_.counters->access_refused += 1;
    spdlog::info(
        "connection {} ({}): {} refused: user '{}' has no {} permission on '{}' in vhost "
        "'{}'",
        id_, peer(), command, handshake_.user(), auth::op_name(p),
        printable_name(client_name(resource)), handshake_.vhost());
    return false;
  }
  void count_error(ResponseCode code) override { env_.counters->count_error(code); }
  void close_now(const std::string& why) override { channel_->close_now(why); }
  void close_with(ResponseCode code, const std::string& reason) override {
    channel_->close_with(code, reason);
  }
  void close_after_flush() override { channel_->close_after_flush(); }

  // ---- FrameHandler ----
  void on_frame(BytesView body) override;
  bool reading_allowed() const override {
    return publishers_.reading_allowed() && !handshake_.holding();
  }
  void on_closed(const std::string&) override {
    handshake_.close();
    subscriptions_.close();
    publishers_.close();
    if (env_.on_closed) env_.on_closed(id_);
  }

  // ---- StreamWatcher ----
  void stream_gone(const std::string& stream) override {
    asio::post(strand(), [self = shared_from_this(), stream] {
      if (self->closed()) return;
      const bool publishers = self->publishers_.drop_stream(stream);
      const bool subscriptions = self->subscriptions_.drop_stream(stream);
      if (publishers || subscriptions) {
        send_message(*self,
                     MetadataUpdate{ResponseCode::stream_not_available, self->client_name(stream)});
      }
    });
  }

 private:
  // Hands a decoded frame to the one room that takes it.
  void dispatch(const ClientFrame& frame);
  bool peer_link() const {
    const auto& peers = env_.peer_users;
    return std::find(peers.begin(), peers.end(), handshake_.user()) != peers.end();
  }
  VhostNames names() const { return VhostNames(handshake_.vhost(), peer_link()); }
  void protocol_error(ResponseCode code, const std::string& why) {
    env_.counters->protocol_errors += 1;
    close_with(code, why);
  }

  const ConnectionEnv env_;
  const uint64_t id_;
  const Advertised advertised_;
  const std::shared_ptr<FrameChannel> channel_;
  HandshakeRoom handshake_;
  OwnerAsker owners_;  // before the rooms that ask through it
  StreamAdminRoom admin_;
  PublisherRoom publishers_;
  SubscriptionRoom subscriptions_;
  OffsetRoom offsets_;
};

void ConnectionImpl::on_frame(BytesView body) {
  auto head = peek_head(body);
  if (!head.ok()) {
    env_.counters->protocol_errors += 1;
    close_now("frame shorter than its head");
    return;
  }
  const uint16_t key = head->key;
  if (handshake_.close_answered()) {
    if (key == kClose) {
      auto c = decode_client_frame(body);
      if (c.ok() && std::holds_alternative<CloseRequest>(*c)) {
        handshake_.on(std::get<CloseRequest>(*c));
      }
    }
    return;
  }
  const uint16_t command = uint16_t(key & ~kResponseFlag);
  const bool response = is_client_response(key);
  if (!response && !command_allowed(handshake_.state(), command)) {
    protocol_error(ResponseCode::unknown_frame,
                   fmt::format("{} not allowed while {}", command_name(key),
                               handshake_state_name(handshake_.state())));
    return;
  }
  auto f = decode_client_frame(body);
  if (!f.ok()) {
    // An unknown command or version, as a malformed frame: RabbitMQ closes
    // the connection with 13 "unknown frame" rather than answering it.
    protocol_error(ResponseCode::unknown_frame, f.error().message);
    return;
  }
  if (response && handshake_.state() != HandshakeState::open &&
      handshake_.state() != HandshakeState::closing) {
    close_with(ResponseCode::unknown_frame, "response before the connection is open");
    return;
  }
  // Every stream name the rooms see is a stored one (vhost_names.h).
  if (!handshake_.vhost().empty()) names().qualify(&*f);
  dispatch(*f);
}

void ConnectionImpl::dispatch(const ClientFrame& frame) {
  std::visit(
      [this](const auto& m) {
        constexpr int rooms =
            int(requires { handshake_.on(m); }) + int(requires { admin_.on(m); }) +
            int(requires { publishers_.on(m); }) + int(requires { subscriptions_.on(m); }) +
            int(requires { offsets_.on(m); });
        static_assert(rooms == 1, "every client frame is taken by exactly one room");
        if constexpr (requires { handshake_.on(m); }) {
          handshake_.on(m);
        } else if constexpr (requires { admin_.on(m); }) {
          admin_.on(m);
        } else if constexpr (requires { publishers_.on(m); }) {
          publishers_.on(m);
        } else if constexpr (requires { subscriptions_.on(m); }) {
          subscriptions_.on(m);
        } else {
          offsets_.on(m);
        }
      },
      frame);
}

}  // namespace

std::shared_ptr<Connection> Connection::make(const ConnectionEnv& env, uint64_t id, Strand strand,
                                             std::unique_ptr<Transport> transport,
                                             ConnectionOrigin origin) {
  return std::make_shared<ConnectionImpl>(env, id, std::move(strand), std::move(transport),
                                          std::move(origin));
}

}  // namespace strata::server
