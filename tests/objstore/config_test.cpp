// The object store configuration loader: file section, environment,
// overrides, precedence, and validation errors that name key and value.
#include "objstore/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "support/temp_dir.h"

namespace strata::objstore {
namespace {

using json = nlohmann::json;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}
const EnvLookup kNoEnv = env_of({});

json s3_doc() {
  return json::parse(R"({"objstore": {"backend": "s3", "s3": {
      "endpoint": "http://127.0.0.1:9000", "region": "eu-west-1", "bucket": "my-bucket",
      "access_key_id": "AK", "secret_access_key": "SK", "max_connections": 4}}})");
}

std::string error_of(const Result<ObjectStoreConfig>& r) {
  return r.ok() ? std::string("(ok)") : r.error().message;
}

TEST(Config, DefaultsToFsAndRequiresARoot) {
  auto r = load_config(json(), kNoEnv);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(error_of(r).find("objstore.fs.root is required"), std::string::npos) << error_of(r);
  auto ok = load_config(json::parse(R"({"objstore": {"fs": {"root": "/x"}}})"), kNoEnv);
  ASSERT_TRUE(ok.ok()) << error_of(ok);
  EXPECT_EQ(ok->backend, ObjectStoreConfig::Backend::fs);
  EXPECT_EQ(ok->fs.root, "/x");
  EXPECT_TRUE(ok->fs.create);
}

TEST(Config, ReadsEveryS3Setting) {
  json doc = s3_doc();
  doc["objstore"]["s3"]["addressing"] = "virtual";
  doc["objstore"]["s3"]["session_token"] = "TOK";
  doc["objstore"]["s3"]["connect_timeout_ms"] = 100;
  doc["objstore"]["s3"]["request_timeout_ms"] = 2000;
  doc["objstore"]["s3"]["stall_timeout_ms"] = 3000;
  doc["objstore"]["s3"]["tls_verify"] = false;
  auto r = load_config(doc, kNoEnv);
  ASSERT_TRUE(r.ok()) << error_of(r);
  const S3Config& s = r->s3;
  EXPECT_EQ(r->backend, ObjectStoreConfig::Backend::s3);
  EXPECT_EQ(s.endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(s.region, "eu-west-1");
  EXPECT_EQ(s.bucket, "my-bucket");
  EXPECT_EQ(s.addressing, Addressing::virtual_hosted);
  EXPECT_EQ(s.access_key_id, "AK");
  EXPECT_EQ(s.secret_access_key, "SK");
  EXPECT_EQ(s.session_token, "TOK");
  EXPECT_EQ(s.connect_timeout_ms, 100);
  EXPECT_EQ(s.request_timeout_ms, 2000);
  EXPECT_EQ(s.stall_timeout_ms, 3000);
  EXPECT_EQ(s.max_connections, 4);
  EXPECT_FALSE(s.tls_verify);
}

TEST(Config, AddressingDefaultsToPathForCustomEndpointsAndVirtualForAws) {
  auto custom = load_config(s3_doc(), kNoEnv);
  ASSERT_TRUE(custom.ok());
  EXPECT_EQ(custom->s3.addressing, Addressing::path);
  json aws = s3_doc();
  aws["objstore"]["s3"].erase("endpoint");
  auto r = load_config(aws, kNoEnv);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->s3.addressing, Addressing::virtual_hosted);
  EXPECT_EQ(r->s3.effective_endpoint(), "https://s3.eu-west-1.amazonaws.com");
}

TEST(Config, TakesCredentialsRegionAndEndpointFromTheStandardEnvironment) {
  json doc = json::parse(R"({"objstore": {"backend": "s3", "s3": {"bucket": "b-1"}}})");
  auto r = load_config(doc, env_of({{"AWS_ACCESS_KEY_ID", "EK"},
                                    {"AWS_SECRET_ACCESS_KEY", "ES"},
                                    {"AWS_SESSION_TOKEN", "ET"},
                                    {"AWS_DEFAULT_REGION", "ap-south-1"},
                                    {"AWS_ENDPOINT_URL", "http://localhost:1234"}}));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->s3.access_key_id, "EK");
  EXPECT_EQ(r->s3.secret_access_key, "ES");
  EXPECT_EQ(r->s3.session_token, "ET");
  EXPECT_EQ(r->s3.region, "ap-south-1");
  EXPECT_EQ(r->s3.endpoint, "http://localhost:1234");
}

