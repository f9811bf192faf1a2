#include "server/handshake.h"

#include <algorithm>
#include <optional>

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

namespace {

proto::ResponseCode outcome_code(auth::AuthOutcome o) {
  switch (o) {
    case auth::AuthOutcome::ok:
      return ResponseCode::ok;
    case auth::AuthOutcome::loopback_only:
      return ResponseCode::sasl_authentication_failure_loopback;
    case auth::AuthOutcome::refused:
      break;
  }
  return ResponseCode::authentication_failure;
}

bool listed(const std::vector<std::string>& v, std::string_view m) {
  return std::find(v.begin(), v.end(), m) != v.end();
}

}  // namespace

ResponseCode authenticate_plain(std::string_view data, const auth::AccessControl& access,
                                bool peer_is_loopback, std::string* user) {
  auto first = data.find('\0');
  if (first == std::string_view::npos) return ResponseCode::authentication_failure;
  auto second = data.find('\0', first + 1);
  if (second == std::string_view::npos) return ResponseCode::authentication_failure;
  std::string_view name = data.substr(first + 1, second - first - 1);
  std::string_view password = data.substr(second + 1);
  *user = std::string(name);
  return outcome_code(access.authenticate_plain(name, password, peer_is_loopback));
}

std::vector<std::string> offered_mechanisms(const std::vector<std::string>& configured,
                                            const LoginPeer& peer) {
  std::vector<std::string> out;
  for (const auto& m : configured) {
    if (m == "EXTERNAL" && peer.certificate_user.empty()) continue;
    out.push_back(m);
  }
  return out;
}

bool parse_amqplain(std::string_view data, std::string* login, std::string* password) {
  bool have_login = false;
  bool have_password = false;
  size_t i = 0;
  auto take = [&](size_t n) -> std::optional<std::string_view> {
    if (data.size() - i < n) return std::nullopt;
    auto v = data.substr(i, n);
    i += n;
    return v;
  };
  while (i < data.size()) {
    auto name_len = take(1);
    if (!name_len) return false;
    auto name = take(uint8_t((*name_len)[0]));
    auto type = name ? take(1) : std::nullopt;
    // Only long strings: LOGIN and PASSWORD are one, and any other field
    // type would need the whole AMQP value grammar for nothing.
    if (!type || (*type)[0] != 'S') return false;
    auto len_bytes = take(4);
    if (!len_bytes) return false;
    uint32_t len = 0;
    for (char c : *len_bytes) len = (len << 8) | uint8_t(c);
    auto value = take(len);
    if (!value) return false;
    if (*name == "LOGIN") {
      *login = std::string(*value);
      have_login = true;
    } else if (*name == "PASSWORD") {
      *password = std::string(*value);
      have_password = true;
    }
  }
  return have_login && have_password;
}

ResponseCode authenticate_sasl(std::string_view mechanism, std::string_view data,
                               const std::vector<std::string>& configured,
                               const std::string& anonymous_user, const auth::AccessControl& access,
                               const LoginPeer& peer, std::string* user) {
  if (!listed(offered_mechanisms(configured, peer), mechanism)) {
    return ResponseCode::sasl_mechanism_not_supported;
  }
  if (mechanism == "PLAIN") return authenticate_plain(data, access, peer.loopback, user);
  if (mechanism == "AMQPLAIN") {
    std::string login;
    std::string password;
    if (!parse_amqplain(data, &login, &password)) {
      // A malformed response costs what a wrong password costs.
      (void)access.authenticate_plain("", "", peer.loopback);
      return ResponseCode::authentication_failure;
    }
    *user = login;
    return outcome_code(access.authenticate_plain(login, password, peer.loopback));
  }
  if (mechanism == "EXTERNAL") {
    *user = peer.certificate_user;
    return outcome_code(access.authenticate_trusted(peer.certificate_user, peer.loopback));
  }
  if (mechanism == "ANONYMOUS") {
    *user = anonymous_user;
    if (anonymous_user.empty()) return ResponseCode::authentication_failure;
    return outcome_code(access.authenticate_trusted(anonymous_user, peer.loopback));
  }
  return ResponseCode::sasl_mechanism_not_supported;
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
