// The node's command line run as a real process: `strata demo` (the
// README's main job) and `strata status` against a node's HTTP endpoint.
#include "support/cli.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/fs.h"
#include "common/version.h"
#include "node/node.h"
#include "node/node_test_util.h"
#include "server/admin_http.h"
#include "support/assertions.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

using json = nlohmann::json;
using strata::test::contains;
using strata::test::last_json;
using strata::test::run;
using strata::test::strata_cmd;

TEST(NodeCli, DemoUploadsReadsBackAcrossTiersAndCleansUp) {
  auto r = strata_cmd({"demo", "--records", "20000", "--record-size", "300", "--producers", "3",
                       "--fragment-mib", "1", "--segment-mib", "1", "--local-mib", "2"});
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* s : {"write", "upload", "local", "bucket", "verify", "time-to-remote", "ok:"}) {
    EXPECT_TRUE(contains(r.output, s)) << s << " missing in:\n" << r.output;
  }
  auto j = strata_cmd({"--json", "demo", "--records", "20000", "--record-size", "300",
                       "--fragment-mib", "1", "--segment-mib", "1", "--local-mib", "2"});
  ASSERT_EQ(j.status, 0) << j.output;
  json doc = last_json(j.output);
  ASSERT_TRUE(doc.is_object()) << j.output;
  EXPECT_TRUE(doc["ok"].get<bool>());
  const json& p = doc["phases"];
  EXPECT_EQ(p["write"]["records"], 20000);
  EXPECT_EQ(p["verify"]["records"], 20000);
  // Both tiers were read: local retention dropped the tiered segments.
  EXPECT_GT(p["verify"]["remote_records"].get<int>(), 0);
  EXPECT_GT(p["verify"]["local_records"].get<int>(), 0);
  EXPECT_GT(p["local"]["first_offset"].get<int>(), 0);
  // The reader leaves the remote tier at the first fragment boundary at or
  // after the local log's start.
  EXPECT_GE(p["verify"]["remote_records"], p["local"]["first_offset"]);
  EXPECT_EQ(p["verify"]["remote_records"].get<int>() + p["verify"]["local_records"].get<int>(),
            20000);
  EXPECT_GE(p["bucket"]["fragments"].get<int>(), 4);
  EXPECT_EQ(p["bucket"]["next_offset"], 20000);
  EXPECT_GE(p["upload"]["time_to_remote_p99_ms"].get<double>(),
            p["upload"]["time_to_remote_p50_ms"].get<double>());
  // A temporary directory, removed afterwards.
  EXPECT_TRUE(doc["temporary"].get<bool>());
  EXPECT_FALSE(exists(posix_fs(), doc["data_dir"].get<std::string>()));
}

// `strata consume --config` reads a running node's stream across both
// tiers from another process: the same records as the node wrote, from
// any offset spec, with the same flags as the local consume.
TEST(NodeCli, ConsumeWithANodesConfigurationReadsAcrossBothTiers) {
  strata::test::TempDir tmp;
  json doc = test::small_node_doc();
  doc["log"]["retention"] = {{"max_bytes", 1}};
  doc["data_dir"] = tmp.sub("node");
  const std::string config = tmp.sub("node.json");
  ASSERT_OK(write_file_atomic(posix_fs(), config, doc.dump()));
  auto n = test::open_node(tmp.sub("node"), doc);
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  const uint64_t next = test::append_values(**log, 150);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  ASSERT_OK((*log)->apply_retention());
  const uint64_t local_first = (*log)->first_offset();
  ASSERT_GT(local_first, 100u);

  auto expect_from = [&](const std::string& from, uint64_t first) {
    auto r = strata_cmd({"consume", "--config", config, "s1", "--from", from, "--show-offsets"});
    ASSERT_EQ(r.status, 0) << r.output;
    std::string want;
    for (uint64_t i = first; i < next; ++i) want += fmt::format("{}\t{}\n", i, test::value_of(i));
    EXPECT_EQ(r.output, want) << "from " << from;
  };
  expect_from("first", 0);
  expect_from("offset:" + std::to_string(local_first / 2 + 1), local_first / 2 + 1);
  expect_from("offset:" + std::to_string(local_first), local_first);
  // The local consume of the same directory sees only the local part.
  auto local =
      strata_cmd({"consume", tmp.sub("node") + "/streams", "s1", "--max", "1", "--show-offsets"});
  ASSERT_EQ(local.status, 0) << local.output;
  EXPECT_EQ(local.output.substr(0, local.output.find('\t')), std::to_string(local_first));
  // --json and --max as before.
  auto j = strata_cmd({"--json", "consume", "--config", config, "s1", "--max", "3"});
  ASSERT_EQ(j.status, 0) << j.output;
  EXPECT_EQ(json::parse(j.output.substr(0, j.output.find('\n')))["offset"], 0);
  // Errors name what is wrong.
  auto missing = strata_cmd({"consume", "--config", config, "nope"});
  EXPECT_NE(missing.status, 0);
  EXPECT_TRUE(contains(missing.output, "nope")) << missing.output;
  auto bad = strata_cmd({"consume", "--config", tmp.sub("absent.json"), "s1"});
  EXPECT_NE(bad.status, 0);
  EXPECT_TRUE(contains(bad.output, "absent.json")) << bad.output;
}

