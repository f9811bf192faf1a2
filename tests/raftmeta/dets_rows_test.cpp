// Ra's meta rows read from real meta.dets files written by Erlang/OTP,
// compared row by row with what Erlang wrote, and rows of every wrong shape
// rejected with the row named.
#include <gtest/gtest.h>

#include <map>

#include "raftmeta/dets/ra_meta_rows.h"
#include "raftmeta/dets_test_util.h"
#include "support/temp_dir.h"

namespace strata::raftmeta::dets {
namespace {

using test::run_dets_gen;
using test::sorted_lines;
using test::sorted_row_lines;

class DetsRowsTest : public ::testing::Test {
 protected:
  std::string sub(const std::string& name) const { return dir_.sub(name); }
  strata::test::TempDir dir_;
};

std::map<Bytes, RaMetaRow> by_uid(const std::vector<RaMetaRow>& rows) {
  std::map<Bytes, RaMetaRow> m;
  for (const auto& r : rows) m[r.uid] = r;
  return m;
}

TEST_F(DetsRowsTest, EveryRowFormMatchesWhatErlangWrote) {
  const std::string f = sub("meta.dets");
  ASSERT_EQ(run_dets_gen("fixed", {"file=" + f, "expected=" + f + ".expected"}), "");
  auto rows = read_ra_meta(posix_fs(), f);
  ASSERT_TRUE(rows.ok()) << rows.error().to_string();
  EXPECT_EQ(sorted_row_lines(*rows), sorted_lines(f + ".expected"));

  // The typed values, spelled out for the forms the migration must keep.
  const auto m = by_uid(*rows);
  const RaMetaRow& bare = m.at("bare");
  EXPECT_EQ(bare.current_term, 42u);
  EXPECT_EQ(bare.voted_for.form, VotedFor::Form::bare_name);
  EXPECT_EQ(bare.voted_for.name, "ra_server_1");
  EXPECT_EQ(bare.voted_for.node, "");
  EXPECT_EQ(bare.last_applied, 41u);
  const RaMetaRow& tuple = m.at("tuple");
  EXPECT_EQ(tuple.voted_for.form, VotedFor::Form::server_id);
  EXPECT_EQ(tuple.voted_for.name, "ra_server_2");
  EXPECT_EQ(tuple.voted_for.node, "rabbit@host-a");
  const RaMetaRow& unicode = m.at("unicode");
  EXPECT_EQ(unicode.voted_for.name, "сервер");
  EXPECT_EQ(unicode.voted_for.node, "节点@主机");
  EXPECT_EQ(m.at("latin1").voted_for.name, "café");
  EXPECT_EQ(m.at("plain").voted_for.form, VotedFor::Form::none);
  const RaMetaRow& undef = m.at("all_undefined");
  EXPECT_FALSE(undef.current_term.has_value());
  EXPECT_FALSE(undef.last_applied.has_value());
  EXPECT_EQ(undef.voted_for.form, VotedFor::Form::none);
  EXPECT_EQ(m.at("u64_max").current_term, UINT64_MAX);
  EXPECT_EQ(m.at("near_2_63").last_applied, uint64_t(1) << 63);
  EXPECT_EQ(m.at(Bytes()).current_term, 0u);
  Bytes all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(char(b));
  EXPECT_EQ(m.at(all_bytes).voted_for.name, "legacy_name");
}

// Thousands of generated rows (both vote forms, unicode atoms, values up to
// 2^64-1, undefined fields), after updates that moved collections and
// deletes that freed them; then 50 000 rows in few, large collections.
TEST_F(DetsRowsTest, ThousandsOfRowsMatchWhatErlangWrote) {
  for (const auto& [n, churn] : {std::pair{5000, "true"}, std::pair{50000, "false"}}) {
    const std::string f = sub("meta" + std::to_string(n) + ".dets");
    ASSERT_EQ(
        run_dets_gen("ra", {"file=" + f, "expected=" + f + ".expected", "n=" + std::to_string(n),
                            "seed=11", std::string("churn=") + churn}),
        "");
    auto reader = RaMetaReader::open(posix_fs(), f);
    ASSERT_TRUE(reader.ok()) << reader.error().to_string();
    const uint64_t total = (*reader)->info().object_count;
    std::vector<RaMetaRow> rows;
    uint64_t next_index = 0;
    ASSERT_TRUE((*reader)
                    ->for_each([&](const RaMetaRow& row, uint64_t index) -> Status {
                      EXPECT_EQ(index, next_index++);
                      rows.push_back(row);
                      return Status::OK();
                    })
                    .ok());
    EXPECT_EQ(rows.size(), total);
    const auto expected = sorted_lines(f + ".expected");
    EXPECT_EQ(sorted_row_lines(rows), expected);
    if (churn == std::string("true")) {
      EXPECT_LT(expected.size(), size_t(n));  // rows were deleted
    }
  }
}

// A table created with room for 262 144 slots spans two segment array
// parts.
TEST_F(DetsRowsTest, TableSpanningSeveralSegmentArrayParts) {
  const std::string f = sub("meta.dets");
  ASSERT_EQ(run_dets_gen("ra", {"file=" + f, "expected=" + f + ".expected", "n=700", "seed=2",
                                "min_slots=200000"}),
            "");
  auto reader = DetsReader::open(posix_fs(), f);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  EXPECT_EQ((*reader)->info().slot_count, 262144u);
  auto rows = read_ra_meta(posix_fs(), f);
  ASSERT_TRUE(rows.ok()) << rows.error().to_string();
  EXPECT_EQ(sorted_row_lines(*rows), sorted_lines(f + ".expected"));
}

// Each file holds two good rows and one bad one; the file is refused as a
// whole, the error naming the file, the row's position and the problem.
TEST_F(DetsRowsTest, RowsOfUnexpectedShapeAreRefusedByName) {
  ASSERT_EQ(run_dets_gen("shapes", {"dir=" + dir_.path()}), "");
  struct Case {
    const char* name;
    Errc code;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"arity3", Errc::schema_mismatch, "found a tuple of 3"},
      {"arity5", Errc::schema_mismatch, "found a tuple of 5"},
      {"uid_atom", Errc::schema_mismatch, "for uid bad_uid: the uid must be a binary"},
      {"uid_list", Errc::schema_mismatch, "for uid [98,97,100]: the uid must be a binary"},
      {"term_negative", Errc::schema_mismatch,
       "for uid <<\"bad\">>: current_term must be a non-negative integer below 2^64 or undefined, "
       "found -1 (negative)"},
      {"term_atom", Errc::schema_mismatch, "current_term must be a non-negative integer"},
      {"term_float", Errc::corrupt, "unsupported term tag 70 (NEW_FLOAT_EXT)"},
      {"term_too_big", Errc::schema_mismatch, "found 18446744073709551616 (does not fit 64 bits)"},
      {"vote_tuple3", Errc::schema_mismatch,
       "voted_for must be undefined, an atom or {Name, Node}"},
      {"vote_name_binary", Errc::schema_mismatch, "found {<<97>>,b}"},
      {"vote_node_integer", Errc::schema_mismatch, "found {a,1}"},
      {"vote_binary", Errc::schema_mismatch, "found <<97>>"},
      {"vote_pid", Errc::corrupt, "unsupported term tag 88 (NEW_PID_EXT)"},
      {"applied_negative", Errc::schema_mismatch, "last_applied must be a non-negative integer"},
      {"applied_huge", Errc::schema_mismatch, "(does not fit 64 bits)"},
      {"applied_map", Errc::corrupt, "unsupported term tag 116 (MAP_EXT)"},
  };
  for (const Case& c : cases) {
    const std::string f = sub(std::string(c.name) + ".dets");
    auto rows = read_ra_meta(posix_fs(), f);
    ASSERT_FALSE(rows.ok()) << c.name << " read " << rows->size() << " rows";
    EXPECT_EQ(rows.code(), c.code) << c.name << ": " << rows.error().to_string();
    EXPECT_EQ(rows.error().message.rfind(f + ": byte ", 0), 0u) << rows.error().message;
    EXPECT_NE(rows.error().message.find(c.says), std::string::npos)
        << c.name << ": " << rows.error().message;
  }
}

TEST_F(DetsRowsTest, TableKeyedOnAnotherElementIsRefused) {
  const std::string f = sub("keypos2.dets");
  ASSERT_EQ(run_dets_gen("empty", {"file=" + f, "keypos=2"}), "");
  auto r = RaMetaReader::open(posix_fs(), f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::schema_mismatch);
  EXPECT_NE(r.error().message.find("key is element 2"), std::string::npos) << r.error().message;
}

TEST_F(DetsRowsTest, CallbackErrorStopsTheStream) {
  const std::string f = sub("meta.dets");
  ASSERT_EQ(run_dets_gen("ra", {"file=" + f, "expected=" + f + ".expected", "n=100", "seed=4"}),
            "");
  auto reader = RaMetaReader::open(posix_fs(), f);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  int calls = 0;
  Status s = (*reader)->for_each([&](const RaMetaRow&, uint64_t) -> Status {
    return ++calls == 10 ? Status(Error(Errc::cancelled, "stop")) : Status::OK();
  });
  EXPECT_EQ(s.code(), Errc::cancelled);
  EXPECT_EQ(calls, 10);
  // The reader can stream again.
  calls = 0;
  ASSERT_TRUE((*reader)
                  ->for_each([&](const RaMetaRow&, uint64_t) {
                    ++calls;
                    return Status::OK();
                  })
                  .ok());
  EXPECT_EQ(uint64_t(calls), (*reader)->info().object_count);
}

TEST_F(DetsRowsTest, MissingFileIsNotFound) {
  auto r = read_ra_meta(posix_fs(), sub("absent.dets"));
  EXPECT_EQ(r.code(), Errc::not_found);
}

TEST(DetsRows, DescribeUid) {
  EXPECT_EQ(describe_uid("abc_1"), "<<\"abc_1\">>");
  EXPECT_EQ(describe_uid(Bytes("\x01\xff", 2)), "<<16#01ff>>");
}

}  // namespace
}  // namespace strata::raftmeta::dets
