// The `strata raftmeta` commands, run as the real binary: migrate a real
// meta.dets (progress on stderr), inspect the result as a table and as
// JSON, and the errors for missing, damaged and conflicting input.
#include "support/cli.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "raftmeta/dets_test_util.h"
#include "raftmeta/store_options.h"
#include "raftmeta_test_util.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::raftmeta {
namespace {

using strata::test::strata_cli;

using namespace test;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dets_fixtures().error.empty()) GTEST_FAIL() << dets_fixtures().error;
  }
  strata::test::TempDir dir_;
};

TEST_F(CliTest, MigrateThenInspect) {
  const std::string src = dir_.sub("meta.dets");
  copy_into(posix_fs(), dets_fixtures().ra, src);
  const std::string node = dir_.sub("node");
  strata::test::CliOut m = strata_cli({"raftmeta", "migrate", src, node});
  ASSERT_EQ(m.status, 0) << m.out << m.err;
  const size_t rows = dets_fixtures().ra_rows.size();
  EXPECT_NE(m.out.find("migrated " + std::to_string(rows) + " rows"), std::string::npos) << m.out;
  // A file of thousands of rows reports progress on stderr, ending each phase.
  EXPECT_NE(m.err.find("writing " + std::to_string(rows) + "/" + std::to_string(rows)),
            std::string::npos)
      << m.err;
  EXPECT_TRUE(exists(posix_fs(), src + ".migrated"));
  EXPECT_FALSE(exists(posix_fs(), src));

  strata::test::CliOut t = strata_cli({"raftmeta", "inspect", node});
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("servers     " + std::to_string(rows) + " of"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("SERVER ID"), std::string::npos);

  strata::test::CliOut j = strata_cli({"--json", "raftmeta", "inspect", node});
  ASSERT_EQ(j.status, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["servers_used"], rows);
  ASSERT_EQ(doc["servers"].size(), rows);
  // Each JSON server matches the row Erlang wrote.
  std::vector<std::pair<Bytes, ServerMeta>> servers;
  for (const auto& s : doc["servers"]) {
    ServerMeta meta;
    if (!s["current_term"].is_null()) meta.current_term = s["current_term"].get<uint64_t>();
    if (!s["last_applied"].is_null()) meta.last_applied = s["last_applied"].get<uint64_t>();
    const auto& v = s["voted_for"];
    if (v.is_string()) meta.voted_for = VotedFor::bare(v.get<std::string>());
    if (v.is_object()) {
      meta.voted_for = VotedFor::server(v["name"].get<std::string>(), v["node"].get<std::string>());
    }
    Bytes id;
    const std::string hex = s["id_hex"].get<std::string>();
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
      id.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
    servers.emplace_back(id, meta);
  }
  EXPECT_EQ(row_lines(servers), dets_fixtures().ra_rows);

  // Migrating again into the same store: the source is gone now.
  strata::test::CliOut again = strata_cli({"raftmeta", "migrate", src, node});
  EXPECT_EQ(again.status, 1);
  EXPECT_NE(again.err.find("no such file"), std::string::npos) << again.err;
}

TEST_F(CliTest, MigrateJsonReportsWhatItDid) {
  const std::string src = dir_.sub("meta.dets");
  copy_into(posix_fs(), dets_fixtures().ra_small, src);
  strata::test::CliOut m = strata_cli({"--json", "raftmeta", "migrate", src, dir_.sub("node")});
  ASSERT_EQ(m.status, 0) << m.err;
  auto doc = nlohmann::json::parse(m.out);
  EXPECT_EQ(doc["action"], "migrated");
  EXPECT_EQ(doc["rows"], dets_fixtures().ra_small_rows.size());
  EXPECT_EQ(m.err, "");  // small file: no progress lines
}

TEST_F(CliTest, DamagedSourceFailsAndIsLeftAsItWas) {
  Bytes bytes = dets::test::read_bytes(dets_fixtures().ra_small);
  bytes.resize(bytes.size() - 64);
  const std::string src = dir_.sub("meta.dets");
  dets::test::write_bytes(src, bytes);
  strata::test::CliOut m = strata_cli({"raftmeta", "migrate", src, dir_.sub("node")});
  EXPECT_EQ(m.status, 1);
  EXPECT_NE(m.err.find(src), std::string::npos) << m.err;
  EXPECT_EQ(dets::test::read_bytes(src), bytes);
  EXPECT_FALSE(exists(posix_fs(), store_path(dir_.sub("node"))));
  strata::test::CliOut j = strata_cli({"--json", "raftmeta", "migrate", src, dir_.sub("node")});
  EXPECT_EQ(j.status, 1);
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["error"]["code"], "corrupt") << j.out;
}