TEST(NodeCli, DemoInAGivenDirectoryKeepsItAndRefusesToRunTwice) {
  strata::test::TempDir tmp;
  auto r = strata_cmd({"demo", "--data-dir", tmp.sub("d"), "--records", "2000"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(exists(posix_fs(), tmp.sub("d") + "/streams/demo"));
  auto again = strata_cmd({"demo", "--data-dir", tmp.sub("d"), "--records", "2000"});
  EXPECT_EQ(again.status, 1);
  EXPECT_TRUE(contains(again.output, "already exists")) << again.output;
}

TEST(NodeCli, DemoRejectsBadArgumentsNamingThem) {
  strata::test::TempDir tmp;
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  std::vector<Case> cases = {
      {{"demo", "--fsync", "sometimes"}, "log.fsync"},
      {{"demo", "--batch", "0"}, "--batch"},
      {{"demo", "--records", "x"}, "--records"},
      {{"demo", "--s3-endpoint", "http://127.0.0.1:1", "--bucket", "b"}, "bucket"},
  };
  for (const auto& c : cases) {
    auto r = strata_cmd(c.args);
    EXPECT_NE(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, c.names)) << c.names << " not named in: " << r.output;
  }
  ASSERT_OK(write_file_atomic(posix_fs(), tmp.sub("file"), "x"));
  auto r = strata_cmd({"demo", "--data-dir", tmp.sub("file")});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.output, "not a directory")) << r.output;
}

TEST(NodeCli, StatusShowsARunningNodesStreams) {
  strata::test::TempDir tmp;
  auto cfg = load_node_config(test::small_node_doc(), tmp.path(), objstore::process_env());
  ASSERT_OK(cfg);
  auto n = Node::open(*cfg);
  ASSERT_OK(n);
  auto log = (*n)->create_stream("orders");
  ASSERT_OK(log);
  std::vector<std::string> vals(50, std::string(100, 'x'));
  std::vector<BytesView> views(vals.begin(), vals.end());
  ASSERT_OK((*log)->append(std::span<const BytesView>(views)));
  ASSERT_OK((*n)->flush("orders", std::chrono::seconds(30)));
  Node* node = n->get();
  auto http = server::AdminHttp::start("127.0.0.1:0",
                                       {[node] { return node->metrics_text(); },
                                        [node] { return node->status_json().dump(); }, nullptr});
  ASSERT_OK(http);
  auto r = strata_cmd({"status", "--url", (*http)->url()});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "orders")) << r.output;
  EXPECT_TRUE(contains(r.output, "running")) << r.output;
  EXPECT_TRUE(contains(r.output, "[0,50)")) << r.output;
  auto j = strata_cmd({"--json", "status", "--url", (*http)->url()});
  ASSERT_EQ(j.status, 0) << j.output;
  json doc = last_json(j.output);
  EXPECT_EQ(doc["streams"]["orders"]["tiering"]["remote_next_offset"], 50);
  auto m = server::admin_get((*http)->url(), "/metrics");
  ASSERT_OK(m);
  EXPECT_TRUE(contains(*m, "strata_tier_remote_next_offset{stream=\"orders\"} 50")) << *m;
  (*http)->stop();
  auto down = strata_cmd({"status", "--url", (*http)->url()});
  EXPECT_EQ(down.status, 1);
  EXPECT_TRUE(contains(down.output, (*http)->url())) << down.output;
}

