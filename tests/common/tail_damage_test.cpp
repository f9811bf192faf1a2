// The torn-tail rule shared by the log's recovery and the slotstore WAL.
#include "common/tail_damage.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

const std::string kFile = "/data/s/00000000000000000012.segment";

TEST(TailDamage, DamageIsDescribedByFileAndPosition) {
  Error e = damage_at(kFile, 4242, "chunk data CRC mismatch");
  EXPECT_EQ(e.code, Errc::corrupt);
  EXPECT_EQ(e.message, kFile + " position 4242: chunk data CRC mismatch");
}

TEST(TailDamage, NothingIntactAfterTheDamageIsATornTail) {
  EXPECT_TRUE(judge_tail_damage(damage_at(kFile, 4242, "bad CRC"), std::nullopt).ok());
}

TEST(TailDamage, IntactDataAfterTheDamageIsCorruptionNamingFileAndBothPositions) {
  Status s = judge_tail_damage(damage_at(kFile, 4242, "chunk data CRC mismatch"),
                               IntactAfter{9000, "an intact chunk (offset 17)"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Errc::corrupt);
  const std::string& m = s.error().message;
  EXPECT_EQ(m.find(kFile + " position 4242: chunk data CRC mismatch; "), 0u) << m;
  EXPECT_NE(m.find("an intact chunk (offset 17) follows at position 9000"), std::string::npos) << m;
  EXPECT_NE(m.find("not a torn tail"), std::string::npos) << m;
}

}  // namespace
}  // namespace strata
