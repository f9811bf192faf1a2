// `strata slotstore inspect`, run as a process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "slotstore_test_util.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::slotstore {
namespace {

using namespace test;
using json = nlohmann::json;

TEST(SlotStoreCli, InspectShowsSchemaUseAndRecordsWithoutWriting) {
  strata::test::TempDir dir;
  const std::string path = dir.sub("meta.slots");
  {
    auto s = must_open(posix_fs(), path, raft_schema(), small_options(10, 8, 16384));
    ASSERT_TRUE(s);
    ASSERT_OK(s->put("uid-1", {set(kTerm, Value::u64(4)), set(kVote, vote("srv", "n@h"))}));
    ASSERT_OK(s->put(std::string("\x01\x02", 2), {set(kApplied, Value::u64(9))}));
    ASSERT_OK(s->put("uid-3", {set(kApplied, Value::u64(1))}));  // not synced: still shown
  }
  Bytes before = *read_file(posix_fs(), path);
  auto r = strata::test::run({STRATA_BIN, "--json", "slotstore", "inspect", "--records", path});
  ASSERT_EQ(r.status, 0) << r.output;
  json j = json::parse(r.output);
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["slots"]["used"], 3);
  EXPECT_EQ(j["slots"]["capacity"], 10);
  EXPECT_EQ(j["strings"]["used"], 2);
  EXPECT_EQ(j["schema"]["fields"][1]["type"], "(interned(64),interned(64))");
  ASSERT_EQ(j["records"].size(), 3u);
  EXPECT_EQ(j["records"][0]["key"], "uid-1");
  EXPECT_EQ(j["records"][0]["fields"]["voted_for"], json::array({"srv", "n@h"}));
  EXPECT_TRUE(j["records"][0]["fields"]["last_applied"].is_null());
  EXPECT_TRUE(j["records"][1]["key"].is_null());
  EXPECT_EQ(j["records"][1]["key_hex"], "0102");
  EXPECT_EQ(*read_file(posix_fs(), path), before);  // read-only

  auto text = strata::test::run({STRATA_BIN, "slotstore", "inspect", path});
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("3 of 10 used"), std::string::npos) << text.output;

  auto bad = strata::test::run({STRATA_BIN, "--json", "slotstore", "inspect", dir.sub("nope")});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(json::parse(bad.output)["error"]["code"], "not_found");
  ASSERT_OK(write_file_atomic(posix_fs(), dir.sub("junk"), std::string(8192, 'x')));
  auto junk = strata::test::run({STRATA_BIN, "--json", "slotstore", "inspect", dir.sub("junk")});
  EXPECT_EQ(junk.status, 1);
  EXPECT_EQ(json::parse(junk.output)["error"]["code"], "corrupt");
}

}  // namespace
}  // namespace strata::slotstore