TEST(Config, AwsRegionBeatsAwsDefaultRegionAndServiceEndpointBeatsGeneric) {
  json doc = json::parse(R"({"objstore": {"backend": "s3", "s3": {"bucket": "b-1"}}})");
  auto r = load_config(doc, env_of({{"AWS_ACCESS_KEY_ID", "EK"},
                                    {"AWS_SECRET_ACCESS_KEY", "ES"},
                                    {"AWS_DEFAULT_REGION", "ap-south-1"},
                                    {"AWS_REGION", "us-west-2"},
                                    {"AWS_ENDPOINT_URL", "http://generic:1"},
                                    {"AWS_ENDPOINT_URL_S3", "http://s3specific:2"}}));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->s3.region, "us-west-2");
  EXPECT_EQ(r->s3.endpoint, "http://s3specific:2");
}

TEST(Config, FlagsBeatFileAndFileBeatsEnvironment) {
  auto env = env_of({{"AWS_REGION", "env-region"}, {"AWS_ACCESS_KEY_ID", "EK"}});
  auto r = load_config(s3_doc(), env, {{"s3.bucket", "flag-bucket", "--bucket"}});
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->s3.bucket, "flag-bucket");  // flag over file
  EXPECT_EQ(r->s3.region, "eu-west-1");    // file over env
  EXPECT_EQ(r->s3.access_key_id, "AK");    // file over env
  // Without the file, the environment fills in.
  auto r2 = load_config(json(),
                        env_of({{"AWS_ACCESS_KEY_ID", "EK"},
                                {"AWS_SECRET_ACCESS_KEY", "ES"},
                                {"AWS_REGION", "env-region"}}),
                        {{"backend", "s3", "--backend"}, {"s3.bucket", "bb-b", "--bucket"}});
  ASSERT_TRUE(r2.ok()) << error_of(r2);
  EXPECT_EQ(r2->s3.region, "env-region");
  EXPECT_EQ(r2->s3.access_key_id, "EK");
}

TEST(Config, ErrorsNameTheKeyAndTheValue) {
  struct Case {
    json patch;  // merged into objstore.s3
    const char* expect;
  } cases[] = {
      {{{"max_connections", 0}}, "objstore.s3.max_connections = 0: must be within 1..1024"},
      {{{"max_connections", "8"}}, "objstore.s3.max_connections = \"8\": expected an integer"},
      {{{"stall_timeout_ms", 10}},
       "objstore.s3.stall_timeout_ms = 10: must be within 1000..3600000"},
      {{{"addressing", "dns"}}, "objstore.s3.addressing = 'dns': expected \"path\" or \"virtual\""},
      {{{"bucket", "Bad_Bucket"}}, "objstore.s3.bucket = 'Bad_Bucket': not a valid bucket name"},
      {{{"endpoint", "ftp://x"}}, "objstore.s3.endpoint = 'ftp://x': expected http://host[:port]"},
      {{{"endpoint", "http://h/path"}}, "objstore.s3.endpoint = 'http://h/path'"},
      {{{"tls_verify", "yes"}}, "objstore.s3.tls_verify = \"yes\": expected true or false"},
      {{{"colour", "blue"}}, "unknown object store setting 'objstore.s3.colour'"},
  };
  for (const auto& c : cases) {
    json doc = s3_doc();
    doc["objstore"]["s3"].update(c.patch);
    auto r = load_config(doc, kNoEnv);
    ASSERT_FALSE(r.ok()) << c.patch.dump();
    EXPECT_EQ(r.code(), Errc::invalid_argument);
    EXPECT_NE(error_of(r).find(c.expect), std::string::npos) << error_of(r);
  }
}

TEST(Config, MaxGetBytesDefaultsToOneGibAndIsChecked) {
  auto def = load_config(s3_doc(), kNoEnv);
  ASSERT_TRUE(def.ok()) << error_of(def);
  EXPECT_EQ(def->max_get_bytes, kDefaultMaxGetBytes);
  EXPECT_EQ(kDefaultMaxGetBytes, 1ull << 30);
  json doc = s3_doc();
  doc["objstore"]["max_get_bytes"] = 64 << 20;
  auto set = load_config(doc, kNoEnv);
  ASSERT_TRUE(set.ok()) << error_of(set);
  EXPECT_EQ(set->max_get_bytes, uint64_t(64) << 20);
  EXPECT_EQ(describe_config(*set)["max_get_bytes"], 64 << 20);
  struct Case {
    json value;
    const char* expect;
  } cases[] = {
      {0, "objstore.max_get_bytes = 0: must be within 4096..1099511627776"},
      {-1, "objstore.max_get_bytes = -1: must be within 4096..1099511627776"},
      {4095, "objstore.max_get_bytes = 4095: must be within 4096..1099511627776"},
      {(1ll << 40) + 1, "objstore.max_get_bytes = 1099511627777: must be within"},
      {"1GiB", "objstore.max_get_bytes = \"1GiB\": expected an integer"},
  };
  for (const auto& c : cases) {
    json bad = s3_doc();
    bad["objstore"]["max_get_bytes"] = c.value;
    auto r = load_config(bad, kNoEnv);
    ASSERT_FALSE(r.ok()) << c.value.dump();
    EXPECT_EQ(r.code(), Errc::invalid_argument);
    EXPECT_NE(error_of(r).find(c.expect), std::string::npos) << error_of(r);
  }
  auto flag = load_config(s3_doc(), kNoEnv, {{"max_get_bytes", "12", "--max-get-bytes"}});
  EXPECT_EQ(error_of(flag), "--max-get-bytes = 12: must be within 4096..1099511627776");
}

