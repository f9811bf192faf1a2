// JsonSection (common/json_config.h): the one reader of configuration
// documents — typed readers that name the setting by its path, unknown
// keys refused, and the keys a reader asks for listed.
#include "common/json_config.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using json = nlohmann::json;

TEST(JsonSection, IntegerInTakesItsBoundsAndNamesTheSettingOutsideThem) {
  JsonSection s(json{{"lo", 8}, {"hi", 16}}, "server");
  uint32_t lo = 0, hi = 0;
  ASSERT_TRUE(s.integer_in("lo", &lo, 8, 16).ok());
  ASSERT_TRUE(s.integer_in("hi", &hi, 8, 16).ok());
  EXPECT_EQ(lo, 8u);
  EXPECT_EQ(hi, 16u);
  for (const json& v : {json(7), json(17), json(-1), json(9.5), json("9"), json(true)}) {
    JsonSection bad(json{{"frame_max", v}}, "server");
    uint32_t out = 42;
    Status st = bad.integer_in("frame_max", &out, 8, 16);
    ASSERT_FALSE(st.ok()) << v.dump();
    EXPECT_EQ(st.error().message,
              "setting server.frame_max = " + v.dump() + ": must be an integer in 8..16");
    EXPECT_EQ(out, 42u) << "a refused value leaves the default";
  }
}

TEST(JsonSection, AbsentKeysKeepTheDefaultAndUnreadKeysAreUnknown) {
  JsonSection s(json{{"known", 3}, {"typo", 1}}, "cluster");
  int64_t known = 0, absent = 7;
  ASSERT_TRUE(s.integer_in("known", &known, 0, 10).ok());
  ASSERT_TRUE(s.integer_in("absent", &absent, 0, 10).ok());
  EXPECT_EQ(known, 3);
  EXPECT_EQ(absent, 7);
  Status st = s.no_unknown();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "unknown setting cluster.typo");
}

TEST(JsonSection, AnAbsentSectionListsEveryKeyItsReaderAsksFor) {
  SettingsRead read;
  JsonSection s(json(nullptr), "server", &read);
  uint32_t v = 0;
  bool b = false;
  ASSERT_TRUE(s.integer_in("frame_max", &v, 1, 2).ok());
  ASSERT_TRUE(s.boolean("enabled", &b).ok());
  ASSERT_TRUE(s.no_unknown().ok());
  EXPECT_EQ(read, (SettingsRead{"server.enabled", "server.frame_max"}));
}

TEST(JsonSection, ASectionThatIsNotAnObjectIsRefusedByPath) {
  JsonSection s(json(3), "cluster");
  Status st = s.check_object();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "setting cluster = 3: must be a JSON object");
}

}  // namespace
}  // namespace strata
