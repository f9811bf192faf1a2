// HandshakeRoom: the commands that open, tune and close a connection —
// PeerProperties, SaslHandshake, SaslAuthenticate, Tune, Open, Close (both
// ways), Heartbeat, ExchangeCommandVersions. It keeps the handshake's state
// (handshake.h decides what is allowed when) and what was negotiated, and
// tunes the connection's transport (frame size, heartbeat).
//
// Thread safety: the connection's strand.
#pragma once

#include <cstdint>
#include <string>

#include "server/frame_channel.h"
#include "server/handshake.h"
#include "server/serve_config.h"
#include "server/session.h"

namespace strata::server {

// The RabbitMQ version whose stream protocol strata speaks, announced as
// the server's `version` peer property: clients turn features on by it
// (3.11 single active consumer, 3.13 super stream management, filtering
// and Deliver v2).
inline constexpr const char* kSpokenRabbitMqVersion = "3.13.0";

// Where clients are told to connect (Open's properties, Metadata).
struct Advertised {
  std::string host;
  uint32_t port = 0;
};

class HandshakeRoom {
 public:
  HandshakeRoom(Session& session, FrameChannel& channel, const ServerSettings& settings,
                Advertised advertised);

  HandshakeState state() const { return state_; }
  // The server answered the client's Close: from then on only Close is
  // taken.
  bool close_answered() const { return close_answered_; }
  // Deliver's version the client takes (2 once it said it knows it).
  uint16_t deliver_version() const { return deliver_version_; }
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
  const Advertised advertised_;
  void reauthenticate(const proto::SaslAuthenticateRequest& r);

  HandshakeState state_ = HandshakeState::peer_properties;
  std::string user_;
  std::string mechanism_;  // the one the connection authenticated with
  uint16_t deliver_version_ = 1;
  bool close_answered_ = false;
};

}  // namespace strata::server
