#include "server/handshake_room.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/version.h"
#include "proto/dispatch.h"

namespace strata::server {

using namespace proto;

HandshakeRoom::HandshakeRoom(Session& session, FrameChannel& channel,
                             const ServerSettings& settings, Advertised advertised)
    : session_(session),
      channel_(channel),
      settings_(settings),
      advertised_(std::move(advertised)) {}

void HandshakeRoom::on(const PeerPropertiesRequest& r) {
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
  state_ = after(state_, kPeerProperties);
}

void HandshakeRoom::on(const SaslHandshakeRequest& r) {
  SaslHandshakeResponse resp;
  resp.correlation_id = r.correlation_id;
  resp.mechanisms = {"PLAIN"};
  send_message(session_, resp);
}

void HandshakeRoom::on(const SaslAuthenticateRequest& r) {
  if (state_ == HandshakeState::open) {
    reauthenticate(r);
    return;
  }
  if (r.mechanism != "PLAIN") {
    respond_code(session_, kSaslAuthenticate, r.correlation_id,
                 ResponseCode::sasl_mechanism_not_supported);
    return;
  }
  ResponseCode code = authenticate_plain(r.data, settings_.users, session_.loopback(), &user_);
  respond_code(session_, kSaslAuthenticate, r.correlation_id, code);
  if (code != ResponseCode::ok) {
    spdlog::info("connection {} ({}): authentication of '{}' failed: {}", session_.id(),
                 session_.peer(), user_, response_code_name(code));
    session_.close_after_flush();
    return;
  }
  state_ = after(state_, kSaslAuthenticate);
  mechanism_ = r.mechanism;
  send_message(session_, TuneFrame{settings_.frame_max, settings_.heartbeat_s});
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
    code = authenticate_plain(r.data, settings_.users, session_.loopback(), &user);
    if (code == ResponseCode::ok && user != user_) {
      code = ResponseCode::sasl_cannot_change_username;
    }
  }
  respond_code(session_, kSaslAuthenticate, r.correlation_id, code);
  if (code != ResponseCode::ok) {
    spdlog::info("connection {} ({}): re-authentication of '{}' refused: {}", session_.id(),
                 session_.peer(), user_, response_code_name(code));
    session_.close_after_flush();
  }
}

void HandshakeRoom::on(const TuneFrame& r) {
  channel_.set_frame_max(negotiate_frame_max(settings_.frame_max, r.frame_max));
  channel_.set_heartbeat(negotiate_heartbeat(settings_.heartbeat_s, r.heartbeat));
  state_ = after(state_, kTune);
}

void HandshakeRoom::on(const OpenRequest& r) {
  OpenResponse resp;
  resp.correlation_id = r.correlation_id;
  if (r.virtual_host != "/") {
    resp.code = ResponseCode::virtual_host_access_failure;
    send_message(session_, resp);
    return;
  }
  resp.properties = {{"advertised_host", advertised_.host},
                     {"advertised_port", std::to_string(advertised_.port)}};
  send_message(session_, resp);
  state_ = after(state_, kOpen);
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
