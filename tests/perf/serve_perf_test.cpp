// `strata perf` against `strata serve` (the same binary), on loopback. Skipped
// while the binary has no `serve` command.
#include <gtest/gtest.h>

#include <fstream>

#include "support/cli.h"
#include "support/test_certs.h"

namespace strata::test {
namespace {

class ServePerf : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!contains(strata_cmd({"--help"}).output, "\n  serve ")) {
      GTEST_SKIP() << "no `strata serve` in this binary";
    }
    server_ = Process::spawn(
        {STRATA_BIN, "serve", "--data-dir", dir_.sub("data"), "--listen", "127.0.0.1:0"},
        dir_.path());
    auto out = server_.wait_for_output("listening on", std::chrono::seconds(60));
    ASSERT_TRUE(out.has_value()) << server_.stderr_text();
    auto line = out->substr(out->find("listening on"));
    port_ = std::atoi(line.substr(line.rfind(':') + 1).c_str());
    ASSERT_GT(port_, 0) << *out;
  }
  void TearDown() override {
    if (server_.pid() > 0) {
      server_.kill(15);
      EXPECT_EQ(server_.wait(std::chrono::seconds(30)), 0) << server_.stderr_text();
    }
  }
  nlohmann::json perf(std::vector<std::string> args) {
    std::vector<std::string> argv = {"--json", "perf", "--port", std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    auto out = strata_cli(argv);
    EXPECT_EQ(out.status, 0) << out.out << out.err;
    auto j = nlohmann::json::parse(out.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << out.out << out.err;
    return j;
  }

  TempDir dir_;
  Process server_;
  int port_ = 0;
};

TEST_F(ServePerf, PublishesConfirmsAndConsumesEverything) {
  auto j = perf({"--stream", "perf-serve", "--producers", "2", "--consumers", "2", "--time", "2"});
  EXPECT_TRUE(j["ok"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j["server"]["product"], "strata");
  EXPECT_GT(j["published"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["confirmed"], j["published"]);
  // Two consumers: each sees every message.
  EXPECT_EQ(j["consumed"].get<uint64_t>(), 2 * j["published"].get<uint64_t>());
  EXPECT_EQ(j["crc_errors"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["gaps"].get<uint64_t>(), 0u);
}

TEST_F(ServePerf, SubEntryBatchesReadBackFromFirst) {
  auto a = perf({"--stream", "perf-serve-sub", "--consumers", "0", "--messages", "3000"});
  EXPECT_EQ(a["confirmed"].get<uint64_t>(), 3000u);
  auto b = perf({"--stream", "perf-serve-sub", "--messages", "10000", "--sub-entry-size", "10",
                 "--offset", "first", "--delete-stream"});
  EXPECT_TRUE(b["ok"].get<bool>()) << b.dump(2);
  EXPECT_EQ(b["consumed"].get<uint64_t>(), 10000u);
  EXPECT_EQ(b["consumed_all"].get<uint64_t>(), 13000u);
}

// Filter values and a filtered consumer: 10 000 messages in frames of 100
// with 10 values (the frame's number modulo 10), one frame per chunk, then
// a consumer of one value. It gets its value's chunks and few others: far
// fewer chunk bytes than the whole stream, no CRC error.
TEST_F(ServePerf, FilterValuesAndAFilteredConsumer) {
  // One frame in flight (the confirm window): one chunk per frame, so
  // one value per chunk (chunks hold what was appended together).
  auto a = perf({"--stream", "perf-filter", "--consumers", "0", "--messages", "10000",
                 "--filter-values", "10", "--confirms", "100"});
  EXPECT_EQ(a["confirmed"].get<uint64_t>(), 10000u) << a.dump(2);
  auto all = perf(
      {"--stream", "perf-filter", "--producers", "0", "--offset", "first", "--messages", "10000"});
  EXPECT_TRUE(all["ok"].get<bool>()) << all.dump(2);
  auto one = perf({"--stream", "perf-filter", "--producers", "0", "--offset", "first", "--messages",
                   "1000", "--filter", "v3"});
  EXPECT_TRUE(one["ok"].get<bool>()) << one.dump(2);
  EXPECT_EQ(one["crc_errors"].get<uint64_t>(), 0u);
  EXPECT_GE(one["consumed_all"].get<uint64_t>(), 1000u);
  EXPECT_LT(one["chunk_bytes"].get<uint64_t>() * 3, all["chunk_bytes"].get<uint64_t>())
      << one.dump(2) << all.dump(2);
}

// `strata perf --tls` against a TLS listener: the same run over TLS, the
// session and the handshake's time in the summary; a server whose
// certificate is not from the CA given is refused with OpenSSL's reason.
TEST(ServePerfTls, PublishesAndConsumesOverTlsAndTimesTheHandshake) {
  TempDir dir;
  TestCerts certs, other;
  std::string error;
  ASSERT_TRUE(make_test_certs(dir.path(), "perf", &certs, &error)) << error;
  ASSERT_TRUE(make_test_certs(dir.path(), "perf", &other, &error, "other-")) << error;
  const std::string cfg = dir.sub("tls.json");
  std::ofstream(cfg) << nlohmann::json{{"tls",
                                        {{"listen", "127.0.0.1:0"},
                                         {"cert_file", certs.server_cert},
                                         {"key_file", certs.server_key}}}}
                            .dump();
  auto server = Process::spawn({STRATA_BIN, "serve", "--data-dir", dir.sub("data"), "--listen",
                                "127.0.0.1:0", "--config", cfg},
                               dir.path());
  auto out = server.wait_for_output("tls on", std::chrono::seconds(60));
  ASSERT_TRUE(out.has_value()) << server.stderr_text();
  const std::string line = out->substr(out->find("tls on"));
  const std::string port = std::to_string(std::atoi(line.substr(line.rfind(':') + 1).c_str()));

  auto run = strata_cli({"--json", "perf", "--port", port, "--tls", "--tls-ca-file", certs.ca,
                         "--producers", "1", "--consumers", "1", "--messages", "20000"});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  auto j = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << run.out;
  EXPECT_TRUE(j["ok"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j["consumed"], 20000);
  const auto& c = j["connections"];
  EXPECT_EQ(c["tls"], true) << c.dump();
  EXPECT_EQ(c["count"], 3) << c.dump();  // the admin connection, a producer, a consumer
  EXPECT_TRUE(c["tls_version"] == "TLSv1.3" || c["tls_version"] == "TLSv1.2") << c.dump();
  EXPECT_GT(c["tls_handshake_ms"]["p50"].get<double>(), 0.0) << c.dump();
  EXPECT_GE(c["open_ms"]["p50"].get<double>(), c["tls_handshake_ms"]["p50"].get<double>());

  auto refused = strata_cli({"perf", "--port", port, "--tls", "--tls-ca-file", other.ca,
                             "--producers", "1", "--consumers", "0", "--messages", "10"});
  EXPECT_NE(refused.status, 0);
  EXPECT_TRUE(contains(refused.err, "certificate verify failed")) << refused.err;
  server.kill(15);
  EXPECT_EQ(server.wait(std::chrono::seconds(30)), 0) << server.stderr_text();
}

}  // namespace
}  // namespace strata::test
