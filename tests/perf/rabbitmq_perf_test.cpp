// `strata perf` against a real RabbitMQ 3.10.8 (Debian's rabbitmq-server with
// the stream plugin), started on loopback by bench/server/rabbitmq.sh. Skipped
// where RabbitMQ is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>

#include "support/cli.h"

namespace strata::test {
namespace {

const char* kRabbitScript = STRATA_SOURCE_DIR "/bench/server/rabbitmq.sh";

class RabbitPerf : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (access("/usr/lib/rabbitmq/bin/rabbitmq-server", X_OK) != 0) return;
    dir_ = std::make_unique<TempDir>();
    auto r =
        run({"bash", kRabbitScript, "start", dir_->sub("rabbit")}, {}, std::chrono::seconds(180));
    if (r.status != 0) {
      start_error_ = r.output;
      return;
    }
    // The script's last line is the stream port.
    std::string out = r.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    port_ = std::atoi(
        out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1).c_str());
  }
  static void TearDownTestSuite() {
    if (dir_) run({"bash", kRabbitScript, "stop", dir_->sub("rabbit")});
    dir_.reset();
  }
  void SetUp() override {
    if (access("/usr/lib/rabbitmq/bin/rabbitmq-server", X_OK) != 0) {
      GTEST_SKIP() << "rabbitmq-server is not installed";
    }
    ASSERT_TRUE(start_error_.empty()) << start_error_;
    ASSERT_GT(port_, 0);
  }

  // Runs strata perf with --json and returns its summary.
  nlohmann::json perf(std::vector<std::string> args, int expect_status = 0) {
    std::vector<std::string> argv = {"--json",    "perf",   "--host",
                                     "127.0.0.1", "--port", std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    auto out = strata_cli(argv);
    EXPECT_EQ(out.status, expect_status) << out.out << out.err;
    auto j = nlohmann::json::parse(out.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << out.out << out.err;
    return j;
  }

  static std::unique_ptr<TempDir> dir_;
  static int port_;
  static std::string start_error_;
};
std::unique_ptr<TempDir> RabbitPerf::dir_;
int RabbitPerf::port_ = 0;
std::string RabbitPerf::start_error_;

void expect_clean(const nlohmann::json& j) {
  EXPECT_TRUE(j["ok"].get<bool>()) << j.dump(2);
  EXPECT_GT(j["published"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["confirmed"], j["published"]);
  EXPECT_EQ(j["consumed"], j["published"]);
  EXPECT_EQ(j["crc_errors"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["gaps"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["publish_errors"].get<uint64_t>(), 0u);
  EXPECT_TRUE(j["errors"].empty()) << j["errors"].dump();
  EXPECT_GT(j["confirm_latency_us"]["count"].get<uint64_t>(), 0u);
  EXPECT_GT(j["deliver_latency_us"]["count"].get<uint64_t>(), 0u);
}

TEST_F(RabbitPerf, TimedRunPublishesConfirmsAndConsumesEverything) {
  auto j = perf({"--stream", "perf-timed", "--producers", "2", "--consumers", "1", "--time", "3",
                 "--delete-stream"});
  expect_clean(j);
  EXPECT_EQ(j["server"]["version"], "3.10.8");
  EXPECT_GE(j["duration_s"].get<double>(), 3.0);
}

TEST_F(RabbitPerf, SubEntryBatchesFromFirst) {
  // Publish first, then a second run reads the stream from the start: the
  // earlier run's messages count as consumed_all, not as this run's.
  auto a = perf({"--stream", "perf-sub", "--consumers", "0", "--messages", "5000"});
  EXPECT_EQ(a["confirmed"].get<uint64_t>(), 5000u);
  auto b = perf({"--stream", "perf-sub", "--messages", "20000", "--sub-entry-size", "10",
                 "--batch-size", "20", "--offset", "first", "--delete-stream"});
  expect_clean(b);
  EXPECT_EQ(b["published"].get<uint64_t>(), 20000u);
  EXPECT_EQ(b["consumed_all"].get<uint64_t>(), 25000u);
}

TEST_F(RabbitPerf, RateLimitHoldsThePace) {
  auto j = perf({"--stream", "perf-rate", "--messages", "3000", "--rate", "1500", "--batch-size",
                 "10", "--delete-stream"});
  expect_clean(j);
  // 3000 messages at 1500/s cannot finish publishing in much under 2 s.
  EXPECT_GE(j["duration_s"].get<double>(), 1.9);
  EXPECT_LE(j["rates"]["published_msg_s"].get<double>(), 1500 * 1.1);
}

TEST_F(RabbitPerf, BadCredentialsFailCleanly) {
  auto j = perf({"--stream", "perf-auth", "--password", "wrong", "--time", "1"}, 1);
  ASSERT_TRUE(j.contains("error")) << j.dump();
  EXPECT_TRUE(contains(j["error"]["message"].get<std::string>(), "authentication")) << j.dump();
}

}  // namespace
}  // namespace strata::test
