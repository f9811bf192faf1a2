// Importing RabbitMQ streams (import/rabbit_layout.h, rabbit_import.h, and
// `strata import rabbitmq`) from files Debian's RabbitMQ 3.10.8 wrote
// (tests/import/fixtures/rabbitmq-3.10.8: its stream directories, its
// definitions export, and what it delivered to the stock JS client —
// offsets, timestamps, content lengths and CRCs, publisher sequences,
// stored offsets). The node must then hold exactly that.
#include "import/rabbit_import.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/crc32.h"
#include "import/rabbit_layout.h"
#include "log/reader.h"
#include "node/node_test_util.h"
#include "support/assertions.h"
#include "support/cli.h"
#include "support/temp_dir.h"

namespace strata::import {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const std::string kFixture =
    std::string(STRATA_SOURCE_DIR) + "/tests/import/fixtures/rabbitmq-3.10.8";

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// A copy of the fixture a test may damage.
std::string copy_fixture(const strata::test::TempDir& tmp) {
  const std::string to = tmp.sub("rabbit");
  fs::copy(kFixture, to, fs::copy_options::recursive);
  return to;
}

struct Imported {
  std::vector<StreamImport> results;
};

// Imports every stream of `rabbit_dir` into the node at `data_dir`.
Imported run_import(const std::string& rabbit_dir, const std::string& data_dir) {
  Imported out;
  auto layout =
      read_rabbit_layout(posix_fs(), rabbit_dir, read_json(kFixture + "/definitions.json"), "/");
  EXPECT_TRUE(layout.ok()) << layout.error().to_string();
  if (!layout.ok()) return out;
  auto node = node::test::open_node(data_dir);
  if (!node) return out;
  auto offsets = server::OffsetStore::open(path_join(data_dir, "tracking"));
  EXPECT_TRUE(offsets.ok());
  auto undone = undo_unfinished_imports(posix_fs(), data_dir, *node, **offsets);
  EXPECT_TRUE(undone.ok());
  for (const auto& s : layout->streams) {
    out.results.push_back(import_stream(posix_fs(), data_dir, node.get(), offsets->get(), s, {}));
  }
  EXPECT_OK((*offsets)->close());
  EXPECT_OK(node->close());
  EXPECT_OK(finish_imports(posix_fs(), data_dir));
  return out;
}

const StreamImport* find(const Imported& i, const std::string& name) {
  for (const auto& r : i.results) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(RabbitLayout, DirectoryNamesAsRabbitMQGivesThem) {
  EXPECT_EQ(osiris_dir_prefix("/", "orders"), "__orders_");
  // RabbitMQ 3.10 replaces bytes: ü is two.
  EXPECT_EQ(osiris_dir_prefix("/", "my.stream ü"), "__my_stream____");
  EXPECT_EQ(osiris_dir_prefix("prod-1", "a=b"), "prod-1_a=b_");
}

TEST(RabbitLayout, EachStreamOfTheDefinitionsFindsItsDirectory) {
  auto layout =
      read_rabbit_layout(posix_fs(), kFixture, read_json(kFixture + "/definitions.json"), "/");
  ASSERT_OK(layout);
  EXPECT_EQ(layout->stream_root, kFixture + "/stream");
  ASSERT_EQ(layout->streams.size(), 3u);
  for (const auto& s : layout->streams) {
    EXPECT_TRUE(s.problem.empty()) << s.name << ": " << s.problem;
    EXPECT_TRUE(path_basename(s.dir).starts_with("__" + s.name + "_")) << s.dir;
    EXPECT_FALSE(s.segments.empty());
    EXPECT_TRUE(std::is_sorted(s.segments.begin(), s.segments.end()));
  }
  EXPECT_TRUE(layout->unmatched.empty());
  // The stream/ directory itself is accepted too.
  EXPECT_OK(read_rabbit_layout(posix_fs(), kFixture + "/stream",
                               read_json(kFixture + "/definitions.json"), "/"));
}

TEST(RabbitLayout, AmbiguousMissingAndOtherVhostStreamsAreNamed) {
  strata::test::TempDir tmp;
  const std::string root = tmp.sub("node");
  fs::create_directories(root + "/stream/__a_b_1");
  fs::create_directories(root + "/stream/__lost_and_found");
  fs::create_directories(root + "/stream/__twice_1");
  fs::create_directories(root + "/stream/__twice_2");
  json defs = {{"queues", json::array()}};
  auto q = [&](const std::string& vhost, const std::string& name) {
    defs["queues"].push_back(
        {{"name", name}, {"vhost", vhost}, {"arguments", {{"x-queue-type", "stream"}}}});
  };
  q("/", "a.b");
  q("/", "a b");
  q("/", "twice");
  q("/", "missing");
  q("other", "elsewhere");
  defs["queues"].push_back({{"name", "classic"}, {"vhost", "/"}, {"arguments", json::object()}});
  auto layout = read_rabbit_layout(posix_fs(), root, defs, "/");
  ASSERT_OK(layout);
  ASSERT_EQ(layout->streams.size(), 4u);
  for (const auto& s : layout->streams) EXPECT_TRUE(s.dir.empty()) << s.name;
  EXPECT_NE(layout->streams[0].problem.find("another stream of the definitions"), std::string::npos)
      << layout->streams[0].problem;
  EXPECT_NE(layout->streams[2].problem.find("2 directories"), std::string::npos);
  EXPECT_NE(layout->streams[3].problem.find("no directory __missing_"), std::string::npos);
  EXPECT_EQ(layout->other_vhosts, std::vector<std::string>{"other/elsewhere"});
  EXPECT_EQ(layout->unmatched, std::vector<std::string>{"__lost_and_found"});
  // Not a RabbitMQ directory at all.
  auto none = read_rabbit_layout(posix_fs(), tmp.path(), defs, "/");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("has no stream/"), std::string::npos);
}

TEST(RabbitImport, EveryMessageOffsetTimeAndByteAsRabbitMQDeliveredThem) {
  strata::test::TempDir tmp;
  const std::string data = tmp.sub("strata");
  const Imported first = run_import(kFixture, data);
  const json expected = read_json(kFixture + "/expected.json")["streams"];
  ASSERT_EQ(first.results.size(), expected.size());
  for (const auto& r : first.results) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.outcome, "imported") << r.error;
    EXPECT_EQ(r.first_offset, expected[r.name]["first_offset"].get<uint64_t>());
    EXPECT_EQ(r.next_offset, expected[r.name]["next_offset"].get<uint64_t>());
  }
  ASSERT_EQ(find(first, "retained")->first_offset, 565u) << "retention had deleted older offsets";

  auto node = node::test::open_node(data);
  ASSERT_TRUE(node);
  auto offsets = server::OffsetStore::open(path_join(data, "tracking"));
  ASSERT_OK(offsets);
  for (const auto& [name, want] : expected.items()) {
    SCOPED_TRACE(name);
    auto log = node->stream(name);
    ASSERT_OK(log);
    EXPECT_EQ((*log)->committed_next(), want["next_offset"].get<uint64_t>());
    // Across both tiers: the uploader may have moved older segments out.
    auto reader = node->open_reader(name, log::OffsetSpec::first());
    ASSERT_OK(reader);
    std::vector<std::pair<log::Record, std::string>> got;
    for (;;) {
      std::vector<log::Record> batch;
      auto n = (*reader)->next_records(&batch);
      ASSERT_OK(n);
      if (*n == 0) break;
      // A record's bytes are valid until the reader's next call.
      for (const auto& rec : batch) got.emplace_back(rec, std::string(rec.value));
    }
    const auto& msgs = want["messages_offset_timestamp_length_crc32"];
    ASSERT_EQ(got.size(), msgs.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const auto& m = msgs[i];
      const log::Record& rec = got[i].first;
      const std::string& value = got[i].second;
      ASSERT_EQ(rec.offset, m[0].get<uint64_t>()) << "message " << i;
      ASSERT_EQ(rec.timestamp_ms, m[1].get<int64_t>()) << "offset " << rec.offset;
      // The AMQP message ends with its data section: the content the
      // client got.
      const size_t len = m[2].get<size_t>();
      ASSERT_GE(value.size(), len);
      ASSERT_EQ(crc32_zlib(BytesView(value).substr(value.size() - len)), m[3].get<uint32_t>())
          << "offset " << rec.offset;
    }
    for (const auto& [ref, seq] : want["publishers"].items()) {
      EXPECT_EQ((*log)->writer_sequence(ref), std::optional<uint64_t>(seq.get<uint64_t>())) << ref;
    }
    for (const auto& [ref, off] : want["offsets"].items()) {
      EXPECT_EQ((*offsets)->query(name, ref), std::optional<uint64_t>(off.get<uint64_t>())) << ref;
    }
  }
  // The arguments became settings.
  auto seg = node->stream_settings("segmented");
  ASSERT_OK(seg);
  EXPECT_EQ(seg->segment_bytes, std::optional<uint64_t>(5000));
  auto ret = node->stream_settings("retained");
  ASSERT_OK(ret);
  EXPECT_EQ(ret->max_bytes, std::optional<uint64_t>(20000));
  ASSERT_OK((*offsets)->close());
  ASSERT_OK(node->close());

  // Again: every stream is there already and is left as it is.
  const Imported again = run_import(kFixture, data);
  for (const auto& r : again.results) EXPECT_EQ(r.outcome, "exists") << r.name;
}

