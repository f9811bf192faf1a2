// The pure rules of raftmeta writes: #111 (a term change clears the vote),
// which fields a change touches, the slotstore mapping, and when the
// periodic fsync of last_applied is due.
#include "raftmeta/meta_change.h"

#include <gtest/gtest.h>

#include "raftmeta/meta_schema.h"

namespace strata::raftmeta {
namespace {

ServerMeta voted(uint64_t term, VotedFor v, std::optional<uint64_t> applied = std::nullopt) {
  ServerMeta m;
  m.current_term = term;
  m.voted_for = std::move(v);
  m.last_applied = applied;
  return m;
}

TEST(MetaChange, TermChangeClearsTheVoteInTheSameChange) {
  const ServerMeta cur = voted(4, VotedFor::server("s1", "n1"), 10);
  const ServerMeta next = apply_store(cur, Field::current_term, uint64_t(5));
  EXPECT_EQ(next.current_term, 5u);
  EXPECT_EQ(next.voted_for, VotedFor::none());
  EXPECT_EQ(next.last_applied, 10u);
  // Term and both vote fields change together: one put, one atomic write.
  EXPECT_EQ(diff(cur, next), kTermBit | kVoteNameBit | kVoteNodeBit);
}

TEST(MetaChange, TermChangeClearsABareNameVote) {
  const ServerMeta cur = voted(4, VotedFor::bare("legacy"));
  const ServerMeta next = apply_store(cur, Field::current_term, uint64_t(5));
  EXPECT_EQ(next.voted_for, VotedFor::none());
  EXPECT_EQ(diff(cur, next), kTermBit | kVoteNameBit);  // no node was stored
}

TEST(MetaChange, SameTermKeepsTheVoteAndChangesNothing) {
  const ServerMeta cur = voted(4, VotedFor::server("s1", "n1"));
  const ServerMeta next = apply_store(cur, Field::current_term, uint64_t(4));
  EXPECT_EQ(next, cur);
  EXPECT_EQ(diff(cur, next), 0);
}

TEST(MetaChange, FirstTermOfANewServerTouchesOnlyTheTerm) {
  const ServerMeta next = apply_store(ServerMeta{}, Field::current_term, uint64_t(1));
  EXPECT_EQ(diff(ServerMeta{}, next), kTermBit);
}

TEST(MetaChange, LastAppliedUpdateTouchesOnlyTheHighFrequencyField) {
  const ServerMeta cur = voted(4, VotedFor::server("s1", "n1"), 10);
  const ServerMeta next = apply_store(cur, Field::last_applied, uint64_t(11));
  EXPECT_EQ(diff(cur, next), kAppliedBit);
  EXPECT_EQ(diff(cur, next) & kLowBits, 0);  // no fsync needed
  EXPECT_EQ(diff(cur, apply_store(cur, Field::last_applied, uint64_t(10))), 0);
}

TEST(MetaChange, VoteChangesTouchOnlyTheVoteFieldsThatDiffer) {
  const ServerMeta id1 = voted(4, VotedFor::server("s1", "n1"));
  EXPECT_EQ(diff(id1, apply_store(id1, Field::voted_for, VotedFor::server("s2", "n1"))),
            kVoteNameBit);
  EXPECT_EQ(diff(id1, apply_store(id1, Field::voted_for, VotedFor::server("s1", "n2"))),
            kVoteNodeBit);
  // {s1, n1} -> bare s1: same name field, the node goes.
  EXPECT_EQ(diff(id1, apply_store(id1, Field::voted_for, VotedFor::bare("s1"))), kVoteNodeBit);
  EXPECT_EQ(diff(id1, apply_store(id1, Field::voted_for, VotedFor::none())), kVoteBits);
  const ServerMeta none = voted(4, VotedFor::none());
  EXPECT_EQ(diff(none, apply_store(none, Field::voted_for, VotedFor::bare(""))), kVoteNameBit);
}

TEST(MetaChange, RecordMappingRoundTripsEveryVoteForm) {
  const Bounds b;
  for (const VotedFor& v : {VotedFor::none(), VotedFor::bare("legacy_name"), VotedFor::bare(""),
                            VotedFor::server("ra_server_1", "rabbit@host")}) {
    const ServerMeta m = voted(7, v, 3);
    slotstore::Record rec;
    rec.fields.resize(4);
    for (const auto& u : field_updates(m, diff(ServerMeta{}, m))) rec.fields[u.field] = u.value;
    auto back = decode_record(rec, "id", "f");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(*back, m) << v.to_string();
  }
  // Absent counters stay absent (Ra's `undefined`), not 0.
  slotstore::Record empty;
  empty.fields.resize(4);
  auto back = decode_record(empty, "id", "f");
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->current_term.has_value());
  EXPECT_FALSE(back->last_applied.has_value());
}

TEST(MetaChange, ANodeWithoutANameIsCorrupt) {
  slotstore::Record rec;
  rec.fields.resize(4);
  rec.fields[kVoteNodeField] = slotstore::Value::str("n1");
  auto m = decode_record(rec, "srv", "/d/meta.slots");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.code(), Errc::corrupt);
  EXPECT_NE(m.error().message.find("/d/meta.slots: server \"srv\""), std::string::npos)
      << m.error().message;
}

