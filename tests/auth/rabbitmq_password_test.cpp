// verify_password against RabbitMQ's own hashing modules, run by `erl`
// from Debian's rabbitmq-server package: hashes RabbitMQ makes verify here,
// and hashes made here verify in RabbitMQ's code. Skipped (saying why) when
// erl or the modules are absent.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "auth/password_hash.h"

namespace strata::auth {
namespace {

namespace fs = std::filesystem;

// The ebin directories holding rabbit_password.beam and the
// rabbit_password_hashing_* modules (the rabbit app) and the behaviour
// (rabbit_common).
std::vector<std::string> find_ebin_dirs() {
  std::vector<std::string> dirs;
  const fs::path root = "/usr/lib/rabbitmq/lib";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return dirs;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto& p = it->path();
    if (p.filename() == "rabbit_password.beam" || p.filename() == "rabbit_password_hashing.beam") {
      dirs.push_back(p.parent_path().string());
    }
  }
  return dirs;
}

bool have_erl() {
  return std::system("command -v erl >/dev/null 2>&1") == 0;
}

// Runs erl with `eval` and returns its standard output (empty on failure).
std::string run_erl(const std::vector<std::string>& ebins, const std::string& eval) {
  std::string cmd = "erl -noshell";
  for (const auto& d : ebins) cmd += " -pa '" + d + "'";
  cmd += " -eval '" + eval + "' -s init stop 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Passwords as Erlang binary literals and as C++ strings (plain ASCII, so
// the shell quoting stays simple; the non-ASCII case is a fixed vector of
// password_hash_test).
const std::vector<std::string> kPasswords = {"guest", "s3cret with spaces", "x", "0123456789"};

std::string binary_literal(const std::string& s) {
  return "<<\"" + s + "\">>";
}

class RabbitMQPassword : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_erl()) GTEST_SKIP() << "erl is not installed (Debian package erlang-nox)";
    ebins_ = find_ebin_dirs();
    if (ebins_.size() < 2) {
      GTEST_SKIP() << "RabbitMQ's rabbit_password*.beam not found under /usr/lib/rabbitmq/lib "
                      "(Debian package rabbitmq-server)";
    }
  }
  std::vector<std::string> ebins_;
};

const HashAlgorithm kAlgs[] = {HashAlgorithm::sha256, HashAlgorithm::sha512, HashAlgorithm::md5};

// rabbit_password:hash/2 (exported in 3.10: hash/1,2, generate_salt/0,
// salted_hash/2,3, hashing_mod/0,1) draws a fresh salt each call; its bytes
// go base64-encoded, as definitions store them.
TEST_F(RabbitMQPassword, HashesMadeByRabbitMQVerifyHere) {
  std::string eval;
  for (auto alg : kAlgs) {
    for (const auto& pw : kPasswords) {
      eval += "io:format(\"~s~n\", [base64:encode(rabbit_password:hash(" +
              std::string(hash_algorithm_name(alg)) + ", " + binary_literal(pw) + "))]), ";
    }
  }
  eval += "ok";
  std::istringstream out(run_erl(ebins_, eval));
  for (auto alg : kAlgs) {
    for (const auto& pw : kPasswords) {
      std::string line;
      ASSERT_TRUE(std::getline(out, line)) << "erl printed fewer lines than asked";
      SCOPED_TRACE(std::string(hash_algorithm_name(alg)) + " '" + pw + "' -> " + line);
      auto ok = verify_password(pw, line, alg);
      ASSERT_TRUE(ok.ok()) << ok.error().to_string();
      EXPECT_TRUE(*ok);
      EXPECT_FALSE(*verify_password(pw + "!", line, alg));
    }
  }
}

// Ours, checked the way rabbit_auth_backend_internal checks a login:
// <<Salt:4/binary, Hash/binary>> = Stored,
// Hash =:= rabbit_password:salted_hash(Mod, Salt, Cleartext).
TEST_F(RabbitMQPassword, HashesMadeHereVerifyInRabbitMQ) {
  std::string eval =
      "Check = fun(Mod, B64, Pw) -> <<Salt:4/binary, Hash/binary>> = base64:decode(B64), "
      "io:format(\"~p~n\", [Hash =:= rabbit_password:salted_hash(Mod, Salt, Pw)]) end, ";
  size_t n = 0;
  for (auto alg : kAlgs) {
    for (const auto& pw : kPasswords) {
      auto h = hash_password_random(pw, alg);
      ASSERT_TRUE(h.ok());
      std::string mod(hash_algorithm_name(alg));
      eval += "Check(" + mod + ", <<\"" + *h + "\">>, " + binary_literal(pw) + "), ";
      // And a wrong password, which RabbitMQ must refuse.
      eval += "Check(" + mod + ", <<\"" + *h + "\">>, " + binary_literal(pw + "!") + "), ";
      n += 2;
    }
  }
  eval += "ok";
  std::string out = run_erl(ebins_, eval);
  std::istringstream lines(out);
  std::string line;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::getline(lines, line)) << "erl output:\n" << out;
    EXPECT_EQ(line, i % 2 == 0 ? "true" : "false") << "check " << i << ", erl output:\n" << out;
  }
}

}  // namespace
}  // namespace strata::auth
