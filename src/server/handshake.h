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
