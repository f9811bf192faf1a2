// `strata objstore` end to end: the real binary against a local directory
// and against a real s3rver, with config file, flags and environment.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends.h"

namespace strata::objstore {
namespace {

using json = nlohmann::json;

test::RunResult strata(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), STRATA_BIN);
  // No AWS_* from the environment running the tests leaks in.
  for (const char* v :
       {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
        "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"}) {
    bool given = false;
    for (const auto& e : env) given |= e.rfind(std::string(v) + "=", 0) == 0;
    if (!given) env.push_back(std::string(v) + "=");
  }
  return test::run(args, env);
}

json last_json_line(const std::string& out) {
  std::istringstream in(out);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') last = line;
  return last.empty() ? json() : json::parse(last);
}

TEST(ObjstoreCli, FsPutLsGetRmRoundTrip) {
  test::TempDir dir;
  const std::string root = dir.sub("objects");
  std::ofstream(dir.sub("in.bin"), std::ios::binary) << std::string("payload\0bytes", 13);
  auto put = strata({"--json", "objstore", "--backend", "fs", "--root", root, "put",
                     "s1/data/caf\xC3\xA9 1.frag", dir.sub("in.bin")});
  ASSERT_EQ(put.status, 0) << put.output;
  json p = last_json_line(put.output);
  EXPECT_EQ(p["bytes"], 13);
  EXPECT_EQ(p["crc32c"].get<std::string>().size(), 8u);

  auto ls = strata({"--json", "objstore", "--backend", "fs", "--root", root, "ls", "s1/"});
  ASSERT_EQ(ls.status, 0) << ls.output;
  json l = last_json_line(ls.output);
  ASSERT_EQ(l["count"], 1);
  EXPECT_EQ(l["objects"][0]["key"], "s1/data/caf\xC3\xA9 1.frag");
  EXPECT_EQ(l["objects"][0]["size"], 13);

  auto get = strata({"--json", "objstore", "--backend", "fs", "--root", root, "get",
                     "s1/data/caf\xC3\xA9 1.frag", "-o", dir.sub("out.bin")});
  ASSERT_EQ(get.status, 0) << get.output;
  std::ifstream in(dir.sub("out.bin"), std::ios::binary);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(back, std::string("payload\0bytes", 13));
  auto range = strata({"objstore", "--backend", "fs", "--root", root, "get",
                       "s1/data/caf\xC3\xA9 1.frag", "--offset", "8", "--length", "5"});
  ASSERT_EQ(range.status, 0);
  EXPECT_EQ(range.output, "bytes");

  auto rm =
      strata({"--json", "objstore", "--backend", "fs", "--root", root, "rm", "--prefix", "s1/"});
  ASSERT_EQ(rm.status, 0) << rm.output;
  EXPECT_EQ(last_json_line(rm.output)["removed"].size(), 1u);
  auto empty = strata({"--json", "objstore", "--backend", "fs", "--root", root, "ls"});
  EXPECT_EQ(last_json_line(empty.output)["count"], 0);
}

TEST(ObjstoreCli, PutStoresALargeFileAndAnEmptyOneWhole) {
  // The file is mapped and its pages dropped behind each pass of the put:
  // what is stored is still every byte.
  test::TempDir dir;
  const std::string root = dir.sub("objects");
  std::string big((9 << 20) + 17, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char(i * 7 + (i >> 13));
  std::ofstream(dir.sub("big.bin"), std::ios::binary) << big;
  std::ofstream(dir.sub("empty.bin"), std::ios::binary).flush();
  for (const char* name : {"big.bin", "empty.bin"}) {
    auto put = strata({"objstore", "--backend", "fs", "--root", root, "put", name, dir.sub(name)});
    ASSERT_EQ(put.status, 0) << put.output;
    auto get = strata({"objstore", "--backend", "fs", "--root", root, "get", name, "-o",
                       dir.sub(std::string(name) + ".back")});
    ASSERT_EQ(get.status, 0) << get.output;
    std::ifstream in(dir.sub(std::string(name) + ".back"), std::ios::binary);
    std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(back, std::string(name) == "big.bin" ? big : std::string()) << name;
  }
  // A body damaged in the store: the streamed get fails naming the
  // mismatch and leaves neither the file nor its partial copy.
  std::string stored;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && e.file_size() > big.size()) stored = e.path();
  }
  ASSERT_FALSE(stored.empty());
  {
    std::fstream io(stored, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(1 << 20);
    io.put('!');
  }
  auto bad = strata(
      {"objstore", "--backend", "fs", "--root", root, "get", "big.bin", "-o", dir.sub("bad.out")});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.output.find("checksum mismatch"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir.sub("bad.out")));
  EXPECT_FALSE(std::filesystem::exists(dir.sub("bad.out.part")));
  auto dir_put = strata({"objstore", "--backend", "fs", "--root", root, "put", "d", dir.path()});
  EXPECT_EQ(dir_put.status, 1);
  EXPECT_NE(dir_put.output.find("is not a regular file"), std::string::npos) << dir_put.output;
}

