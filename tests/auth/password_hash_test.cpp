#include "auth/password_hash.h"

#include <gtest/gtest.h>

namespace strata::auth {
namespace {

// Computed with RabbitMQ 3.10.8's own module (Debian's rabbitmq-server):
//   base64:encode(<<Salt/binary,
//       (rabbit_password:salted_hash(Mod, Salt, Password))/binary>>)
// with Salt = <<1,2,3,4>>.
struct Vector {
  HashAlgorithm alg;
  const char* password;
  const char* stored;
};
constexpr Salt kSalt{1, 2, 3, 4};
const Vector kVectors[] = {
    {HashAlgorithm::sha256, "guest", "AQIDBEMMOXwY6PKx/JKP9PAqfsb4ozuD0Ta3pxxa9gEYBMmD"},
    {HashAlgorithm::sha256, "p\xc3\xa4ss w0rd", "AQIDBDm69rXRyOEtcIVZUooV3YqpJ91RY1bwbiC9J4ZMY4KD"},
    {HashAlgorithm::sha512, "guest",
     "AQIDBANSvkE51MvG7pNDq4NjmP8SFay7rWsolg//30q7jnApCiuE049JxchapptDh7ryvu/"
     "VdvUXYHbwdpa9veVAv14="},
    {HashAlgorithm::sha512, "p\xc3\xa4ss w0rd",
     "AQIDBI3ZXQL02WvvRNoBGrTITZuOOMjLLoBkRxHqdqpaY6kURZTOnIXIx3+"
     "qb9U8cexm6qW6C256aAeR4i6f3PNxuFU="},
    {HashAlgorithm::md5, "guest", "AQIDBH/JkOf0oGZ5yhQgSBXkHS0="},
    {HashAlgorithm::md5, "p\xc3\xa4ss w0rd", "AQIDBLya2R0A4rwhoc0z/MZBlbg="},
};

TEST(PasswordHash, MatchesRabbitMQVectors) {
  for (const Vector& v : kVectors) {
    SCOPED_TRACE(std::string(hash_algorithm_name(v.alg)) + " " + v.password);
    EXPECT_EQ(hash_password(v.password, v.alg, kSalt), v.stored);
    auto ok = verify_password(v.password, v.stored, v.alg);
    ASSERT_TRUE(ok.ok()) << ok.error().to_string();
    EXPECT_TRUE(*ok);
    auto wrong = verify_password("Guest", v.stored, v.alg);
    ASSERT_TRUE(wrong.ok());
    EXPECT_FALSE(*wrong);
  }
}

// The example of RabbitMQ's documentation (passwords.md, "This is the
// algorithm"): salt 908D C60A, password test12, SHA-256.
TEST(PasswordHash, RabbitMQDocumentationExample) {
  EXPECT_EQ(hash_password("test12", HashAlgorithm::sha256, Salt{0x90, 0x8d, 0xc6, 0x0a}),
            "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR");
}

TEST(PasswordHash, RandomSaltVerifies) {
  for (auto alg : {HashAlgorithm::sha256, HashAlgorithm::sha512, HashAlgorithm::md5}) {
    auto a = hash_password_random("s3cret", alg);
    auto b = hash_password_random("s3cret", alg);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NE(*a, *b);  // 1 in 2^32 to collide
    EXPECT_TRUE(*verify_password("s3cret", *a, alg));
    EXPECT_FALSE(*verify_password("s3cret ", *a, alg));
  }
}

TEST(PasswordHash, AlgorithmNames) {
  for (auto alg : {HashAlgorithm::sha256, HashAlgorithm::sha512, HashAlgorithm::md5}) {
    auto back = parse_hash_algorithm(hash_algorithm_name(alg));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, alg);
  }
  EXPECT_EQ(hash_algorithm_name(HashAlgorithm::sha512), "rabbit_password_hashing_sha512");
  auto bad = parse_hash_algorithm("rabbit_password_hashing_bcrypt");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), Errc::invalid_argument);
  EXPECT_NE(bad.error().message.find("'rabbit_password_hashing_bcrypt'"), std::string::npos)
      << bad.error().message;
}

TEST(PasswordHash, MalformedStoredHashIsAnErrorNotFalse) {
  // Not base64: a character outside the alphabet.
  auto r = verify_password("guest", "AQIDBEMMOXwY6PKx/JKP9PAqfsb4ozuD0Ta3pxxa9gEYBMm!",
                           HashAlgorithm::sha256);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::corrupt);
  EXPECT_NE(r.error().message.find("not base64"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("position 47"), std::string::npos) << r.error().message;

  // Length not a multiple of 4.
  r = verify_password("guest", "AQIDB", HashAlgorithm::sha256);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not base64"), std::string::npos) << r.error().message;

  // Padding in the middle.
  r = verify_password("guest", "AQ==AQID", HashAlgorithm::sha256);
  ASSERT_FALSE(r.ok());

  // A valid MD5 record read as SHA-256: 20 bytes where 36 are needed.
  r = verify_password("guest", "AQIDBH/JkOf0oGZ5yhQgSBXkHS0=", HashAlgorithm::sha256);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::corrupt);
  EXPECT_NE(r.error().message.find("20 bytes"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("needs 36"), std::string::npos) << r.error().message;

  // Empty: no salt at all.
  r = verify_password("", "", HashAlgorithm::md5);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("0 bytes"), std::string::npos) << r.error().message;

  EXPECT_TRUE(check_stored_hash("AQIDBH/JkOf0oGZ5yhQgSBXkHS0=", HashAlgorithm::md5).ok());
}

}  // namespace
}  // namespace strata::auth