// `strata stream delete` on a data directory: refused while a node holds
// it, then deletes the stream (text and --json), and says so when there is
// nothing to delete.
TEST(NodeCli, StreamDeleteDeletesAStreamAndIsRefusedWhileTheNodeRuns) {
  strata::test::TempDir tmp;
  json doc = test::small_node_doc();
  doc["data_dir"] = tmp.sub("d");
  const std::string config = tmp.sub("node.json");
  ASSERT_OK(write_file_atomic(posix_fs(), config, doc.dump()));
  auto cfg = load_node_config(doc, "", objstore::process_env());
  ASSERT_OK(cfg);
  {
    auto n = Node::open(*cfg);
    ASSERT_OK(n);
    for (const char* s : {"s1", "s2"}) {
      auto log = (*n)->create_stream(s);
      ASSERT_OK(log);
      std::vector<std::string> vals(50, std::string(100, 'x'));
      std::vector<BytesView> views(vals.begin(), vals.end());
      ASSERT_OK((*log)->append(std::span<const BytesView>(views)));
      ASSERT_OK((*n)->flush(s, std::chrono::seconds(30)));
    }
    auto busy = strata_cmd({"stream", "delete", "--config", config, "s1"});
    EXPECT_EQ(busy.status, 1) << busy.output;
    EXPECT_TRUE(contains(busy.output, "is in use by another process")) << busy.output;
    EXPECT_EQ((*n)->streams(), (std::vector<std::string>{"s1", "s2"}));
    ASSERT_OK((*n)->close());
  }
  auto j = strata_cmd({"--json", "stream", "delete", "--config", config, "s1"});
  ASSERT_EQ(j.status, 0) << j.output;
  json out = last_json(j.output);
  EXPECT_EQ(out["stream"], "s1") << j.output;
  EXPECT_EQ(out["deleted"], true) << j.output;
  auto t = strata_cmd({"stream", "delete", "--config", config, "s2"});
  ASSERT_EQ(t.status, 0) << t.output;
  EXPECT_TRUE(contains(t.output, "stream s2 deleted")) << t.output;
  auto again = strata_cmd({"--json", "stream", "delete", "--config", config, "s1"});
  EXPECT_EQ(again.status, 1) << again.output;
  EXPECT_EQ(last_json(again.output)["error"]["code"], "not_found") << again.output;

  auto n = Node::open(*cfg);
  ASSERT_OK(n);
  EXPECT_TRUE((*n)->streams().empty());
  for (const char* s : {"s1", "s2"}) {
    auto keys = tier::ObjectKeys::make("t", s);
    auto left = objstore::list_all((*n)->store(), keys->stream_prefix());
    ASSERT_OK(left);
    EXPECT_TRUE(left->empty()) << s;
    EXPECT_EQ((*n)->catalog().get(s).code(), Errc::not_found);
  }
  ASSERT_OK((*n)->close());
}

// A deletion that cannot go on (here: a marker nobody can read) is listed
// by /status and by `strata status`.
TEST(NodeCli, StatusListsPendingDeletions) {
  strata::test::TempDir tmp;
  auto cfg = load_node_config(test::small_node_doc(), tmp.path(), objstore::process_env());
  ASSERT_OK(cfg);
  ASSERT_OK(create_dirs(posix_fs(), tmp.sub("deletions")));
  ASSERT_OK(write_file_atomic(posix_fs(), tmp.sub("deletions/gone.json"), "{"));
  auto n = Node::open(*cfg);
  ASSERT_OK(n);
  Node* node = n->get();
  auto http = server::AdminHttp::start("127.0.0.1:0",
                                       {[node] { return node->metrics_text(); },
                                        [node] { return node->status_json().dump(); }, nullptr});
  ASSERT_OK(http);
  auto j = strata_cmd({"--json", "status", "--url", (*http)->url()});
  ASSERT_EQ(j.status, 0) << j.output;
  json d = last_json(j.output)["deletions"]["gone"];
  EXPECT_EQ(d["state"], "blocked") << j.output;
  EXPECT_TRUE(contains(d["last_error"].get<std::string>(), "gone.json")) << j.output;
  auto r = strata_cmd({"status", "--url", (*http)->url()});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "deleting gone: blocked")) << r.output;
  (*http)->stop();
  ASSERT_OK((*n)->close());
}

