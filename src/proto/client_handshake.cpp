#include "proto/client_handshake.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/overloaded.h"

namespace strata::proto {

namespace {

// The smaller of two limits where 0 means none.
uint32_t smaller_limit(uint32_t a, uint32_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

std::string_view property(const Properties& p, std::string_view key) {
  for (const auto& [k, v] : p) {
    if (k == key) return v;
  }
  return {};
}

}  // namespace

std::array<int, 3> parse_version(const std::string& v) {
  std::array<int, 3> out{0, 0, 0};
  size_t part = 0;
  for (char c : v) {
    if (c >= '0' && c <= '9') {
      out[part] = out[part] * 10 + (c - '0');
    } else if (c == '.') {
      if (++part == 3) break;
    } else {
      break;  // "3.13.0-rc.1": stop at the pre-release tag
    }
  }
  return out;
}

ClientHandshake::ClientHandshake(ClientHandshakeOptions o) : o_(std::move(o)) {}

Bytes ClientHandshake::peer_properties() {
  Bytes f;
  encode(PeerPropertiesRequest{corr_++, o_.properties}, &f);
  return f;
}

Bytes ClientHandshake::sasl_handshake() {
  Bytes f;
  encode(SaslHandshakeRequest{corr_++}, &f);
  return f;
}

Bytes ClientHandshake::authenticate() {
  Bytes f;
  if (o_.mechanism == "EXTERNAL") {
    // RabbitMQ's EXTERNAL takes no response: the certificate names the user.
    encode(SaslAuthenticateRequest{corr_++, "EXTERNAL", ""}, &f);
    return f;
  }
  // PLAIN: [authzid] NUL user NUL password.
  std::string plain = std::string(1, '\0') + o_.user + std::string(1, '\0') + o_.password;
  encode(SaslAuthenticateRequest{corr_++, "PLAIN", std::move(plain)}, &f);
  return f;
}

Bytes ClientHandshake::tune_answer(const TuneFrame& server) {
  tuned_.frame_max = smaller_limit(server.frame_max, o_.frame_max);
  tuned_.heartbeat = o_.heartbeat
                         ? (*o_.heartbeat == 0 ? 0 : smaller_limit(server.heartbeat, *o_.heartbeat))
                         : server.heartbeat;
  Bytes f;
  encode(tuned_, &f);
  return f;
}

Bytes ClientHandshake::open() {
  Bytes f;
  encode(OpenRequest{corr_++, o_.virtual_host}, &f);
  return f;
}

Bytes ClientHandshake::after_open() {
  // RabbitMQ 3.10 does not know ExchangeCommandVersions (it closes the
  // connection); 3.11 and later, and strata, do.
  const bool knows =
      o_.pipelined || parse_version(std::string(property(server_properties_, "version"))) >=
                          std::array<int, 3>{3, 11, 0};
  if (o_.versions.empty() || !knows) {
    step_ = Step::done;
    return {};
  }
  step_ = Step::versions;
  Bytes f;
  encode(ExchangeCommandVersionsRequest{corr_++, o_.versions}, &f);
  return f;
}

Bytes ClientHandshake::start() {
  Bytes f = peer_properties();
  if (!o_.pipelined) return f;
  // Everything at once: the Tune answer says what this client takes,
  // whatever the server proposes (it takes the smaller of both).
  f.append(sasl_handshake());
  f.append(authenticate());
  tuned_.frame_max = o_.frame_max;
  tuned_.heartbeat = o_.heartbeat.value_or(0);
  encode(tuned_, &f);
  f.append(open());
  if (!o_.versions.empty()) encode(ExchangeCommandVersionsRequest{corr_++, o_.versions}, &f);
  return f;
}

Status ClientHandshake::expect_ok(ResponseCode code, std::string_view what) const {
  if (code == ResponseCode::ok) return Status::OK();
  Errc e = code == ResponseCode::authentication_failure ||
                   code == ResponseCode::sasl_authentication_failure_loopback ||
                   code == ResponseCode::virtual_host_access_failure
               ? Errc::invalid_argument
               : Errc::unavailable;
  return Error(e, fmt::format("{}: {} (code {})", what, response_code_name(code), int(code)));
}

Result<Bytes> ClientHandshake::on(const ServerFrame& frame) {
  auto unexpected = [&](std::string_view got) -> Result<Bytes> {
    return Error(Errc::corrupt,
                 fmt::format("the server sent {} while the connection was opening", got));
  };
  return std::visit(
      Overloaded{
          [&](const PeerPropertiesResponse& r) -> Result<Bytes> {
            if (step_ != Step::peer_properties) return unexpected("PeerProperties' answer");
            STRATA_TRY(expect_ok(r.code, "peer properties"));
            server_properties_ = r.properties;
            step_ = Step::sasl_handshake;
            return o_.pipelined ? Bytes() : sasl_handshake();
          },
          [&](const SaslHandshakeResponse& r) -> Result<Bytes> {
            if (step_ != Step::sasl_handshake) return unexpected("SaslHandshake's answer");
            STRATA_TRY(expect_ok(r.code, "SASL handshake"));
            if (std::find(r.mechanisms.begin(), r.mechanisms.end(), o_.mechanism) ==
                r.mechanisms.end()) {
              // EXTERNAL is offered only to a client whose certificate the
              // server verified and mapped to a name.
              return Error(Errc::invalid_argument,
                           fmt::format("the server does not offer SASL {} (it offers {})",
                                       o_.mechanism, fmt::join(r.mechanisms, ", ")));
            }
            step_ = Step::authenticate;
            return o_.pipelined ? Bytes() : authenticate();
          },
          [&](const SaslAuthenticateResponse& r) -> Result<Bytes> {
            if (step_ != Step::authenticate) return unexpected("SaslAuthenticate's answer");
            STRATA_TRY(expect_ok(r.code, "authentication as " + o_.user));
            step_ = Step::tune;
            return Bytes();
          },
          [&](const TuneFrame& t) -> Result<Bytes> {
            if (step_ != Step::tune) return unexpected("Tune");
            server_tune_ = t;
            step_ = Step::open;
            if (o_.pipelined) return Bytes();
            Bytes f = tune_answer(t);
            f.append(open());
            return f;
          },
          [&](const OpenResponse& r) -> Result<Bytes> {
            if (step_ != Step::open) return unexpected("Open's answer");
            STRATA_TRY(expect_ok(r.code, "open virtual host " + o_.virtual_host));
            open_ = r;
            if (o_.pipelined) {
              step_ = o_.versions.empty() ? Step::done : Step::versions;
              return Bytes();
            }
            return after_open();
          },
          [&](const ExchangeCommandVersionsResponse& r) -> Result<Bytes> {
            if (step_ != Step::versions) return unexpected("ExchangeCommandVersions' answer");
            STRATA_TRY(expect_ok(r.code, "command versions"));
            step_ = Step::done;
            return Bytes();
          },
          // A heartbeat may come at any time.
          [&](const HeartbeatFrame&) -> Result<Bytes> { return Bytes(); },
          [&](const CloseRequest& c) -> Result<Bytes> {
            return Error(Errc::closed,
                         fmt::format("the server closed the connection while it was opening: {} "
                                     "({})",
                                     c.reason, response_code_name(c.code)));
          },
          [&](const auto& m) -> Result<Bytes> {
            return unexpected(command_name(std::decay_t<decltype(m)>::kKey));
          },
      },
      frame);
}

}  // namespace strata::proto