TEST(MetaChange, SchemaIsRecognisedWithAnyBoundsAndOthersAreRefused) {
  Bounds b{200, 1020, 100};
  auto back = bounds_of(make_schema(b), "f");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, b);
  slotstore::Schema other = make_schema(b);
  other.fields[kAppliedField].frequency = slotstore::Frequency::low;
  EXPECT_EQ(bounds_of(other, "f").code(), Errc::schema_mismatch);
  other = make_schema(b);
  other.fields.pop_back();
  EXPECT_EQ(bounds_of(other, "f").code(), Errc::schema_mismatch);
  EXPECT_EQ(validate(Bounds{0, 1, 1}).code(), Errc::invalid_argument);
  EXPECT_EQ(validate(Bounds{256, 1, 1}).code(), Errc::invalid_argument);
  EXPECT_EQ(validate(Bounds{1, 1, 1025}).code(), Errc::invalid_argument);
  EXPECT_EQ(validate(Bounds{1, 0, 1}).code(), Errc::invalid_argument);
  EXPECT_EQ(validate(Bounds{1, 4097, 1}).code(), Errc::invalid_argument);
}

TEST(MetaChange, ValuesAreCheckedAgainstBoundsAndTypes) {
  const Bounds b{8, 4, 3};
  EXPECT_EQ(check_id(b, "").code(), Errc::invalid_argument);
  EXPECT_EQ(check_id(b, "123456789").code(), Errc::key_too_long);
  EXPECT_TRUE(check_id(b, "12345678").ok());
  EXPECT_EQ(check_value(b, "x", Field::current_term, VotedFor::none()).code(),
            Errc::invalid_argument);
  EXPECT_EQ(check_value(b, "x", Field::voted_for, uint64_t(1)).code(), Errc::invalid_argument);
  EXPECT_EQ(check_value(b, "x", Field::voted_for, VotedFor::bare("12345")).code(),
            Errc::invalid_argument);
  EXPECT_EQ(check_value(b, "x", Field::voted_for, VotedFor::server("1", "1234")).code(),
            Errc::invalid_argument);
  EXPECT_TRUE(check_value(b, "x", Field::voted_for, VotedFor::server("1234", "123")).ok());
  VotedFor bad_bare{VotedFor::Form::bare_name, "a", "node"};
  EXPECT_EQ(check_value(b, "x", Field::voted_for, bad_bare).code(), Errc::invalid_argument);
}

TEST(PeriodicSync, DueIntervalAfterTheFirstUnsyncedWriteAndResetBySync) {
  PeriodicSync p(5'000);
  EXPECT_FALSE(p.deadline_ns().has_value());
  EXPECT_FALSE(p.due(1'000'000));
  p.on_unsynced_write(100);
  p.on_unsynced_write(4'000);  // a later write does not push the deadline
  EXPECT_EQ(p.deadline_ns(), 5'100);
  EXPECT_FALSE(p.due(5'099));
  EXPECT_TRUE(p.due(5'100));
  p.on_sync();
  EXPECT_FALSE(p.due(1'000'000));
  p.on_unsynced_write(6'000);
  EXPECT_EQ(p.deadline_ns(), 11'000);
}

}  // namespace
}  // namespace strata::raftmeta

namespace strata::raftmeta {
namespace {

TEST(GroupCommit, HoldsUntilTheReleasedAndArrivedCallersWaitAgain) {
  GroupCommit g(2'000'000);
  EXPECT_FALSE(g.hold_until(0, 1).has_value());  // nothing known yet: go
  // A batch took 32 callers in 4 ms; 32 more arrived meanwhile.
  g.on_synced(10'000'000, 32, 32, 4'000'000);
  EXPECT_EQ(g.expected(), 64u);
  EXPECT_EQ(g.hold_until(10'000'100, 32), 12'000'000);     // window: min(2 ms, 4 ms)
  EXPECT_FALSE(g.hold_until(10'000'200, 64).has_value());  // all back: go
  EXPECT_FALSE(g.hold_until(12'000'000, 40).has_value());  // window over: go
  EXPECT_FALSE(g.hold_until(10'000'100, 0).has_value());   // nobody waits: nothing to hold
}

TEST(GroupCommit, ASingleCallerIsNeverHeld) {
  GroupCommit g(2'000'000);
  g.on_synced(1'000'000, 1, 0, 4'000'000);
  EXPECT_FALSE(g.hold_until(1'000'001, 1).has_value());
}

TEST(GroupCommit, WindowIsTheLastFsyncDurationCappedAndZeroDisablesIt) {
  GroupCommit fast(2'000'000);
  fast.on_synced(0, 10, 10, 100'000);  // a 0.1 ms fsync: hold at most 0.1 ms
  EXPECT_EQ(fast.hold_until(1, 5), 100'000);
  GroupCommit off(0);
  off.on_synced(0, 10, 10, 4'000'000);
  EXPECT_FALSE(off.hold_until(1, 5).has_value());
}

}  // namespace
}  // namespace strata::raftmeta
