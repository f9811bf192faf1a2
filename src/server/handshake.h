// The connection's handshake as a pure state machine: which commands a
// connection may send in each state, and what authenticating a PLAIN
// response against the configured users answers. No sockets, no clock:
// the connection shell (connection.h) asks and acts.
//
//   peer_properties --PeerProperties--> sasl --SaslAuthenticate ok--> tuning
//   (server sends Tune) --client Tune--> opening --Open ok--> open
//
// Heartbeat and Close are accepted in every state; anything else out of
// order closes the connection (a client that skips steps is broken).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "auth/access.h"
#include "proto/frame.h"
#include "server/serve_config.h"

namespace strata::server {

enum class HandshakeState : uint8_t { peer_properties, sasl, tuning, opening, open, closing };
std::string_view handshake_state_name(HandshakeState s);

// Whether a client command (its key, no response flag) is allowed now.
bool command_allowed(HandshakeState s, uint16_t key);

// The state after a successful step (`key` was allowed and succeeded).
HandshakeState after(HandshakeState s, uint16_t key);

// What a login knows of its connection besides the SASL response.
struct LoginPeer {
  bool loopback = false;
  // The user a verified client certificate names (tls.cert_login_from);
  // empty: a plain connection, or no verified certificate.
  std::string certificate_user;
};

// The SASL mechanisms offered to a connection: the configured ones
// (server.auth_mechanisms), EXTERNAL only where a verified client
// certificate names a user — as RabbitMQ offers a mechanism only where it
// can succeed (rabbit_auth_mechanism:should_offer).
std::vector<std::string> offered_mechanisms(const std::vector<std::string>& configured,
                                            const LoginPeer& peer);

// One SaslAuthenticate: `mechanism` must be offered (else
// sasl_mechanism_not_supported); then PLAIN and AMQPLAIN check the
// password, EXTERNAL logs in as the certificate's user, ANONYMOUS as
// `anonymous_user`. ok, authentication_failure (unknown user, wrong
// password, malformed data: never which), or
// sasl_authentication_failure_loopback. `user` receives the user name when
// it is known.
proto::ResponseCode authenticate_sasl(std::string_view mechanism, std::string_view data,
                                      const std::vector<std::string>& configured,
                                      const std::string& anonymous_user,
                                      const auth::AccessControl& access, const LoginPeer& peer,
                                      std::string* user);

// AMQPLAIN's response: an AMQP 0-9-1 field table without its length
// prefix, holding LOGIN and PASSWORD as long strings. False when it is
// malformed or either is missing.
bool parse_amqplain(std::string_view data, std::string* login, std::string* password);

// PLAIN: "[authzid]\0user\0password". ok, authentication_failure (unknown
// user, wrong password, malformed data), or
// sasl_authentication_failure_loopback (a loopback-only user such as guest,
// with the right password, from a non-loopback peer). `user` receives the
// user name when it could be parsed.
proto::ResponseCode authenticate_plain(std::string_view data, const auth::AccessControl& access,
                                       bool peer_is_loopback, std::string* user);

// The frame size both sides use after Tune: the smaller non-zero of the
// server's and the client's (0 = no limit).
uint32_t negotiate_frame_max(uint32_t server, uint32_t client);
// The heartbeat interval (seconds) after Tune: the smaller non-zero one;
// 0 when either side disables it.
uint32_t negotiate_heartbeat(uint32_t server, uint32_t client);

}  // namespace strata::server
