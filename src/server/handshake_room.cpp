#include "server/handshake_room.h"

#include <spdlog/spdlog.h>

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
  // Clients read `version` as the broker's: 3.13 or later enables super
  // streams, filtering and Deliver v2 in the JS client.
  resp.properties = {{"product", "strata"},
                     {"version", "3.13.0"},
                     {"platform", "C++20"},
                     {"copyright", "strata authors"},
                     {"information", "strata: tiered stream storage"}};
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
  send_message(session_, TuneFrame{settings_.frame_max, settings_.heartbeat_s});
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