TEST(Config, OpenedStoresCarryMaxGetBytes) {
  test::TempDir dir;
  json doc = json::parse(R"({"objstore": {"fs": {"root": ""}, "max_get_bytes": 8192}})");
  doc["objstore"]["fs"]["root"] = dir.sub("objects");
  auto c = load_config(doc, kNoEnv);
  ASSERT_TRUE(c.ok()) << error_of(c);
  auto fs_store = open_object_store(*c);
  ASSERT_TRUE(fs_store.ok()) << fs_store.error().to_string();
  EXPECT_EQ((*fs_store)->max_get_bytes(), 8192u);
  auto s3c = load_config(s3_doc(), kNoEnv, {{"max_get_bytes", "1048576", "--max-get-bytes"}});
  ASSERT_TRUE(s3c.ok()) << error_of(s3c);
  auto s3_store = open_object_store(*s3c);  // opening sends no request
  ASSERT_TRUE(s3_store.ok()) << s3_store.error().to_string();
  EXPECT_EQ((*s3_store)->max_get_bytes(), 1048576u);
}

TEST(Config, OverrideErrorsNameTheFlag) {
  auto r = load_config(s3_doc(), kNoEnv, {{"s3.max_connections", "many", "--max-connections"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(error_of(r), "--max-connections = 'many': not an integer");
  auto r2 = load_config(s3_doc(), kNoEnv, {{"s3.max_connections", "5000", "--max-connections"}});
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(error_of(r2), "--max-connections = 5000: must be within 1..1024");
  auto r3 = load_config(s3_doc(), kNoEnv, {{"backend", "tape", "--backend"}});
  EXPECT_EQ(error_of(r3), "--backend = 'tape': expected \"fs\" or \"s3\"");
}

TEST(Config, MissingCredentialsAreNamed) {
  json doc = s3_doc();
  doc["objstore"]["s3"].erase("secret_access_key");
  auto r = load_config(doc, kNoEnv);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(error_of(r).find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
}

TEST(Config, ReportsBadJsonAndWrongShapes) {
  test::TempDir dir;
  std::string path = dir.sub("c.json");
  std::ofstream(path) << "{\"objstore\": {";
  auto r = load_config_file(path, kNoEnv);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(error_of(r).find(path + ": not valid JSON"), std::string::npos) << error_of(r);
  // A syntax error is placed: line and column of where the parser stopped.
  std::ofstream(path) << "{\n  \"data_dir\": \"/d\",\n  \"log\": {\"fsync\": always}\n}\n";
  auto placed = load_config_file(path, kNoEnv);
  ASSERT_FALSE(placed.ok());
  EXPECT_NE(error_of(placed).find("at line 3, column 20: syntax error"), std::string::npos)
      << error_of(placed);
  auto missing = load_config_file(dir.sub("nope.json"), kNoEnv);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(error_of(missing).find("nope.json"), std::string::npos);
  auto r2 = load_config(json::parse(R"({"objstore": []})"), kNoEnv);
  EXPECT_EQ(error_of(r2), "objstore = []: expected an object");
  // Other sections of the daemon's config are none of our business.
  auto r3 =
      load_config(json::parse(R"({"log": {"x": 1}, "objstore": {"fs": {"root": "/r"}}})"), kNoEnv);
  EXPECT_TRUE(r3.ok()) << error_of(r3);
}

TEST(Config, DescribeHidesSecrets) {
  auto r = load_config(s3_doc(), kNoEnv);
  ASSERT_TRUE(r.ok());
  json d = describe_config(*r);
  EXPECT_EQ(d["s3"]["secret_access_key"], "***");
  EXPECT_EQ(d["s3"]["access_key_id"], "AK");
  EXPECT_EQ(d.dump().find("\"SK\""), std::string::npos);
}

}  // namespace
}  // namespace strata::objstore
