#include "server/handshake.h"

#include <gtest/gtest.h>

#include "server/stream_args.h"

namespace strata::server {
namespace {

using proto::ResponseCode;

std::string plain(const std::string& user, const std::string& pass) {
  return std::string(1, '\0') + user + std::string(1, '\0') + pass;
}

TEST(Handshake, StepsInOrder) {
  HandshakeState s = HandshakeState::peer_properties;
  EXPECT_FALSE(command_allowed(s, proto::kOpen));
  EXPECT_FALSE(command_allowed(s, proto::kPublish));
  EXPECT_TRUE(command_allowed(s, proto::kPeerProperties));
  s = after(s, proto::kPeerProperties);
  EXPECT_EQ(s, HandshakeState::sasl);
  EXPECT_TRUE(command_allowed(s, proto::kSaslHandshake));
  EXPECT_FALSE(command_allowed(s, proto::kDeclarePublisher));
  s = after(s, proto::kSaslHandshake);
  EXPECT_EQ(s, HandshakeState::sasl);
  s = after(s, proto::kSaslAuthenticate);
  EXPECT_EQ(s, HandshakeState::tuning);
  EXPECT_FALSE(command_allowed(s, proto::kOpen));
  s = after(s, proto::kTune);
  EXPECT_TRUE(command_allowed(s, proto::kOpen));
  EXPECT_FALSE(command_allowed(s, proto::kPublish));
  s = after(s, proto::kOpen);
  EXPECT_EQ(s, HandshakeState::open);
  EXPECT_TRUE(command_allowed(s, proto::kPublish));
  // Re-authentication (a refreshed token); not the handshake's other steps.
  EXPECT_TRUE(command_allowed(s, proto::kSaslAuthenticate));
  EXPECT_FALSE(command_allowed(s, proto::kSaslHandshake));
  EXPECT_FALSE(command_allowed(s, proto::kPeerProperties));
  EXPECT_FALSE(command_allowed(s, proto::kOpen));
  EXPECT_EQ(after(s, proto::kClose), HandshakeState::closing);
  EXPECT_FALSE(command_allowed(HandshakeState::closing, proto::kPublish));
  // Heartbeat and Close: any time.
  EXPECT_TRUE(command_allowed(HandshakeState::peer_properties, proto::kHeartbeat));
  EXPECT_TRUE(command_allowed(HandshakeState::sasl, proto::kClose));
}

TEST(Handshake, PlainAuthentication) {
  auto built = auth::AccessControl::build(
      {{"guest",
        auth::hash_password("guest", auth::HashAlgorithm::sha256, {1, 2, 3, 4}),
        auth::HashAlgorithm::sha256,
        {}},
       {"alice",
        auth::hash_password("s3cret", auth::HashAlgorithm::sha512, {5, 6, 7, 8}),
        auth::HashAlgorithm::sha512,
        {}}},
      {{"/", ""}}, {});
  ASSERT_TRUE(built.ok()) << built.error().message;
  const auth::AccessControl& users = **built;
  std::string who;
  EXPECT_EQ(authenticate_plain(plain("alice", "s3cret"), users, false, &who), ResponseCode::ok);
  EXPECT_EQ(who, "alice");
  EXPECT_EQ(authenticate_plain(plain("alice", "wrong"), users, true, &who),
            ResponseCode::authentication_failure);
  EXPECT_EQ(authenticate_plain(plain("bob", "s3cret"), users, true, &who),
            ResponseCode::authentication_failure);
  EXPECT_EQ(authenticate_plain(plain("guest", "guest"), users, true, &who), ResponseCode::ok);
  EXPECT_EQ(authenticate_plain(plain("guest", "guest"), users, false, &who),
            ResponseCode::sasl_authentication_failure_loopback);
  // From afar a wrong guest password is a wrong password: the loopback
  // rule is looked at only once the credentials are right, as RabbitMQ.
  EXPECT_EQ(authenticate_plain(plain("guest", "nope"), users, false, &who),
            ResponseCode::authentication_failure);
  // An authorization identity before the first NUL is allowed.
  EXPECT_EQ(authenticate_plain("admin" + plain("alice", "s3cret"), users, false, &who),
            ResponseCode::ok);
  EXPECT_EQ(authenticate_plain("no separators", users, true, &who),
            ResponseCode::authentication_failure);
  EXPECT_EQ(authenticate_plain(std::string(1, '\0') + "alice", users, true, &who),
            ResponseCode::authentication_failure);
}

// An AMQP 0-9-1 field table entry holding a long string, as AMQPLAIN
// clients send LOGIN and PASSWORD.
std::string long_string_field(const std::string& name, const std::string& value) {
  std::string out(1, char(name.size()));
  out += name;
  out += 'S';
  const uint32_t n = uint32_t(value.size());
  out += char(n >> 24);
  out += char(n >> 16);
  out += char(n >> 8);
  out += char(n);
  return out + value;
}

TEST(Handshake, SaslMechanisms) {
  auto built = auth::AccessControl::build(
      {{"guest",
        auth::hash_password("guest", auth::HashAlgorithm::sha256, {1, 2, 3, 4}),
        auth::HashAlgorithm::sha256,
        {}},
       {"alice",
        auth::hash_password("s3cret", auth::HashAlgorithm::sha256, {5, 6, 7, 8}),
        auth::HashAlgorithm::sha256,
        {}},
       // No password: only EXTERNAL (or ANONYMOUS) logs it in.
       {"CN=app,O=Example", "", auth::HashAlgorithm::sha256, {}}},
      {{"/", ""}}, {});
  ASSERT_TRUE(built.ok()) << built.error().message;
  const auth::AccessControl& users = **built;
  const std::vector<std::string> all = {"PLAIN", "AMQPLAIN", "EXTERNAL", "ANONYMOUS"};
  const LoginPeer plain_peer{true, ""};
  const LoginPeer cert_peer{false, "CN=app,O=Example"};

  // EXTERNAL is offered only where a verified certificate names a user.
  EXPECT_EQ(offered_mechanisms(all, plain_peer),
            (std::vector<std::string>{"PLAIN", "AMQPLAIN", "ANONYMOUS"}));
  EXPECT_EQ(offered_mechanisms(all, cert_peer), all);
  EXPECT_EQ(offered_mechanisms({"PLAIN"}, cert_peer), std::vector<std::string>{"PLAIN"});

  std::string who;
  const std::string amqplain =
      long_string_field("LOGIN", "alice") + long_string_field("PASSWORD", "s3cret");
  EXPECT_EQ(authenticate_sasl("AMQPLAIN", amqplain, all, "", users, plain_peer, &who),
            ResponseCode::ok);
  EXPECT_EQ(who, "alice");
  // Fields in any order, unknown long-string fields ignored.
  EXPECT_EQ(
      authenticate_sasl("AMQPLAIN",
                        long_string_field("PASSWORD", "s3cret") +
                            long_string_field("x-extra", "1") + long_string_field("LOGIN", "alice"),
                        all, "", users, plain_peer, &who),
      ResponseCode::ok);
  EXPECT_EQ(
      authenticate_sasl(
          "AMQPLAIN", long_string_field("LOGIN", "alice") + long_string_field("PASSWORD", "wrong"),
          all, "", users, plain_peer, &who),
      ResponseCode::authentication_failure);
  // Malformed tables: truncated, a missing field, another field type.
  EXPECT_EQ(authenticate_sasl("AMQPLAIN", amqplain.substr(0, amqplain.size() - 2), all, "", users,
                              plain_peer, &who),
            ResponseCode::authentication_failure);
  EXPECT_EQ(authenticate_sasl("AMQPLAIN", long_string_field("LOGIN", "alice"), all, "", users,
                              plain_peer, &who),
            ResponseCode::authentication_failure);
  std::string typed = amqplain;
  typed[1 + 5] = 'I';
  EXPECT_EQ(authenticate_sasl("AMQPLAIN", typed, all, "", users, plain_peer, &who),
            ResponseCode::authentication_failure);
  // Not configured: not supported, whatever the response holds.
  EXPECT_EQ(authenticate_sasl("AMQPLAIN", amqplain, {"PLAIN"}, "", users, plain_peer, &who),
            ResponseCode::sasl_mechanism_not_supported);
  EXPECT_EQ(authenticate_sasl("CRAM-MD5", "", all, "", users, plain_peer, &who),
            ResponseCode::sasl_mechanism_not_supported);

  // EXTERNAL: the certificate's user, which must exist; the response is
  // ignored; without a certificate user it is not offered.
  EXPECT_EQ(authenticate_sasl("EXTERNAL", "", all, "", users, cert_peer, &who), ResponseCode::ok);
  EXPECT_EQ(who, "CN=app,O=Example");
  EXPECT_EQ(
      authenticate_sasl("EXTERNAL", "", all, "", users, LoginPeer{false, "CN=stranger"}, &who),
      ResponseCode::authentication_failure);
  EXPECT_EQ(authenticate_sasl("EXTERNAL", "", all, "", users, plain_peer, &who),
            ResponseCode::sasl_mechanism_not_supported);
  // ... and the loopback rule holds for it as for PLAIN.
  EXPECT_EQ(authenticate_sasl("EXTERNAL", "", all, "", users, LoginPeer{false, "guest"}, &who),
            ResponseCode::sasl_authentication_failure_loopback);

  // ANONYMOUS: the configured user, under the same rules.
  EXPECT_EQ(authenticate_sasl("ANONYMOUS", "", all, "guest", users, plain_peer, &who),
            ResponseCode::ok);
  EXPECT_EQ(who, "guest");
  EXPECT_EQ(authenticate_sasl("ANONYMOUS", "", all, "guest", users, LoginPeer{false, ""}, &who),
            ResponseCode::sasl_authentication_failure_loopback);
  EXPECT_EQ(authenticate_sasl("ANONYMOUS", "", all, "", users, plain_peer, &who),
            ResponseCode::authentication_failure);
  // A user without a password never logs in with one.
  EXPECT_EQ(
      authenticate_sasl("PLAIN", plain("CN=app,O=Example", ""), all, "", users, cert_peer, &who),
      ResponseCode::authentication_failure);
}

TEST(Handshake, Negotiation) {
  EXPECT_EQ(negotiate_frame_max(1 << 20, 0), 1u << 20);
  EXPECT_EQ(negotiate_frame_max(1 << 20, 4096), 4096u);
  EXPECT_EQ(negotiate_frame_max(0, 4096), 4096u);
  EXPECT_EQ(negotiate_heartbeat(60, 0), 0u);
  EXPECT_EQ(negotiate_heartbeat(60, 10), 10u);
  EXPECT_EQ(negotiate_heartbeat(0, 10), 0u);
}

TEST(StreamArgs, KnownArgumentsParsed) {
  auto a = parse_stream_args({{"max-length-bytes", "1000000"},
                              {"max-age", "7D"},
                              {"stream-max-segment-size-bytes", "500000000"},
                              {"queue-leader-locator", "least-leaders"},
                              {"x-strata-tiering", "false"},
                              {"x-strata-fragment-max-age-ms", "250"}});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->max_bytes, 1000000u);
  EXPECT_EQ(a->max_age_ms, int64_t(7) * 86400 * 1000);
  EXPECT_EQ(a->segment_bytes, 500000000u);
  EXPECT_EQ(a->tiering, false);
  EXPECT_EQ(a->fragment_max_age_ms, 250);
  EXPECT_EQ(*parse_max_age("10s"), 10000);
  EXPECT_EQ(*parse_max_age("2h"), 2 * 3600 * 1000);
}

TEST(StreamArgs, ConfirmModeParsed) {
  auto none = parse_stream_args({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->confirm.has_value());
  auto r = parse_stream_args({{"x-strata-confirm", "remote"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->confirm, node::ConfirmMode::remote);
  auto l = parse_stream_args({{"x-strata-confirm", "local"}});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->confirm, node::ConfirmMode::local);
}

TEST(StreamArgs, BadArgumentsNamed) {
  for (auto [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"max-length-bytes", "-1"},
                                                        {"max-length-bytes", "12abc"},
                                                        {"max-length-bytes", "0"},
                                                        {"max-age", "7"},
                                                        {"max-age", "7W"},
                                                        {"max-age", "D"},
                                                        {"stream-max-segment-size-bytes", "10"},
                                                        {"x-strata-tiering", "yes"},
                                                        {"x-strata-fragment-max-age-ms", "0"},
                                                        {"x-strata-confirm", "sometimes"},
                                                        {"x-strata-confirm", ""},
                                                        {"stream-filter-size-bytes", "15"},
                                                        {"stream-filter-size-bytes", "256"},
                                                        {"x-strata-unknown", "1"}}) {
    auto a = parse_stream_args({{k, v}});
    ASSERT_FALSE(a.ok()) << k << "=" << v;
    EXPECT_EQ(a.error().code, Errc::invalid_argument);
    EXPECT_NE(a.error().message.find(k), std::string::npos) << a.error().message;
  }
}

// Names strata does not know are ignored, as RabbitMQ ignores them, and
// listed for the log; strata's own prefix is checked.
TEST(StreamArgs, UnknownNamesAreIgnoredAndListed) {
  std::vector<std::string> ignored;
  auto a = parse_stream_args({{"x-queue-type", "stream"}, {"max-age", "1h"}, {"x-unknown", "1"}},
                             &ignored);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_EQ(a->max_age_ms, 3'600'000);
  EXPECT_EQ(ignored, (std::vector<std::string>{"x-queue-type", "x-unknown"}));
  auto f = parse_stream_args({{"stream-filter-size-bytes", "255"}});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->filter_size_bytes, 255u);
}

}  // namespace
}  // namespace strata::server
