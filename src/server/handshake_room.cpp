#include "server/handshake_room.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/stream_name.h"
#include "common/version.h"
#include "proto/dispatch.h"

namespace strata::server {

using namespace proto;

HandshakeRoom::HandshakeRoom(Session& session, FrameChannel& channel,
                             const ServerSettings& settings, const AccessPolicy& access,
                             ConnectionOrigin origin, ServerCounters& counters,
                             LoginThrottle& logins, ConnectionQuota& quota)
    : session_(session),
      channel_(channel),
      settings_(settings),
      origin_(std::move(origin)),
      access_(access),
      counters_(counters),
      logins_(logins),
      quota_(quota),
      step_timer_(channel.strand()),
      hold_timer_(channel.strand()) {}

std::string HandshakeRoom::certificate_user() const {
  const TlsInfo* t = channel_.transport().tls();
  if (t == nullptr || !t->peer_verified) return "";
  return origin_.cert_login_from == "common_name" ? t->peer_common_name : t->peer_subject;
}

void HandshakeRoom::start() {
  arm_step();
}

void HandshakeRoom::close() {
  closed_ = true;
  step_timer_.cancel();
  hold_timer_.cancel();
}

void HandshakeRoom::advance(uint16_t key) {
  const HandshakeState before = state_;
  state_ = after(state_, key);
  if (state_ != before) arm_step();
}

void HandshakeRoom::arm_step() {
  if (closed_) return;
  if (state_ == HandshakeState::open || state_ == HandshakeState::closing) {
    step_timer_.cancel();
    return;
  }
  const auto timeout = std::chrono::milliseconds(settings_.handshake_timeout_ms);
  step_timer_.expires_after(timeout);
  // The wait holds the connection; close() cancels it.
  step_timer_.async_wait(
      [this, keep = session_.hold(), state = state_, timeout](const std::error_code& ec) {
        if (ec || closed_ || state_ != state || session_.closed()) return;
        counters_.handshake_timeouts += 1;
        spdlog::info("connection {} ({}): closing: handshake step timed out ({} for {} ms)",
                     session_.id(), session_.peer(), handshake_state_name(state), timeout.count());
        session_.close_now("handshake step timed out");
      });
}

void HandshakeRoom::hold_for(std::chrono::milliseconds wait, std::function<void()> then) {
  holding_ = true;
  hold_timer_.expires_after(wait);
  hold_timer_.async_wait(
      [this, keep = session_.hold(), then = std::move(then)](const std::error_code& ec) {
        if (ec || closed_ || session_.closed()) return;
        holding_ = false;
        then();
        if (!holding_) channel_.resume_reading();
      });
}

void HandshakeRoom::on(const PeerPropertiesRequest& r) {
  client_properties_ = r.properties;
  PeerPropertiesResponse resp;
  resp.correlation_id = r.correlation_id;
  // Clients read `version` as the RabbitMQ version whose features they may
  // use (docs/formats/protocol-frames.md, "Identity"): it names the feature
  // set strata speaks; the product and its own version are beside it.
  resp.properties = {
      {"product", "strata"},
      {"version", kSpokenRabbitMqVersion},
      {"strata_version", kStrataVersion},
      {"platform", "C++20"},
      {"copyright", "strata authors"},
      {"information",
       fmt::format("strata {}: tiered stream storage speaking the stream protocol of RabbitMQ {}",
                   kStrataVersion, kSpokenRabbitMqVersion)}};
  send_message(session_, resp);
  advance(kPeerProperties);
}

void HandshakeRoom::on(const SaslHandshakeRequest& r) {
  SaslHandshakeResponse resp;
  resp.correlation_id = r.correlation_id;
  resp.mechanisms = offered_mechanisms(settings_.auth_mechanisms,
                                       LoginPeer{session_.loopback(), certificate_user()});
  send_message(session_, resp);
}

void HandshakeRoom::on(const SaslAuthenticateRequest& r) {
  if (state_ == HandshakeState::open) {
    reauthenticate(r);
    return;
  }
  const auto offered = offered_mechanisms(settings_.auth_mechanisms,
                                          LoginPeer{session_.loopback(), certificate_user()});
  if (std::find(offered.begin(), offered.end(), r.mechanism) == offered.end()) {
    // The client may try another: the connection stays in its SASL step.
    spdlog::info("connection {} ({}): SASL mechanism '{}' is not offered", session_.id(),
                 session_.peer(), r.mechanism);
    respond_code(session_, kSaslAuthenticate, r.correlation_id,
                 ResponseCode::sasl_mechanism_not_supported);
    return;
  }
  // An address with recent failures waits before its credentials are
  // looked at: whatever it does meanwhile, it learns nothing sooner.
  const auto admission = logins_.admit(channel_.peer_address(), std::chrono::steady_clock::now());
  if (admission.refuse) {
    spdlog::info("connection {} ({}): login refused unchecked: too many failures from {}",
                 session_.id(), session_.peer(), channel_.peer_address());
    refuse_login(r.correlation_id, ResponseCode::authentication_failure);
    return;
  }
  if (admission.wait.count() > 0) {
    spdlog::info("connection {} ({}): login held {} ms after failures from {}", session_.id(),
                 session_.peer(), admission.wait.count(), channel_.peer_address());
    // The server's own wait is not the client's step: no deadline meanwhile.
    step_timer_.cancel();
    hold_for(admission.wait, [this, r] { authenticate(r); });
    return;
  }
  authenticate(r);
}

void HandshakeRoom::authenticate(const SaslAuthenticateRequest& r) {
  ResponseCode code = authenticate_sasl(r.mechanism, r.data, settings_.auth_mechanisms,
                                        settings_.anonymous_user, *access_.current(),
                                        LoginPeer{session_.loopback(), certificate_user()}, &user_);
  if (code != ResponseCode::ok) {
    refuse_login(r.correlation_id, code);
    return;
  }
  logins_.succeeded(channel_.peer_address());
  respond_code(session_, kSaslAuthenticate, r.correlation_id, code);
  advance(kSaslAuthenticate);
  mechanism_ = r.mechanism;
  send_message(session_, TuneFrame{settings_.frame_max, settings_.heartbeat_s});
}

// Logged and counted; the answer (which never says whether the user or
// the password was wrong) comes after a delay, then the connection closes.
void HandshakeRoom::refuse_login(uint32_t correlation_id, ResponseCode code) {
  counters_.auth_failures += 1;
  logins_.failed(channel_.peer_address(), std::chrono::steady_clock::now());
  spdlog::info("connection {} ({}): authentication of '{}' failed: {}", session_.id(),
               session_.peer(), user_, response_code_name(code));
  state_ = HandshakeState::closing;
  step_timer_.cancel();
  auto answer = [this, correlation_id, code] {
    respond_code(session_, kSaslAuthenticate, correlation_id, code);
    session_.close_after_flush();
  };
  if (settings_.auth_failure_delay_ms == 0) {
    answer();
    return;
  }
  hold_for(std::chrono::milliseconds(settings_.auth_failure_delay_ms), answer);
}

// A client whose credentials expire (a token) authenticates again on its
// open connection. As RabbitMQ: with the mechanism it opened with and as
// the same user; anything else, or failing, closes the connection after
// the answer.
void HandshakeRoom::reauthenticate(const SaslAuthenticateRequest& r) {
  ResponseCode code = ResponseCode::ok;
  std::string user;
  if (r.mechanism != mechanism_) {
    code = ResponseCode::sasl_cannot_change_mechanism;
  } else {
    code = authenticate_sasl(r.mechanism, r.data, settings_.auth_mechanisms,
                             settings_.anonymous_user, *access_.current(),
                             LoginPeer{session_.loopback(), certificate_user()}, &user);
    if (code == ResponseCode::ok && user != user_) {
      code = ResponseCode::sasl_cannot_change_username;
    }
  }
  respond_code(session_, kSaslAuthenticate, r.correlation_id, code);
  if (code != ResponseCode::ok) {
    counters_.auth_failures += 1;
    spdlog::info("connection {} ({}): re-authentication of '{}' refused: {}", session_.id(),
                 session_.peer(), user_, response_code_name(code));
    session_.close_after_flush();
  }
}

void HandshakeRoom::on(const TuneFrame& r) {
  // The agreed size applies from Open on: until then a frame stays within
  // the ceiling for strangers.
  tuned_frame_max_ = negotiate_frame_max(settings_.frame_max, r.frame_max);
  channel_.set_heartbeat(negotiate_heartbeat(settings_.heartbeat_s, r.heartbeat));
  advance(kTune);
}

void HandshakeRoom::on(const OpenRequest& r) {
  OpenResponse resp;
  resp.correlation_id = r.correlation_id;
  // One snapshot of the rules for the whole Open (a reload may land
  // meanwhile). As RabbitMQ: a user opens only a vhost it has permissions
  // in (which exists: permissions name existing vhosts only).
  const auto rules = access_.current();
  if (!rules->vhost_access(user_, r.virtual_host)) {
    counters_.access_refused += 1;
    spdlog::info("connection {} ({}): open of vhost '{}' refused for user '{}': {}", session_.id(),
                 session_.peer(), printable_name(r.virtual_host), user_,
                 rules->has_vhost(r.virtual_host) ? "no permissions in it" : "no such vhost");
    resp.code = ResponseCode::virtual_host_access_failure;
    send_message(session_, resp);
    return;
  }
  // The connection limits of the user and the vhost; the place taken is
  // given back when the connection closes (Server, on_closed).
  const auth::User* u = rules->find_user(user_);
  const auth::VHost* v = rules->find_vhost(r.virtual_host);
  uint32_t limit = 0;
  const auto place =
      quota_.take(session_.id(), user_, r.virtual_host, u ? u->max_connections : std::nullopt,
                  v ? v->max_connections : std::nullopt, &limit);
  if (place != ConnectionQuota::Outcome::taken) {
    counters_.connections_refused_limit += 1;
    const bool vhost_full = place == ConnectionQuota::Outcome::vhost_full;
    spdlog::info(
        "connection {} ({}): open of vhost '{}' refused for user '{}': {} connection "
        "limit ({}) reached",
        session_.id(), session_.peer(), r.virtual_host, user_,
        vhost_full ? "the vhost's" : "the user's", limit);
    resp.code = ResponseCode::virtual_host_access_failure;
    send_message(session_, resp);
    return;
  }
  resp.properties = {{"advertised_host", origin_.advertised.host},
                     {"advertised_port", std::to_string(origin_.advertised.port)}};
  send_message(session_, resp);
  counters_.connections_opened += 1;
  counters_.connections_established += 1;
  vhost_ = r.virtual_host;
  channel_.set_frame_max(tuned_frame_max_);
  // Before Open the handshake's step deadline bounds a half frame.
  channel_.set_partial_frame_timeout(std::chrono::milliseconds(settings_.partial_frame_timeout_ms));
  // Before Open the handshake's step deadline bounds a client that does not read.
  channel_.set_send_timeout(std::chrono::milliseconds(settings_.send_timeout_ms));
  advance(kOpen);
}

void HandshakeRoom::on(const CloseRequest& r) {
  respond_code(session_, kClose, r.correlation_id, ResponseCode::ok);
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
  channel_.close_after(std::chrono::milliseconds(settings_.close_linger_ms));
}

void HandshakeRoom::on(const CloseResponse&) {
  session_.close_now("close acknowledged");
}

void HandshakeRoom::on(const HeartbeatFrame&) {}

void HandshakeRoom::on(const ExchangeCommandVersionsRequest& r) {
  for (const auto& v : r.versions) {
    if (v.key == kDeliver && v.max_version >= 2) deliver_version_ = 2;
  }
  ExchangeCommandVersionsResponse resp;
  resp.correlation_id = r.correlation_id;
  resp.versions = supported_client_versions();
  send_message(session_, resp);
}

}  // namespace strata::server