// A stop right after start (a SIGTERM as `strata serve` comes up) stops
// the endpoint: httplib ignores a stop before its listen loop runs, so
// start returns only once it does — before, the join in stop() hung.
TEST(NodeCli, AnAdminEndpointStoppedRightAfterStartStops) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int rounds = 0;
  std::thread t([&] {
    for (; rounds < 300; ++rounds) {
      auto http =
          server::AdminHttp::start("127.0.0.1:0", {[] { return ""; }, [] { return ""; }, nullptr});
      if (!http.ok()) break;
      (*http)->stop();
    }
    std::lock_guard l(mu);
    done = true;
    cv.notify_all();
  });
  std::unique_lock l(mu);
  if (!cv.wait_for(l, std::chrono::seconds(60), [&] { return done; })) {
    // The stop hung: nothing can unblock the thread, so end here.
    std::fprintf(stderr, "AdminHttp::stop hung in round %d\n", rounds);
    std::_Exit(1);
  }
  l.unlock();
  t.join();
  EXPECT_EQ(rounds, 300);
}

// `strata stream create` with the stream arguments as flags, `strata
// stream alter` of its retention, then `strata stream info` (beside a
// running node) and a node that runs the stream with them.
TEST(NodeCli, StreamCreateWithSettingsAndStreamInfoShowsThem) {
  strata::test::TempDir tmp;
  json doc = test::small_node_doc();
  doc["data_dir"] = tmp.sub("d");
  const std::string config = tmp.sub("node.json");
  ASSERT_OK(write_file_atomic(posix_fs(), config, doc.dump()));
  auto c = strata_cmd({"--json", "stream", "create", "--config", config, "s1", "--max-length-bytes",
                       "1048576", "--max-age", "2h", "--stream-max-segment-size-bytes", "65536",
                       "--x-strata-fragment-target-bytes", "32768"});
  ASSERT_EQ(c.status, 0) << c.output;
  json out = last_json(c.output);
  EXPECT_EQ(out["settings"]["max_bytes"], 1048576) << c.output;
  EXPECT_EQ(out["settings"]["max_age_ms"], 7'200'000) << c.output;
  EXPECT_EQ(out["effective"]["segment_bytes"], 65536) << c.output;
  EXPECT_EQ(out["effective"]["fragment_target_bytes"], 32768) << c.output;
  EXPECT_EQ(out["effective"]["remote_retention"]["max_bytes"], 1048576) << c.output;
  EXPECT_EQ(out["effective"]["local_retention"]["max_age_ms"], 7'200'000) << c.output;

  // Refused: an existing name, a malformed argument (named), one the node
  // cannot honour.
  auto again = strata_cmd({"stream", "create", "--config", config, "s1"});
  EXPECT_EQ(again.status, 1) << again.output;
  EXPECT_TRUE(contains(again.output, "already_exists")) << again.output;
  auto bad = strata_cmd({"stream", "create", "--config", config, "s2", "--max-age", "7W"});
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_TRUE(contains(bad.output, "max-age")) << bad.output;
  auto nothing = strata_cmd({"stream", "create", "--config", config, "s2", "--x-strata-tiering",
                             "false", "--x-strata-local-max-bytes", "5"});
  EXPECT_EQ(nothing.status, 1) << nothing.output;
  EXPECT_TRUE(contains(nothing.output, "local_max_bytes")) << nothing.output;

  // alter --config, on the stopped node: its retention changes ("none"
  // removes a limit), nothing else does.
  auto altered = strata_cmd({"--json", "stream", "alter", "--config", config, "s1",
                             "--max-length-bytes", "2097152", "--max-age", "none"});
  ASSERT_EQ(altered.status, 0) << altered.output;
  out = last_json(altered.output);
  EXPECT_EQ(out["settings"]["max_bytes"], 2097152) << altered.output;
  EXPECT_FALSE(out["settings"].contains("max_age_ms")) << altered.output;
  EXPECT_EQ(out["settings"]["segment_bytes"], 65536) << altered.output;
  EXPECT_EQ(out["effective"]["remote_retention"]["max_bytes"], 2097152) << altered.output;
  auto no_args = strata_cmd({"stream", "alter", "--config", config, "s1"});
  EXPECT_EQ(no_args.status, 1) << no_args.output;
  EXPECT_TRUE(contains(no_args.output, "--max-age")) << no_args.output;
  auto absent = strata_cmd({"stream", "alter", "--config", config, "s9", "--max-age", "1D"});
  EXPECT_EQ(absent.status, 1) << absent.output;
  EXPECT_TRUE(contains(absent.output, "s9")) << absent.output;

  auto cfg = load_node_config(doc, "", objstore::process_env());
  ASSERT_OK(cfg);
  auto n = Node::open(*cfg);
  ASSERT_OK(n);
  EXPECT_EQ((*n)->streams(), std::vector<std::string>{"s1"});
  EXPECT_EQ((*n)->effective_settings("s1")->segment_bytes, 65536u);
  // info reads the data directory only: it works while the node runs.
  auto info = strata_cmd({"stream", "info", "--config", config, "s1"});
  ASSERT_EQ(info.status, 0) << info.output;
  EXPECT_TRUE(contains(info.output, "\"segment_bytes\":65536")) << info.output;
  EXPECT_TRUE(contains(info.output, "\"max_bytes\":2097152")) << info.output;
  EXPECT_TRUE(contains(info.output, "created with")) << info.output;
  auto none = strata_cmd({"--json", "stream", "info", "--config", config, "nope"});
  EXPECT_EQ(none.status, 1) << none.output;
  EXPECT_EQ(last_json(none.output)["error"]["code"], "not_found") << none.output;
  ASSERT_OK((*n)->close());
}

