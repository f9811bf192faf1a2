// OwnerLink: a replica's subscription at a stream's owner — one stream
// protocol client connection from this node to the owner node, on the
// replica subscription's strand. (Or, with OwnerLinkOptions::ask, one
// question instead of the subscription: owner_asker.h.) It connects, sends the whole setup at
// once (PeerProperties, SASL PLAIN, Tune, Open, ExchangeCommandVersions for
// Deliver v2, Subscribe with the credit given): the owner is a strata node
// and processes a connection's frames in order, so nothing waits for a
// round trip but the answers are still checked one by one. Then it hands
// each Deliver frame to its owner (replica_feed.h) and forwards Credit.
//
// Ends in exactly one event: `answer` for a question, else `down` (an answer that is not ok, a
// MetadataUpdate or Close from the owner, a read or write failure, or the
// setup not answered within its deadline), unless stop() came first. What
// it buffers: one read buffer (the largest frame received) and the few
// frames it writes; Deliver frames arrive only within the credit it gave.
//
// Over plain TCP, or over TLS to the owner's TLS listener
// (OwnerLinkOptions::tls, ServeConfig's cluster.peer_tls): the TLS
// handshake, the owner's certificate checked, comes before the setup and
// within its deadline.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "common/bytes.h"
#include "common/result.h"
#include "common/task.h"
#include "proto/client_handshake.h"
#include "proto/dispatch.h"
#include "server/transport.h"

namespace strata::server {

struct OwnerLinkOptions {
  std::string host;
  uint16_t port = 0;
  std::string user = "guest";
  std::string password = "guest";
  // "PLAIN", or "EXTERNAL" over TLS: the owner takes the user this node's
  // certificate names (cluster.peer_auth "certificate").
  std::string mechanism = "PLAIN";
  std::string stream;
  proto::OffsetSpec spec;
  uint16_t credit = 0;
  // A copy subscription (server_limits.h kCopyProperty, delivery.h
  // DeliveryOptions::copy): every stored chunk whole (copy_frame.h).
  bool copy = false;
  // With `copy`: this node's id, which the owner's acknowledgements of the
  // copy are kept under (replica_acks.h).
  std::string copy_node;
  // With `copy`: the copy holds the chunk at `spec` (kCopyHoldsProperty);
  // the owner's refusal ends the link with Errc::conflict.
  bool copy_holds_first = false;
  // From connecting to the Subscribe answer (or the question's).
  std::chrono::milliseconds setup_deadline{5000};
  // Set: no subscription; this encodes the one request the link sends
  // after the handshake, with the correlation id given. Its answer, ok or
  // not, goes to OwnerLinkHandlers::answer and the link ends.
  std::function<void(uint32_t correlation_id, Bytes* out)> ask;
  // Set: the owner's TLS listener is dialled over TLS with this client
  // context (tls_context.h, make_tls_client_context), and with
  // `tls_verify_host` its certificate must name `host`.
  std::shared_ptr<asio::ssl::context> tls;
  bool tls_verify_host = true;
};

struct OwnerLinkHandlers {
  std::function<void()> up;                                 // Subscribe answered ok
  std::function<void(const proto::DeliverFrame&)> deliver;  // a view, valid during the call
  std::function<void(const Error&)> down;                   // once, unless stopped
  // With `ask`: the owner's answer, once, instead of `down` (unless stopped).
  std::function<void(const proto::ServerFrame&)> answer;
};

class OwnerLink : public std::enable_shared_from_this<OwnerLink> {
 public:
  // Call on `strand`; handlers run there.
  static std::shared_ptr<OwnerLink> start(Strand strand, OwnerLinkOptions opts,
                                          OwnerLinkHandlers handlers);
  ~OwnerLink();
  // More credit for the owner's subscription (sent after the setup when
  // given while the link connects).
  void credit(uint16_t n);
  // Closes the connection; no handler runs after. Idempotent.
  void stop();

 private:
  OwnerLink(Strand strand, OwnerLinkOptions opts, OwnerLinkHandlers handlers);
  void connect();
  void on_connected();
  void send_setup();
  void write(Bytes frame);
  void write_more();
  void read_more();
  void on_frame(BytesView body);
  void on_answer(const proto::ServerFrame& f);
  void fail(Error e);

  Strand strand_;
  const OwnerLinkOptions opts_;
  OwnerLinkHandlers h_;
  asio::ip::tcp::resolver resolver_;
  asio::ip::tcp::socket socket_;  // until connected; then in transport_
  std::unique_ptr<Transport> transport_;
  asio::steady_timer setup_timer_;
  bool connected_ = false;  // transport_ started: frames may be written
  bool up_ = false;
  bool ended_ = false;
  std::deque<Bytes> out_;
  bool writing_ = false;
  Bytes in_;
  size_t in_begin_ = 0, in_end_ = 0;
  uint32_t subscribe_corr_ = 0;
  proto::ClientHandshake handshake_;  // pipelined: sent whole at once
};

}  // namespace strata::server
