// A full disk, for real: `strata serve` with its data directory on a small
// tmpfs this test mounts. The disk alarm refuses publishers (code 6) while
// consumers read on and resumes by itself once space is freed; a writer
// that hits ENOSPC with the alarm off fail-stops visibly (status, metrics)
// and comes back without a restart once space is freed; every confirmed
// message is read back, exactly, and nothing refused appears.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "server/serve_fixture.h"
#include "support/eventually.h"

namespace strata::test {
namespace {

class DiskFullTest : public ServeTest {
 protected:
  void SetUp() override {
    mount_ = dir_.sub("small-disk");
    std::filesystem::create_directories(mount_);
    if (::mount("tmpfs", mount_.c_str(), "tmpfs", 0, "size=48m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs for the full-disk test (needs CAP_SYS_ADMIN): "
                   << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (server_.port() > 0) server_.stop();
    if (mounted_) ::umount2(mount_.c_str(), MNT_DETACH);
  }

  // The server on the small disk with the default catalog (sized by use:
  // it once took 41 MiB at creation), the object store on the big one, so
  // that uploads do not compete for the space.
  void start(uint64_t free_limit) {
    const std::string cfg = dir_.sub("strata.json");
    std::ofstream(cfg) << nlohmann::json{
        {"objstore", {{"fs", {{"root", dir_.sub("objects")}}}}},
        {"disk", {{"free_limit_bytes", free_limit}, {"check_interval_ms", 50}}},
        {"http",
         {{"listen",
           "127.0.0.1:0"}}}}.dump();
    server_ = ServeProcess::start(mount_ + "/data", {"--config", cfg}, dir_.path());
    ASSERT_GT(server_.port(), 0) << server_.process().stderr_text();
  }

  uint64_t free_bytes() {
    struct statvfs v {};
    EXPECT_EQ(::statvfs(mount_.c_str(), &v), 0);
    return uint64_t(v.f_bavail) * v.f_frsize;
  }
  // Fills the small disk until `leave` bytes are free.
  void fill_leaving(uint64_t leave) {
    const uint64_t free = free_bytes();
    ASSERT_GT(free, leave);
    std::ofstream f(filler(), std::ios::binary);
    const std::string block(1 << 16, 'f');
    for (uint64_t left = free - leave; left > 0;) {
      const uint64_t n = std::min<uint64_t>(left, block.size());
      f.write(block.data(), std::streamsize(n));
      left -= n;
    }
    f.close();
    ASSERT_TRUE(f.good());
  }
  void free_space() { std::filesystem::remove(filler()); }
  std::string filler() const { return mount_ + "/filler"; }

  nlohmann::json stream_status(const std::string& name) {
    return serve_status(server_)["streams"][name];
  }
  nlohmann::json disk_status() { return serve_status(server_)["node"]["disk"]; }

  // Publishes `bodies` (ids from `first_id`) and sorts the outcomes: the
  // ids confirmed, and the code of every refused one.
  void publish_outcomes(StreamClient& c, uint64_t first_id, const std::vector<std::string>& bodies,
                        std::vector<uint64_t>* confirmed,
                        std::map<uint64_t, ResponseCode>* refused) {
    Bytes storage;
    ASSERT_TRUE(c.send(make_publish(1, first_id, bodies, &storage)).ok());
    size_t answered = 0;
    while (answered < bodies.size()) {
      auto f = c.read();
      ASSERT_TRUE(f.ok()) << f.error().message;
      if (auto* ok = std::get_if<PublishConfirm>(&*f)) {
        for (uint64_t id : ok->publishing_ids) confirmed->push_back(id);
        answered += ok->publishing_ids.size();
      } else if (auto* err = std::get_if<PublishError>(&*f)) {
        for (const auto& e : err->errors) (*refused)[e.publishing_id] = e.code;
        answered += err->errors.size();
      }
    }
  }

  // Every record of `stream` from the first, on a fresh connection.
  std::vector<std::string> read_all(const std::string& stream, size_t n) {
    StreamClient c = open_client();
    EXPECT_TRUE(c.send(SubscribeRequest{c.corr(), 1, stream, {OffsetType::first, 0}, 10, {}}).ok());
    auto r = c.expect<SubscribeResponse>();
    EXPECT_TRUE(r.ok() && r->code == ResponseCode::ok);
    return consume(c, 1, n);
  }

  std::string mount_;
  bool mounted_ = false;
};

// The alarm: below the limit publishing is refused with code 6 and said
// so in status and metrics (strata's and RabbitMQ's names); consumers read
// on; once space is freed publishing resumes with no action.
TEST_F(DiskFullTest, TheAlarmRefusesPublishersUntilSpaceIsFreed) {
  start(/*free_limit=*/8'000'000);
  StreamClient c = open_client();
  create(c, "orders");
  declare(c, 1, "orders");
  publish_confirmed(c, 1, 0, bodies(100, "m"));
  ASSERT_FALSE(disk_status()["alarm"].get<bool>());

  fill_leaving(4'000'000);
  ASSERT_TRUE(eventually(std::chrono::seconds(10), [&] { return disk_status()["alarm"] == true; }))
      << disk_status().dump();
  std::vector<uint64_t> confirmed;
  std::map<uint64_t, ResponseCode> refused;
  publish_outcomes(c, 100, bodies(10, "m", 100), &confirmed, &refused);
  EXPECT_TRUE(confirmed.empty());
  ASSERT_EQ(refused.size(), 10u);
  for (const auto& [id, code] : refused) EXPECT_EQ(code, ResponseCode::stream_not_available) << id;
  // Consumers are not blocked by the alarm.
  EXPECT_EQ(read_all("orders", 100), bodies(100, "m"));
  const std::string metrics = serve_http_get(server_, "/metrics");
  EXPECT_NE(metrics.find("\nstrata_node_disk_alarm 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("\nrabbitmq_alarms_free_disk_space_watermark 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("\nstrata_server_publish_refused_disk_alarm_total 10\n"),
            std::string::npos);
  EXPECT_NE(server_.process().stdout_text().find("disk alarm:"), std::string::npos);

  free_space();
  ASSERT_TRUE(eventually(std::chrono::seconds(10), [&] { return disk_status()["alarm"] == false; }))
      << disk_status().dump();
  publish_confirmed(c, 1, 100, bodies(10, "m", 100));
  EXPECT_EQ(read_all("orders", 110), bodies(110, "m"));
  EXPECT_EQ(disk_status()["alarms_raised"], 1);
}

// No alarm (limit 0): the writer meets ENOSPC and fail-stops. It says so in
// status and metrics, consumers still read everything confirmed, and once
// space is freed the node restarts the writer in place: publishing goes on
// at the committed end, and the stream holds exactly the confirmed
// messages, in order.
TEST_F(DiskFullTest, AWriterStoppedByAFullDiskComesBackOnceSpaceIsFreed) {
  start(/*free_limit=*/0);
  StreamClient c = open_client();
  create(c, "full");
  declare(c, 1, "full");
  publish_confirmed(c, 1, 0, bodies(50, "a"));

  fill_leaving(256 * 1024);
  const std::string big(8 * 1024, 'x');
  std::vector<std::string> sent;  // by publishing id
  std::vector<uint64_t> confirmed;
  std::map<uint64_t, ResponseCode> refused;
  for (uint64_t id = 50; refused.empty() && id < 50 + 200; id += 4) {
    std::vector<std::string> batch;
    for (uint64_t k = 0; k < 4; ++k) batch.push_back(fmt::format("b{}-{}", id + k, big));
    sent.insert(sent.end(), batch.begin(), batch.end());
    publish_outcomes(c, id, batch, &confirmed, &refused);
  }
  ASSERT_FALSE(refused.empty()) << "256 KiB filled without a refusal";
  for (const auto& [id, code] : refused) EXPECT_EQ(code, ResponseCode::stream_not_available) << id;
  ASSERT_EQ(stream_status("full")["writer"]["state"], "failed") << stream_status("full").dump();
  EXPECT_NE(stream_status("full")["writer"]["error"].get<std::string>().find("No space"),
            std::string::npos)
      << stream_status("full").dump();
  EXPECT_NE(serve_http_get(server_, "/metrics").find("strata_log_writer_up{stream=\"full\"} 0"),
            std::string::npos);

  // What was confirmed is what a consumer reads, while the writer is down.
  std::vector<std::string> expected = bodies(50, "a");
  for (uint64_t id : confirmed) expected.push_back(sent[id - 50]);
  EXPECT_EQ(read_all("full", expected.size()), expected);

  free_space();
  ASSERT_TRUE(eventually(std::chrono::seconds(10), [&] {
    return stream_status("full")["writer"]["state"] == "running";
  })) << stream_status("full").dump();
  EXPECT_EQ(stream_status("full")["writer"]["restarts"], 1);
  EXPECT_GE(disk_status()["writer_restarts"].get<int>(), 1);
  EXPECT_NE(server_.process().stdout_text().find("writer restarted at offset"), std::string::npos);

  publish_confirmed(c, 1, 1000, bodies(20, "c"));
  for (const auto& b : bodies(20, "c")) expected.push_back(b);
  // Exactly the confirmed messages: nothing refused slipped in, nothing
  // confirmed went missing, and the offsets go on without a gap.
  EXPECT_EQ(read_all("full", expected.size()), expected);
  ASSERT_EQ(server_.stop(), 0);
  server_ =
      ServeProcess::start(mount_ + "/data", {"--config", dir_.sub("strata.json")}, dir_.path());
  ASSERT_GT(server_.port(), 0);
  EXPECT_EQ(read_all("full", expected.size()), expected);
}

}  // namespace
}  // namespace strata::test