// One configuration per node: the tools read the file `strata serve` reads
// (server, users, tls and cluster sections beside the node's), check it
// whole, and `strata status --config` finds the node's HTTP address in it.
TEST(NodeCli, EveryToolTakesTheServeConfiguration) {
  strata::test::TempDir tmp;
  json doc = test::small_node_doc();
  doc["data_dir"] = tmp.sub("d");
  doc["server"] = {{"listen", "127.0.0.1:0"}};
  doc["users"] = json::array({{{"name", "guest"}, {"password", "guest"}}});
  doc["http"] = {{"listen", "127.0.0.1:1"}};
  const std::string config = tmp.sub("serve.json");
  ASSERT_OK(write_file_atomic(posix_fs(), config, doc.dump()));
  auto made = strata_cmd({"stream", "create", "--config", config, "s1", "--max-age", "2h"});
  ASSERT_EQ(made.status, 0) << made.output;
  auto info = strata_cmd({"stream", "info", "--config", config, "s1"});
  EXPECT_EQ(info.status, 0) << info.output;
  auto scrub = strata_cmd({"scrub", "--config", config});
  EXPECT_EQ(scrub.status, 0) << scrub.output;
  auto gc = strata_cmd({"gc", "--config", config, "--dry-run"});
  EXPECT_EQ(gc.status, 0) << gc.output;
  auto consume = strata_cmd({"consume", "--config", config, "s1", "--from", "first"});
  EXPECT_EQ(consume.status, 0) << consume.output;
  // inspect: the node's streams only; the folders `strata serve` keeps
  // beside them (offsets, super streams, the catalog) are not damage.
  ASSERT_OK(create_dirs(posix_fs(), tmp.sub("d") + "/tracking"));
  ASSERT_OK(create_dirs(posix_fs(), tmp.sub("d") + "/super_streams"));
  for (const auto& args : {std::vector<std::string>{"--json", "inspect", "--config", config},
                           std::vector<std::string>{"--json", "inspect", tmp.sub("d")}}) {
    auto inspect = strata_cmd(args);
    ASSERT_EQ(inspect.status, 0) << inspect.output;
    json report = json::parse(inspect.output);
    EXPECT_TRUE(report["ok"].get<bool>()) << report.dump();
    EXPECT_TRUE(report["node"].get<bool>()) << report.dump();
    ASSERT_EQ(report["streams"].size(), 1u) << report.dump();
    EXPECT_EQ(report["streams"][0]["name"], "s1");
  }
  // No node runs there: status names the address it read from the file.
  auto status = strata_cmd({"status", "--config", config});
  EXPECT_EQ(status.status, 1) << status.output;
  EXPECT_TRUE(contains(status.output, "127.0.0.1:1")) << status.output;
  auto gone = strata_cmd({"stream", "delete", "--config", config, "s1"});
  EXPECT_EQ(gone.status, 0) << gone.output;

  // Still checked whole: a typo in the server section is named.
  doc["server"]["listne"] = "127.0.0.1:5552";
  ASSERT_OK(write_file_atomic(posix_fs(), config, doc.dump()));
  auto typo = strata_cmd({"stream", "info", "--config", config, "s1"});
  EXPECT_EQ(typo.status, 1) << typo.output;
  EXPECT_TRUE(contains(typo.output, "server.listne")) << typo.output;
  // A syntax error is placed.
  ASSERT_OK(write_file_atomic(posix_fs(), config, "{\n  \"data_dir\": 1,,\n}"));
  auto syntax = strata_cmd({"scrub", "--config", config});
  EXPECT_EQ(syntax.status, 1) << syntax.output;
  EXPECT_TRUE(contains(syntax.output, "line 2, column")) << syntax.output;
}