TEST(ObjstoreCli, ErrorsAreReportedWithClassAndExitCode) {
  test::TempDir dir;
  const std::string root = dir.sub("objects");
  auto missing = strata(
      {"--json", "objstore", "--backend", "fs", "--root", root, "get", "nope", "-o", dir.sub("x")});
  EXPECT_EQ(missing.status, 1);
  json e = last_json_line(missing.output);
  EXPECT_EQ(e["error"]["code"], "not_found") << missing.output;
  EXPECT_NE(e["error"]["message"].get<std::string>().find("get 'nope'"), std::string::npos);
  auto bad_key = strata({"objstore", "--backend", "fs", "--root", root, "put", "a//b", "-"});
  EXPECT_EQ(bad_key.status, 1);
  EXPECT_NE(bad_key.output.find("invalid key: empty segment"), std::string::npos) << bad_key.output;
  auto bad_flag = strata(
      {"objstore", "--backend", "s3", "--bucket", "ok-bucket", "--max-connections", "0", "ls"});
  EXPECT_EQ(bad_flag.status, 1);
  EXPECT_NE(bad_flag.output.find("--max-connections = 0: must be within 1..1024"),
            std::string::npos)
      << bad_flag.output;
}

TEST(ObjstoreCli, ConfigFileFlagsAndEnvironmentCombine) {
  test::TempDir dir;
  std::string err;
  auto server = test::S3rver::start({dir.path(), {testing::kBucket}}, &err);
  ASSERT_TRUE(server) << err;
  // The file names the endpoint and a wrong bucket; the flag fixes the
  // bucket; the environment supplies the credentials.
  std::ofstream(dir.sub("strata.json"))
      << json({{"objstore",
                {{"backend", "s3"},
                 {"s3", {{"endpoint", server->endpoint()}, {"bucket", "not-this-one"}}}}}})
             .dump();
  std::vector<std::string> env = {"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER",
                                  "AWS_REGION=us-east-1"};
  auto check = strata({"--json", "objstore", "--config", dir.sub("strata.json"), "--bucket",
                       testing::kBucket, "check"},
                      env);
  ASSERT_EQ(check.status, 0) << check.output;
  json c = last_json_line(check.output);
  EXPECT_TRUE(c["ok"].get<bool>());
  std::vector<std::string> names;
  for (const auto& s : c["steps"]) names.push_back(s["step"]);
  EXPECT_EQ(names, (std::vector<std::string>{"config", "credentials", "open", "bucket access",
                                             "put", "get", "delete", "deleted object is gone"}));
  // Nothing left behind by the round trip.
  auto ls = strata({"--json", "objstore", "--config", dir.sub("strata.json"), "--bucket",
                    testing::kBucket, "ls"},
                   env);
  ASSERT_EQ(ls.status, 0) << ls.output;
  EXPECT_EQ(last_json_line(ls.output)["count"], 0);
}

TEST(ObjstoreCli, CheckNamesTheFailingStep) {
  test::TempDir dir;
  std::string err;
  auto server = test::S3rver::start({dir.path(), {testing::kBucket}}, &err);
  ASSERT_TRUE(server) << err;
  auto run_check = [&](std::vector<std::string> extra, std::vector<std::string> env) {
    std::vector<std::string> args = {"--json", "objstore",   "--backend",
                                     "s3",     "--endpoint", server->endpoint()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("check");
    auto r = strata(args, env);
    EXPECT_EQ(r.status, 1) << r.output;
    return last_json_line(r.output);
  };
  const std::vector<std::string> good = {"AWS_ACCESS_KEY_ID=S3RVER",
                                         "AWS_SECRET_ACCESS_KEY=S3RVER"};
  json no_creds = run_check({"--bucket", testing::kBucket}, {});
  EXPECT_EQ(no_creds["failed_step"], "credentials") << no_creds.dump();
  json wrong_key = run_check({"--bucket", testing::kBucket},
                             {"AWS_ACCESS_KEY_ID=INTRUDER", "AWS_SECRET_ACCESS_KEY=x"});
  EXPECT_EQ(wrong_key["failed_step"], "bucket access") << wrong_key.dump();
  EXPECT_NE(wrong_key.dump().find("access denied"), std::string::npos) << wrong_key.dump();
  json no_bucket = run_check({"--bucket", "no-such-bucket"}, good);
  EXPECT_EQ(no_bucket["failed_step"], "bucket access");
  EXPECT_NE(no_bucket.dump().find("bucket 'no-such-bucket' does not exist"), std::string::npos);
  server->stop();
  json down = run_check({"--bucket", testing::kBucket, "--connect-timeout-ms", "500"}, good);
  EXPECT_EQ(down["failed_step"], "bucket access");
  EXPECT_NE(down.dump().find("transient"), std::string::npos) << down.dump();
}

}  // namespace
}  // namespace strata::objstore