// A server has the directory open: a migration into it is refused (the
// store would be replaced under the server), and inspect, which only reads,
// still works.
TEST_F(CliTest, MigrateIntoADirectoryInUseIsRefused) {
  const std::string node = dir_.sub("node");
  auto held = RaftMeta::open(posix_fs(), node, small_options());
  ASSERT_TRUE(held.ok()) << held.error().to_string();
  ASSERT_OK((*held)->store_sync("s1", Field::current_term, uint64_t{4}));
  const std::string src = dir_.sub("meta.dets");
  copy_into(posix_fs(), dets_fixtures().ra_small, src);
  strata::test::CliOut m = strata_cli({"--json", "raftmeta", "migrate", src, node});
  EXPECT_EQ(m.status, 1) << m.out << m.err;
  auto doc = nlohmann::json::parse(m.out);
  EXPECT_EQ(doc["error"]["code"], "conflict") << m.out;
  EXPECT_NE(m.out.find(node), std::string::npos) << m.out;
  EXPECT_TRUE(exists(posix_fs(), src));  // the source is untouched
  strata::test::CliOut t = strata_cli({"raftmeta", "inspect", node});
  EXPECT_EQ(t.status, 0) << t.err;
  ASSERT_OK((*held)->close());
}

// Issue 12's report, through the real binary: a freshly migrated store of
// 1417 servers (records still only in the WAL), one bit flipped in the
// middle of the live WAL half. inspect used to list fewer servers and exit
// 0, and an open for writing would have dropped the rest for good. Now
// both refuse, naming the file and the damaged entry's position.
TEST_F(CliTest, DamagedWalIsReportedNotTakenForATornTail) {
  const std::string src = dir_.sub("meta.dets");
  copy_into(posix_fs(), dets_fixtures().ra_1417, src);
  const std::string node = dir_.sub("node");
  strata::test::CliOut m = strata_cli({"raftmeta", "migrate", src, node});
  ASSERT_EQ(m.status, 0) << m.out << m.err;
  const size_t rows = dets_fixtures().ra_1417_rows.size();
  ASSERT_EQ(rows, 1417u);
  strata::test::CliOut before = strata_cli({"--json", "raftmeta", "inspect", node});
  ASSERT_EQ(before.status, 0) << before.err;
  EXPECT_EQ(nlohmann::json::parse(before.out)["servers_used"], rows);

  const std::string store = store_path(node);
  const uint64_t at = damage_middle_of_live_wal(posix_fs(), store);
  ASSERT_GT(at, 0u);
  const Bytes damaged = file_bytes(posix_fs(), store);
  const std::string where = store + " position " + std::to_string(at) + ":";

  strata::test::CliOut t = strata_cli({"raftmeta", "inspect", node});
  EXPECT_NE(t.status, 0) << t.out;
  EXPECT_NE(t.err.find(where), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("not a torn tail"), std::string::npos) << t.err;
  strata::test::CliOut j = strata_cli({"--json", "raftmeta", "inspect", node});
  EXPECT_NE(j.status, 0);
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["error"]["code"], "corrupt") << j.out;

  // An open for writing refuses rather than drops, and changes nothing.
  auto w = RaftMeta::open(posix_fs(), node, Options{});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.code(), Errc::corrupt);
  EXPECT_NE(w.error().message.find(where), std::string::npos) << w.error().message;
  EXPECT_EQ(file_bytes(posix_fs(), store), damaged);
}

TEST_F(CliTest, InspectWithoutAStoreSaysWhy) {
  copy_into(posix_fs(), dets_fixtures().ra_small, dets_path(dir_.path()));
  strata::test::CliOut t = strata_cli({"raftmeta", "inspect", dir_.path()});
  EXPECT_EQ(t.status, 1);
  EXPECT_NE(t.err.find("no raftmeta store"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("not migrated yet"), std::string::npos) << t.err;
  // inspect wrote nothing.
  auto l = posix_fs().list_dir(dir_.path());
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, std::vector<std::string>{"meta.dets"});
}

}  // namespace
}  // namespace strata::raftmeta