TEST(RabbitImport, ADamagedSegmentFailsItsStreamAloneAndLeavesNothingOfIt) {
  strata::test::TempDir tmp;
  const std::string rabbit = copy_fixture(tmp);
  const json expected = read_json(kFixture + "/expected.json")["streams"];
  // A byte in the middle of a later segment of `segmented`: the chunks
  // before it were imported when the damage is found.
  const std::string dir =
      rabbit + "/stream/" + expected["segmented"]["dir"].get<std::string>() + "/";
  const std::string victim = dir + "00000000000000000215.segment";
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekp(200);
    char c = 0;
    f.read(&c, 1);
    f.seekp(200);
    c ^= 0x5A;
    f.write(&c, 1);
  }
  const std::string data = tmp.sub("strata");
  const Imported got = run_import(rabbit, data);
  const StreamImport* bad = find(got, "segmented");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->outcome, "failed");
  EXPECT_NE(bad->error.find(victim + " at byte"), std::string::npos) << bad->error;
  EXPECT_NE(bad->error.find("nothing of it was kept"), std::string::npos) << bad->error;
  EXPECT_EQ(find(got, "dedup")->outcome, "imported");
  EXPECT_EQ(find(got, "retained")->outcome, "imported");
  auto node = node::test::open_node(data);
  ASSERT_TRUE(node);
  auto names = node->streams();
  EXPECT_EQ(std::count(names.begin(), names.end(), "segmented"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "dedup"), 1);
  ASSERT_OK(node->close());
  EXPECT_FALSE(exists(posix_fs(), import_marks_dir(data)));
}

