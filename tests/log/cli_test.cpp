// The log's CLI (`strata demo|produce|consume|inspect`) run as a real
// process: outputs, JSON, exit codes and the errors for bad arguments and
// bad data directories.
#include "support/cli.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

using strata::test::run;
using json = nlohmann::json;
using strata::test::contains;
using strata::test::last_json;
using strata::test::strata_cmd;

const std::string kStrata = STRATA_BIN;

strata::test::RunResult shell(const std::string& cmd) {
  return run({"sh", "-c", cmd});
}

TEST(LogCli, ProduceConsumeRoundTrip) {
  strata::test::TempDir tmp;
  std::string d = tmp.sub("data");
  auto p = shell("printf 'alpha\\nbeta\\ngamma\\n' | " + kStrata + " produce " + d + " s");
  ASSERT_EQ(p.status, 0) << p.output;
  EXPECT_TRUE(contains(p.output, "produced 3 records")) << p.output;
  auto g = strata_cmd({"produce", d, "s", "--generate", "5", "--size", "30", "--print-acks"});
  ASSERT_EQ(g.status, 0) << g.output;
  EXPECT_TRUE(contains(g.output, "ack 3 8")) << g.output;
  auto all = strata_cmd({"consume", d, "s"});
  ASSERT_EQ(all.status, 0) << all.output;
  EXPECT_TRUE(all.output.starts_with("alpha\nbeta\ngamma\np0:0:")) << all.output;
  auto some = strata_cmd({"consume", d, "s", "--from", "offset:1", "--max", "2", "--show-offsets"});
  ASSERT_EQ(some.status, 0);
  EXPECT_EQ(some.output, "1\tbeta\n2\tgamma\n");
  auto js = strata_cmd({"--json", "consume", d, "s", "--from", "offset:2", "--max", "1"});
  json rec = last_json(js.output);
  EXPECT_EQ(rec["offset"], 2);
  EXPECT_EQ(rec["value"], "gamma");
  EXPECT_TRUE(rec.contains("timestamp"));
  auto ts = strata_cmd({"consume", d, "s", "--from", "timestamp:0", "--max", "1"});
  EXPECT_EQ(ts.output, "alpha\n");
  auto next = strata_cmd({"consume", d, "s", "--from", "next"});
  EXPECT_EQ(next.status, 0);
  EXPECT_EQ(next.output, "");
}

// A node's data directory (what `strata serve --data-dir` was given) holds
// its logs under streams/: consume accepts either.
TEST(LogCli, ConsumeAcceptsANodeDataDirectory) {
  strata::test::TempDir tmp;
  std::string node = tmp.sub("node");
  auto p = shell("printf 'one\\ntwo\\n' | " + kStrata + " produce " + node + "/streams s");
  ASSERT_EQ(p.status, 0) << p.output;
  auto via_node = strata_cmd({"consume", node, "s"});
  ASSERT_EQ(via_node.status, 0) << via_node.output;
  EXPECT_EQ(via_node.output, "one\ntwo\n");
  auto missing = strata_cmd({"consume", node, "t"});
  EXPECT_NE(missing.status, 0);
  EXPECT_TRUE(contains(missing.output, "no stream 't'")) << missing.output;
}

TEST(LogCli, ConsumeFollowSeesAnotherProcessAppend) {
  strata::test::TempDir tmp;
  std::string d = tmp.sub("data");
  ASSERT_EQ(shell("printf 'zero\\n' | " + kStrata + " produce " + d + " s").status, 0);
  auto follower = strata::test::Process::spawn(
      {kStrata, "consume", d, "s", "--from", "first", "--follow", "--max", "3"}, tmp.path());
  // Handshake: once it printed the record already there, the follower has
  // read to the end of the log and is following it.
  ASSERT_TRUE(follower.wait_for_output("zero\n", std::chrono::seconds(20)))
      << "consume --follow did not start: " << follower.stderr_text();
  ASSERT_EQ(shell("printf 'one\\ntwo\\n' | " + kStrata + " produce " + d + " s").status, 0);
  auto st = follower.wait(std::chrono::seconds(20));
  ASSERT_TRUE(st) << "consume --follow did not see the new records";
  EXPECT_EQ(*st, 0);
  EXPECT_EQ(follower.stdout_text(), "zero\none\ntwo\n");
}

TEST(LogCli, ClearErrorsForBadArgumentsAndDataDirs) {
  strata::test::TempDir tmp;
  std::string d = tmp.sub("data");
  ASSERT_EQ(strata_cmd({"produce", d, "real", "--generate", "2"}).status, 0);
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  for (const Case& c : std::vector<Case>{
           {{"consume", d, "nope"}, "no stream 'nope'"},
           {{"consume", d, "nope"}, "streams: real"},
           {{"consume", d, "real", "--from", "bogus"}, "bad offset spec 'bogus'"},
           {{"consume", tmp.sub("missing"), "real"}, "does not exist"},
           {{"consume", d, "amq.name"}, "stream name \"amq.name\" starts with \"amq.\""},
           {{"produce", d, "real", "--fsync", "maybe", "--generate", "1"}, "bad fsync policy"},
           {{"produce", d, "other", "--no-create", "--generate", "1"}, "no stream 'other'"},
           {{"inspect", tmp.sub("missing")}, "does not exist"},
       }) {
    auto r = strata_cmd(c.args);
    EXPECT_EQ(r.status, 1) << c.needle << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.needle)) << c.needle << " not in: " << r.output;
  }
  auto j = strata_cmd({"--json", "consume", d, "nope"});
  EXPECT_EQ(j.status, 1);
  json e = last_json(j.output);
  EXPECT_EQ(e["error"]["code"], "not_found");
}

TEST(LogCli, InspectReportsHealthAndDamage) {
  strata::test::TempDir tmp;
  std::string d = tmp.sub("data");
  ASSERT_EQ(strata_cmd({"produce", d, "s", "--generate", "1000", "--size", "50", "--batch", "100"})
                .status,
            0);
  auto ok = strata_cmd({"--json", "inspect", d + "/s", "--chunks"});
  ASSERT_EQ(ok.status, 0) << ok.output;
  json rep = last_json(ok.output);
  EXPECT_TRUE(rep["ok"].get<bool>());
  EXPECT_EQ(rep["records"], 1000);
  EXPECT_EQ(rep["chunks"], 10);
  EXPECT_EQ(rep["segments"][0]["chunk_list"].size(), 10u);
  // Rot one byte inside the fourth chunk: reported with file and position.
  uint64_t pos = rep["segments"][0]["chunk_list"][3]["position"].get<uint64_t>() + 100;
  std::string seg = rep["segments"][0]["file"];
  {
    auto f = *posix_fs().open(seg, OpenOptions::read_write());
    ASSERT_TRUE(f->write_at(pos, "?").ok());
  }
  auto bad = strata_cmd({"inspect", d});
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_TRUE(contains(bad.output, "problem:")) << bad.output;
  EXPECT_TRUE(contains(bad.output, "CRC")) << bad.output;
  EXPECT_TRUE(contains(bad.output, seg)) << bad.output;
  // consume fails closed at the damaged chunk, after the records before it.
  auto c = strata_cmd({"consume", d, "s"});
  EXPECT_EQ(c.status, 1);
  EXPECT_TRUE(contains(c.output, "CRC")) << c.output.substr(c.output.size() - 300);
}

}  // namespace
}  // namespace strata::log
