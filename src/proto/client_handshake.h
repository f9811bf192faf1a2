// ClientHandshake: the client's side of opening a stream protocol
// connection, as a pure state machine — PeerProperties, SASL PLAIN, the
// answer to the server's Tune, Open, and (with a server of 3.11 or later,
// which know it) ExchangeCommandVersions. It says which frames to send and
// checks each answer; whoever owns the socket (the replica's link to an
// owner, `strata perf`, the tests' client) sends and reads. One place for
// the rules every strata client follows.
//
// Two ways to run it: step by step (each frame once the previous answer
// came), or pipelined — everything sent at once, the Tune answer with the
// client's own limits instead of the server's — for a peer known to read a
// connection's frames in order (another strata node); the answers are
// still checked one by one.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "proto/dispatch.h"

namespace strata::proto {

struct ClientHandshakeOptions {
  Properties properties;  // the client's PeerProperties
  std::string user = "guest";
  std::string password = "guest";
  // "PLAIN" (user and password), or "EXTERNAL": the server takes the user
  // its TLS session's client certificate names; `password` is not sent.
  std::string mechanism = "PLAIN";
  std::string virtual_host = "/";
  // The largest frame this client takes (0: whatever the server proposes).
  uint32_t frame_max = 0;
  // Heartbeat seconds (nullopt: the server's proposal; 0: none).
  std::optional<uint32_t> heartbeat;
  // Versions to exchange after Open; nothing when empty.
  std::vector<CommandVersion> versions;
  bool pipelined = false;
};

class ClientHandshake {
 public:
  explicit ClientHandshake(ClientHandshakeOptions o);

  // The first frames to send (all of them when pipelined). Once per
  // machine: a new connection takes a new one.
  Bytes start();
  // One frame from the server while !done(): the frames to send next
  // (maybe none), or why the connection cannot be opened (a refused
  // step, a mechanism or answer that does not fit).
  Result<Bytes> on(const ServerFrame& f);
  bool done() const { return step_ == Step::done; }
  // The correlation id the handshake uses next: the client's own requests
  // start there.
  uint32_t next_correlation() const { return corr_; }

  const Properties& server_properties() const { return server_properties_; }
  const TuneFrame& server_tune() const { return server_tune_; }
  // What both sides use after Tune.
  const TuneFrame& tuned() const { return tuned_; }
  const OpenResponse& open_response() const { return open_; }

 private:
  enum class Step : uint8_t {
    peer_properties,
    sasl_handshake,
    authenticate,
    tune,
    open,
    versions,
    done
  };
  Bytes peer_properties();
  Bytes sasl_handshake();
  Bytes authenticate();
  Bytes tune_answer(const TuneFrame& server);
  Bytes open();
  // After Open: the versions, or done.
  Bytes after_open();
  Status expect_ok(ResponseCode code, std::string_view what) const;

  const ClientHandshakeOptions o_;
  Step step_ = Step::peer_properties;
  uint32_t corr_ = 1;
  Properties server_properties_;
  TuneFrame server_tune_;
  TuneFrame tuned_;
  OpenResponse open_;
};

// "3.13.0" -> {3, 13, 0}; missing or unreadable parts are 0.
std::array<int, 3> parse_version(const std::string& v);

}  // namespace strata::proto