TEST(RabbitImport, ASegmentCutAtAChunkBoundaryIsCaughtByItsIndex) {
  strata::test::TempDir tmp;
  const std::string rabbit = copy_fixture(tmp);
  const json expected = read_json(kFixture + "/expected.json")["streams"];
  const std::string seg = rabbit + "/stream/" + expected["dedup"]["dir"].get<std::string>() +
                          "/00000000000000000000.segment";
  // Cut right after the first chunk: every CRC still holds.
  auto chunks_seg = OsirisSegment::open(posix_fs(), seg);
  ASSERT_OK(chunks_seg);
  auto c = (*chunks_seg)->next();
  ASSERT_OK(c);
  const uint64_t cut = (*c)->position + (*c)->size;
  chunks_seg->reset();
  fs::resize_file(seg, cut);
  const Imported got = run_import(rabbit, tmp.sub("strata"));
  const StreamImport* dedup = find(got, "dedup");
  ASSERT_TRUE(dedup);
  EXPECT_EQ(dedup->outcome, "failed");
  EXPECT_NE(dedup->error.find("the segment was cut short"), std::string::npos) << dedup->error;
}

TEST(RabbitImport, AnImportKilledHalfWayIsUndoneAndDoneAgain) {
  strata::test::TempDir tmp;
  const std::string data = tmp.sub("strata");
  // What a kill -9 in the middle of `dedup` leaves: its mark, and part of it.
  {
    auto node = node::test::open_node(data);
    ASSERT_TRUE(node);
    auto log = node->create_stream("dedup");
    ASSERT_OK(log);
    ASSERT_OK((*log)->append({BytesView("half")}));
    ASSERT_OK(create_dirs(posix_fs(), import_marks_dir(data)));
    ASSERT_OK(write_file_atomic(posix_fs(), import_marks_dir(data) + "/dedup.pending", "dedup"));
    ASSERT_OK(node->close());
  }
  const Imported got = run_import(kFixture, data);
  EXPECT_EQ(find(got, "dedup")->outcome, "imported") << find(got, "dedup")->error;
  auto node = node::test::open_node(data);
  ASSERT_TRUE(node);
  auto log = node->stream("dedup");
  ASSERT_OK(log);
  EXPECT_EQ((*log)->committed_next(), 203u);
  EXPECT_EQ((*log)->writer_sequence("app-1"), std::optional<uint64_t>(200));
  ASSERT_OK(node->close());
}

