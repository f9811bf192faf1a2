#include "server/handshake.h"

#include <algorithm>

namespace strata::server {

using namespace proto;

std::string_view handshake_state_name(HandshakeState s) {
  switch (s) {
    case HandshakeState::peer_properties:
      return "awaiting PeerProperties";
    case HandshakeState::sasl:
      return "authenticating";
    case HandshakeState::tuning:
      return "awaiting Tune";
    case HandshakeState::opening:
      return "awaiting Open";
    case HandshakeState::open:
      return "open";
    case HandshakeState::closing:
      return "closing";
  }
  return "?";
}

bool command_allowed(HandshakeState s, uint16_t key) {
  if (key == kClose || key == kHeartbeat) return true;
  switch (s) {
    case HandshakeState::peer_properties:
      return key == kPeerProperties;
    case HandshakeState::sasl:
      return key == kSaslHandshake || key == kSaslAuthenticate;
    case HandshakeState::tuning:
      return key == kTune;
    case HandshakeState::opening:
      // A client may answer Tune again while waiting (harmless).
      return key == kOpen || key == kTune;
    case HandshakeState::open:
      // SaslAuthenticate again: re-authentication (a refreshed token).
      return key != kPeerProperties && key != kSaslHandshake && key != kOpen;
    case HandshakeState::closing:
      return false;
  }
  return false;
}

HandshakeState after(HandshakeState s, uint16_t key) {
  if (key == kClose) return HandshakeState::closing;
  switch (s) {
    case HandshakeState::peer_properties:
      return key == kPeerProperties ? HandshakeState::sasl : s;
    case HandshakeState::sasl:
      return key == kSaslAuthenticate ? HandshakeState::tuning : s;
    case HandshakeState::tuning:
      return key == kTune ? HandshakeState::opening : s;
    case HandshakeState::opening:
      return key == kOpen ? HandshakeState::open : s;
    default:
      return s;
  }
}

ResponseCode authenticate_plain(std::string_view data, const auth::AccessControl& access,
                                bool peer_is_loopback, std::string* user) {
  auto first = data.find('\0');
  if (first == std::string_view::npos) return ResponseCode::authentication_failure;
  auto second = data.find('\0', first + 1);
  if (second == std::string_view::npos) return ResponseCode::authentication_failure;
  std::string_view name = data.substr(first + 1, second - first - 1);
  std::string_view password = data.substr(second + 1);
  *user = std::string(name);
  switch (access.authenticate_plain(name, password, peer_is_loopback)) {
    case auth::AuthOutcome::ok:
      return ResponseCode::ok;
    case auth::AuthOutcome::loopback_only:
      return ResponseCode::sasl_authentication_failure_loopback;
    case auth::AuthOutcome::refused:
      break;
  }
  return ResponseCode::authentication_failure;
}

uint32_t negotiate_frame_max(uint32_t server, uint32_t client) {
  if (server == 0) return client;
  if (client == 0) return server;
  return std::min(server, client);
}

uint32_t negotiate_heartbeat(uint32_t server, uint32_t client) {
  if (server == 0 || client == 0) return 0;
  return std::min(server, client);
}

}  // namespace strata::server
