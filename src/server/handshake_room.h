// HandshakeRoom: the commands that open, tune and close a connection —
// PeerProperties, SaslHandshake, SaslAuthenticate, Tune, Open, Close (both
// ways), Heartbeat, ExchangeCommandVersions. It keeps the handshake's state
// (handshake.h decides what is allowed when) and what was negotiated, and
// tunes the connection's transport (frame size, heartbeat).
//
// A stranger is kept short: each handshake step must come within
// server.handshake_timeout_ms of the one before, frames stay within 8192
// bytes until Open (server_limits.h), a login from an address with recent
// failures waits before it is even looked at (login_throttle.h), and a
// failed one is answered only after server.auth_failure_delay_ms. While a
// login waits, the connection reads nothing more.
//
// Thread safety: the connection's strand.
#pragma once

#include <asio/steady_timer.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "server/connection_quota.h"
#include "server/frame_channel.h"
#include "server/handshake.h"
#include "server/login_throttle.h"
#include "server/serve_config.h"
#include "server/server_counters.h"
#include "server/session.h"

namespace strata::server {

// The RabbitMQ version whose stream protocol strata speaks, announced as
// the server's `version` peer property: clients turn features on by it
// (3.11 single active consumer, 3.13 super stream management, filtering
// and Deliver v2).
inline constexpr const char* kSpokenRabbitMqVersion = "3.13.0";

// How a client reached the server: where it is told to connect, and on
// TLS which part of its certificate names its EXTERNAL user
// (TlsSettings::cert_login_from).
struct ConnectionOrigin {
  Advertised advertised;
  std::string cert_login_from;
};

class HandshakeRoom {
 public:
  HandshakeRoom(Session& session, FrameChannel& channel, const ServerSettings& settings,
                const AccessPolicy& access, ConnectionOrigin origin, ServerCounters& counters,
                LoginThrottle& logins, ConnectionQuota& quota);

  // The connection started: the first step's deadline runs.
  void start();
  // The connection closed: no timer keeps it any longer.
  void close();
  // A login is waiting (throttled, or its refusal delayed): the connection
  // reads nothing until it is decided.
  bool holding() const { return holding_; }

  HandshakeState state() const { return state_; }
  // The server answered the client's Close: from then on only Close is
  // taken.
  bool close_answered() const { return close_answered_; }
  // Deliver's version the client takes (2 once it said it knows it).
  uint16_t deliver_version() const { return deliver_version_; }
  // Who authenticated, and the virtual host Open chose ("" before).
  const std::string& user() const { return user_; }
  // The SASL mechanism the connection authenticated with ("" before).
  const std::string& auth_mechanism() const { return mechanism_; }
  const std::string& vhost() const { return vhost_; }
  // What the client said of itself in PeerProperties (connection_name, product, ...).
  const proto::Properties& client_properties() const { return client_properties_; }
  // The frame size both sides agreed on (0: no limit).
  uint32_t frame_max() const { return channel_.frame_max(); }

  void on(const proto::PeerPropertiesRequest& r);
  void on(const proto::SaslHandshakeRequest& r);
  void on(const proto::SaslAuthenticateRequest& r);
  void on(const proto::TuneFrame& r);
  void on(const proto::OpenRequest& r);
  void on(const proto::CloseRequest& r);
  void on(const proto::CloseResponse& r);
  void on(const proto::HeartbeatFrame& r);
  void on(const proto::ExchangeCommandVersionsRequest& r);

 private:
  Session& session_;
  FrameChannel& channel_;
  const ServerSettings& settings_;
  const ConnectionOrigin origin_;
  // Who the connection's verified client certificate names (empty: none).
  std::string certificate_user() const;
  void reauthenticate(const proto::SaslAuthenticateRequest& r);
  // Checks the credentials and answers (after the throttle's wait).
  void authenticate(const proto::SaslAuthenticateRequest& r);
  void refuse_login(uint32_t correlation_id, proto::ResponseCode code);
  // Holds reading for `wait`, then runs `then` (unless the connection
  // closed meanwhile).
  void hold_for(std::chrono::milliseconds wait, std::function<void()> then);
  // (Re)starts the deadline for the next handshake step; none once open.
  void arm_step();
  void advance(uint16_t key);

  const AccessPolicy& access_;
  ServerCounters& counters_;
  LoginThrottle& logins_;
  ConnectionQuota& quota_;
  asio::steady_timer step_timer_;
  asio::steady_timer hold_timer_;
  bool holding_ = false;
  bool closed_ = false;
  // Tune's agreed frame size, applied once Open succeeds.
  uint32_t tuned_frame_max_ = 0;

  HandshakeState state_ = HandshakeState::peer_properties;
  std::string user_;
  std::string mechanism_;  // the one the connection authenticated with
  std::string vhost_;
  proto::Properties client_properties_;
  uint16_t deliver_version_ = 1;
  bool close_answered_ = false;
};

}  // namespace strata::server