TEST(RabbitImportCli, ImportsAndReportsAsJson) {
  strata::test::TempDir tmp;
  const std::string data = tmp.sub("strata");
  auto dry = strata::test::strata_cli({"import", "rabbitmq", "--data-dir", data, "--rabbitmq-dir",
                                       kFixture, "--definitions", kFixture + "/definitions.json",
                                       "--dry-run", "--json"});
  ASSERT_EQ(dry.status, 0) << dry.out << dry.err;
  EXPECT_EQ(json::parse(dry.out)["streams"][0]["outcome"], "would_import");
  EXPECT_FALSE(fs::exists(data + "/catalog")) << "a dry run writes nothing";
  auto r = strata::test::strata_cli({"import", "rabbitmq", "--data-dir", data, "--rabbitmq-dir",
                                     kFixture, "--definitions", kFixture + "/definitions.json",
                                     "--stream", "retained", "--json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["streams"].size(), 1u);
  EXPECT_EQ(j["streams"][0]["name"], "retained");
  EXPECT_EQ(j["streams"][0]["outcome"], "imported");
  EXPECT_EQ(j["streams"][0]["first_offset"], 565);
  EXPECT_EQ(j["streams"][0]["next_offset"], 618);
  EXPECT_EQ(j["streams"][0]["publishers"], 1);
  EXPECT_EQ(j["streams"][0]["offsets"], 2);
  EXPECT_EQ(j["imported"], 1);
  // Into a strata vhost: stored under its qualified name, beside the "/"
  // one of the same name.
  auto into = strata::test::strata_cli({"import", "rabbitmq", "--data-dir", data, "--rabbitmq-dir",
                                        kFixture, "--definitions", kFixture + "/definitions.json",
                                        "--stream", "retained", "--into-vhost", "prod", "--json"});
  ASSERT_EQ(into.status, 0) << into.out << into.err;
  const json ji = json::parse(into.out);
  EXPECT_EQ(ji["streams"][0]["name"], "retained");
  EXPECT_EQ(ji["streams"][0]["strata_vhost"], "prod");
  EXPECT_EQ(ji["streams"][0]["outcome"], "imported");
  EXPECT_EQ(ji["streams"][0]["next_offset"], 618);
  EXPECT_TRUE(fs::exists(data + "/streams/prod%0Aretained")) << "the qualified name's directory";
  EXPECT_TRUE(fs::exists(data + "/streams/retained"));
  // A stream the definitions do not have.
  auto unknown = strata::test::strata_cli({"import", "rabbitmq", "--data-dir", data,
                                           "--rabbitmq-dir", kFixture, "--definitions",
                                           kFixture + "/definitions.json", "--stream", "nope"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("nope is not a stream of vhost /"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace strata::import