// `strata --version`, and a --log-level typo refused rather than read as
// "off" (which silenced every log line).
TEST(NodeCli, VersionFlagAndAnUnknownLogLevel) {
  auto v = strata_cmd({"--version"});
  EXPECT_EQ(v.status, 0) << v.output;
  EXPECT_TRUE(contains(v.output, kStrataVersion)) << v.output;
  auto bad = strata_cmd({"--log-level", "verbose", "version"});
  EXPECT_NE(bad.status, 0) << bad.output;
  EXPECT_TRUE(contains(bad.output, "verbose")) << bad.output;
  auto ok = strata_cmd({"--log-level", "debug", "version"});
  EXPECT_EQ(ok.status, 0) << ok.output;
}

// The disk that held the data directory and the embedded catalog is lost,
// the bucket is not: `strata recover --from-bucket` rebuilds the catalog's
// entries from the roots, and the node then serves every stream from the
// bucket — every record of each, at the offsets it had. A second run finds
// them in the catalog; a running node's catalog is refused.
TEST(NodeCli, RecoverFromBucketRebuildsALostEmbeddedCatalog) {
  strata::test::TempDir tmp;
  json doc = test::small_node_doc();
  doc["data_dir"] = tmp.sub("disk");
  doc["objstore"] = {{"fs", {{"root", tmp.sub("bucket")}}}};
  const std::string config = tmp.sub("node.json");
  ASSERT_OK(write_file_atomic(posix_fs(), config, doc.dump()));
  auto cfg = load_node_config(doc, "", objstore::process_env());
  ASSERT_OK(cfg);
  std::map<std::string, uint64_t> next;
  {
    auto n = Node::open(*cfg);
    ASSERT_OK(n);
    for (const char* s : {"orders", "audit"}) {
      auto log = (*n)->create_stream(s);
      ASSERT_OK(log);
      next[s] = test::append_values(**log, s == std::string("orders") ? 30 : 7);
      ASSERT_OK((*n)->flush(s, std::chrono::seconds(30)));
    }
    auto busy = strata_cmd({"recover", "--from-bucket", "--config", config});
    EXPECT_EQ(busy.status, 1) << busy.output;
    EXPECT_TRUE(contains(busy.output, "stop the node")) << busy.output;
    ASSERT_OK((*n)->close());
  }
  std::filesystem::remove_all(tmp.sub("disk"));

  auto dry = strata_cmd({"--json", "recover", "--from-bucket", "--dry-run", "--config", config});
  ASSERT_EQ(dry.status, 0) << dry.output;
  EXPECT_EQ(last_json(dry.output)["streams"].size(), 2u) << dry.output;
  EXPECT_FALSE(std::filesystem::exists(tmp.sub("disk"))) << "a dry run wrote";
  auto r = strata_cmd({"--json", "recover", "--from-bucket", "--config", config});
  ASSERT_EQ(r.status, 0) << r.output;
  json out = last_json(r.output);
  ASSERT_EQ(out["streams"].size(), 2u) << r.output;
  for (const auto& s : out["streams"]) {
    EXPECT_EQ(s["outcome"], "recovered") << s.dump();
    EXPECT_EQ(s["next_offset"], next[s["stream"].get<std::string>()]) << s.dump();
  }
  auto again = strata_cmd({"--json", "recover", "--from-bucket", "--config", config});
  ASSERT_EQ(again.status, 0) << again.output;
  for (const auto& s : last_json(again.output)["streams"]) EXPECT_EQ(s["outcome"], "in_catalog");

  auto n = Node::open(*cfg);
  ASSERT_OK(n);
  EXPECT_EQ((*n)->streams(), (std::vector<std::string>{"audit", "orders"}));
  for (const auto& [s, end] : next) {
    auto log = (*n)->stream(s);
    ASSERT_OK(log);
    EXPECT_EQ((*log)->committed_next(), end) << s;
    auto reader = (*n)->open_reader(s, log::OffsetSpec::first());
    ASSERT_OK(reader);
    uint64_t read = 0;
    while (read < end) {
      std::vector<log::Record> recs;
      auto got = (*reader)->next_records(&recs);
      ASSERT_OK(got);
      ASSERT_GT(*got, 0u) << s << " ends at " << read;
      for (const auto& rec : recs) EXPECT_EQ(rec.value, test::value_of(rec.offset)) << s;
      read += *got;
    }
  }
  // Writable again, after the recovered end.
  ASSERT_OK((*(*n)->stream("orders"))->append({"more"}));
  ASSERT_OK((*n)->close());
}

}  // namespace
}  // namespace strata::node
