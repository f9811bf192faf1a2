// Interoperability with an independent S3 client: objects written by strata
// are read back byte-identical by awscli (Debian's /usr/bin/aws, v2), and
// objects written by awscli — including a multipart upload — are read,
// ranged, listed and removed by strata. Both against the same real s3rver.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends.h"
#include "common/crc32c.h"

namespace strata::objstore {
namespace {

const char* kAws = "/usr/bin/aws";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class S3Interop : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kAws)) << kAws << " missing: run scripts/setup.sh";
    std::string err;
    server_ = test::S3rver::start({dir_.path(), {testing::kBucket}}, &err);
    ASSERT_TRUE(server_) << err;
    auto s = S3ObjectStore::open(testing::local_s3_config(server_->endpoint()));
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    store_ = std::move(s).value();
  }

  test::RunResult aws(std::vector<std::string> args) {
    std::vector<std::string> argv = {kAws, "--endpoint-url", server_->endpoint()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto env = test::S3rver::aws_env();
    env.push_back("LC_ALL=C.UTF-8");
    return test::run(argv, env);
  }

  std::string s3url(const std::string& key) {
    return std::string("s3://") + testing::kBucket + "/" + key;
  }

  test::TempDir dir_;
  std::unique_ptr<test::S3rver> server_;
  std::unique_ptr<S3ObjectStore> store_;
};

TEST_F(S3Interop, AwsCliReadsWhatStrataWrote) {
  Random rng(test::test_seed(31));
  struct Obj {
    std::string key, data;
  } objs[] = {{"interop/strata/big.bin", testing::random_bytes(rng, 5 << 20)},
              {"interop/strata/with space/caf\xC3\xA9 \xE2\x82\xAC.txt", "unicode key body"},
              {"interop/strata/empty", ""}};
  for (const auto& o : objs) {
    auto r = store_->put(o.key, o.data);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
  }
  // One recursive download (each awscli start costs about a second).
  const std::string out = dir_.sub("aws-out");
  auto r = aws({"s3", "cp", "--recursive", s3url("interop/strata/"), out, "--only-show-errors"});
  ASSERT_EQ(r.status, 0) << r.output;
  for (const auto& o : objs) {
    std::string path = out + "/" + o.key.substr(std::string("interop/strata/").size());
    ASSERT_TRUE(std::filesystem::exists(path)) << path << "\n" << r.output;
    std::string got = slurp(path);
    EXPECT_EQ(got.size(), o.data.size()) << o.key;
    EXPECT_TRUE(got == o.data) << o.key << " differs as read by awscli";
  }
  // awscli sees strata's metadata and checksum of the body.
  auto head = aws({"s3api", "head-object", "--bucket", testing::kBucket, "--key", objs[0].key});
  ASSERT_EQ(head.status, 0) << head.output;
  auto j = nlohmann::json::parse(head.output.substr(head.output.find('{')));
  EXPECT_EQ(j["ContentLength"].get<uint64_t>(), objs[0].data.size());
  EXPECT_EQ(j["Metadata"]["crc32c"], fmt::format("{:08x}", crc32c::value(objs[0].data)));
  auto ls = aws({"s3", "ls", "--recursive", std::string("s3://") + testing::kBucket + "/interop/"});
  ASSERT_EQ(ls.status, 0) << ls.output;
  for (const auto& o : objs) {
    EXPECT_NE(ls.output.find(o.key), std::string::npos) << o.key << " not in:\n" << ls.output;
  }
}

TEST_F(S3Interop, StrataReadsWhatAwsCliWrote) {
  Random rng(test::test_seed(32));
  // 20 MiB: awscli uploads it as a multipart object (8 MiB parts).
  const std::string big = testing::random_bytes(rng, 20 << 20);
  const std::string small = "written by awscli\n";
  const std::string up = dir_.sub("upload");
  std::filesystem::create_directories(up + "/\xE2\x82\xAC");
  std::ofstream(up + "/multi part.bin", std::ios::binary) << big;
  std::ofstream(up + "/\xE2\x82\xAC/small.txt", std::ios::binary) << small;
  const std::string big_key = "interop/aws/multi part.bin";
  const std::string small_key = "interop/aws/\xE2\x82\xAC/small.txt";
  auto r1 = aws({"s3", "cp", "--recursive", up, s3url("interop/aws/"), "--only-show-errors"});
  ASSERT_EQ(r1.status, 0) << r1.output;

  auto g = store_->get(big_key);
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(*g == big) << "multipart object differs as read by strata";
  auto gs = store_->get(small_key);
  ASSERT_TRUE(gs.ok()) << gs.error().to_string();
  EXPECT_EQ(*gs, small);
  auto range = store_->get_range(big_key, (8 << 20) - 100, 200);  // across a part boundary
  ASSERT_TRUE(range.ok()) << range.error().to_string();
  EXPECT_TRUE(*range == big.substr((8 << 20) - 100, 200));
  auto h = store_->head(big_key);
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->size, big.size());
  EXPECT_FALSE(h->crc32c.has_value()) << "awscli stores no strata checksum";
  EXPECT_FALSE(h->etag.empty());

  auto all = list_all(*store_, "interop/aws/");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].key, big_key);
  EXPECT_EQ((*all)[0].size, big.size());
  EXPECT_EQ((*all)[1].key, small_key);

  for (const auto& o : testing::remove_many_retrying(*store_, {big_key, small_key})) {
    EXPECT_TRUE(o.ok()) << o.error->to_string();
  }
  auto ls = aws({"s3", "ls", "--recursive", std::string("s3://") + testing::kBucket + "/interop/"});
  EXPECT_EQ(ls.output.find("interop/aws"), std::string::npos) << ls.output;
}

}  // namespace
}  // namespace strata::objstore
